"""Ingest jobs handed to Prefect (``ingest: prefect``): the app (TestClient, lifespan included)
against a real Prefect API (``prefect_harness``) where the ``ingest`` flow is registered as the
deployment ``ingest/folioflow-ingest``. No worker runs here, so a submitted job stays ``queued``
(its flow run ``SCHEDULED``); the test then sets the run's state in Prefect as a worker would, and
the job follows it."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402

pytestmark = pytest.mark.slow


def test_ingest_jobs_become_flow_runs_of_the_deployment(tmp_path, prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.states import Completed, Failed, Running

    from folioflow.flows.ingest import ingest_flow

    ingest_flow.to_deployment(name="folioflow-ingest").apply()
    root = tmp_path / "docs"
    pdf = write_sample_pdf(root / "report.pdf")
    api = ApiSettings(ingest="prefect", allowed_roots=[root])
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data"), api)) as client:
        answer = client.post("/v1/documents", json={"path": str(pdf), "tenant": "acme", "force": True})
        assert answer.status_code == 202, answer.text
        job = answer.json()
        assert job["kind"] == "ingest" and job["state"] == "queued" and job["flow_run_id"]
        with get_client(sync_client=True) as prefect:
            run = prefect.read_flow_run(uuid.UUID(job["flow_run_id"]))
            assert run.parameters == {"paths": [str(pdf)], "force": True,
                                      "overrides": {"source_name": "default", "tenant": "acme"}}
            assert run.state is not None and run.state.type.value == "SCHEDULED" and "folioflow-api" in run.tags
            assert client.get(f"/v1/jobs/{job['id']}").json()["state"] == "queued"

            prefect.set_flow_run_state(run.id, Running(), force=True)
            assert client.get(f"/v1/jobs/{job['id']}").json()["state"] == "running"
            prefect.set_flow_run_state(run.id, Failed(message="worker lost"), force=True)
            failed = client.get(f"/v1/jobs/{job['id']}").json()
            assert failed["state"] == "failed" and "worker lost" in failed["error"], failed

            second = client.post("/v1/documents", json={"path": str(root)}).json()
            prefect.set_flow_run_state(uuid.UUID(second["flow_run_id"]), Completed(), force=True)
            assert client.get(f"/v1/jobs/{second['id']}").json()["state"] == "succeeded"
        assert client.get("/healthz").json()["documents"] == 0  # nothing ran in the API process

    missing = ApiSettings(ingest="prefect", prefect_deployment="ingest/no-such-deployment", allowed_roots=[root])
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data2"), missing)) as client:
        refused = client.post("/v1/documents", json={"path": str(pdf)})
        assert refused.status_code == 503 and "no-such-deployment" in refused.json()["detail"], refused.text


def test_prefect_job_reports_each_document_like_a_local_job(tmp_path, prefect_harness):
    """A flow run of the deployment really runs (here in the test's process, on a worker's own
    data dir, as a worker would run it); once it has ended the job holds the same per-document
    report as a local job of the same folder: read back from the run's table artifact."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow

    from folioflow.flows.ingest import ingest_flow

    ingest_flow.to_deployment(name="folioflow-ingest").apply()
    root = tmp_path / "docs"
    write_sample_pdf(root / "report.pdf")
    (root / "broken.pdf").write_bytes(b"PK\x03\x04 a zip archive, not a PDF")
    fields = ("source", "doc_id", "status", "pages", "chunks", "error", "failed_pages", "tenant")

    local = ApiSettings(allowed_roots=[root])
    with TestClient(create_app(load_settings(data_dir=tmp_path / "local", workers=1), local)) as client:
        job = client.post("/v1/documents", json={"path": str(root)}).json()
        deadline = time.monotonic() + 300
        while (done := client.get(f"/v1/jobs/{job['id']}").json())["state"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, done
            time.sleep(0.3)
    expected = sorted([{k: d[k] for k in fields} for d in done["documents"]], key=lambda d: d["source"])
    assert {d["status"] for d in expected} == {"indexed", "failed"}, expected

    api = ApiSettings(ingest="prefect", allowed_roots=[root])
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data"), api)) as client:
        job = client.post("/v1/documents", json={"path": str(root)}).json()
        with get_client(sync_client=True) as prefect:
            run = prefect.read_flow_run(uuid.UUID(job["flow_run_id"]))
        worker = {**run.parameters, "overrides": {**run.parameters["overrides"], "data_dir": str(tmp_path / "worker"),
                                                  "workers": 1}}
        run_flow(ingest_flow, flow_run=run, parameters=worker)  # what the work pool's worker would do
        finished = client.get(f"/v1/jobs/{job['id']}").json()
        assert finished["state"] == "succeeded", finished
        got = sorted([{k: d[k] for k in fields} for d in finished["documents"]], key=lambda d: d["source"])
        assert got == expected
        assert finished["counts"] == done["counts"] == {"indexed": 1, "failed": 1}
        assert client.get(f"/v1/jobs/{job['id']}").json()["documents"] == finished["documents"]  # kept


def test_prefect_job_deletes_the_uploads_that_failed(tmp_path, prefect_harness):
    """An upload handed to Prefect: once the run has ended (run here as a worker would, on its own
    data dir), the uploaded file the report says failed is gone from the uploads folder; the one
    it says indexed stays (this server's store does not hold it: the worker's does)."""
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow

    from folioflow.flows.ingest import ingest_flow

    ingest_flow.to_deployment(name="folioflow-ingest").apply()
    pdf = write_sample_pdf(tmp_path / "report.pdf").read_bytes()
    uploads = tmp_path / "uploads"
    api = ApiSettings(ingest="prefect", upload_dir=uploads)
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data"), api)) as client:
        job = client.post("/v1/documents", files=[("files", ("notes.txt", b"plain text, not a document", "text/plain")),
                                                  ("files", ("report.pdf", pdf, "application/pdf"))]).json()
        assert {p.name for p in (uploads / "_shared").iterdir()} == {"notes.txt", "report.pdf"}
        with get_client(sync_client=True) as prefect:
            run = prefect.read_flow_run(uuid.UUID(job["flow_run_id"]))
        worker = {**run.parameters, "overrides": {**run.parameters["overrides"], "data_dir": str(tmp_path / "worker"),
                                                  "workers": 1}}
        run_flow(ingest_flow, flow_run=run, parameters=worker)
        finished = client.get(f"/v1/jobs/{job['id']}").json()
        assert finished["counts"] == {"indexed": 1, "failed": 1}, finished
        assert {p.name for p in (uploads / "_shared").iterdir()} == {"report.pdf"}


def test_prefect_job_clean_up_leaves_a_newer_upload_of_the_same_name(tmp_path, prefect_harness):
    """Two upload jobs handed to Prefect name the same file: J2's empty `y.pdf`, then J3's good
    one, which replaced it in the uploads folder before J2's run ended. J2's run ends without a
    report (its Failed state set here, as a crashed worker leaves it): its clean-up, which deletes
    every upload of a run without a report, deleted J3's file (J3's run then failed 'not found');
    now it deletes only the file J2's request wrote, and J3's run (run here as a worker would)
    indexes the newer upload."""
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow
    from prefect.states import Failed

    from folioflow.flows.ingest import ingest_flow

    ingest_flow.to_deployment(name="folioflow-ingest").apply()
    pdf = write_sample_pdf(tmp_path / "report.pdf").read_bytes()
    uploads = tmp_path / "uploads"
    api = ApiSettings(ingest="prefect", upload_dir=uploads)
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data"), api)) as client:
        j2 = client.post("/v1/documents", files=[("files", ("y.pdf", b"", "application/pdf"))]).json()
        j3 = client.post("/v1/documents", files=[("files", ("y.pdf", pdf, "application/pdf"))]).json()
        assert "uploads" not in j2 and "uploads" not in j3
        with get_client(sync_client=True) as prefect:
            prefect.set_flow_run_state(uuid.UUID(j2["flow_run_id"]), Failed(message="worker lost"), force=True)
            assert client.get(f"/v1/jobs/{j2['id']}").json()["state"] == "failed"  # its clean-up runs here
            assert (uploads / "_shared" / "y.pdf").read_bytes() == pdf  # J3's upload, kept
            run = prefect.read_flow_run(uuid.UUID(j3["flow_run_id"]))
        # a DELETE of y.pdf's document would be a 409 while J3's run is unfinished (its state read from Prefect)
        service = client.app.state.service
        y = SimpleNamespace(uri=(uploads / "_shared" / "y.pdf").resolve().as_uri(), doc_id="y")
        assert service.job_covering(y).id == j3["id"]
        worker = {**run.parameters, "overrides": {**run.parameters["overrides"], "data_dir": str(tmp_path / "worker"),
                                                  "workers": 1}}
        run_flow(ingest_flow, flow_run=run, parameters=worker)
        assert service.job_covering(y) is None
        finished = client.get(f"/v1/jobs/{j3['id']}").json()
        assert [d["status"] for d in finished["documents"]] == ["indexed"], finished  # was 'not found: .../y.pdf'

        # a run without a report still deletes the upload its own request wrote
        j4 = client.post("/v1/documents", files=[("files", ("z.pdf", b"", "application/pdf"))]).json()
        with get_client(sync_client=True) as prefect:
            prefect.set_flow_run_state(uuid.UUID(j4["flow_run_id"]), Failed(message="worker lost"), force=True)
        assert client.get(f"/v1/jobs/{j4['id']}").json()["state"] == "failed"
        assert not (uploads / "_shared" / "z.pdf").exists()
