"""The whole path on generated documents: ingest flow, skip on re-run, change, prune, failures.

Documents: the generated two-page sample (heading, paragraph, table, formula), an image-only
scanned TIFF copy of it, and a file of non-PDF bytes named ``.pdf``, in one folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.flows.ingest import run_ingest
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.settings import load_settings
from folioflow.indexing.store import SearchFilter, open_store
from folioflow.ocr.ids import doc_id_for
from folioflow.ocr.samples import SAMPLE_FACTS, write_sample_pdf, write_scanned_copy

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    sample = write_sample_pdf(folder / "report.pdf")
    write_scanned_copy(sample, folder / "scans" / "report-scan.tif", dpi=200)
    (folder / "broken.pdf").write_bytes(b"PK\x03\x04 this is a zip archive, not a PDF")
    return folder


def _points(settings) -> dict[str, set[str]]:
    store = open_store(Pipeline.store_settings(settings))
    try:
        return {rec.doc_id: store.point_ids(rec.doc_id) for rec in store.list_documents()}
    finally:
        store.close()


def test_ingest_skip_change_prune(docs, tmp_path, prefect_harness):
    settings = load_settings(data_dir=tmp_path / "data", workers=2)
    first = run_ingest([str(docs)], settings)
    by_path = {Path(d.source).name: d for d in first.documents}
    assert set(by_path) == {"report.pdf", "report-scan.tif", "broken.pdf"}

    report = by_path["report.pdf"]
    assert report.status == "indexed" and report.pages == 2 and report.chunks >= 3
    assert report.engines == ["text", "text"]
    scan = by_path["report-scan.tif"]
    assert scan.status == "indexed" and scan.pages == 2
    assert all(engine != "text" for engine in scan.engines)  # image pages went to CPU OCR
    broken = by_path["broken.pdf"]
    assert broken.status == "failed" and broken.error.startswith("not a PDF")

    points = _points(settings)
    assert sum(len(ids) for ids in points.values()) == report.chunks + scan.chunks

    # Second identical run: nothing converted or embedded, exactly the same points.
    second = run_ingest([str(docs)], settings)
    statuses = {Path(d.source).name: d.status for d in second.documents}
    assert statuses == {"report.pdf": "skipped", "report-scan.tif": "skipped", "broken.pdf": "failed"}
    assert second.pages_processed == 0
    assert _points(settings) == points

    # A changed document: its points are replaced, none of the old ones stay behind.
    changed = docs / "report.pdf"
    write_sample_pdf(changed)
    changed.write_bytes(changed.read_bytes() + b"\n% appended comment changes the bytes\n")
    third = run_ingest([str(docs)], settings)
    assert {Path(d.source).name: d.status for d in third.documents}["report.pdf"] == "indexed"
    after = _points(settings)
    assert set(after) == set(points)

    # Removed from the source: pruned with --prune.
    (docs / "scans" / "report-scan.tif").unlink()
    fourth = run_ingest([str(docs)], settings, prune=True)
    pruned = [d for d in fourth.documents if d.status == "pruned"]
    assert [Path(d.source).name for d in pruned] == ["report-scan.tif"]
    assert set(_points(settings)) == {doc_id_for(docs / "report.pdf")}


def test_query_finds_the_right_page(docs, tmp_path, prefect_harness):
    from folioflow.flows.cli.query_view import run_query

    settings = load_settings(data_dir=tmp_path / "data")
    run_ingest([str(docs / "report.pdf")], settings)
    hits = run_query(settings, "Which state's law governs the agreement?", k=3, mode="hybrid")
    top = hits[0]
    assert SAMPLE_FACTS["law"] in top["text"]
    assert (top["page_start"], top["page_end"]) == (2, 2)
    assert top["heading_path"] == ["3 Governing Law"]
    dense = run_query(settings, "operating margin improvement", k=2, mode="dense")
    assert any(SAMPLE_FACTS["margin"] in hit["text"] and hit["page_start"] == 1 for hit in dense)


def test_documents_filter_by_page(docs, tmp_path, prefect_harness):
    settings = load_settings(data_dir=tmp_path / "data")
    run_ingest([str(docs / "report.pdf")], settings)
    store = open_store(Pipeline.store_settings(settings))
    try:
        page2 = store.count(SearchFilter(page_from=2, page_to=2))
        assert 0 < page2 < store.count()
    finally:
        store.close()


def test_emptied_folder_is_pruned_and_an_empty_glob_is_reported(tmp_path, prefect_harness):
    """A folder whose last document was removed still prunes it (an empty listing is not "no
    listing"), and a glob that matches nothing is a failed row with its reason, not silence."""
    folder = tmp_path / "inbox"
    write_sample_pdf(folder / "memo.pdf")
    settings = load_settings(data_dir=tmp_path / "data")
    assert [d.status for d in run_ingest([str(folder)], settings).documents] == ["indexed"]

    (folder / "memo.pdf").unlink()
    run = run_ingest([str(folder), str(tmp_path / "nowhere" / "*.pdf")], settings, prune=True)
    by_status = {d.status: d for d in run.documents}
    assert set(by_status) == {"pruned", "failed"}
    assert Path(by_status["pruned"].source).name == "memo.pdf"
    assert by_status["failed"].error.startswith("no supported file matches")
    assert _points(settings) == {}


def test_prune_keeps_files_named_on_an_earlier_run_that_the_folder_walk_skips(tmp_path, prefect_harness):
    """A breaker's case: a hidden file and a file without an extension, ingested by name, were
    pruned by a later ``ingest FOLDER --prune`` although both were still on disk."""
    folder = tmp_path / "inbox"
    write_sample_pdf(folder / "memo.pdf")
    write_sample_pdf(folder / ".hidden.pdf")
    write_sample_pdf(folder / "scan_noext")
    settings = load_settings(data_dir=tmp_path / "data")
    first = run_ingest([str(folder), str(folder / ".hidden.pdf"), str(folder / "scan_noext")], settings)
    assert sorted(Path(d.source).name for d in first.documents if d.status == "indexed") == \
        [".hidden.pdf", "memo.pdf", "scan_noext"]

    (folder / "memo.pdf").unlink()
    run = run_ingest([str(folder)], settings, prune=True)
    assert [Path(d.source).name for d in run.documents if d.status == "pruned"] == ["memo.pdf"]
    assert set(_points(settings)) == {doc_id_for(folder / ".hidden.pdf"), doc_id_for(folder / "scan_noext")}
