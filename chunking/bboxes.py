"""Map the engine's layout blocks (``Page.blocks``: type, text, bbox) onto the parsed Markdown.

``Block.text`` is, by the schema, the block's Markdown as it appears in ``Page.markdown``; so each
engine block is located in the page Markdown by text, in reading order (exact search from the
previous match, then a whitespace-insensitive search, then anywhere on the page), and every parsed
block whose character span overlaps it receives its bbox and, for page headers/footers and
captions, its label. Engine blocks that cannot be located are ignored (they still exist on the
page; they just give no geometry).

Granularity: a parsed block gets the boxes of the engine blocks it overlaps; a chunk gets the
boxes of its blocks. A paragraph split at sentences gives each part the paragraph's box (engines
report no finer geometry in Markdown).
"""

from __future__ import annotations

import re

from folioflow.chunking.parse import MdBlock, ParsedPage
from folioflow.ocr.schema import Block, BlockType, Page

__all__ = ["attach_layout", "locate_blocks"]

_LABELS = {BlockType.PAGE_HEADER: "header", BlockType.PAGE_FOOTER: "footer"}


def _fuzzy(text: str) -> re.Pattern | None:
    words = text.split()
    if not words or len(words) > 400:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def locate_blocks(markdown: str, blocks: list[Block]) -> list[tuple[int, int] | None]:
    """Character span of each engine block in ``markdown`` (None when not found)."""
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for block in blocks:
        needle = block.text.strip()
        span = None
        if needle:
            pos = markdown.find(needle, cursor)
            if pos < 0:
                pattern = _fuzzy(needle)
                m = pattern.search(markdown, cursor) if pattern else None
                if m is None and pattern is not None:
                    m = pattern.search(markdown)
                if m is not None:
                    span = (m.start(), m.end())
                else:
                    pos = markdown.find(needle)
            if span is None and pos >= 0:
                span = (pos, pos + len(needle))
        if span is not None:
            cursor = max(cursor, span[1])
        spans.append(span)
    return spans


def attach_layout(page: Page, parsed: ParsedPage, markdown: str) -> None:
    """Give parsed blocks the bboxes and header/footer/caption labels of the engine blocks they
    overlap (in place). ``markdown`` is the text ``parsed`` was parsed from."""
    if not page.blocks:
        return
    spans = locate_blocks(markdown, page.blocks)
    ordered = sorted(parsed.blocks, key=lambda b: b.start)
    starts = [b.start for b in ordered]
    import bisect

    for block, span in zip(page.blocks, spans, strict=True):
        if span is None:
            continue
        s, e = span
        i = max(0, bisect.bisect_right(starts, s) - 1)
        while i < len(ordered) and ordered[i].start < e:
            target: MdBlock = ordered[i]
            if target.end > s:
                if block.bbox is not None and block.bbox not in target.bboxes:
                    target.bboxes.append(block.bbox)
                label = _LABELS.get(block.type)
                if label and not target.furniture and (target.end - target.start) <= 2 * max(1, e - s) + 8:
                    target.furniture = label
                elif block.type == BlockType.CAPTION and target.kind == "paragraph":
                    target.kind = "caption"
                elif block.type in (BlockType.FOOTNOTE,):
                    target.hint = "footnote"
            i += 1
