"""`folioflow reindex`: documents chunked and embedded again from their kept conversions, with no
source file and no OCR; the record's fingerprint lets a later ingest skip them; a document whose
conversion is missing or unreadable fails alone, its points kept. Real stages, embedder and
embedded store (no Prefect: the ingest is the pipeline's own calls)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.reindex import STALE_NOTE, reindex
from folioflow.flows.settings import Settings
from folioflow.flows.sources import discover
from folioflow.flows.stages import chunker_options, index_fingerprint, ocr_identity
from folioflow.indexing.store import open_store
from folioflow.ocr.errors import DocumentLookupError
from folioflow.ocr.sample_contracts import write_contract_pdf
from folioflow.ocr.samples import write_sample_pdf

NAMES = ("northwind.pdf", "supply-article.pdf", "supply-decimal.pdf")


def _ingest(settings: Settings, pdfs: list[Path]) -> None:
    pipeline = Pipeline(settings).warm_up()
    try:
        for file in discover([str(p) for p in pdfs]).files:
            planned = pipeline.stages.plan(file, pipeline.known(file))
            if not planned.skip:
                document = pipeline.stages.convert(planned)
                pipeline.index(document, pipeline.stages.chunk(document), change_token=file.change_token)
    finally:
        pipeline.close()


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A data dir holding the sample report and two generated contracts, ingested from ``docs/``
    (records name their source by path: each test ingests its own)."""
    docs = tmp_path / "docs"
    pdfs = [write_sample_pdf(docs / NAMES[0]), write_contract_pdf(docs / NAMES[1], "article"),
            write_contract_pdf(docs / NAMES[2], "decimal")]
    _ingest(Settings(data_dir=tmp_path / "data"), pdfs)
    return tmp_path


def _ingest_plans(settings: Settings, docs: Path) -> list[str]:
    """Why an ingest of ``docs`` under ``settings`` would (not) process each document (its plan)."""
    pipeline = Pipeline(settings).warm_up()
    try:
        return [pipeline.stages.plan(file, pipeline.known(file)).why for file in discover([str(docs)]).files]
    finally:
        pipeline.close()


def _store_state(settings: Settings) -> dict[str, tuple[int, str, int]]:
    """file name -> (chunks recorded, fingerprint recorded, points in the store)."""
    store = open_store(settings.store_settings())
    try:
        return {Path(r.path).name: (r.chunks, r.metadata["fingerprint"], len(store.point_ids(r.doc_id)))
                for r in store.list_documents()}
    finally:
        store.close()


def test_nothing_changed_skips_every_document(workdir):
    settings = Settings(data_dir=workdir / "data")
    before = _store_state(settings)
    report = reindex(settings)
    assert [d.status for d in report.documents] == ["skipped"] * 3
    assert {d.change for d in report.documents} == {"unchanged (embedding model and chunking)"}
    assert _store_state(settings) == before


def test_new_chunking_settings_rechunk_without_the_sources_and_ingest_then_skips(workdir):
    old = _store_state(Settings(data_dir=workdir / "data"))
    hidden = workdir / "moved-away"
    shutil.move(workdir / "docs", hidden)  # no source file to read: only the kept conversions
    settings = Settings(data_dir=workdir / "data", max_tokens=48)
    report = reindex(settings)
    rows = {Path(d.source).name: d for d in report.documents}
    assert {name: row.status for name, row in rows.items()} == dict.fromkeys(NAMES, "indexed")
    assert all(row.change == "chunking (options or chunker version) changed" for row in rows.values())
    new = _store_state(settings)
    for name in NAMES:
        chunks, fingerprint, points = new[name]
        assert chunks == rows[name].chunks == points > old[name][0]  # smaller chunks: more of them, no stale point
        assert fingerprint.split("|")[2] == old[name][1].split("|")[2]  # the OCR part it was converted under
        assert fingerprint.split("|")[1] != old[name][1].split("|")[1]
    # the same files ingested with the same settings are skipped: the fingerprint is an ingest's
    shutil.move(hidden, workdir / "docs")
    model = new[NAMES[0]][1].split("|")[0]
    expected = index_fingerprint(model, chunker_options(settings), ocr_identity(settings))
    assert {fp for _, fp, _ in new.values()} == {expected}
    assert _ingest_plans(settings, workdir / "docs") == ["unchanged (change token)"] * 3


