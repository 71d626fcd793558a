"""The ingest process killed with SIGKILL mid-run, then started again: several documents.

Extends ``tests/flows/test_resume.py`` (one scanned document, the whole process group killed, its
helpers reused here) to a folder of three documents where only the *ingest process* is killed (as
an out-of-memory killer does: its guard worker and Prefect server are orphaned, and cleaned up by
the test afterwards), and to an exact comparison of the points with a clean run.

``folioflow ingest`` runs as a real process (Prefect ephemeral mode, embedded Qdrant Edge store)
over a folder with a born-digital report and two image-only scans of 6 pages each (CPU OCR, about
a second a page). When three pages of the first scan are in the per-page OCR cache the process
gets SIGKILL, with no chance to clean up. The second run must:

* complete with every document indexed;
* not repeat finished OCR: every page cached before the kill comes back with ``cache="hit"``
  (the converted documents are kept under ``data/documents``);
* leave exactly the right points: the same point ids per document as a clean run over the same
  folder (sharing the OCR cache, so the page content is the same), no pending point, no point of a
  document without a record, and the chunk count of every record equal to its points.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from folioflow.flows.reliability.hostile import long_pdf
from folioflow.indexing.store import StoreSettings, open_store
from folioflow.ocr.ids import sha256_file
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy
from tests.flows.test_resume import _cached_pages

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def ingest_cmd(docs: Path, data: Path, report: Path) -> list[str]:
    return [sys.executable, "-m", "folioflow.flows.cli", "ingest", str(docs), "--data-dir", str(data), "--workers", "1",
            "--report", str(report), "--no-progress"]


def env(tmp_path: Path) -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "OMP_THREAD_LIMIT": "1",
           "PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    out.pop("PREFECT_API_URL", None)
    return out


def cached_pages(cache: Path, content_hash: str) -> set[int]:
    return _cached_pages(cache.parent, content_hash)


def store_state(data: Path) -> tuple[dict[str, set[str]], dict[str, int], int, int]:
    """(point ids per recorded document, chunks per record, pending points, committed points)."""
    store = open_store(StoreSettings(data_dir=data))
    try:
        records = store.list_documents()
        ids = {r.path: store.point_ids(r.doc_id) for r in records}
        return ids, {r.path: r.chunks for r in records}, store.pending_count(), store.count()
    finally:
        store.close()


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("resume-docs")
    scratch = tmp_path_factory.mktemp("resume-src")
    write_sample_pdf(folder / "c-report.pdf")
    for name, start in (("a-scan", 0), ("b-scan", 100)):
        text = long_pdf(scratch / f"{name}.pdf", 6 + start)
        import pypdfium2 as pdfium

        src = pdfium.PdfDocument(str(text))
        part = pdfium.PdfDocument.new()
        part.import_pages(src, list(range(start, start + 6)))
        part.save(str(scratch / f"{name}-part.pdf"))
        write_scanned_copy(scratch / f"{name}-part.pdf", folder / f"{name}.pdf", dpi=150)
    return folder


def test_killed_ingest_resumes_without_repeating_ocr_and_with_exact_points(docs, tmp_path):
    data = tmp_path / "data"
    scan_hash = sha256_file(docs / "a-scan.pdf")
    proc = subprocess.Popen(ingest_cmd(docs, data, tmp_path / "r1.json"), env=env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 400
        while len(cached_pages(data / "ocr-cache", scan_hash)) < 3:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "OCR never started"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # the ingest process only, as an OOM killer would
        proc.wait(30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # orphans of the killed run (Prefect's server, guard)
    before = cached_pages(data / "ocr-cache", scan_hash)
    assert 3 <= len(before) < 6
    assert not (tmp_path / "r1.json").exists()

    second = subprocess.run(ingest_cmd(docs, data, tmp_path / "r2.json"), env=env(tmp_path), cwd=tmp_path,
                            capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    records = {Path(r["source"]).name: r for r in json.loads((tmp_path / "r2.json").read_text())}
    assert {n: r["status"] for n, r in records.items()} == {"a-scan.pdf": "indexed", "b-scan.pdf": "indexed",
                                                           "c-report.pdf": "indexed"}
    scan = json.loads((data / "documents" / f"{records['a-scan.pdf']['doc_id']}.json").read_text())
    hits = {p["number"] for p in scan["pages"] if p["attributes"].get("cache") == "hit"}
    assert before <= hits  # no finished page was OCRed again
    assert len(scan["pages"]) == 6 and all(p["status"] == "ok" for p in scan["pages"])

    ids, chunks, pending, committed = store_state(data)
    assert pending == 0
    assert {path: len(point_ids) for path, point_ids in ids.items()} == chunks
    assert committed == sum(chunks.values())  # no point outside a recorded document

    # A clean run over the same folder, sharing the OCR cache: exactly the same points.
    clean = tmp_path / "clean"
    clean.mkdir()
    subprocess.run(["cp", "-r", str(data / "ocr-cache"), str(clean / "ocr-cache")], check=True)
    third = subprocess.run(ingest_cmd(docs, clean, tmp_path / "r3.json"), env=env(tmp_path), cwd=tmp_path,
                           capture_output=True, text=True, timeout=900)
    assert third.returncode == 0, third.stderr[-3000:]
    assert store_state(clean)[0] == ids
