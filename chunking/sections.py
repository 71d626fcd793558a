"""The heading tree across pages, heading paths, and the embedded text of a chunk.

Headings open sections; a heading of level L closes every open section of level >= L. The path
of a block is the titles of the sections open above it, outermost first. Sections run across
pages: a page break does not reset the path.

Level inference (``infer_levels``): many engines write every heading at one Markdown level
(OmniDocBench-style output uses ``#`` throughout, docling ``##``). When *all* headings of a
document share one level, a numbered heading ("3.1.2 Results", "2.9. Removal of sulfur") gets the
depth of its number (3 and 2 here) and an unnumbered one depth 1, so "3.1" nests under "3". A
document whose Markdown already has several levels keeps them as written.

Heading paths in the embedded text: :func:`contextualize` puts the path above the text, one title
per line (the docling/HybridChunker convention). A path whose rendering exceeds a token budget is
shortened by :func:`fit_heading_path`: the deepest title is kept, then as many ancestors as fit
from the nearest upward; dropped ancestors are shown as one ``…`` line; a deepest title that alone
exceeds the budget is cut at the longest prefix that fits, ending in ``…``. The chunk keeps the full
path in ``Chunk.heading_path``; the rendered one goes to ``metadata["heading_path_rendered"]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from folioflow.chunking.parse import MdBlock

__all__ = ["Section", "build_sections", "contextualize", "fit_heading_path", "numbering_depth"]

_NUMBERED = re.compile(r"^\s*(?:(?:section|chapter|part|item|article|§)\s+)?(\d{1,3}(?:\s*\.\s*\d{1,3})*)\s*\.?(?=\s|[A-Za-z]|$)",
                       re.IGNORECASE)
ELLIPSIS = "…"


@dataclass
class Section:
    """A run of content blocks under one heading path. ``heading`` is the block that opened it
    (None before the first heading)."""

    path: list[str]
    heading: MdBlock | None
    blocks: list[MdBlock] = field(default_factory=list)


def numbering_depth(title: str) -> int | None:
    """Depth of a section number at the start of ``title`` ("3.1.2 X" -> 3, "2.9. Y" -> 2,
    "Item 7. Z" -> 1), None when unnumbered. Four-digit leading numbers (years) do not count."""
    m = _NUMBERED.match(title)
    if not m:
        return None
    parts = [p for p in re.split(r"\s*\.\s*", m.group(1)) if p]
    return len(parts)


def build_sections(blocks: list[MdBlock], infer_levels: bool = True) -> list[Section]:
    """Group content blocks (furniture already removed, in document order) into sections."""
    headings = [b for b in blocks if b.kind == "heading"]
    flat = infer_levels and len({b.level for b in headings}) == 1

    def level(block: MdBlock) -> int:
        if flat:
            return numbering_depth(block.title or "") or 1
        return block.level or 1

    sections: list[Section] = [Section(path=[], heading=None)]
    stack: list[tuple[int, str]] = []
    for block in blocks:
        if block.kind != "heading":
            sections[-1].blocks.append(block)
            continue
        lvl = level(block)
        while stack and stack[-1][0] >= lvl:
            stack.pop()
        title = block.title or block.text.lstrip("#").strip()
        stack.append((lvl, title))
        sections.append(Section(path=[t for _, t in stack], heading=block))
    return [s for s in sections if s.blocks or s.heading is not None]


def contextualize(heading_path: list[str], text: str) -> str:
    """The text that gets embedded: the heading path, one title per line, then the chunk text.
    ``contextualize(["2 Results", "2.1 Revenue"], "Revenue grew.")`` ->
    ``"2 Results\\n2.1 Revenue\\nRevenue grew."``; with an empty path, the text itself."""
    return "\n".join([*heading_path, text]) if heading_path else text


def fit_heading_path(path: list[str], budget: int, count: Callable[[str], int]) -> list[str]:
    """The path as rendered within ``budget`` content tokens (``count`` returns tokens without
    special tokens); see the module docstring for the rule. Returns ``path`` itself when it fits."""
    if not path or count("\n".join(path)) <= budget:
        return list(path)
    deepest = path[-1]
    if count(deepest) > budget - 1:
        lo, hi = 0, len(deepest)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(deepest[:mid] + ELLIPSIS) <= budget:
                lo = mid
            else:
                hi = mid - 1
        cut = deepest[:lo].rstrip() + ELLIPSIS
        return [cut] if count(cut) <= budget else []
    kept = [deepest]
    for title in reversed(path[:-1]):
        trial = [ELLIPSIS, title, *kept]
        if count("\n".join(trial)) > budget:
            break
        kept.insert(0, title)
    if len(kept) < len(path):
        kept.insert(0, ELLIPSIS)
        if count("\n".join(kept)) > budget:
            kept.pop(0)
    return kept
