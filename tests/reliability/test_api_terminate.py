"""``folioflow api`` stopped by SIGTERM while an ingest job runs, and started again.

A tester's case: ``kill -TERM`` of the server during an ingest job of two uploaded scans closed the
port and said "stopped by SIGTERM", but the process lived on for ~90 s while the OCR went on to the
last page, logged ~140 Prefect tracebacks ("can't register atexit after shutdown"), and ended in a
C++ abort; the uploaded files stayed in ``uploads/_shared`` forever. Real processes and signals
here (the pattern of ``test_api_kill.py`` and ``test_terminate.py``): the server, CPU OCR of two
generated image-only scans (about a second a page), SIGTERM to the server process alone once a page
is done. The stop must be prompt and clean (exit status 143, no traceback), the job ``failed`` with
the reason, the finished OCR pages kept in the page cache, and no uploaded file left that is not in
the index. A start after an unclean end (SIGKILL) deletes the uploads of the job it marks failed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.reliability.hostile import long_pdf  # noqa: E402
from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.service.jobs import INTERRUPTED, JobTable  # noqa: E402
from folioflow.flows.service.models import Job, UploadedFile  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.indexing.store import StoreSettings, open_store  # noqa: E402
from folioflow.ocr.ids import sha256_file  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy  # noqa: E402
from tests.reliability.test_api_kill import api_server, wait_until  # noqa: E402
from tests.reliability.test_kill_and_resume import cached_pages  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs POSIX signals and process groups")]


@pytest.fixture(scope="module")
def scans(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("api-term-docs")
    scratch = tmp_path_factory.mktemp("api-term-src")
    return [write_scanned_copy(long_pdf(scratch / "a.pdf", 5), folder / "a-scan.pdf", dpi=150),
            write_scanned_copy(long_pdf(scratch / "b.pdf", 3), folder / "b-scan.pdf", dpi=150)]


def indexed_paths(data: Path) -> set[str]:
    store = open_store(StoreSettings(data_dir=data))
    try:
        return {Path(r.path).name for r in store.list_documents()}
    finally:
        store.close()


def test_sigterm_mid_job_stops_promptly_and_cleanly(scans, tmp_path):
    data = tmp_path / "data"
    with api_server(data, scans[0].parent, tmp_path, log_level="info") as (proc, url, log):
        with contextlib.ExitStack() as files:
            sent = [("files", (p.name, files.enter_context(p.open("rb")), "application/pdf")) for p in scans]
            answer = httpx.post(f"{url}/v1/documents", files=sent, timeout=60)
        assert answer.status_code == 202, answer.text
        job_id = answer.json()["id"]
        at_stop = wait_until(url, job_id, lambda j: j["progress"]["pages_done"] >= 1
                             or j["state"] not in ("queued", "running"))
        assert at_stop["state"] == "running", f"the job ended before the stop: {at_stop}"
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)  # the server process only, as `kill PID` does
        try:
            proc.wait(90)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server outlived SIGTERM by 90 s: {log.read_text(errors='replace')[-3000:]}")
        took = time.monotonic() - started
        logged = log.read_text(errors="replace")
        assert proc.returncode == 128 + signal.SIGTERM, logged[-3000:]
        assert "folioflow: stopped by SIGTERM" in logged, logged[-3000:]
        for bad in ("Traceback", "terminate called", "can't register atexit"):
            assert bad not in logged, logged[-5000:]
        assert took < 45, f"the stop took {took:.0f} s"

    uploads = data / "uploads" / "_shared"
    indexed = indexed_paths(data)
    assert {p.name for p in uploads.iterdir()} == indexed, "an uploaded file that is not in the index was kept"
    assert indexed != {p.name for p in scans}, "the job ran to its end: nothing was stopped"
    # the pages OCRed before the stop are in the page cache, for the job submitted again
    assert any(cached_pages(data / "ocr-cache", sha256_file(p)) for p in scans)

    with api_server(data, scans[0].parent, tmp_path) as (_, url, _):
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        assert job["state"] == "failed" and job["error"] == INTERRUPTED, job
        assert job["finished_at"] is not None and job["progress"]["pages_done"] >= 1, job


def test_start_deletes_uploads_of_a_job_its_server_left_running(tmp_path, prefect_harness):
    """The SIGKILL case: no clean-up ran; the next start marks the job failed and deletes its
    uploaded files that are not in the index (other files of the uploads folder are kept). The
    job names its upload as the server records it: path and the file's identity (a job deletes
    only the file its request wrote; one recorded without it, by an older server, deletes none)."""
    data, uploads = tmp_path / "data", tmp_path / "uploads"
    folder = uploads / "_shared"
    folder.mkdir(parents=True)
    cut_short = write_sample_pdf(folder / "cut-short.pdf")
    other = write_sample_pdf(folder / "other.pdf")  # not an input of the interrupted job
    table = JobTable(data / "api-jobs.sqlite")
    table.save(Job(id="left-running", kind="ingest", state="running", inputs=["cut-short.pdf"],
                   tenant=None, created_at=datetime.now(UTC), started_at=datetime.now(UTC),
                   uploads=[UploadedFile.of(cut_short)]))
    table.save(Job(id="older-server", kind="ingest", state="running", inputs=["other.pdf"],
                   tenant=None, created_at=datetime.now(UTC), started_at=datetime.now(UTC)))
    table.close()

    with TestClient(create_app(load_settings(data_dir=data, workers=1), ApiSettings(upload_dir=uploads))) as client:
        job = client.get("/v1/jobs/left-running").json()
        assert job["state"] == "failed" and job["error"] == INTERRUPTED, job
    assert not cut_short.exists(), "the interrupted job's upload that is not in the index was kept"
    assert other.exists()  # its job recorded no file identity: it cannot tell its own file from a newer one
