"""Query expansion: glossary matching, files, and its effect on a real ranking."""

from __future__ import annotations

import json

import pytest

from folioflow.indexing.glossary import FINANCE, Glossary, load_glossary
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import StoreSettings, open_store
from folioflow.ocr.errors import ConfigurationError

from .conftest import make_document


def test_finance_glossary_appends_filing_wording():
    q = "What is the FY2018 COGS for 3M? Use the P&L and the cash flow statement."
    expanded = FINANCE.expand(q)
    lines = expanded.split("\n")
    assert lines[0] == q  # the question itself is searched unchanged, wording appended after it
    assert lines[1].startswith("consolidated statements of operations")  # glossary order, not query order
    assert lines[2].startswith("consolidated statements of cash flows")
    assert lines[3] == "cost of sales cost of revenues"
    assert FINANCE.expand("Which law governs the agreement?") == "Which law governs the agreement?"
    assert FINANCE.matches("balance sheet and statement of financial position") == [FINANCE.entries[1].expansion]
    assert FINANCE.matches("cogsworth") == []  # whole words only
    # a metric is followed by the lines of its definition
    assert FINANCE.matches("What was the inventory turnover?") == ["cost of sales inventories"]
    assert FINANCE.matches("Is it a capital-intensive business with positive working capital?") == [
        "total current assets total current liabilities",
        "purchases of property, plant and equipment property, plant and equipment, net total assets net sales"]
    assert FINANCE.matches("What is the dividend retention ratio?") == ["dividends paid net income"]
    assert FINANCE.matches("gross profit margin") == ["gross profit net sales cost of sales"]  # not the net margin too
    assert FINANCE.matches("return on average shareholders\u2019 equity") == ["net income total shareholders equity"]
    assert FINANCE.matches("FCF") == FINANCE.matches("free cash flow") != []
    assert FINANCE.matches("Tier 1 leverage ratio") == []  # a bank's capital measure, not debt-to-equity


def test_glossary_files_and_specs(tmp_path):
    (tmp_path / "legal.json").write_text(json.dumps([{"pattern": r"\bNDA\b", "expansion": "non-disclosure agreement"}]))
    (tmp_path / "legal.yaml").write_text("- pattern: '\\bIP\\b'\n  expansion: intellectual property\n")
    assert load_glossary(tmp_path / "legal.json").expand("nda term?") == "nda term?\nnon-disclosure agreement"
    assert load_glossary(str(tmp_path / "legal.yaml")).matches("Who owns the IP?") == ["intellectual property"]
    assert load_glossary("finance") is FINANCE and load_glossary(None) is FINANCE and load_glossary("none") is None
    (tmp_path / "bad.json").write_text(json.dumps([{"pattern": "(unclosed", "expansion": "x"}]))
    with pytest.raises(ConfigurationError, match="bad pattern"):
        load_glossary(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match="cannot read glossary"):
        load_glossary(tmp_path / "missing.json")
    with pytest.raises(ConfigurationError, match="cannot read glossary"):
        Glossary.from_file((tmp_path / "legal.json").with_suffix(".txt"))  # no such file either


def test_an_abbreviation_finds_the_statement_only_with_the_glossary(tmp_path, embedder):
    item7, item8 = ["Item 7. Management's Discussion and Analysis"], ["Item 8. Financial Statements"]
    parts = [
        (item7 + ["Results of Operations"], "text",
         "Net sales increased 12% in 2018 to $1,204 million, driven by higher volumes in the Industrial segment and "
         "favourable pricing. Cost of sales grew more slowly than net sales, so gross margin improved by 80 basis "
         "points. Operating income rose to $212 million and net income to $150 million.", 31),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF EARNINGS (in millions)\n"
         "Years ended December 31 | 2018 | 2017\nNet sales | $ 1,204 | $ 1,075\nCost of sales | 802 | 724\n"
         "Selling and administrative expenses | 190 | 175\nOperating income | 212 | 176\nNet earnings | $ 150 | $ 121", 52),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF FINANCIAL CONDITION (in millions)\n"
         "December 31 | 2018 | 2017\nCash and equivalents | $ 140 | $ 98\nReceivables | 205 | 188\n"
         "Inventories | 160 | 151\nTotal current assets | 505 | 437\nTotal assets | $ 1,290 | $ 1,180", 53),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)\n"
         "Years ended December 31 | 2018 | 2017\nNet earnings | $ 150 | $ 121\nDepreciation | 64 | 60\n"
         "Additions to property and equipment | (75) | (70)\nDividends paid | (40) | (36)", 54),
    ]
    store = open_store(StoreSettings(data_dir=tmp_path, backend="local"))
    try:
        Indexer(embedder, store).index(*make_document("northwind-10k-2018.pdf", parts))
        query = "What was the FY2018 COGS for Northwind?"
        for mode in ("dense", "hybrid"):
            with_terms = FolioRetriever(store=store, embedder=embedder, k=1, mode=mode).invoke(query)
            without = FolioRetriever(store=store, embedder=embedder, k=1, mode=mode, glossary=None).invoke(query)
            assert with_terms[0].metadata["page_start"] == 52, mode  # the statement holding "Cost of sales"
            assert without[0].metadata["page_start"] != 52, mode
    finally:
        store.close()
