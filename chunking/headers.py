"""Page headers and footers ("furniture"): detect them and keep them out of chunk text.

Two sources:

1. The engine's own layout labels: blocks typed ``page_header``/``page_footer`` in ``Page.blocks``
   (mapped onto the parsed Markdown by :mod:`folioflow.chunking.bboxes`).
2. Repetition: a short block among the first (last) ``edge_blocks`` blocks of a page whose
   normalised text (case folded, digits replaced by ``#``, whitespace collapsed, so that "Page 3 of
   10" and "Page 4 of 10" agree) appears at the same edge on at least ``min_pages`` different pages
   is a running header (footer). Headings are compared without folding digits ("Table 1" and
   "Table 3" are different headings, not one running header) and must repeat on at least 3
   pages (a title on the front and back cover is not a running header); the first occurrence of a
   repeated heading stays a heading (a document title repeated as running header still opens its
   section). Bare page numbers ("12", "- 12 -", "Page 12") at a page edge are
   footers/headers as soon as they repeat.

Candidates are short (at most 200 characters and 15 words); tables, formulas, lists and code are
never furniture. Detected furniture is returned per page so chunks
can carry it as metadata.
"""

from __future__ import annotations

import re
from collections import defaultdict

from folioflow.chunking.parse import MdBlock, ParsedPage

__all__ = ["collect_furniture", "mark_furniture", "normalise_furniture"]

_DIGITS = re.compile(r"\d+")
_ROMAN_PAGE = re.compile(r"^(?:page\s+)?[ivxlc]+$")
_NOT_FURNITURE = {"table", "formula", "list", "code"}
_MAX_CHARS = 200
_MAX_WORDS = 15


def normalise_furniture(text: str, fold_digits: bool = True) -> str:
    """Comparison key of a header/footer candidate (see the module docstring)."""
    text = re.sub(r"[#*_`>|]", " ", text.lower())
    if fold_digits:
        text = _DIGITS.sub("#", text)
    return " ".join(text.split())


def _candidates(page: ParsedPage, edge_blocks: int) -> tuple[list[MdBlock], list[MdBlock]]:
    content = [b for b in page.blocks
               if b.kind not in _NOT_FURNITURE and len(b.text) <= _MAX_CHARS and len(b.text.split()) <= _MAX_WORDS]
    blocks = page.blocks
    top = [b for b in blocks[:edge_blocks] if b in content]
    bottom = [b for b in blocks[-edge_blocks:] if b in content and b not in top]
    return top, bottom


def mark_furniture(pages: list[ParsedPage], min_pages: int = 3, edge_blocks: int = 2) -> None:
    """Set ``block.furniture`` to ``"header"``/``"footer"`` for repeating edge blocks (in place).
    Blocks already labelled by the engine keep their label. ``min_pages`` below 2 disables
    repetition detection."""
    if min_pages < 2 or len(pages) < 2:
        return
    seen: dict[tuple[str, str], set[int]] = defaultdict(set)
    edges: list[tuple[str, str, MdBlock]] = []
    for page in pages:
        top, bottom = _candidates(page, edge_blocks)
        for where, group in (("header", top), ("footer", bottom)):
            for block in group:
                key = normalise_furniture(block.text, fold_digits=block.kind != "heading")
                if not key:
                    continue
                seen[(where, key)].add(page.number)
                edges.append((where, key, block))
    first_heading: set[tuple[str, str]] = set()
    for where, key, block in edges:
        if block.furniture:
            continue
        if block.kind == "heading" and (where, key) not in first_heading:
            first_heading.add((where, key))  # a title repeated as running header opens its section once
            continue
        pages_with = seen[(where, key)]
        page_number_only = key in ("#", "- # -", "page #", "# of #", "page # of #") or bool(_ROMAN_PAGE.match(key))
        needed = max(3, min_pages) if block.kind == "heading" else min_pages
        if len(pages_with) >= needed or (page_number_only and len(pages_with) >= 2):
            block.furniture = where


def collect_furniture(pages: list[ParsedPage]) -> dict[int, dict[str, list[str]]]:
    """Furniture text per page: ``{page: {"header": [...], "footer": [...]}}`` (pages without
    furniture are absent)."""
    out: dict[int, dict[str, list[str]]] = {}
    for page in pages:
        for block in page.blocks:
            if block.furniture:
                out.setdefault(page.number, {"header": [], "footer": []})[block.furniture].append(block.text)
    return out
