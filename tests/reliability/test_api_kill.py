"""``folioflow api`` killed with SIGKILL in the middle of an ingest job, then started again.

Real processes: the server runs as ``python -m folioflow.flows.cli api`` on a free loopback port
over a fresh data directory (embedded store, Prefect's ephemeral API), with the documents' folder
as its allowed root. An ingest job over a folder of generated text PDFs is submitted by path; once
the job has started its second document the whole process group gets SIGKILL (no clean-up runs).
Started again on the same data directory, the server must report the job ``failed`` ("server
stopped while the job ran"); the same ingest submitted again must succeed and leave the store equal
to a clean run's over the same folder: the same documents, point ids and payloads, no pending point
and no point without a record.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from folioflow.flows.reliability.hostile import long_pdf  # noqa: E402
from folioflow.flows.service.jobs import INTERRUPTED  # noqa: E402
from folioflow.indexing.store import StoreSettings, open_store  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import free_port, python_module, serve_process  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX process groups")]


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("api-kill-docs")
    write_sample_pdf(folder / "a-report.pdf")
    for i in range(8):
        long_pdf(folder / f"b-ledger-{i}.pdf", 30 + i)
    return folder


@contextlib.contextmanager
def api_server(data: Path, docs: Path, tmp: Path, log_level: str = "warning"):
    """``folioflow api`` over ``data`` on a free port; yields (process, base URL, log file)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {"PREFECT_HOME": str(tmp / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300", "FOLIOFLOW_WORKERS": "1",
           "FOLIOFLOW_API_ALLOWED_ROOTS": json.dumps([str(docs)])}
    log = tmp / f"api-{port}.log"
    with serve_process(python_module("folioflow.flows.cli", "api", "--host", "127.0.0.1", "--port", str(port),
                                     "--data-dir", str(data), "--log-level", log_level),
                       f"{url}/healthz", log, timeout=300, env=env) as proc:
        yield proc, url, log


def submit(url: str, docs: Path) -> str:
    answer = httpx.post(f"{url}/v1/documents", json={"path": str(docs)}, timeout=60)
    assert answer.status_code == 202, answer.text
    return answer.json()["id"]


def wait_until(url: str, job_id: str, done, timeout: float = 600.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        if done(job):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.1)


def finished(job: dict) -> bool:
    return job["state"] in ("succeeded", "failed")


def store_state(data: Path) -> dict:
    """Per recorded document: status, chunks, point ids, payload hashes; and the store's totals."""
    store = open_store(StoreSettings(data_dir=data))
    try:
        docs = {}
        for record in store.list_documents():
            payloads = [hashlib.sha256(json.dumps(p, sort_keys=True).encode()).hexdigest()
                        for p in store.payloads(record.doc_id)]
            docs[Path(record.path).name] = {"doc_id": record.doc_id, "status": record.status, "chunks": record.chunks,
                                            "ids": sorted(store.point_ids(record.doc_id)), "payloads": payloads}
        return {"documents": docs, "pending": store.pending_count(), "points": store.count()}
    finally:
        store.close()


def test_sigkill_mid_ingest_then_restart_and_resubmit(docs, tmp_path):
    data = tmp_path / "data"
    with api_server(data, docs, tmp_path) as (proc, url, _):
        job_id = submit(url, docs)
        at_kill = wait_until(url, job_id, lambda j: j["progress"]["documents_started"] >= 2 or finished(j))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    assert at_kill["state"] == "running", f"the job ended before the kill: {at_kill}"
    total = len(list(docs.glob("*.pdf")))
    assert at_kill["progress"]["documents_started"] < total

    with api_server(data, docs, tmp_path) as (_, url, _):
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        assert job["state"] == "failed" and job["error"] == INTERRUPTED, job
        assert job["error"].startswith("server stopped while the job ran")
        assert job["progress"]["documents_started"] >= 2  # what it had done was kept with the job
        again = wait_until(url, submit(url, docs), finished)
        assert again["state"] == "succeeded", again
        assert {d["status"] for d in again["documents"]} <= {"indexed", "skipped"}
        assert len(again["documents"]) == total
        listed = {j["id"]: j["state"] for j in httpx.get(f"{url}/v1/jobs", timeout=30).json()}
        assert listed == {job_id: "failed", again["id"]: "succeeded"}
    resumed = store_state(data)

    clean_data = tmp_path / "clean"
    with api_server(clean_data, docs, tmp_path, log_level="info") as (_, url, log):
        clean_job = wait_until(url, submit(url, docs), finished)
        assert clean_job["state"] == "succeeded" and clean_job["counts"] == {"indexed": total}, clean_job
        assert httpx.get(f"{url}/healthz?after-the-job", timeout=30).status_code == 200
        time.sleep(0.5)
        # the request log survives the job's Prefect run, and Prefect's services log no tracebacks
        logged = log.read_text(errors="replace")
        assert "GET /healthz?after-the-job HTTP/1.1\" 200" in logged, logged[-3000:]
        assert "Traceback" not in logged and "database is locked" not in logged, logged[-3000:]
    clean = store_state(clean_data)

    assert set(clean["documents"]) == {p.name for p in docs.glob("*.pdf")}
    assert all(d["status"] == "indexed" for d in clean["documents"].values())
    assert resumed == clean  # same documents, point ids and payloads; no pending or orphan point
    assert resumed["pending"] == 0
    assert resumed["points"] == sum(len(d["ids"]) for d in resumed["documents"].values())
    assert all(d["chunks"] == len(d["ids"]) for d in resumed["documents"].values())
