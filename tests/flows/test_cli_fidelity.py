"""Issue 23 as a user meets it: an invoice number printed only in the running header is found by
`folioflow query` in sparse and hybrid modes, `show` marks it as furniture, and the run report
sums up every page's fidelity check."""

from __future__ import annotations

import json

import pytest

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
