"""Retrieval questions with evidence: FinanceBench's format and folioflow's own JSONL format.

folioflow's format (one JSON object per line; blank lines and lines starting with ``#`` ignored)::

    {"id": "q1", "question": "What was net revenue in 2022?",
     "evidence": [{"doc": "acme_2022_10k.pdf", "page": 47},
                  {"doc": "acme_2022_10k.pdf", "text": "Net revenue increased 4%"}]}

``doc`` names the document as ingested: its file name (``acme_2022_10k.pdf``), its stem
(``acme_2022_10k``), its path or its folioflow doc id. ``page`` is **1-based** (folioflow's page
numbers). ``text`` (optional, instead of or with ``page``) is a span of the evidence: a hit counts
when its chunk text contains the span (fuzzy, see :func:`folioflow.indexing.evaluation.metrics.span_in`).
``id`` defaults to the line number.

FinanceBench (``financebench_open_source.jsonl`` of github.com/patronus-ai/financebench, detected by
its ``financebench_id``/``doc_name``/``evidence[].evidence_page_num`` keys): ``doc_name`` names the
filing (``<doc_name>.pdf`` in its ``pdfs/`` folder) and ``evidence_page_num`` is a **0-based** page
index, so it is converted to ``evidence_page_num + 1`` here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from folioflow.ocr.errors import ConfigurationError

__all__ = ["Evidence", "Question", "doc_key", "load_questions", "parse_question"]


_EXTENSIONS = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".heic", ".heif", ".avif")


def doc_key(name: str) -> str:
    """Comparable document key: the file name without folder and document extension, lower-cased
    (``/x/ACME_10K.pdf`` and ``ACME_10K`` -> ``acme_10k``)."""
    base = str(name).strip().replace("\\", "/").rsplit("/", 1)[-1].lower()
    for ext in _EXTENSIONS:
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


@dataclass
class Evidence:
    """One piece of evidence: a document, a 1-based page and/or a text span of it."""

    doc: str
    page: int | None = None
    text: str | None = None

    @property
    def key(self) -> str:
        return doc_key(self.doc)


@dataclass
class Question:
    """A question and the evidence an answer needs (relevant if any evidence is retrieved)."""

    id: str
    question: str
    evidence: list[Evidence]
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def docs(self) -> list[str]:
        """Evidence document keys, in order, without repeats."""
        return list(dict.fromkeys(e.key for e in self.evidence))


def parse_question(row: dict[str, Any], line: int = 0) -> Question:
    """One question from a parsed JSON object in either format. Raises :class:`ConfigurationError`
    naming the line and the problem for a row that is neither."""
    where = f"line {line}" if line else "question"
    if "doc_name" in row and "question" in row:  # FinanceBench
        evidence = []
        for ev in row.get("evidence") or []:
            page = ev.get("evidence_page_num")
            evidence.append(Evidence(doc=ev.get("doc_name") or row["doc_name"],
                                     page=int(page) + 1 if page is not None else None))
        if not evidence:
            evidence = [Evidence(doc=row["doc_name"])]
        meta: dict[str, Any] = {k: row[k] for k in ("company", "question_type", "question_reasoning", "answer") if k in row}
        return Question(id=str(row.get("financebench_id") or line), question=row["question"], evidence=evidence,
                        meta=meta)
    if "question" not in row or not isinstance(row.get("evidence"), list):
        raise ConfigurationError(f"{where}: expected 'question' and an 'evidence' list (folioflow format) "
                                 "or FinanceBench's 'doc_name'/'evidence' keys")
    evidence = []
    for i, ev in enumerate(row["evidence"]):
        if not isinstance(ev, dict) or not ev.get("doc") or (ev.get("page") is None and not ev.get("text")):
            raise ConfigurationError(f"{where}: evidence {i} needs 'doc' and a 'page' (1-based) or a 'text' span")
        page = ev.get("page")
        if page is not None and (not isinstance(page, int) or page < 1):
            raise ConfigurationError(f"{where}: evidence {i} page must be an integer >= 1 (pages are 1-based)")
        evidence.append(Evidence(doc=str(ev["doc"]), page=page, text=ev.get("text")))
    if not evidence:
        raise ConfigurationError(f"{where}: empty evidence list")
    return Question(id=str(row.get("id", line)), question=str(row["question"]), evidence=evidence,
                    meta={k: v for k, v in row.items() if k not in ("id", "question", "evidence")})


def load_questions(path: str | Path, limit: int | None = None) -> list[Question]:
    """Questions of a JSONL file in either format (see module docstring). Raises
    :class:`ConfigurationError` for an unreadable file or a bad line (with its number)."""
    try:
        lines: Iterable[str] = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read questions {path}: {exc.strerror or exc}") from exc
    out: list[Question] = []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{path}: line {number} is not JSON ({exc.msg})") from exc
        try:
            out.append(parse_question(row, number))
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {exc}") from None
        if limit and len(out) >= limit:
            break
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise ConfigurationError(f"{path}: duplicate question ids")
    return out
