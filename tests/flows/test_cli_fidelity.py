"""Issue 23 as a user meets it: an invoice number printed only in the running header is found by
`folioflow query` in sparse and hybrid modes, `show` marks it as furniture, the run report sums up
every page's fidelity check, and `status --documents` names the partial pages and their reasons
(also for a record written before ingest recorded them, from its converted document)."""

from __future__ import annotations

import json
import os

import pytest

from folioflow.flows.settings import Settings
from folioflow.indexing.store import open_store
from tests.flows.test_cli_ingest import folioflow
from tests.ocr import fidelity_docs as docs

pytestmark = pytest.mark.slow


def test_header_only_invoice_number_is_found_and_shown_as_furniture(tmp_path):
    invoice = docs.invoice_pdf(tmp_path / "invoice.pdf")
    letter = docs.handwritten_png(tmp_path / "letter.png")
    home = tmp_path / "prefect-home"
    run = folioflow("ingest", str(invoice), str(letter), "--report", "report.json", "--no-progress",
                    cwd=tmp_path, home=home)
    assert run.returncode == 0, run.stderr[-3000:]
    records = {r["source"].rsplit("/", 1)[-1]: r for r in json.loads((tmp_path / "report.json").read_text())}
    assert records["invoice.pdf"]["status"] == "indexed" and records["invoice.pdf"]["partial_pages"] == []
    assert records["invoice.pdf"]["fidelity"]["checked"] == 3 and records["invoice.pdf"]["fidelity"]["ok"] == 3
    assert records["letter.png"]["partial_pages"] == [1]
    assert any("fidelity: " in e for e in records["letter.png"]["page_errors"])
    assert "partial" in run.stdout  # the summary table counts partial pages

    for mode in ("sparse", "hybrid"):
        query = folioflow("query", docs.INVOICE_NUMBER, "--mode", mode, "-k", "3", "--json", cwd=tmp_path, home=home)
        assert query.returncode == 0, query.stderr[-3000:]
        hits = json.loads(query.stdout)
        assert hits and hits[0]["doc_id"] == records["invoice.pdf"]["doc_id"], (mode, hits)

    show = folioflow("show", str(invoice), "--page", "2", cwd=tmp_path, home=home)
    assert show.returncode == 0, show.stderr[-3000:]
    assert f"<!-- furniture (page header): Northwind Legal LLP Invoice {docs.INVOICE_NUMBER} -->" in show.stdout
    assert "<!-- furniture (page footer): Page 2 of 3 -->" in show.stdout
    shown = folioflow("show", str(letter), cwd=tmp_path, home=home)
    assert "<!-- page 1 partial: fidelity:" in shown.stdout

    status = folioflow("status", "--documents", "--json", cwd=tmp_path, home=home)
    assert status.returncode == 0, status.stderr[-3000:]
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in json.loads(status.stdout)["document_list"]}
    assert rows["invoice.pdf"]["partial_pages"] == [] and rows["invoice.pdf"]["partial_notes"] == []
    assert rows["letter.png"]["partial_pages"] == [1]
    [note] = rows["letter.png"]["partial_notes"]
    assert note.startswith("page 1: fidelity: ") and note.removeprefix("page 1: ") in records["letter.png"]["page_errors"][0]
    table = folioflow("status", "--documents", cwd=tmp_path, home=home).stdout
    assert "indexed, 1 page partial" in " ".join(table.split()), table
    assert f"letter.png: {note}" in table, table

    # a record written before ingest recorded partial pages: read from the converted document kept
    store = open_store(Settings(data_dir=tmp_path / ".folioflow").store_settings())
    try:
        record = store.get_document(records["letter.png"]["doc_id"])
        assert record is not None and record.metadata["partial_notes"] == [note]
        old = {k: v for k, v in record.metadata.items() if k not in ("partial_pages", "partial_notes")}
        store.put_record(record.model_copy(update={"metadata": old}))
    finally:
        store.close()
    again = json.loads(folioflow("status", "--documents", "--json", cwd=tmp_path, home=home).stdout)
    row = next(r for r in again["document_list"] if r["path"].endswith("letter.png"))
    assert row["partial_pages"] == [1] and row["partial_notes"] == [note]


def test_skipped_document_reports_its_recorded_partial_pages(tmp_path):
    """A re-run that skips the letter reports its partial page and reason as `status` shows them:
    all skipped (decided before the flow), skipped on its content hash (the flow), skipped by
    `reindex` (same chunking), and for a record written before ingest recorded partial pages (read
    from its converted document)."""
    letter = docs.handwritten_png(tmp_path / "letter.png")
    home = tmp_path / "prefect-home"

    def ingest(report: str) -> dict:
        run = folioflow("ingest", str(letter), "--report", report, "--no-progress", cwd=tmp_path, home=home)
        assert run.returncode == 0, run.stderr[-3000:]
        [record] = json.loads((tmp_path / report).read_text())
        return record

    first = ingest("first.json")
    assert first["status"] == "indexed" and first["partial_pages"] == [1]
    status = json.loads(folioflow("status", "--documents", "--json", cwd=tmp_path, home=home).stdout)
    [note] = status["document_list"][0]["partial_notes"]
    assert note in first["page_errors"]

    unchanged = ingest("unchanged.json")  # every input unchanged: decided before the flow starts
    assert unchanged["status"] == "skipped" and unchanged["change"] == "unchanged (change token)"
    assert unchanged["partial_pages"] == [1] and unchanged["page_errors"] == [note]
    assert unchanged["chunks"] == first["chunks"] and unchanged["engines"] == first["engines"]

    os.utime(letter, (letter.stat().st_atime, letter.stat().st_mtime + 60))  # same bytes, new change token
    touched = ingest("touched.json")
    assert touched["status"] == "skipped" and touched["change"] == "unchanged (content hash)"
    assert touched["partial_pages"] == [1] and touched["page_errors"] == [note]

    reindexed = folioflow("reindex", "--report", "reindex.json", "--no-progress", cwd=tmp_path, home=home)
    assert reindexed.returncode == 0, reindexed.stderr[-3000:]
    [again] = json.loads((tmp_path / "reindex.json").read_text())  # reindex skips it too (same chunking)
    assert again["status"] == "skipped" and again["partial_pages"] == [1] and again["page_errors"] == [note]

    store = open_store(Settings(data_dir=tmp_path / ".folioflow").store_settings())
    try:
        record = store.get_document(first["doc_id"])
        assert record is not None
        old = {k: v for k, v in record.metadata.items() if k not in ("partial_pages", "partial_notes")}
        store.put_record(record.model_copy(update={"metadata": old}))
    finally:
        store.close()
    older = ingest("older.json")
    assert older["status"] == "skipped" and older["partial_pages"] == [1] and older["page_errors"] == [note]
