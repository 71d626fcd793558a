"""Run questions through searchers and collect per-question results and summaries.

A *searcher* is ``search(query, k, docs) -> list[RankedHit]``: ``docs`` is ``None`` (the whole
collection) or the evidence document keys to restrict the search to (the "own filing" scope).
:mod:`folioflow.indexing.evaluation.folio` builds searchers over folioflow's retriever; the retrieval
benchmark builds one over a LangChain baseline, so both are scored by the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from folioflow.indexing.evaluation.metrics import (
    QuestionResult,
    RankedHit,
    doc_relevant,
    first_rank,
    page_relevant,
    summarize,
)
from folioflow.indexing.evaluation.questions import Question

__all__ = ["RetrievalReport", "Searcher", "evaluate_retrieval"]

Searcher = Callable[[str, int, "Sequence[str] | None"], list[RankedHit]]


@dataclass
class RetrievalReport:
    """Results of one evaluation. ``summaries[scope][mode]`` is :func:`summarize`'s dict;
    ``skipped``: ids of questions whose evidence documents are not in the collection."""

    ks: list[int]
    modes: list[str]
    scopes: list[str]
    summaries: dict[str, dict[str, dict]] = field(default_factory=dict)
    results: list[QuestionResult] = field(default_factory=list)
    questions: int = 0
    skipped: list[str] = field(default_factory=list)
    skipped_docs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"ks": self.ks, "modes": self.modes, "scopes": self.scopes, "questions": self.questions,
                "evaluated": self.questions - len(self.skipped), "skipped": self.skipped,
                "skipped_docs": self.skipped_docs, "summaries": self.summaries,
                "results": [r.as_dict() for r in self.results]}


def evaluate_retrieval(questions: Sequence[Question], searchers: Mapping[str, Searcher], known_docs: set[str],
                       ks: Sequence[int] = (1, 5, 10), own_doc: bool = True,
                       on_question: Callable[[], None] | None = None) -> RetrievalReport:
    """Score every question whose evidence documents are all in ``known_docs`` (doc keys) with
    every searcher (``{mode: searcher}``), over the whole collection (scope ``shared``) and, when
    ``own_doc``, restricted to its evidence documents (scope ``own``). Questions with an evidence
    document missing are skipped and listed (FinanceBench filings absent from the corpus)."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise ValueError("k values must be positive integers")
    depth = ks[-1]
    scopes = ["shared"] + (["own"] if own_doc else [])
    report = RetrievalReport(ks=ks, modes=list(searchers), scopes=scopes, questions=len(questions))
    missing: set[str] = set()
    kept = []
    for q in questions:
        absent = [d for d in q.docs if d not in known_docs]
        if absent:
            report.skipped.append(q.id)
            missing.update(absent)
        else:
            kept.append(q)
    report.skipped_docs = sorted(missing)
    for q in kept:
        for mode, search in searchers.items():
            for scope in scopes:
                hits = search(q.question, depth, None if scope == "shared" else q.docs)
                report.results.append(QuestionResult(
                    id=q.id, mode=mode, scope=scope,
                    page_rank=first_rank(hits, partial(page_relevant, question=q)),
                    doc_rank=first_rank(hits, partial(doc_relevant, question=q)),
                    top=[f"{h.doc} p.{h.page_start}" + (f"-{h.page_end}" if h.page_end != h.page_start else "")
                         for h in hits[:5]]))
        if on_question:
            on_question()
    for scope in scopes:
        report.summaries[scope] = {
            mode: summarize([r for r in report.results if r.mode == mode and r.scope == scope], ks)
            for mode in searchers}
    return report
