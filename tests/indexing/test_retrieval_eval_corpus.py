"""Retrieval evaluation on the corpus: FinanceBench's page numbers are 0-based (checked against the
filings' own text), and two small filings ingested for real are scored from FinanceBench's file."""

from __future__ import annotations

import json

import pytest
from rapidfuzz import fuzz

from folioflow.indexing.evaluation import evaluate_retrieval, load_questions

pytestmark = pytest.mark.corpus


def test_financebench_evidence_pages_are_zero_based(corpus):
    """The evidence page text FinanceBench ships is the text of PDF page ``evidence_page_num + 1``."""
    import pypdfium2 as pdfium

    fb = corpus / "A_finance" / "financebench"
    questions = {q.id: q for q in load_questions(fb / "groundtruth" / "financebench_open_source.jsonl")}
    rows = [json.loads(line) for line in (fb / "groundtruth" / "evidence_pages.jsonl").read_text().splitlines()[:12]]
    checked = 0
    for row in rows:
        path = fb / "pdfs" / f"{row['doc_name']}.pdf"
        if not path.exists():
            continue
        page = next(e.page for e in questions[row["financebench_id"]].evidence if e.page == row["page_index0"] + 1)
        pdf = pdfium.PdfDocument(str(path))
        try:
            scores = {n: fuzz.ratio(" ".join(pdf[n - 1].get_textpage().get_text_range().split()),
                                    " ".join(row["evidence_text_full_page"].split())) for n in (page - 1, page, page + 1)
                      if 1 <= n <= len(pdf)}
        finally:
            pdf.close()
        assert max(scores, key=scores.get) == page, (row["doc_name"], scores)
        checked += 1
    assert checked >= 5


@pytest.mark.slow
def test_two_filings_scored_from_financebench_file(corpus, tmp_path):
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.flows.sources import discover
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation.folio import collection_docs, folio_searchers
    from folioflow.indexing.store import open_store

    fb = corpus / "A_finance" / "financebench"
    names = ["PEPSICO_2023_8K_dated-2023-05-05.pdf", "AMCOR_2022_8K_dated-2022-07-01.pdf"]
    settings = Settings(data_dir=tmp_path / "data")
    pipeline = Pipeline(settings)
    pipeline.warm_up()
    try:
        for file in discover([str(fb / "pdfs" / n) for n in names]).files:
            document = pipeline.stages.convert(pipeline.stages.plan(file, pipeline.known(file)))
            pipeline.index(document, pipeline.stages.chunk(document))
    finally:
        pipeline.close()
    questions = load_questions(fb / "groundtruth" / "financebench_open_source.jsonl")
    store = open_store(Pipeline.store_settings(settings))
    try:
        embedder = Embedder(device="cpu")
        report = evaluate_retrieval(questions, folio_searchers(store, embedder, ["dense", "hybrid"]),
                                    set(collection_docs(store)), ks=(1, 5))
    finally:
        store.close()
    wanted = {q.id for q in questions if set(q.docs) <= {"pepsico_2023_8k_dated-2023-05-05", "amcor_2022_8k_dated-2022-07-01"}}
    assert report.questions - len(report.skipped) == len(wanted) == 2
    ranks = {(r.id, r.mode, r.scope): r.page_rank for r in report.results}
    # the AGM vote outcome is on page 4 (FinanceBench page 3, 0-based) of PepsiCo's 8-K
    assert ranks[("financebench_id_01482", "hybrid", "own")] == 1
    assert ranks[("financebench_id_01935", "dense", "own")] is not None