def test_a_conversion_under_other_ocr_settings_is_said_and_left_to_ingest(workdir):
    """The documents were converted under the default OCR settings; re-chunked under settings that
    convert otherwise (other OCR languages), each row says the next ingest converts it again, and an
    ingest under those settings does (the record kept the OCR part it was converted under)."""
    settings = Settings(data_dir=workdir / "data", languages=["deu"], max_tokens=48)
    rows = reindex(settings).documents
    assert [d.status for d in rows] == ["indexed"] * 3
    assert all(d.change.endswith(STALE_NOTE) for d in rows)
    assert _ingest_plans(settings, workdir / "docs") == ["OCR (settings or conversion version) changed"] * 3
    assert all(not d.change.endswith(STALE_NOTE) for d in reindex(Settings(data_dir=workdir / "data"), force=True).documents)


def test_a_missing_or_unreadable_conversion_fails_alone_and_keeps_its_points(workdir):
    settings = Settings(data_dir=workdir / "data", max_tokens=48)
    before = _store_state(settings)
    ids = {Path(r.source).name: r.doc_id for r in reindex(Settings(data_dir=workdir / "data")).documents}
    (settings.documents_dir / f"{ids[NAMES[0]]}.json").unlink()
    kept = settings.documents_dir / f"{ids[NAMES[1]]}.json"
    kept.write_text(kept.read_text()[:500])  # cut short, as by a full disk
    rows = {Path(d.source).name: d for d in reindex(settings).documents}
    assert rows[NAMES[0]].status == rows[NAMES[1]].status == "failed"
    assert rows[NAMES[0]].error.startswith("no converted document kept at ")
    assert "unreadable (ValidationError" in rows[NAMES[1]].error and "ingest --force" in rows[NAMES[1]].error
    assert rows[NAMES[2]].status == "indexed"  # the rest went on
    after = _store_state(settings)
    assert after[NAMES[0]] == before[NAMES[0]] and after[NAMES[1]] == before[NAMES[1]]  # untouched, searchable
    assert after[NAMES[2]] != before[NAMES[2]]


def test_doc_selects_documents_and_force_rechunks_them(workdir):
    settings = Settings(data_dir=workdir / "data")
    report = reindex(settings, docs=[NAMES[2]], force=True)
    assert [(Path(d.source).name, d.status, d.change) for d in report.documents] == [(NAMES[2], "indexed", "forced")]
    with pytest.raises(DocumentLookupError, match="no-such.pdf"):
        reindex(settings, docs=["no-such.pdf"])


def test_cli_reports_each_document(workdir):
    report = workdir / "reindex.json"
    result = CliRunner().invoke(app, ["reindex", "--data-dir", str(workdir / "data"), "--force",  # progress bar on
                                      "--report", str(report)])
    assert result.exit_code == 0, result.output
    assert "Reindex summary" in result.output and "re-chunked" in result.output
    assert "pages per second" not in result.output  # no page was converted
    rows = json.loads(report.read_text())
    assert sorted(r["source"] for r in rows) == sorted(str(workdir / "docs" / n) for n in NAMES)  # as ingested
    assert {r["source_name"] for r in rows} == {None}  # command-line paths, as ingest reports them
    assert {r["status"] for r in rows} == {"indexed"} and all(r["chunks"] > 0 for r in rows)
    missing = CliRunner().invoke(app, ["reindex", "--data-dir", str(workdir / "data"), "--doc", "nope.pdf"])
    assert missing.exit_code == 1 and "--doc 'nope.pdf': no such document" in missing.output
    typo = workdir / "no-such-data"
    nowhere = CliRunner().invoke(app, ["reindex", "--data-dir", str(typo)])
    assert nowhere.exit_code == 1 and "no folioflow index in" in nowhere.output and not typo.exists()
    assert "0/0 pages" not in nowhere.output  # no empty progress bar under the error (a trial finding)
    bad = workdir / "bad.yaml"
    bad.write_text("chunking:\n  bogus_option: 1\n")
    wrong = CliRunner().invoke(app, ["reindex", "--data-dir", str(workdir / "data"), "--config", str(bad)])
    assert wrong.exit_code == 1, wrong.output
    assert "invalid chunking settings: chunking.bogus_option: Extra inputs are not permitted" in wrong.output
    assert "pydantic.dev" not in wrong.output and "0/0 pages" not in wrong.output  # one line, as the docs say


