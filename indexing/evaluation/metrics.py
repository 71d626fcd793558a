"""Relevance of ranked hits and the retrieval metrics: hit@k and MRR, at page and document level.

Definitions (the usual IR ones, as FinanceBench-style retrieval studies report them):

* a hit is **page-relevant** when it comes from an evidence document and its page span
  (``page_start..page_end``, 1-based, inclusive) contains an evidence page, or its text contains an
  evidence text span; **document-relevant** when it comes from an evidence document;
* ``hit@k``: share of questions with at least one relevant hit among the first ``k``;
* ``MRR``: mean over questions of ``1 / rank`` of the first relevant hit among the retrieved hits
  (``max(ks)`` of them; 0 when none is relevant), i.e. MRR@max(k).

A question with several evidence pages counts as answered when any of them is retrieved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from rapidfuzz import fuzz

from folioflow.indexing.evaluation.questions import Question

__all__ = [
    "SPAN_MIN_RATIO",
    "QuestionResult",
    "RankedHit",
    "doc_relevant",
    "first_rank",
    "page_relevant",
    "span_in",
    "summarize",
]

#: Fuzzy threshold (rapidfuzz ``partial_ratio``, 0-100) for an evidence span to count as contained in
#: a hit's text; tolerates OCR noise and line-break hyphenation of a few characters.
SPAN_MIN_RATIO = 90.0


@dataclass
class RankedHit:
    """One retrieved chunk: its document key (see :func:`~folioflow.indexing.evaluation.questions.doc_key`),
    1-based inclusive page span, text and score."""

    doc: str
    page_start: int
    page_end: int
    text: str = ""
    score: float = 0.0


@dataclass
class QuestionResult:
    """Ranks (1-based; ``None``: not among the hits) of the first page- and document-relevant hit
    of one question in one mode and scope (``shared``: the whole collection; ``own``: filtered to
    the question's evidence documents), and the top hits as ``doc p.start-end``."""

    id: str
    mode: str
    scope: str
    page_rank: int | None
    doc_rank: int | None
    top: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def span_in(span: str, text: str) -> bool:
    """True when ``span`` occurs in ``text`` after case and whitespace normalisation, exactly or with
    rapidfuzz ``partial_ratio >= SPAN_MIN_RATIO``."""
    s, t = _norm(span), _norm(text)
    if not s or not t:
        return False
    return s in t or fuzz.partial_ratio(s, t) >= SPAN_MIN_RATIO


def page_relevant(hit: RankedHit, question: Question) -> bool:
    """Page-level relevance (see module docstring)."""
    for ev in question.evidence:
        if ev.key != hit.doc:
            continue
        if ev.page is not None and hit.page_start <= ev.page <= hit.page_end:
            return True
        if ev.text and span_in(ev.text, hit.text):
            return True
    return False


def doc_relevant(hit: RankedHit, question: Question) -> bool:
    """Document-level relevance: the hit comes from an evidence document."""
    return hit.doc in question.docs


def first_rank(hits: Sequence[RankedHit], relevant: Callable[[RankedHit], bool]) -> int | None:
    """1-based rank of the first relevant hit, or ``None``."""
    for rank, hit in enumerate(hits, 1):
        if relevant(hit):
            return rank
    return None


def summarize(results: Sequence[QuestionResult], ks: Sequence[int]) -> dict:
    """``{"questions": n, "page": {"hit@k": rate, ..., "mrr": v}, "document": {...}}`` over ``results``
    (one mode and scope). Rates are in [0, 1]; an empty input gives zeros."""
    n = len(results)
    out: dict = {"questions": n}
    for level, attr in (("page", "page_rank"), ("document", "doc_rank")):
        ranks = [getattr(r, attr) for r in results]
        row = {f"hit@{k}": (sum(1 for x in ranks if x is not None and x <= k) / n if n else 0.0) for k in ks}
        row["mrr"] = sum(1.0 / x for x in ranks if x is not None) / n if n else 0.0
        out[level] = row
    return out
