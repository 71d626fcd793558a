"""Ingestion bookkeeping a tester broke: what a re-run skips, retries and reports.

* ``force``: a rewrite that keeps size and mtime is skipped by default (change-token fast path);
  ``force`` converts, chunks, embeds and upserts every document again, with no duplicate points.
* OCR settings are part of the skip fingerprint, and the page cache is keyed by them: a re-run with
  other OCR languages re-processes a scan (and does not reuse the pages OCR'd under the old ones).
* A document whose only page failed is ``failed`` (report and registry), retried next run, its
  page error prefixed once; a document with some failed pages lands, keeps the page errors in its
  record and is retried (its good pages come from the page cache).
* A pruned local document is reported with the path it was indexed from.
* A failed re-conversion keeps what the still-searchable version reads as (its text profile).

Documents are generated: uncompressed PDFs (:func:`folioflow.flows.reliability.hostile.raw_pdf`, so an edit
can keep the size), a scanned PNG drawn with Pillow, and a page whose image declares 90,000 x
90,000 pixels (refused before decoding: the page fails with the reason).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from folioflow.flows.ingest import run_ingest
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.reliability.hostile import image_page, raw_pdf, text_page
from folioflow.flows.settings import load_settings
from folioflow.flows.stages import index_fingerprint, ocr_identity, settings_change
from folioflow.indexing.store import open_store
from folioflow.ocr.engines.text_layer import TEXT_ENGINE_VERSION
from folioflow.ocr.fidelity import FIDELITY_VERSION
from folioflow.ocr.finish import CONVERSION_VERSION

pytestmark = pytest.mark.slow

BOMB_ERROR = "page 1: image exceeds the pixel limit (90,000 x 90,000 px at 8 bits per pixel"


def _bomb_pdf(path: Path, cover: bool = False) -> Path:
    """A PDF whose last page holds one image declaring 90,000 x 90,000 px (its stream is only
    10,000 x 10,000): that page fails with "page N: image exceeds the pixel limit"."""
    pages = ([text_page("Cover", "The cover page text is fine and mentions the harbour lease.")] if cover else [])
    raw_pdf(path, pages + [image_page(10_000, 10_000)])
    data = path.read_bytes()
    assert data.count(b"/Width 10000 /Height 10000") == 1
    path.write_bytes(data.replace(b"/Width 10000 /Height 10000", b"/Width 90000 /Height 90000"))  # same size
    return path


def _scan_png(path: Path) -> Path:
    """A one-page 'scan': black text on white, no text layer."""
    from PIL import Image, ImageDraw

    image = Image.new("L", (1700, 700), 255)
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(["Quarterly Statement", "The custody fee for the harbour fund is 42 basis points.",
                              "Settlement occurs two business days after the trade."]):
        draw.text((80, 80 + 180 * i), line, fill=0, font_size=56 if i == 0 else 44)
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, dpi=(200, 200))
    return path


def _store(settings):
    return open_store(Pipeline.store_settings(settings))


def _texts(settings, doc_id: str) -> list[str]:
    store = _store(settings)
    try:
        return [p.get("page_content") or p.get("text") or "" for p in store.payloads(doc_id)]
    finally:
        store.close()


def _records(settings) -> dict:
    store = _store(settings)
    try:
        return {Path(r.path).name: r for r in store.list_documents()}
    finally:
        store.close()


def _point_ids(settings, doc_id: str) -> set[str]:
    store = _store(settings)
    try:
        return store.point_ids(doc_id)
    finally:
        store.close()


def _by_name(report) -> dict:
    return {Path(d.source).name: d for d in report.documents}


def test_force_reprocesses_a_rewrite_that_keeps_size_and_mtime(tmp_path, prefect_harness):
    docs = tmp_path / "docs"
    memo = raw_pdf(docs / "memo.pdf", [text_page("Custody Memo", "The custody fee is 1234 dollars per year.",
                                                 "Fees are billed quarterly in arrears.")])
    raw_pdf(docs / "other.pdf", [text_page("Settlement Memo", "Trades settle two business days later.")])
    settings = load_settings(data_dir=tmp_path / "data", workers=1)
    first = _by_name(run_ingest([str(docs)], settings))
    assert first["memo.pdf"].status == "indexed" and first["other.pdf"].status == "indexed"
    memo_id, other_id = first["memo.pdf"].doc_id, first["other.pdf"].doc_id
    other_points = _point_ids(settings, other_id)

    # Rewrite in place with the same size and mtime: the default fast path cannot see it.
    stat = memo.stat()
    memo.write_bytes(memo.read_bytes().replace(b"1234 dollars", b"5678 dollars"))
    os.utime(memo, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert memo.stat().st_size == stat.st_size and memo.stat().st_mtime_ns == stat.st_mtime_ns
    stale = _by_name(run_ingest([str(docs)], settings))
    assert stale["memo.pdf"].status == "skipped" and stale["memo.pdf"].change == "unchanged (change token)"
    assert any("1234" in t for t in _texts(settings, memo_id))

    forced = _by_name(run_ingest([str(docs)], settings, force=True))
    assert forced["memo.pdf"].status == "indexed" and forced["memo.pdf"].change == "changed"
    assert forced["other.pdf"].status == "indexed" and forced["other.pdf"].change == "forced"
    texts = _texts(settings, memo_id)
    assert any("5678" in t for t in texts) and not any("1234" in t for t in texts)
    assert len(_point_ids(settings, memo_id)) == forced["memo.pdf"].chunks  # replaced, not added
    assert _point_ids(settings, other_id) == other_points  # deterministic ids: the same points

    # Without force the next run skips both again (the record holds the new token and hash).
    after = _by_name(run_ingest([str(docs)], settings))
    assert {n: d.status for n, d in after.items()} == {"memo.pdf": "skipped", "other.pdf": "skipped"}


def test_ocr_identity_holds_what_decides_the_text_only():
    base = load_settings(data_dir="unused")
    same = [base.model_copy(update=u) for u in ({"workers": 7}, {"retries": 0}, {"ocr_api_key": "secret"},
                                                 {"vlm": {"request_timeout_s": 5}}, {"force": True})]
    assert all(ocr_identity(s) == ocr_identity(base) for s in same)
    other = [base.model_copy(update=u) for u in ({"languages": ["eng", "fra"]}, {"cpu_ocr_engine": "rapidocr"},
                                                  {"engine": "ocr"}, {"dpi": 300})]
    assert all(ocr_identity(s) != ocr_identity(base) for s in other)
    assert ocr_identity(base.model_copy(update={"engine": "text", "languages": ["deu"]})) == {"engine": "text", "conversion": CONVERSION_VERSION,
                                                                                     "text_engine": TEXT_ENGINE_VERSION,
                                                                                     "fidelity": FIDELITY_VERSION}

    from folioflow.chunking.chunker import ChunkerOptions

    options = ChunkerOptions(max_tokens=256)
    old = index_fingerprint("m", options, ocr_identity(base))
    new = index_fingerprint("m", options, ocr_identity(other[0]))
    assert settings_change(old, new) == "OCR (settings or conversion version) changed"
    before = old.rsplit("|", 1)[0]  # a record written before OCR settings were in the fingerprint
    assert settings_change(before, new) == "OCR (settings or conversion version) changed"
    assert settings_change(old, index_fingerprint("n", ChunkerOptions(max_tokens=128), ocr_identity(base))) == \
        "embedding model, chunking (options or chunker version) changed"


def test_changed_ocr_settings_reprocess_a_scan_without_reusing_its_pages(tmp_path, prefect_harness):
    scan = _scan_png(tmp_path / "docs" / "statement.png")
    eng = load_settings(data_dir=tmp_path / "data", workers=1, languages=["eng"])
    eng_fra = eng.model_copy(update={"languages": ["eng", "fra"]})

    first = run_ingest([str(scan)], eng).documents[0]
    assert first.status == "indexed" and first.engines == ["tesseract"] and first.cached_pages == []
    again = run_ingest([str(scan)], eng).documents[0]
    assert again.status == "skipped"

    changed = run_ingest([str(scan)], eng_fra).documents[0]
    assert changed.status == "indexed" and changed.change == "OCR (settings or conversion version) changed"
    assert changed.cached_pages == []  # the page cached under languages [eng] is not reused
    assert run_ingest([str(scan)], eng_fra).documents[0].status == "skipped"

    # Back to [eng]: re-processed again, and now the page cached under [eng] is the right one to reuse.
    back = run_ingest([str(scan)], eng).documents[0]
    assert back.status == "indexed" and back.change == "OCR (settings or conversion version) changed" and back.cached_pages == [1]


def test_failed_pages_fail_or_mark_the_document_and_are_retried(tmp_path, prefect_harness):
    docs = tmp_path / "docs"
    _bomb_pdf(docs / "only-page-bad.pdf")
    _bomb_pdf(docs / "second-page-bad.pdf", cover=True)
    settings = load_settings(data_dir=tmp_path / "data", workers=1)

    first = _by_name(run_ingest([str(docs)], settings))
    bad = first["only-page-bad.pdf"]
    assert bad.status == "failed" and bad.chunks == 0
    assert bad.error.startswith(f"every page failed (1 of 1): {BOMB_ERROR}")
    assert "page 1: page 1:" not in bad.error
    assert bad.page_errors and bad.page_errors[0].startswith(BOMB_ERROR)
    half = first["second-page-bad.pdf"]
    assert half.status == "indexed" and half.failed_pages == [2] and half.chunks >= 1
    assert half.page_errors[0].startswith("page 2: image exceeds the pixel limit") and "page 2: page 2:" not in \
        half.page_errors[0]

    records = _records(settings)
    assert records["only-page-bad.pdf"].status == "failed"
    assert records["only-page-bad.pdf"].errors[0].startswith(BOMB_ERROR)
    assert records["second-page-bad.pdf"].status == "indexed"
    assert records["second-page-bad.pdf"].metadata["failed_pages"] == [2]
    assert records["second-page-bad.pdf"].errors[0].startswith("page 2: image exceeds the pixel limit")
    points = _point_ids(settings, half.doc_id)

    second = _by_name(run_ingest([str(docs)], settings))
    assert second["only-page-bad.pdf"].status == "failed"
    assert second["only-page-bad.pdf"].change == "retry: the last attempt failed"
    retried = second["second-page-bad.pdf"]
    assert retried.status == "indexed" and retried.change == "retry: page 2 failed last time"
    assert retried.cached_pages == [1] and retried.failed_pages == [2]  # the good page is not converted again
    assert _point_ids(settings, half.doc_id) == points


def test_a_failed_reconversion_keeps_what_the_searchable_version_reads_as(tmp_path, prefect_harness):
    """A contract under an opaque name reads as ``legal``; rewritten into a file whose only page
    fails, it is ``failed`` while its previous chunks stay searchable, and its record still says
    what those chunks read as, so the collection keeps the legal profile."""
    from folioflow.flows.queries import collection_profile

    docs = tmp_path / "docs"
    raw_pdf(docs / "doc-0001.pdf", [text_page(
        "Supply Agreement",
        "This Supply Agreement is made by and between Harbour Foods Inc. (the \"Buyer\") and Cedar Mills LLC.",
        "WHEREAS, the parties wish to set the terms of supply; NOW, THEREFORE, the parties agree as follows.",
        "This Agreement shall be governed by the laws of the State of Delaware.",
        "IN WITNESS WHEREOF, the parties hereto have signed this Agreement.")])
    settings = load_settings(data_dir=tmp_path / "data", workers=1)
    first = _by_name(run_ingest([str(docs)], settings))["doc-0001.pdf"]
    assert first.status == "indexed" and first.chunks >= 1
    assert _records(settings)["doc-0001.pdf"].metadata["text_profile"] == "legal"
    points = _point_ids(settings, first.doc_id)

    _bomb_pdf(docs / "doc-0001.pdf")
    second = _by_name(run_ingest([str(docs)], settings))["doc-0001.pdf"]
    assert second.status == "failed"
    record = _records(settings)["doc-0001.pdf"]
    assert record.status == "failed" and record.chunks == first.chunks
    assert record.errors[0].startswith(BOMB_ERROR)
    assert record.metadata["text_profile"] == "legal"
    assert _point_ids(settings, first.doc_id) == points
    assert collection_profile([record]) == "legal"


def test_pruned_local_document_keeps_the_path_it_was_indexed_from(tmp_path, prefect_harness):
    folder = tmp_path / "docs"
    gone = raw_pdf(folder / "sub" / "gone.pdf", [text_page("Gone", "This memo will be deleted from disk.")])
    raw_pdf(folder / "kept.pdf", [text_page("Kept", "This memo stays.")])
    settings = load_settings(data_dir=tmp_path / "data", workers=1)
    assert {d.status for d in run_ingest([str(folder)], settings).documents} == {"indexed"}
    gone.unlink()
    pruned = [d for d in run_ingest([str(folder)], settings, prune=True).documents if d.status == "pruned"]
    assert [d.source for d in pruned] == [str(gone.resolve())]


def test_a_new_tenant_reindexes_unchanged_documents(tmp_path, prefect_harness):
    """A tester re-ran with --tenant after an untenanted run: both documents were skipped as
    unchanged and the tenant's query found nothing. The tenant is on every point's payload, so a
    document whose recorded tenant differs is indexed again (same ids: replaced, not added)."""
    docs = tmp_path / "docs"
    raw_pdf(docs / "memo.pdf", [text_page("Custody Memo", "The custody fee is 1234 dollars per year.")])
    plain = load_settings(data_dir=tmp_path / "data", workers=1)
    first = _by_name(run_ingest([str(docs)], plain))["memo.pdf"]
    assert first.status == "indexed"
    ids = _point_ids(plain, first.doc_id)

    acme = load_settings(data_dir=tmp_path / "data", workers=1, tenant="acme")
    moved = _by_name(run_ingest([str(docs)], acme))["memo.pdf"]
    assert moved.status == "indexed" and moved.change == "tenant changed (None -> 'acme')", moved
    assert _records(acme)["memo.pdf"].tenant == "acme" and _point_ids(acme, first.doc_id) == ids
    again = _by_name(run_ingest([str(docs)], acme))["memo.pdf"]
    assert again.status == "skipped" and again.change == "unchanged (change token)"


def test_a_refused_document_says_what_changed(tmp_path, prefect_harness):
    """A document refused when it is opened (not a PDF, a truncated file) still gets its ``change``
    and content hash in the report: ``new`` the first time, ``changed`` when an indexed file is
    replaced by a broken one (a trial found ``change: null`` for every refused input)."""
    from folioflow.ocr.samples import write_sample_pdf

    docs = tmp_path / "docs"
    docs.mkdir()
    write_sample_pdf(docs / "report.pdf")
    (docs / "notes.pdf").write_bytes(b"PK\x03\x04 a zip archive, not a PDF")
    settings = load_settings(data_dir=tmp_path / "data", workers=1)
    first = _by_name(run_ingest([str(docs)], settings))
    assert first["report.pdf"].status == "indexed" and first["report.pdf"].change == "new"
    refused = first["notes.pdf"]
    assert refused.status == "failed" and refused.change == "new" and refused.content_hash, refused
    assert "not a PDF" in (refused.error or ""), refused.error

    (docs / "report.pdf").write_bytes((docs / "report.pdf").read_bytes()[:400])  # cut short: refused on opening
    second = _by_name(run_ingest([str(docs)], settings))
    assert second["report.pdf"].status == "failed" and second["report.pdf"].change == "changed", second["report.pdf"]
    # a document refused on opening is not recorded (nothing of it was converted): tried again as new
    assert second["notes.pdf"].status == "failed" and second["notes.pdf"].change == "new"
