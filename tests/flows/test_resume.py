"""A crashed run never repeats finished OCR: `folioflow ingest` is killed with SIGKILL in the middle
of a 6-page scanned document; the next run takes the pages finished before the kill from the page
cache (``cache="hit"`` on the page, ``cached_pages`` in the report) and the index ends exactly
right: one point per chunk, no duplicate or orphan, and a third run changes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from folioflow.flows.pipeline import Pipeline
from folioflow.flows.settings import load_settings
from folioflow.indexing.store import open_store
from folioflow.ocr.ids import sha256_file
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _scanned_pdf(folder: Path, copies: int = 3) -> Path:
    two = write_scanned_copy(write_sample_pdf(folder / "tmp" / "sample.pdf"), folder / "tmp" / "scan2.pdf", dpi=150)
    merged = pdfium.PdfDocument.new()
    source = pdfium.PdfDocument(str(two))
    for _ in range(copies):
        merged.import_pages(source)
    out = folder / "docs" / "scan6.pdf"
    out.parent.mkdir(parents=True, exist_ok=True)
    merged.save(str(out))
    return out


def _ingest(data: Path, docs: Path, home: Path, report: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(home), "OMP_THREAD_LIMIT": "1"}
    env.pop("PREFECT_API_URL", None)
    args = [sys.executable, "-m", "folioflow.flows.cli", "ingest", str(docs), "--data-dir", str(data), "--no-progress"]
    if report:
        args += ["--report", str(report)]
    return subprocess.Popen(args, cwd=data.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _cached_pages(data: Path, content_hash: str) -> set[int]:
    return {int(p.stem) for p in (data / "ocr-cache").glob(f"*/{content_hash}/*/*.json")}


def test_killed_run_resumes_from_the_page_cache(tmp_path):
    scan = _scanned_pdf(tmp_path)
    docs, data, home = scan.parent, tmp_path / "data", tmp_path / "prefect-home"
    content_hash = sha256_file(scan)

    first = _ingest(data, docs, home)
    deadline = time.monotonic() + 600
    while not _cached_pages(data, content_hash):
        assert first.poll() is None, first.stdout.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no page finished in time"
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGKILL)  # the flow process and its conversion processes
    first.wait(30)
    done_before = _cached_pages(data, content_hash)
    assert 0 < len(done_before) < 6, done_before  # killed in the middle of the document

    second = _ingest(data, docs, home, report=tmp_path / "report.json")
    out = second.communicate(timeout=900)[0].decode()
    assert second.returncode == 0, out[-3000:]
    [record] = json.loads((tmp_path / "report.json").read_text())
    assert record["status"] == "indexed" and record["pages"] == 6
    assert set(record["cached_pages"]) == done_before  # finished OCR was not repeated
    document = json.loads((data / "documents" / f"{record['doc_id']}.json").read_text())
    hits = {p["number"] for p in document["pages"] if p["attributes"].get("cache") == "hit"}
    assert hits == done_before
    assert all(p["engine"] != "text" for p in document["pages"])  # real OCR pages

    settings = load_settings(data_dir=data)

    def points() -> dict[str, set[str]]:
        store = open_store(Pipeline.store_settings(settings))
        try:
            records = store.list_documents()
            ids = {r.doc_id: store.point_ids(r.doc_id) for r in records}
            assert store.count() == sum(len(v) for v in ids.values()) == sum(r.chunks for r in records)
            return ids
        finally:
            store.close()

    after = points()
    assert list(after) == [record["doc_id"]] and len(after[record["doc_id"]]) == record["chunks"] > 0

    third = _ingest(data, docs, home, report=tmp_path / "again.json")
    assert third.wait(900) == 0
    assert json.loads((tmp_path / "again.json").read_text())[0]["status"] == "skipped"
    assert points() == after
