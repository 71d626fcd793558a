"""Retrieval evaluation: question formats (FinanceBench's 0-based pages, folioflow's 1-based JSONL),
relevance at page and document level, hit@k and MRR, skipped questions."""

from __future__ import annotations

import json

import pytest

from folioflow.indexing.evaluation import RankedHit, doc_key, evaluate_retrieval, load_questions
from folioflow.indexing.evaluation.metrics import page_relevant, span_in
from folioflow.indexing.evaluation.questions import parse_question
from folioflow.ocr.errors import ConfigurationError

FB_ROW = {"financebench_id": "financebench_id_03029", "company": "3M", "doc_name": "3M_2018_10K",
          "question": "What is the FY2018 capital expenditure amount (in USD millions) for 3M?",
          "answer": "$1577.00", "evidence": [{"evidence_text": "Purchases of property, plant and equipment (PP&E) (1,577)",
                                              "doc_name": "3M_2018_10K", "evidence_page_num": 59},
                                             {"doc_name": "3M_2018_10K", "evidence_page_num": 60}]}


def test_financebench_pages_become_one_based():
    q = parse_question(FB_ROW, 1)
    assert q.id == "financebench_id_03029" and q.docs == ["3m_2018_10k"]
    assert [e.page for e in q.evidence] == [60, 61]
    assert q.meta["answer"] == "$1577.00"


def test_own_format_and_its_errors(tmp_path):
    path = tmp_path / "q.jsonl"
    rows = [{"id": "a", "question": "Operating margin?", "evidence": [{"doc": "reports/Sample.PDF", "page": 1}]},
            {"question": "Governing law?", "evidence": [{"doc": "sample", "text": "laws of the State of Delaware"}]}]
    path.write_text("# questions for the sample\n" + "\n".join(json.dumps(r) for r in rows) + "\n")
    a, b = load_questions(path)
    assert (a.id, a.docs, a.evidence[0].page) == ("a", ["sample"], 1)
    assert b.id == "3" and b.evidence[0].text and b.evidence[0].page is None
    for bad, message in [({"question": "x", "evidence": [{"doc": "d", "page": 0}]}, "1-based"),
                         ({"question": "x", "evidence": [{"doc": "d"}]}, "'page'"),
                         ({"question": "x"}, "evidence")]:
        path.write_text(json.dumps(bad) + "\n")
        with pytest.raises(ConfigurationError, match=message):
            load_questions(path)
    path.write_text("{not json\n")
    with pytest.raises(ConfigurationError, match="line 1"):
        load_questions(path)


def test_doc_keys_ignore_folders_extensions_and_case():
    assert doc_key("/data/pdfs/3M_2018_10K.pdf") == doc_key("3M_2018_10K") == "3m_2018_10k"
    assert doc_key("scan.TIFF") == "scan"


def test_relevance_by_page_span_and_by_text_span():
    q = parse_question({"question": "q", "evidence": [{"doc": "a.pdf", "page": 5},
                                                      {"doc": "a.pdf", "text": "net sales rose 4 percent"}]})
    assert page_relevant(RankedHit("a", 4, 6), q)
    assert not page_relevant(RankedHit("b", 5, 5), q)
    assert page_relevant(RankedHit("a", 9, 9, "In 2023 net  sales rose 4 percent to $3.1 billion"), q)
    assert span_in("net sales rose 4 percent", "Net sales rose 4 per cent in 2023")  # fuzzy
    assert not span_in("net sales rose 4 percent", "operating expenses fell 2 percent")


def test_hit_at_k_mrr_and_skips():
    questions = [parse_question({"id": i, "question": f"q{i}", "evidence": [{"doc": d, "page": p}]})
                 for i, (d, p) in enumerate([("a", 1), ("a", 2), ("b", 3), ("missing", 1)])]
    ranked = {"q0": [RankedHit("a", 1, 1)],
              "q1": [RankedHit("b", 2, 2), RankedHit("a", 1, 1), RankedHit("a", 2, 3)],
              "q2": [RankedHit("a", 3, 3)] * 10}
    seen = []

    def search(query, k, docs):
        seen.append(docs)
        hits = ranked[query] if docs is None else [h for h in ranked[query] if h.doc in docs]
        return hits[:k]

    report = evaluate_retrieval(questions, {"dense": search}, known_docs={"a", "b"}, ks=(1, 5, 10))
    assert report.skipped == ["3"] and report.skipped_docs == ["missing"]
    shared, own = report.summaries["shared"]["dense"], report.summaries["own"]["dense"]
    assert shared["questions"] == 3
    assert shared["page"] == {"hit@1": pytest.approx(1 / 3), "hit@5": pytest.approx(2 / 3),
                              "hit@10": pytest.approx(2 / 3), "mrr": pytest.approx((1 + 1 / 3) / 3)}
    assert shared["document"]["hit@1"] == pytest.approx(1 / 3) and shared["document"]["hit@5"] == pytest.approx(2 / 3)
    assert own["page"]["hit@1"] == pytest.approx(1 / 3) and own["page"]["mrr"] == pytest.approx((1 + 1 / 2) / 3)
    assert ["a"] in seen and ["b"] in seen  # the own scope restricts each search to its evidence documents
    assert {r.page_rank for r in report.results if r.id == "1" and r.scope == "shared"} == {3}
