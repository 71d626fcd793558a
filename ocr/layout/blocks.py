"""Lines, tables and figures of a page -> labelled :class:`~folioflow.ocr.schema.Block` objects in reading order.

Labels come from typography relative to the page's body text (the font size carrying most
characters): a line at least 1.6x the body size is a level-1 heading, 1.3x level 2, 1.12x level 3,
and a short, bold, body-sized group of up to three lines standing alone is level 3 as well; a line
that reads as a sentence (a lead-in ending in a colon, or a period after lower-case words) is never a
heading; the largest level-1 heading on page 1 is the title. Once every page is converted,
:func:`relevel_headings` judges the headings again against the *document's* body size, so a
statement page set in a small font does not turn its ordinary lines into top-level headings. Lines starting with a bullet or an enumerator are list items. Lines in the
top or bottom 7% of the page that are not larger than the body (or a bare page number near the
bottom) are page headers/footers, unless they flow with the body text (closer to it than 1.5 line
heights: a paragraph that starts or ends inside the margin, see :func:`_detached_margins`). Consecutive lines of one column, with a gap below 0.7 line
heights and the same size, form a paragraph.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from typing import cast

from folioflow.ocr.layout.formulas import is_display_formula, to_latex
from folioflow.ocr.layout.lines import Line
from folioflow.ocr.layout.order import reading_order
from folioflow.ocr.layout.tables import TableResult, to_pipe_table
from folioflow.ocr.schema import BBox, Block, BlockType, Page

__all__ = ["CLAUSE", "HEADING_FONT", "Figure", "body_size", "body_sizes", "build_blocks", "document_body_size", "dominant_size", "heading_level", "breaks_off", "join_broken_headings", "page_markdown", "pages_built_from_blocks", "reads_as_sentence",
           "relevel_headings"]

#: ``Block.attributes`` key of a text-layer heading's typography: ``{"size": points, "bold": bool,
#: "lines": int}`` (read by :func:`relevel_headings`).
HEADING_FONT = "font"
#: ``Block.attributes`` key of a block the clause pass (:mod:`folioflow.ocr.layout.clauses`) made or
#: changed; :func:`relevel_headings` leaves such blocks alone.
CLAUSE = "clause"

_BULLET = re.compile(r"^([•·▪◦●○■□–\-*])\s+")
_ENUM = re.compile(r"^(\(?(\d{1,3}|[a-z]|[ivxlc]{1,5})[.)])\s+", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(\s*(of|/)\s*\d{1,4})?$", re.IGNORECASE)


@dataclass
class Figure:
    """An image region worth keeping as a figure block (display points)."""

    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class _Item:
    x0: float
    y0: float
    x1: float
    y1: float
    payload: object = field(repr=False, default=None)


def body_sizes(lines: list[Line]) -> Counter[float]:
    """Characters per font size (points, rounded to 0.5) on the page."""
    counts: Counter[float] = Counter()
    for ln in lines:
        counts[round(ln.size * 2) / 2] += len(ln.text)
    return counts


def dominant_size(counts: Counter[float]) -> float | None:
    """The font size carrying the most characters in ``counts`` (characters per size, points), or
    ``None`` when it is empty."""
    return counts.most_common(1)[0][0] if counts else None


def body_size(lines: list[Line]) -> float:
    """The font size (points, rounded to 0.5) carrying the most characters on the page (10 without
    lines)."""
    return dominant_size(body_sizes(lines)) or 10.0


#: Words that end a company name or an abbreviation with a period ("Inc.", "Co."): a heading ending
#: in one of them is a name, not a sentence.
_NAME_END = re.compile(r"\b(?:inc|co|corp|ltd|llc|plc|n\.a|l\.p|s\.a|ag|nv|no|u\.s)\.$", re.IGNORECASE)


def reads_as_sentence(text: str) -> bool:
    """True for a line that reads as running text rather than a title: it ends with a colon (a
    lead-in such as "... are as follows:" or a run-in label "Goodwill:"), or it ends with a period
    after at least three lower-case words ("See accompanying notes to consolidated financial
    statements."), unless the period closes a company name or abbreviation ("ADOBE INC.")."""
    bare = text.rstrip("\u201d\"')]} ")
    if bare.endswith(":"):
        return True
    if not bare.endswith(".") or _NAME_END.search(bare):
        return False
    return sum(1 for w in bare.split() if w[:1].islower()) >= 3


def heading_level(size: float, body: float, lines: int, bold: bool, text: str) -> int | None:
    """Heading level (1-3) of a paragraph-like group of ``lines`` lines whose largest font is
    ``size`` points, against a body size of ``body`` points; ``None`` for body text.

    By size ratio: >= 1.6 level 1, >= 1.3 level 2, >= 1.12 level 3; a bold group at body size
    (ratio >= 0.95) of at most three lines and 14 words (a statement title: company, statement, units), not ending in a period or a figure and
    starting with a capital or a digit, level 3. Never a heading: more than 3 lines or 150
    characters, no letter, a trailing comma or semicolon, or text that :func:`reads_as_sentence`.
    """
    ratio = size / max(body, 1e-6)
    bare = text.rstrip("\u201d\"')]} ")
    if lines > 3 or len(text) > 150 or not any(ch.isalpha() for ch in text) or bare.endswith((",", ";")) \
            or reads_as_sentence(text):
        return None
    if ratio >= 1.6:
        return 1
    if ratio >= 1.3:
        return 2
    if ratio >= 1.12:
        return 3
    if bold and ratio >= 0.95 and lines <= 3 and len(text.split()) <= 14 \
            and not bare.endswith(".") and not bare[-1:].isdigit() and (text[:1].isupper() or text[:1].isdigit()):
        return 3
    return None


def _margin_label(line: Line, body: float, height: float) -> BlockType | None:
    if line.size > 1.1 * body:
        return None
    if line.y1 <= 0.07 * height:
        return BlockType.PAGE_HEADER
    if line.y0 >= 0.93 * height or (line.y0 >= 0.85 * height and _PAGE_NUMBER.match(line.text)):
        return BlockType.PAGE_FOOTER
    return None


#: A margin line closer than this many of its line heights to the body text flows with it: it is
#: body text that starts (ends) high (low) on the page, not a running header (footer).
MARGIN_DETACH_LINES = 1.5


def _detached_margins(lines: list[Line], body: float, height: float) -> dict[int, BlockType]:
    """Header/footer label by ``id(line)`` for the lines :func:`_margin_label` places in a margin
    *and* that stand apart from the body: a header (footer) line whose nearest line below (above)
    in the same column is a body line, or a margin line already found to be body, at a vertical gap
    under :data:`MARGIN_DETACH_LINES` line heights, is body text (a paragraph running into the
    margin, as in EDGAR filings typeset with small margins). Bare page numbers are always
    footers/headers. Decided from the body outwards, so a paragraph's lines all flip together."""
    labels = {id(ln): lab for ln in lines if (lab := _margin_label(ln, body, height)) is not None}
    if not labels:
        return labels
    body_lines = [ln for ln in lines if id(ln) not in labels]

    def overlaps(a: Line, b: Line) -> bool:
        return min(a.x1, b.x1) - max(a.x0, b.x0) > 0

    for kind, outward in ((BlockType.PAGE_HEADER, True), (BlockType.PAGE_FOOTER, False)):
        candidates = sorted((ln for ln in lines if labels.get(id(ln)) == kind), key=lambda ln: ln.y0, reverse=outward)
        for ln in candidates:
            if _PAGE_NUMBER.match(ln.text.strip()):
                continue
            limit = MARGIN_DETACH_LINES * max(ln.height, 1e-6)
            if outward:  # header: look down
                gaps = [o.y0 - ln.y1 for o in body_lines if overlaps(o, ln) and o.y0 >= ln.y1 - 0.3 * ln.height]
            else:  # footer: look up
                gaps = [ln.y0 - o.y1 for o in body_lines if overlaps(o, ln) and o.y1 <= ln.y0 + 0.3 * ln.height]
            if gaps and min(gaps) < limit:
                del labels[id(ln)]
                body_lines.append(ln)
    return labels


def _join(texts: list[str]) -> str:
    """Lines of a block as one text: a hyphen before a lower-case continuation is dropped, two
    Chinese or Japanese characters meet with no space, other lines with one."""
    from folioflow.ocr.postprocess.lines import cjk_joined

    out = ""
    for t in texts:
        if out.endswith("-") and len(out) > 1 and out[-2].isalpha() and t[:1].islower():
            out = out[:-1] + t
        elif out and t and cjk_joined(out[-1], t[0]):
            out += t
        else:
            out = f"{out} {t}" if out else t
    return out


def _bbox(items: list) -> BBox:
    return BBox(x0=min(i.x0 for i in items), y0=min(i.y0 for i in items),
                x1=max(i.x1 for i in items), y1=max(i.y1 for i in items))


#: A list label standing alone on its line: "3.", "A.", "(a)", "iv)", "2.1", a bullet (a hanging indent
#: sets the text of its item apart, on the same row).
_HANGING_LABEL = re.compile(r"^(?:\(?(?:\d{1,3}(?:\.\d{1,3})*|[A-Za-z]|[ivxlcIVXLC]{2,6})[.)]|[•·▪◦●○■□–*])$")


def _level_right(label: Line, other: object) -> bool:
    """Whether ``other`` is a line level with ``label`` (vertical centres within half its height)
    and to its right, within four of its ems: the text of the item ``label`` numbers."""
    if not isinstance(other, Line):
        return False
    gap = other.x0 - label.x1
    return abs((other.y0 + other.y1) - (label.y0 + label.y1)) / 2 < 0.5 * label.height and 0 <= gap <= 4 * label.size


def _continues(group: list[Line], line: Line, prev_kind: str) -> bool:
    """Whether ``line`` continues the paragraph ``group``: same column and size, and a gap no
    larger than the paragraph's own line gap (half a line for the second line)."""
    if prev_kind not in ("paragraph", "list_item"):
        return False
    prev = group[-1]
    gap = line.y0 - prev.y1
    same_column = min(prev.x1, line.x1) - max(prev.x0, line.x0) > 0 or abs(prev.x0 - line.x0) < 2 * prev.size
    limit = 0.5 * prev.height
    if len(group) >= 2 and not _level_right(group[-2], prev):  # (a hanging label is no line above)
        limit = min(limit, max(0.0, prev.y0 - group[-2].y1) + 0.25 * prev.height)
    return (same_column and -0.3 * prev.height <= gap <= limit
            and abs(line.size - prev.size) <= 0.15 * prev.size)


def build_blocks(lines: list[Line], tables: list[TableResult], figures: list[Figure],
                 width: float, height: float, page_number: int = 1) -> list[Block]:
    """Label and order the page's content. ``lines`` must exclude nothing: lines inside tables
    are dropped here. Returns blocks: page headers first, body in reading order, footers last."""
    body = body_size(lines)
    table_boxes = [t.bbox for t in tables]

    def in_table(ln: Line) -> bool:
        cx, cy = (ln.x0 + ln.x1) / 2, (ln.y0 + ln.y1) / 2
        return any(b[0] - 1 <= cx <= b[2] + 1 and b[1] - 1 <= cy <= b[3] + 1 for b in table_boxes)

    headers: list[Block] = []
    footers: list[Block] = []
    items: list[_Item] = []
    flowing = [ln for ln in lines if not in_table(ln)]
    margins = _detached_margins(flowing, body, height)
    for ln in lines:
        if in_table(ln):
            continue
        margin = margins.get(id(ln))
        if margin is not None:
            block = Block(type=margin, text=ln.text, bbox=BBox(x0=ln.x0, y0=ln.y0, x1=ln.x1, y1=ln.y1))
            (headers if margin == BlockType.PAGE_HEADER else footers).append(block)
            continue
        items.append(_Item(ln.x0, ln.y0, ln.x1, ln.y1, ln))
    items += [_Item(*t.bbox, payload=t) for t in tables]
    items += [_Item(f.x0, f.y0, f.x1, f.y1, payload=f) for f in figures]
    text_heights = [ln.height for ln in lines] or [body * 1.2]
    ordered = reading_order(items, line_height=sorted(text_heights)[len(text_heights) // 2], em=body)

    blocks: list[Block] = []
    group: list[Line] = []
    kind = ""
    max_size = max((ln.size for ln in lines), default=0.0)

    def flush() -> None:
        nonlocal group, kind
        if not group:
            return
        text = _join([ln.text for ln in group])
        bbox = _bbox(group)
        # the typography heading_level judges, kept on a heading for relevel_headings
        size, bold = max(ln.size for ln in group), all(ln.bold for ln in group)
        font = {"size": size, "bold": bold, "lines": len(group)} if kind == "paragraph" else None
        level = heading_level(size, body, len(group), bold, text) if font else None
        if level is not None:
            is_title = page_number == 1 and level == 1 and group[0].size >= max_size - 0.5 and not any(
                b.type == BlockType.TITLE for b in blocks)
            btype = BlockType.TITLE if is_title else BlockType.HEADING
            blocks.append(Block(type=btype, text="#" * level + " " + text, bbox=bbox, level=level,
                                attributes={HEADING_FONT: font}))
        elif kind == "list_item":
            marker = _BULLET.match(text)
            md = "- " + text[marker.end():] if marker else text
            blocks.append(Block(type=BlockType.LIST_ITEM, text=md, bbox=bbox))
        else:
            blocks.append(Block(type=BlockType.PARAGRAPH, text=text, bbox=bbox))
        group, kind = [], ""

    for idx, item in enumerate(ordered):
        payload = item.payload
        if isinstance(payload, TableResult):
            flush()
            blocks.append(Block(type=BlockType.TABLE, text=to_pipe_table(payload.rows, payload.ruled_grid),
                                bbox=BBox(x0=item.x0, y0=item.y0, x1=item.x1, y1=item.y1),
                                attributes={"detector": payload.kind, "rows": len(payload.rows),
                                            "columns": len(payload.rows[0]) if payload.rows else 0}))
            continue
        if isinstance(payload, Figure):
            flush()
            blocks.append(Block(type=BlockType.FIGURE, text="", bbox=BBox(x0=item.x0, y0=item.y0, x1=item.x1, y1=item.y1)))
            continue
        ln = cast(Line, payload)  # tables and figures were taken above: the rest are lines
        neighbours = [o.payload for o in ordered[max(0, idx - 1): idx + 2] if isinstance(o.payload, Line)]
        column = (min(n.x0 for n in neighbours), max(n.x1 for n in neighbours))
        if len(neighbours) > 1 and is_display_formula(ln, column):
            flush()
            blocks.append(Block(type=BlockType.FORMULA, text=f"$${to_latex(ln)}$$",
                                bbox=BBox(x0=ln.x0, y0=ln.y0, x1=ln.x1, y1=ln.y1)))
            continue
        if _HANGING_LABEL.match(ln.text.strip()) and idx + 1 < len(ordered) and _level_right(ln, ordered[idx + 1].payload):
            flush()  # a hanging list label ("A." | "Termination. Either ..."): it opens the paragraph on its row
            group, kind = [ln], ("list_item" if _BULLET.match(ln.text.strip() + " ") else "paragraph")
            continue
        if len(group) == 1 and _HANGING_LABEL.match(group[0].text.strip()) and _level_right(group[0], ln):
            group.append(ln)
            continue
        starts_item = bool(_BULLET.match(ln.text) or _ENUM.match(ln.text))
        large = ln.size >= 1.12 * body
        aligned = abs(ln.x0 - group[-1].x0) < 0.5 * ln.size or \
            abs((ln.x0 + ln.x1) - (group[-1].x0 + group[-1].x1)) < ln.size if group else False
        if group and not starts_item and ln.bold == group[-1].bold and (aligned or not large) \
                and _continues(group, ln, kind):
            group.append(ln)
            continue
        if group and kind == "list_item" and not starts_item and ln.x0 > group[0].x0 + 2 and \
                0 <= ln.y0 - group[-1].y1 < 0.7 * group[-1].height:
            group.append(ln)
            continue
        flush()
        group, kind = [ln], ("list_item" if starts_item else "paragraph")
    flush()
    return headers + blocks + footers


def page_markdown(blocks: list[Block], include_headers_footers: bool = False) -> str:
    """Markdown of a page from its blocks (blank line between blocks). Page headers/footers are
    left out unless ``include_headers_footers``; figures have no text of their own."""
    skip = set() if include_headers_footers else {BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER}
    return "\n\n".join(b.text for b in blocks if b.type not in skip and b.text.strip())


def pages_built_from_blocks(pages: list[Page]) -> list[Page]:
    """The pages of ``pages`` (in order) whose Markdown is :func:`page_markdown` of their blocks:
    text-layer and CPU OCR pages. A VLM page keeps the model's Markdown, so a document pass that
    changes blocks must leave it alone."""
    return [p for p in pages if p.blocks and p.markdown == page_markdown(p.blocks)]


def document_body_size(pages: list[Page]) -> float | None:
    """The font size (points) carrying the most characters over the text-layer pages of a document
    (their ``attributes["font_chars"]``: characters per size); ``None`` without such pages."""
    counts: Counter[float] = Counter()
    for page in pages:
        for size, chars in (page.attributes.get("font_chars") or {}).items():
            counts[float(size)] += int(chars)
    return dominant_size(counts)


def relevel_headings(pages: list[Page]) -> int:
    """Re-judge the text-layer headings of a whole document against the document's body size.

    A page alone judges its headings against its own body size, and in a filing the pages of
    financial statements set their tables in a smaller font than the prose: there an ordinary
    line looks 1.3x the body and became a level-2 heading that no later (level-3) note heading
    closed, so it sat in the heading path of every chunk to the end of the document. Here every
    block carrying :data:`HEADING_FONT` (a heading, or one this pass demoted earlier) gets
    :func:`heading_level` against :func:`document_body_size`: its level changes, or it becomes a
    paragraph when it is no heading at the document's scale (and back, as the pass is computed
    from the typography, not from the current level: running it on a part of a document, then on
    the whole, gives the whole's answer). A title block keeps its type. A changed page's Markdown
    is rebuilt from its blocks. Pages of other engines, and blocks the clause pass marked
    (:data:`CLAUSE`), are left alone. Returns the number of
    blocks changed.
    """
    body = document_body_size(pages)
    if body is None:
        return 0
    changed = 0
    for page in pages:
        touched = False
        for block in page.blocks:
            font = block.attributes.get(HEADING_FONT)
            if not font or block.type == BlockType.TITLE or block.attributes.get(CLAUSE):
                continue
            plain = block.text[block.level + 1:] if block.type == BlockType.HEADING and block.level else block.text
            level = heading_level(float(font["size"]), body, int(font["lines"]), bool(font["bold"]), plain)
            btype = BlockType.HEADING if level else BlockType.PARAGRAPH
            text = "#" * level + " " + plain if level else plain
            if (btype, level, text) != (block.type, block.level, block.text):
                block.type, block.level, block.text = btype, level, text
                touched = True
                changed += 1
        if touched:
            page.markdown = page_markdown(page.blocks)
    return changed


#: The last word of a line that breaks off a sentence: an article, preposition, conjunction or
#: auxiliary in lower case ("... is made this _____ day of", "... Services; and"). A title does not
#: end in one.
_OPEN_END = re.compile(r"(?:^|\s)(?:a|an|the|of|to|by|in|on|at|for|from|with|into|upon|under|between|as|and|or|"
                       r"nor|but|than|that|this|which|who|whose|is|are|was|were|be|its|their|any|each|such)$")
#: An appositive in lower case after a name: "PHILIPS MEDICAL SYSTEMS NEDERLAND B.V., a company".
_APPOSITIVE = re.compile(r",\s+(?:a|an|the)\s+[a-z]")
#: A structural label that opens a heading a later pass reads (Item, Part, Note, Article, Section,
#: Schedule, Exhibit, Annex and a number): such a heading stays one even when the text set after it
#: in reading order continues another column ("Item 2. Unregistered Sales of Equity Securities and Use of").
_LABEL = re.compile(r"^(?i:item|part|note|article|section|schedule|exhibit|annex|appendix)\s+"
                    r"(?:\d+[A-Za-z]?\b|[IVXLC]+\b|[ivxlc]+\b|[A-Z]\b)")


def breaks_off(heading: str, following: str) -> bool:
    """Whether a heading's text ``heading`` (without its ``#``) and the text of the block after it
    read as one sentence broken across lines: the heading ends without a closing mark in a word that
    leaves the sentence open (:data:`_OPEN_END`) or holds a lower-case appositive
    (:data:`_APPOSITIVE`), it opens with no structural label (:data:`_LABEL`), and ``following``
    starts in lower case or with a blank to fill in ("_____, 20___, by and between ...")."""
    bare = heading.strip()
    if not bare or bare[-1] in ".:;?!)]\u201d\"'" or _LABEL.match(bare):
        return False
    nxt = following.lstrip()
    return bool(nxt[:1].islower() or nxt[:1] == "_") and bool(_OPEN_END.search(bare) or _APPOSITIVE.search(bare))


def _just_below(head: Block, nxt: Block) -> bool:
    """Whether ``nxt`` starts right below ``head`` in the same column: their boxes overlap
    horizontally and the gap between them is at most two of the heading's line heights (in a
    two-column page the next block in reading order may be the other column's)."""
    if head.bbox is None or nxt.bbox is None:
        return False
    lines = int((head.attributes.get(HEADING_FONT) or {}).get("lines") or 1)
    line = max((head.bbox.y1 - head.bbox.y0) / max(lines, 1), 1.0)
    overlap = min(head.bbox.x1, nxt.bbox.x1) - max(head.bbox.x0, nxt.bbox.x0)
    return overlap > 0 and -0.5 * line <= nxt.bbox.y0 - head.bbox.y1 <= 2 * line


def join_broken_headings(pages: list[Page]) -> int:
    """Merge into the next block each text-layer heading that is the first line of a sentence the
    next block goes on with (:func:`breaks_off`): a bold or large first line of a preamble ("THIS
    AGREEMENT (“Agreement”) is made this _____ day of" over "_________, 20___, by and between ...")
    or of a party's description ("PHILIPS MEDICAL SYSTEMS NEDERLAND B.V., a company" over
    "incorporated under the laws of the Netherlands ...") was judged a heading by its typography, so
    the chunk lost the start of its sentence to the heading path. Only pages whose Markdown is built
    from their blocks (:func:`pages_built_from_blocks`), headings that are not the title, and a next
    block on the same page that is a paragraph starting right below the heading in its column
    (:func:`_just_below`). Run before the clause pass, and on a later run a heading that pass made or
    changed is left alone. The merged block is a paragraph with the heading's text first (no longer
    carrying a typography :data:`HEADING_FONT` for :func:`relevel_headings` to judge again); a changed
    page's Markdown is rebuilt. Idempotent. Returns the number of headings merged."""
    merged = 0
    for page in pages_built_from_blocks(pages):
        blocks = page.blocks
        body = [i for i, b in enumerate(blocks) if b.type not in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER)]
        drop: set[int] = set()
        for i, j in pairwise(body):
            head, nxt = blocks[i], blocks[j]
            if head.type != BlockType.HEADING or head.attributes.get(CLAUSE) or i in drop \
                    or nxt.type != BlockType.PARAGRAPH or not _just_below(head, nxt):
                continue
            plain = head.text.lstrip("#").strip()
            if not breaks_off(plain, nxt.text):
                continue
            nxt.text = f"{plain} {nxt.text.lstrip()}"
            nxt.attributes.pop(HEADING_FONT, None)
            h, n = cast(BBox, head.bbox), cast(BBox, nxt.bbox)  # both boxes: _just_below
            nxt.bbox = BBox(x0=min(h.x0, n.x0), y0=min(h.y0, n.y0), x1=max(h.x1, n.x1), y1=max(h.y1, n.y1))
            drop.add(i)
        if drop:
            page.blocks = [b for i, b in enumerate(blocks) if i not in drop]
            page.markdown = page_markdown(page.blocks)
            merged += len(drop)
    return merged