def test_api_reindex_job_for_what_the_key_may_see(workdir):
    """POST /v1/reindex queues a job that reports each document as the CLI does; a tenant-bound key
    re-chunks only its tenant's documents, and a `doc` that names none is a 404."""
    pytest.importorskip("fastapi", reason="the `api` extra is not installed")
    from fastapi.testclient import TestClient

    from folioflow.flows.service import ApiKey, ApiSettings, create_app
    from tests.flows.servers import wait_job

    admin, acme = "admin-key-0123456789abcdef", "acme-key-0123456789abcdef"
    keys = [ApiKey(key=admin, name="ops"), ApiKey(key=acme, tenant="acme")]
    with TestClient(create_app(Settings(data_dir=workdir / "data", max_tokens=48), ApiSettings(keys=keys))) as c:
        as_admin, as_acme = {"Authorization": f"Bearer {admin}"}, {"Authorization": f"Bearer {acme}"}
        none = c.post("/v1/reindex", json={}, headers=as_acme)  # acme has no documents here
        assert none.status_code == 202 and none.headers["location"] == f"/v1/jobs/{none.json()['id']}"
        assert wait_job(c, none.json()["id"], headers=as_acme)["documents"] == []
        missing = c.post("/v1/reindex", json={"doc": ["nope.pdf"]}, headers=as_admin)
        assert missing.status_code == 404 and "doc 'nope.pdf': no such document" in missing.json()["detail"]
        one = c.post("/v1/reindex", json={"doc": [NAMES[1]]}, headers=as_admin)
        assert one.status_code == 202 and one.json()["kind"] == "reindex" and one.json()["inputs"] == [NAMES[1]]
        job = wait_job(c, one.json()["id"], headers=as_admin)
        assert job["state"] == "succeeded", job
        assert [(Path(d["source"]).name, d["status"]) for d in job["documents"]] == [(NAMES[1], "indexed")]
        assert job["counts"] == {"indexed": 1} and job["progress"]["pages_done"] == job["documents"][0]["pages"]
        everything = wait_job(c, c.post("/v1/reindex", json={}, headers=as_admin).json()["id"], headers=as_admin)
        assert sorted(d["status"] for d in everything["documents"]) == ["indexed", "indexed", "skipped"]
        chunks = c.get(f"/v1/documents/{job['documents'][0]['doc_id']}/chunks", headers=as_admin).json()
        assert len(chunks) == job["documents"][0]["chunks"]


@pytest.mark.slow
def test_cli_goes_through_a_running_server(workdir):
    """With `folioflow api` holding the data dir, `folioflow reindex` runs as that server's job."""
    pytest.importorskip("fastapi", reason="the `api` extra is not installed")
    import subprocess

    from tests.flows.servers import free_port, python_module, serve_process

    data, port = workdir / "data", free_port()
    env = {"PREFECT_HOME": str(workdir / "prefect"), "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}
    with serve_process(python_module("folioflow.flows.cli", "api", "--host", "127.0.0.1", "--port", str(port),
                                     "--data-dir", str(data), "--log-level", "warning"),
                       f"http://127.0.0.1:{port}/healthz", workdir / "api.log", timeout=400, env=env):
        def cli(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run(python_module("folioflow.flows.cli", "reindex", "--data-dir", str(data), *args),
                                  capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)

        ran = cli("--force", "--no-progress", "--report", str(workdir / "r.json"))
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert "Reindex summary" in ran.stdout
        assert sorted(r["status"] for r in json.loads((workdir / "r.json").read_text())) == ["indexed"] * 3
        unknown = cli("--doc", "nope.pdf", "--no-progress")
        assert unknown.returncode == 1 and "reindex cannot proceed" in unknown.stderr and "nope.pdf" in unknown.stderr
        config = workdir / "small.yaml"
        config.write_text("max_tokens: 48\n")
        refused = cli("--config", str(config), "--no-progress")  # chunking set here: the server would not use it
        assert refused.returncode == 1 and "max_tokens set here: not with the API server" in refused.stderr
