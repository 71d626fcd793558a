"""Blocks -> pieces: the units the packer may put together but never cuts.

A piece is a whole block when the block fits the section's budget (content tokens: the limit less
the special tokens and the rendered heading path). Larger blocks become smaller pieces:

* paragraph, quote, caption, HTML, figure alt text: sentences (then words, then characters; see
  :mod:`folioflow.chunking.sentences`);
* list: items (an item over the budget: its sentences);
* code: lines;
* table: parts split between row groups, each part repeating the header rows (and the caption that
  precedes the table), numbered ``(i, n)``; a row group that alone exceeds a part's room is written
  as ``Header: value`` lines (spanned cells repeated) and split between lines, so no table row is
  ever cut inside its markup and nothing overruns (see :func:`table_pieces`);
* formula: never split. A formula over the budget becomes one piece marked ``truncate``: the chunk
  keeps the whole formula as its text and the embedded text holds the longest prefix that fits
  (embedding models truncate anyway; a formula cut in two pieces is useless to a reader).

Figures without alt text or caption (``![](img.png)``, ``<!-- image -->``) carry no text to embed
and are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from folioflow.chunking.parse import MdBlock
from folioflow.chunking.schema import PageBBox
from folioflow.chunking.sentences import split_to_budget
from folioflow.chunking.tables import TableModel, compact_cells, parse_table, row_as_key_values

__all__ = ["Measure", "Piece", "block_pieces"]


@dataclass
class Measure:
    """Token counting bound to one counter: ``content(text)`` = tokens without special tokens;
    ``content_batch`` the same for a list; ``language`` for sentence splitting;
    ``compact_tables``: tables are measured in the form they take in the embedded text
    (:meth:`~folioflow.chunking.tables.TableModel.compact`), not as Markdown."""

    content: Callable[[str], int]
    content_batch: Callable[[list[str]], list[int]]
    language: str = "en"
    compact_tables: bool = False


@dataclass
class Piece:
    """An unsplittable unit. ``block``/``span``: source block and offsets into its text (pieces
    of one block that touch are joined by the exact source between them); ``text`` is used when
    ``block`` is None. ``tokens``: content tokens. ``solo``: a chunk of its own (table parts,
    truncated formulas). ``resplit(budget)``: smaller pieces for the repair pass, or None."""

    kind: str
    text: str
    tokens: int
    pages: tuple[int, int]
    bboxes: list[PageBBox] = field(default_factory=list)
    block: MdBlock | None = None
    span: tuple[int, int] | None = None
    solo: bool = False
    part: tuple[int, int] | None = None
    truncate: bool = False
    overlap: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    resplit: Callable[[int], list[Piece]] | None = None


def _bboxes(block: MdBlock) -> list[PageBBox]:
    return [PageBBox(page=page, bbox=b) for page, b in zip(block.box_pages(), block.bboxes, strict=True)]


def _text_pieces(block: MdBlock, start: int, end: int, budget: int, m: Measure, units: str = "sentences",
                 kind: str = "text", pack: bool = False) -> list[Piece]:
    """Pieces of ``block.text[start:end]``: its sentences (or lines), each within ``budget``;
    ``pack``: neighbouring units already joined up to the budget (for solo pieces, which the
    packer does not join)."""
    sizes: list[int] = []
    spans = split_to_budget(block.text, start, end, budget, m.content, m.content_batch, m.language, units=units,
                            pack=pack, sizes_out=sizes)
    if pack:
        sizes = m.content_batch([block.text[s:e] for s, e in spans])
    out = []
    for (s, e), n in zip(spans, sizes, strict=True):
        first, last = block.page_at(s), block.page_at(max(s, e - 1))
        boxes = [b for b in _bboxes(block) if first <= b.page <= last]
        piece = Piece(kind=kind, text=block.text[s:e], tokens=n, pages=(first, last), bboxes=boxes, block=block,
                      span=(s, e))
        piece.resplit = (lambda b, s=s, e=e: _text_pieces(block, s, e, b, m, units, kind, pack))
        out.append(piece)
    return out


def _whole(block: MdBlock, kind: str, tokens: int) -> Piece:
    return Piece(kind=kind, text=block.text, tokens=tokens, pages=(block.page, block.last_page), bboxes=_bboxes(block),
                 block=block, span=(0, len(block.text)))


def block_pieces(block: MdBlock, tokens: int, budget: int, m: Measure, caption: MdBlock | None = None) -> list[Piece]:
    """Pieces of one block whose whole text has ``tokens`` content tokens. ``caption``: a caption
    block that precedes a table and travels with it."""
    kind = block.kind
    if kind == "figure":
        return [] if not (block.alt or "").strip() else _fit(block, "text", tokens, budget, m)
    if kind == "formula":
        piece = _whole(block, "formula", tokens)
        if tokens > budget:
            piece.truncate = piece.solo = True
        return [piece]
    if kind == "table":
        return table_pieces(block, tokens, budget, m, caption)
    if kind == "list" and tokens > budget and len(block.items) > 1:
        out: list[Piece] = []
        texts = [block.text[s:e] for s, e in block.items]
        for (s, e), n in zip(block.items, m.content_batch(texts), strict=True):
            if n <= budget:
                piece = Piece(kind="text", text=block.text[s:e], tokens=n, pages=(block.page, block.page),
                              bboxes=_bboxes(block), block=block, span=(s, e))
                piece.resplit = (lambda b, s=s, e=e: _text_pieces(block, s, e, b, m))
                out.append(piece)
            else:
                out.extend(_text_pieces(block, s, e, budget, m))
        return out
    return _fit(block, "text", tokens, budget, m, units="lines" if kind == "code" else "sentences")


def _fit(block: MdBlock, kind: str, tokens: int, budget: int, m: Measure, units: str = "sentences") -> list[Piece]:
    if tokens <= budget:
        piece = _whole(block, kind, tokens)
        piece.resplit = lambda b: _text_pieces(block, 0, len(block.text), b, m, units, kind)
        return [piece]
    return _text_pieces(block, 0, len(block.text), budget, m, units, kind)


def table_pieces(block: MdBlock, tokens: int, budget: int, m: Measure, caption: MdBlock | None = None) -> list[Piece]:
    """Pieces of a table block (``block.table`` holds a merged :class:`TableModel` when the table
    continued across pages). The whole table (with its caption) when it fits; else solo parts
    tagged ``meta["table_id"]`` (numbered ``(i, n)`` by the chunker once the repair pass is done).
    A table the parser cannot read is split between lines like code."""
    model: TableModel | None = getattr(block, "table", None) or parse_table(block.text, block.page)
    cap_text = caption.text if caption is not None else ""
    cap_tokens = m.content(cap_text) if cap_text else 0
    merged = getattr(block, "merged", [])
    boxes = _bboxes(block) + [pb for other in merged for pb in _bboxes(other)] + (_bboxes(caption) if caption else [])
    synthetic = bool(cap_text) or (model is not None and model.source == "")
    whole_text = model.render() if model is not None else block.text
    if model is not None and m.compact_tables:
        tokens = m.content(model.compact())
    elif model is not None and model.source == "":
        tokens = m.content(whole_text)
    pages = (min(model.row_pages + [block.page]), max(model.row_pages + [block.page])) if model else (block.page, block.page)
    if tokens + cap_tokens <= budget:
        text = f"{cap_text}\n\n{whole_text}" if cap_text else whole_text
        piece = Piece(kind="table", text=text, tokens=tokens + cap_tokens, pages=pages, bboxes=boxes,
                      block=None if synthetic else block, span=None if synthetic else (0, len(block.text)))
        piece.resplit = lambda b: table_pieces(block, tokens, min(b, tokens + cap_tokens - 1), m, caption)
        return [piece]
    if model is None or not model.rows:
        out = _text_pieces(block, 0, len(block.text), budget, m, units="lines", kind="table", pack=True)
        for piece in out:
            piece.solo = True
            piece.meta["table_id"] = id(block)
        return out
    if m.compact_tables:
        row_tokens, head_tokens = m.content_batch([compact_cells(c) for c in model.cells]), m.content(model.compact(0, 0))
    else:
        row_tokens, head_tokens = m.content_batch(model.rows), m.content(model.render(0, 0))
    ctx = _TableContext(model=model, block=block, boxes=boxes, cap_text=cap_text, cap_tokens=cap_tokens, m=m,
                        row_tokens=row_tokens, head_tokens=head_tokens)
    parts = ctx.parts(model.groups, budget)
    if budget - head_tokens < budget // 8:
        # a header leaving no room for rows under it heads no part, and the rows written as
        # "Header: value" lines carry it only where a row has a value under it (a page of prose
        # read as one header cell: CERES's research plan, 6,000 characters): its text goes first
        head_text = "\n".join(c for c in model.head_cells if c.strip())
        holder = MdBlock(kind="paragraph", text=head_text, page=block.page)
        head_parts = _text_pieces(holder, 0, len(head_text), budget, m, units="lines", kind="table", pack=True)
        for piece in head_parts:
            piece.solo, piece.block, piece.span = True, None, None
            piece.bboxes = [b for b in boxes if b.page == block.page]
            piece.meta.update(table_id=id(block), table_rows_as_text=True)
        parts = head_parts + parts
    if cap_text and caption is not None and not parts[0].text.startswith(cap_text):
        # the caption did not fit beside the header: it goes before the parts, as text
        parts = block_pieces(caption, cap_tokens, budget, m) + parts
    return parts


@dataclass
class _TableContext:
    """What splitting one table into parts needs; ``parts`` is re-entered by the repair pass with a
    smaller budget for the row groups of one part."""

    model: TableModel
    block: MdBlock
    boxes: list[PageBBox]
    cap_text: str
    cap_tokens: int
    m: Measure
    row_tokens: list[int]
    head_tokens: int

    def _piece(self, prefix: str, rows: list[int], first_part: bool) -> Piece:
        """The part holding body ``rows`` (consecutive) under the header, ``prefix`` (the caption)
        first; its tokens are those of its embedded form."""
        text = prefix + self.model.render(rows[0], rows[-1] + 1)
        embedded = prefix + self.model.compact(rows[0], rows[-1] + 1) if self.m.compact_tables else text
        row_pages = [self.model.row_pages[r] for r in rows] or [self.block.page]
        first = min(row_pages + ([self.block.page] if first_part else []))
        last = max(row_pages)
        return Piece(kind="table", text=text, tokens=self.m.content(embedded), pages=(first, last),
                     bboxes=[b for b in self.boxes if first <= b.page <= last], solo=True, meta={"table_id": id(self.block)})

    def parts(self, groups: list[tuple[int, int]], budget: int) -> list[Piece]:
        """Solo pieces for the row ``groups`` within ``budget``. The caption heads the first part,
        and every part when it costs at most an eighth of the budget. Rows are taken greedily by
        their counted sizes, then the part's exact count is checked and rows given back to the next
        part until it fits (the markup between rows costs tokens too)."""
        repeat_caption = bool(self.cap_text) and self.cap_tokens <= budget // 8
        starts_table = bool(groups) and groups[0][0] == 0
        sizes = [sum(self.row_tokens[a:b]) for a, b in groups]
        out: list[Piece] = []
        pending: list[tuple[int, int]] = []  # consecutive groups too large for a part: written as text together
        i = 0
        while i < len(groups):
            first_part = starts_table and not out and not pending
            prefix, room = "", budget - self.head_tokens
            if self.cap_text and (repeat_caption or first_part) and budget - self.head_tokens - self.cap_tokens >= budget // 4:
                prefix, room = f"{self.cap_text}\n\n", budget - self.head_tokens - self.cap_tokens
            piece = None
            j = i + 1
            if sizes[i] <= room and room >= budget // 8:
                used = sizes[i]
                while j < len(groups) and used + sizes[j] <= room:
                    used += sizes[j]
                    j += 1
                while True:
                    rows = list(range(groups[i][0], groups[j - 1][1]))
                    piece = self._piece(prefix, rows, first_part)
                    if piece.tokens <= budget or j == i + 1:
                        break
                    j -= 1
            if piece is not None and piece.tokens <= budget:
                out.extend(self._rows_as_text(pending, budget))
                pending = []
                taken = groups[i:j]
                piece.resplit = lambda b, taken=taken: self.parts(taken, b)
                out.append(piece)
                i = j
                continue
            pending.append(groups[i])  # a row group larger than a part
            i += 1
        out.extend(self._rows_as_text(pending, budget))
        return out

    def _rows_as_text(self, groups: list[tuple[int, int]], budget: int) -> list[Piece]:
        """Rows of ``groups`` as "Header: value" lines (a blank line between rows), packed into
        as few parts as fit; a part breaks between lines, a line too long between sentences."""
        if not groups:
            return []
        rows = [r for a, b in groups for r in range(a, b)]
        text = "\n\n".join("\n".join(row_as_key_values(self.model, r)) or self.model.rows[r] for r in rows)
        holder = MdBlock(kind="paragraph", text=text, page=self.model.row_pages[rows[0]])
        out = []
        for piece in _text_pieces(holder, 0, len(text), budget, self.m, units="lines", kind="table", pack=True):
            piece.text = piece.text.strip()
            piece.solo, piece.block, piece.span = True, None, None
            piece.pages = (min(self.model.row_pages[r] for r in rows), max(self.model.row_pages[r] for r in rows))
            piece.bboxes = [b for b in self.boxes if piece.pages[0] <= b.page <= piece.pages[1]]
            piece.meta.update(table_id=id(self.block), table_rows_as_text=True)
            out.append(piece)
        return out
