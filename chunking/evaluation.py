"""Chunk quality of a converted document, by category (``folioflow eval chunks``).

The promises of :mod:`folioflow.chunking.chunker`, checked with :mod:`folioflow.chunking.invariants` (computed from the
converted document's Markdown, independently of the chunker's parser):

* ``tables_cut``: a table with a row in no chunk intact, or a chunk holding some of its rows without
  its header row or part number (:func:`~folioflow.chunking.invariants.table_failures`);
* ``formulas_cut``: a display formula no chunk holds whole (:func:`~folioflow.chunking.invariants.formula_failures`);
* ``over_limit``: the embedded text (heading path + text) counts more tokens than the limit with the
  model's own tokenizer (recounted here, not read from the stored count);
* ``no_heading_path``: every chunk whose heading path is empty. The reason says whether the
  chunker lost a path (the chunk holds a paragraph under an ATX heading of the source Markdown:
  ``expected ...``) or the converted Markdown has no heading above the chunk (``no heading above it
  in the converted Markdown``: the conversion found no title, e.g. a contract whose clause titles
  are body text). Both count: a document without any heading reports every chunk;
* ``wrong_heading_path``: a paragraph whose chunk's heading path differs from the ATX headings above
  it as written (:func:`~folioflow.chunking.invariants.path_failures`), page furniture the chunker set aside
  excluded, and so are signature blocks, whose path stops above the clauses on purpose
  (:mod:`folioflow.chunking.roles`). A signal to review rather than a proven fault: the chunker may nest numbered headings
  (``infer_heading_levels``) and a paragraph repeated under several headings matches any of them;
* ``words_lost``: pages with words in no chunk covering that page (:func:`~folioflow.chunking.invariants.coverage_failures`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from folioflow.chunking.invariants import (
    coverage_failures,
    expected_heading_paths,
    formula_failures,
    norm,
    path_failures,
    source_facts,
    table_failures,
)
from folioflow.chunking.roles import ROLE, SIGNATURE
from folioflow.chunking.schema import Chunk
from folioflow.ocr.schema import Document

__all__ = ["CATEGORIES", "DocumentChunkReport", "evaluate_document_chunks"]

#: Failure categories, in report order.
CATEGORIES = ("tables_cut", "formulas_cut", "over_limit", "no_heading_path", "wrong_heading_path", "words_lost")


@dataclass
class DocumentChunkReport:
    """One document: chunk count, tables and formulas found in its Markdown, failures per category
    (counts) and their readable reasons (``failures``: ``[(category, reason), ...]``)."""

    doc_id: str
    path: str
    chunks: int
    tables: int = 0
    formulas: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {c: 0 for c in CATEGORIES})
    failures: list[tuple[str, str]] = field(default_factory=list)
    note: str | None = None

    def add(self, category: str, reasons: list[str], count: int | None = None) -> None:
        self.counts[category] += len(reasons) if count is None else count
        self.failures += [(category, r) for r in reasons]

    def as_dict(self) -> dict:
        return asdict(self)


def _without_furniture(document: Document, chunks: list[Chunk], edge_blocks: int = 2) -> Document:
    """``document`` without the page-edge blocks the chunker set aside as page headers/footers
    (recorded in the chunks' metadata; the first/last ``edge_blocks`` blocks of a page, as
    :class:`~folioflow.chunking.chunker.ChunkerOptions` ``furniture_edge_blocks``): a "Table of Contents" link
    styled as a heading atop every page is furniture, not the section of every later paragraph."""
    furniture = {norm(t) for c in chunks for t in c.metadata.get("page_headers", []) + c.metadata.get("page_footers", [])}
    if not furniture:
        return document
    pages = []
    for p in document.pages:
        blocks = [b for b in re.split(r"\n\s*\n", p.markdown) if b.strip()]
        edge = set(range(min(edge_blocks, len(blocks)))) | set(range(max(0, len(blocks) - edge_blocks), len(blocks)))
        kept = [b for i, b in enumerate(blocks) if not (i in edge and norm(b) in furniture)]
        pages.append(p.model_copy(update={"markdown": "\n\n".join(kept)}))
    return document.model_copy(update={"pages": pages})


def evaluate_document_chunks(document: Document | None, chunks: list[Chunk], counter, max_tokens: int,
                             path: str = "") -> DocumentChunkReport:
    """Check ``chunks`` of ``document`` (see module docstring). ``counter``: the embedding model's
    :class:`~folioflow.chunking.tokens.TokenCounter`; ``max_tokens``: the chunk limit the collection was built
    with. Without the converted ``document`` only ``over_limit`` and heading-path presence (chunks
    with an empty path) are checked, and ``note`` says so."""
    report = DocumentChunkReport(doc_id=chunks[0].doc_id if chunks else (document.doc_id if document else ""),
                                 path=path, chunks=len(chunks))
    counts = counter.count_batch([c.embed_text for c in chunks]) if chunks else []
    report.add("over_limit", [f"chunk {c.index} (p.{c.page_start}): {n} tokens > {max_tokens}"
                              for c, n in zip(chunks, counts, strict=True) if n > max_tokens])
    if document is None:
        report.note = "converted document not found: table, formula, heading and coverage checks skipped"
        report.add("no_heading_path", [f"chunk {c.index} (p.{c.page_start}) has no heading path"
                                       for c in chunks if not c.heading_path])
        return report
    texts = [c.text for c in chunks]
    facts = source_facts(document)
    report.tables, report.formulas = len(facts.tables), len(facts.formulas)
    cut, reasons = table_failures(facts.tables, texts, [c.part for c in chunks],
                                  [bool(c.metadata.get("table_rows_as_text")) for c in chunks])
    report.add("tables_cut", reasons, cut)
    cut, reasons = formula_failures(facts.formulas, texts)
    report.add("formulas_cut", reasons, cut)
    normed = [norm(t) for t in texts]
    orphans: dict[int, str] = {}
    headed = _without_furniture(document, chunks)
    for start, expected in expected_heading_paths([p.markdown for p in headed.pages]):
        if not expected:
            continue
        for c, text in zip(chunks, normed, strict=True):
            if start in text and not c.heading_path:
                orphans.setdefault(c.index, f"chunk {c.index} (p.{c.page_start}) has no heading path; "
                                            f"expected {' > '.join(expected)[:80]!r}")
    report.add("no_heading_path", [orphans.get(c.index) or f"chunk {c.index} (p.{c.page_start}) has no heading "
                                   "path; no heading above it in the converted Markdown"
                                   for c in chunks if not c.heading_path])
    # a signature block's path stops above the clauses it follows, by design (docs/contracts.md)
    judged = [c for c in chunks if c.metadata.get(ROLE) != SIGNATURE]
    report.add("wrong_heading_path", [r for r in path_failures(headed, judged) if "heading path [] " not in r])
    report.add("words_lost", coverage_failures(document, chunks))
    return report
