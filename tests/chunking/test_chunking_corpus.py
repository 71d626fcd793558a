"""Invariant tests over real ground-truth Markdown from ``../shared/corpus`` (skipped when absent):
docling ground truth (Markdown and JSON with bboxes), OmniDocBench pages, ICDAR 2013 tables,
olmOCR-bench pages with their formulas, FinanceBench filings through the text layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.chunking.chunker import Chunker, ChunkerOptions
from folioflow.chunking.invariants import check_chunks, source_facts
from folioflow.chunking.tokens import default_counter
from tests.chunking import corpus_docs

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def counter():
    return default_counter()


@pytest.fixture(scope="module")
def sets(corpus: Path):
    return corpus_docs.corpus_sets(corpus, filings=2, filing_pages=40)


FAMILIES = ["docling_md", "docling_json", "omnidocbench", "icdar2013", "olmocr_bench", "financebench"]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("max_tokens", [256, 96])
def test_invariants_hold_on_real_documents(sets, counter, family, max_tokens):
    chunker = Chunker(counter, ChunkerOptions(max_tokens=max_tokens))
    failures = {}
    for doc in sets[family]:
        chunks = chunker.chunk(doc)
        errors = check_chunks(doc, chunks, counter, max_tokens)
        if errors:
            failures[doc.source.path] = errors[:4]
    assert not failures, failures


def test_families_exercise_tables_and_formulas(sets):
    """The corpus families really contain what the invariants are about (else they prove little)."""
    tables = {f: sum(len(source_facts(d).tables) for d in sets[f]) for f in FAMILIES}
    formulas = {f: sum(len(source_facts(d).formulas) for d in sets[f]) for f in FAMILIES}
    assert tables["icdar2013"] >= 50 and tables["omnidocbench"] >= 5 and tables["docling_md"] >= 5
    assert formulas["omnidocbench"] >= 10 and formulas["olmocr_bench"] >= 10


@pytest.mark.parametrize("family", ["docling_md", "docling_json"])
def test_heading_paths_follow_the_markdown_headings(sets, counter, family):
    chunker = Chunker(counter, ChunkerOptions(infer_heading_levels=False))
    from folioflow.chunking.invariants import path_failures

    failures = {}
    for doc in sets[family]:
        errors = path_failures(doc, chunker.chunk(doc))
        if errors:
            failures[doc.source.path] = errors[:3]
    assert not failures, failures


def test_docling_layout_gives_bboxes_pages_and_furniture(sets, counter):
    doc = next(d for d in sets["docling_json"] if d.source.path == "redp5110_sampled.json")
    chunks = Chunker(counter).chunk(doc)
    assert all(c.bboxes for c in chunks)
    for c in chunks:
        assert {b.page for b in c.bboxes} <= set(range(c.page_start, c.page_end + 1))
    # docling labels the running footers; they are metadata, never chunk text
    footers = {t for c in chunks for t in c.metadata.get("page_footers", [])}
    assert footers
    assert not any(f in c.text for c in chunks for f in footers if len(f) > 12)


def test_icdar_tables_continued_across_pages_are_merged(corpus, counter):
    doc = corpus_docs.icdar_document(corpus / corpus_docs.ICDAR / "eu-004-str.xml")
    chunker = Chunker(counter)
    chunks = chunker.chunk(doc)
    spanning = [c for c in chunks if c.kind.value == "table" and c.page_end > c.page_start]
    multi_region = sum(1 for p in doc.pages if p.markdown.startswith("|") or p.markdown.startswith("<table"))
    assert multi_region == 0 or spanning


@pytest.mark.slow
def test_a_500_page_filing_chunks_within_the_limit(corpus, counter):
    path = corpus / corpus_docs.FINANCEBENCH / "PEPSICO_2021_10K.pdf"
    doc = corpus_docs.pdf_text_document(path)
    assert len(doc.pages) > 500
    chunks = Chunker(counter).chunk(doc)
    assert check_chunks(doc, chunks, counter, 256) == []
    headers = {t for c in chunks for t in c.metadata.get("page_headers", [])}
    assert "Table of Contents" in headers  # the filing's running header is furniture
