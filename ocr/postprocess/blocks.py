"""OCR lines + tables + layout hints -> reading-ordered blocks and the page's Markdown.

Rules (all relative, so they hold in pixels or points and at any DPI):

* **Text size** of a line is its ink height (``line.attrs["ink_height"]`` measured on the image by
  the engine, else the box height); the page's body size is the median over lines of 3+ words.
* **Page header/footer**: lines in the top/bottom 8% of the page separated from the body by at
  least two body lines, page-number lines in the top/bottom 12%, and lines rapid-layout labels
  ``header``/``footer``. They become ``page_header``/``page_footer`` blocks, left out of Markdown
  (running headers would otherwise repeat in every chunk).
* **Headings**: short lines (<= 15 words, >= 60% letters, so formulas and figures are not) at least 1.2x the body size; level 1 from 1.45x,
  level 2 from 1.2x; a short, standalone line inside a layout ``title`` region is level 3. The
  first level-1 heading in the top quarter of page 1 at 1.8x or more is the ``title``.
* **Paragraphs**: consecutive lines of one reading-order leaf whose line pitch stays within 1.3x
  the page's line pitch (lower quartile of neighbouring same-size lines) and whose sizes agree within 25%; a short line ending a sentence also
  ends its paragraph. Hyphens at line ends before a lowercase letter are joined.
* **Captions**: paragraphs whose lines lie mostly in a layout ``figure_caption``/``table_caption``
  region are ``caption`` blocks.
* **A page with text only in its margins** (one line near the top of a scan): that text is the
  page's body, not furniture; only bare page numbers stay page header/footer.
* **Vertical margin text** (lines over 3x taller than wide): paragraphs after the page body.
* **Figures**: rapid-layout ``figure`` regions whose OCR text covers under 25% of their area (so
  a mislabelled text block is never dropped); their text is kept in ``attributes["text"]``, and
  their legible lines of at least :data:`FIGURE_PROSE_WORDS` words follow the figure as a
  paragraph (``attributes["source"] = "figure_text"``, the figure ``text_in_blocks``), so what was
  read there is indexed: a tick-box table of questions the model took for a picture lost its
  words otherwise. Shorter lines (a chart's axis labels, "Revenue", "2024") stay with the figure.
* **Page-sized figures**: a ``figure`` region covering at least :data:`PAGE_FIGURE_SHARE` of the
  page is a whole-page scan the CDLA model took for a picture (a letter with a payment slip, a
  form, a map with place names). Its legible lines (confidence at least
  :data:`MIN_LEGIBLE_CONFIDENCE`, with letters or digits) stay text blocks in reading order, and
  the figure block comes just before the first of them (``attributes["text_in_blocks"] = True``;
  ``attributes["text"]`` keeps only the illegible rest). Dropping them lost a whole page of text
  silently (docling's ``qr_bill_example.jpg``, OCRmyPDF's ``baiona.png``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from folioflow.ocr.postprocess.lines import Box, OcrLine, Region, _is_cjk, cjk_joined, median, union_box
from folioflow.ocr.postprocess.reading_order import xy_cut
from folioflow.ocr.postprocess.tables import TableGrid, table_markdown
from folioflow.ocr.schema import Block, BlockType

__all__ = ["FIGURE_MARKDOWN", "FIGURE_PROSE_WORDS", "MIN_LEGIBLE_CONFIDENCE", "PAGE_FIGURE_SHARE", "blocks_markdown", "compose_blocks",
           "page_sized"]

#: Markdown written for a figure (an HTML comment: invisible when rendered, kept by parsers).
FIGURE_MARKDOWN = "<!-- figure -->"
#: A figure region covering at least this share of the page area is the page itself (its text stays text).
PAGE_FIGURE_SHARE = 0.5
#: Legible lines of a figure with at least this many words are text, indexed after the figure.
FIGURE_PROSE_WORDS = 3
#: Lines of a page-sized figure read with a lower mean confidence (0..1) are noise in the picture.
MIN_LEGIBLE_CONFIDENCE = 0.3

_PAGE_NUMBER = re.compile(r"^(page|p\.|seite|página)?\s*[-–]?\s*\d{1,4}\s*[-–]?\s*((of|/|von|de)\s*\d{1,4})?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?:;。！？：”\"')]$")


@dataclass
class _Item:
    kind: str  # "line", "table", "figure"
    box: Box
    line: OcrLine | None = None
    table: TableGrid | None = None
    extra: dict = field(default_factory=dict)


def _size(line: OcrLine) -> float:
    return float(line.attrs.get("ink_height") or line.height)


def _inside(box: Box, region: Box, slack: float = 0.0) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return region[0] - slack <= cx <= region[2] + slack and region[1] - slack <= cy <= region[3] + slack


def _overlap_area(a: Box, b: Box) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h)


def page_sized(box: Box, page_width: float, page_height: float) -> bool:
    """True when ``box`` (x0, y0, x1, y1, clipped to the page) covers at least
    :data:`PAGE_FIGURE_SHARE` of a ``page_width`` x ``page_height`` page (same units as the box)."""
    w = min(box[2], page_width) - max(box[0], 0.0)
    h = min(box[3], page_height) - max(box[1], 0.0)
    return max(0.0, w) * max(0.0, h) >= PAGE_FIGURE_SHARE * max(page_width * page_height, 1e-6)


def _prose(line: OcrLine) -> bool:
    """A line of words rather than a label: at least :data:`FIGURE_PROSE_WORDS` words (a Chinese
    or Japanese character counts as one)."""
    return len(line.text.split()) + sum(1 for ch in line.text if _is_cjk(ch)) >= FIGURE_PROSE_WORDS


def _legible(line: OcrLine) -> bool:
    return line.confidence >= MIN_LEGIBLE_CONFIDENCE and sum(ch.isalnum() for ch in line.text) >= 2


def compose_blocks(
    lines: list[OcrLine],
    page_width: float,
    page_height: float,
    tables: Sequence[TableGrid] = (),
    regions: Sequence[Region] = (),
    first_page: bool = False,
) -> list[Block]:
    """Blocks in reading order for one page. ``lines`` must exclude words already placed in
    ``tables``; boxes of lines, tables and regions share one frame (pixels or points); block
    boxes are returned in that frame as :class:`~folioflow.ocr.schema.BBox`."""
    from folioflow.ocr.schema import BBox

    body_lines = [ln for ln in lines if len(ln.words) >= 3] or list(lines)
    body = median([_size(ln) for ln in body_lines], 10.0)
    furniture, rest = _split_furniture(lines, page_height, body, regions)
    figures, rest = _figures(rest, regions, page_width, page_height)
    page_figures = [f for f in figures if f["page_sized"]]  # placed after the reading order, not in it
    figures = [f for f in figures if not f["page_sized"]]

    # Lines much taller than wide are vertical text in a margin (arXiv stamps, spine labels): they
    # would block every horizontal cut of the XY-cut, so they are read after the page body.
    margin = [ln for ln in rest if ln.height > 3 * max(ln.width, 1e-6) and ln.height > 4 * body]
    items = [_Item("line", ln.box, line=ln) for ln in rest if ln not in margin]
    items += [_Item("table", t.box, table=t) for t in tables]
    items += [_Item("figure", f["box"], extra=f) for f in figures]
    blocks: list[Block] = []
    if items:
        # only line items carry a line (built just above)
        prose = [it.line is None or len(it.line.words) >= 4 or it.line.width > 8 * body for it in items]
        leaves = xy_cut([it.box for it in items], min_col_gap=1.2 * body, min_row_gap=0.8 * body, prose=prose)
        pitch = _median_pitch(items, leaves, body)
        titles = [r.box for r in regions if r.label == "title"]
        captions = [r.box for r in regions if r.label in ("figure_caption", "table_caption")]
        for leaf in leaves:
            blocks += _leaf_blocks([items[i] for i in leaf], body, pitch, titles, captions, page_height, first_page)
    for figure in page_figures:
        # a page-sized box would block every cut of the XY-cut: the figure goes before its first text
        box = figure["box"]
        at = next((k for k, b in enumerate(blocks) if b.bbox is not None and _inside(
            (b.bbox.x0, b.bbox.y0, b.bbox.x1, b.bbox.y1), box)), len(blocks))
        blocks.insert(at, Block(type=BlockType.FIGURE, text=FIGURE_MARKDOWN,
                                bbox=BBox(x0=box[0], y0=box[1], x1=box[2], y1=box[3]),
                                confidence=round(figure["score"], 3),
                                attributes={"text": figure["text"], "text_in_blocks": True}))
    for line in margin:
        blocks.append(Block(type=BlockType.PARAGRAPH, text=line.text, confidence=round(line.confidence, 3),
                            bbox=BBox(x0=line.box[0], y0=line.box[1], x1=line.box[2], y1=line.box[3]),
                            attributes={"vertical": True}))
    for kind, line in furniture:
        blocks.append(Block(type=kind, text=line.text, bbox=BBox(x0=line.box[0], y0=line.box[1], x1=line.box[2],
                                                                  y1=line.box[3]), confidence=round(line.confidence, 3)))
    return blocks


def _split_furniture(lines, page_height, body, regions):
    furniture, rest = [], []
    marked = [(r.label, r.box) for r in regions if r.label in ("header", "footer")]
    ys = sorted((ln.box[1], ln.box[3]) for ln in lines)
    for line in lines:
        cy = line.cy
        top, bottom = cy < 0.08 * page_height, cy > 0.92 * page_height
        near_top, near_bottom = cy < 0.12 * page_height, cy > 0.88 * page_height
        kind = None
        if _PAGE_NUMBER.match(line.text.strip()) and (near_top or near_bottom):
            kind = BlockType.PAGE_HEADER if near_top else BlockType.PAGE_FOOTER
        elif (top or bottom) and _isolated(line, ys, 2.0 * body):
            kind = BlockType.PAGE_HEADER if top else BlockType.PAGE_FOOTER
        else:
            for label, box in marked:
                if _inside(line.box, box) and (near_top or near_bottom) and len(line.words) <= 15:
                    kind = BlockType.PAGE_HEADER if label == "header" else BlockType.PAGE_FOOTER
        if kind is None:
            rest.append(line)
        else:
            furniture.append((kind, line))
    if not rest:
        # Nothing left for the body: the margin text is the page's content (a one-line scan, a
        # cover with a lone title), not a running header or footer; dropping it lost the page's
        # only text silently. Bare page numbers stay furniture.
        rest = [line for _, line in furniture if not _PAGE_NUMBER.match(line.text.strip())]
        furniture = [(kind, line) for kind, line in furniture if _PAGE_NUMBER.match(line.text.strip())]
    return furniture, rest


def _isolated(line: OcrLine, ys: list[tuple[float, float]], gap: float) -> bool:
    """No other line within ``gap`` above or below ``line`` (other than lines on the same row)."""
    for y0, y1 in ys:
        if y1 <= line.box[1] - 1e-6 and line.box[1] - y1 < gap:
            return False
        if y0 >= line.box[3] + 1e-6 and y0 - line.box[3] < gap:
            return False
    return True


def _figures(lines, regions, page_width, page_height):
    """Split ``lines`` into figures (dicts: ``box``, ``text``, ``score``, ``page_sized``) and the
    lines left for the body. A page-sized figure takes only its illegible lines (see the module
    docstring); a smaller one takes every line inside it, as its ``text``."""
    figures, rest = [], list(lines)
    for region in regions:
        if region.label != "figure":
            continue
        area = max((region.box[2] - region.box[0]) * (region.box[3] - region.box[1]), 1e-6)
        inside = [ln for ln in rest if _inside(ln.box, region.box)]
        covered = sum(_overlap_area(ln.box, region.box) for ln in inside)
        if covered / area >= 0.25:
            continue
        whole_page = page_sized(region.box, page_width, page_height)
        taken = [ln for ln in inside if not _legible(ln)] if whole_page else inside
        figures.append({"box": region.box, "text": "\n".join(ln.text for ln in taken), "score": region.score,
                        "page_sized": whole_page,
                        "prose": [ln for ln in taken if _legible(ln) and _prose(ln)]})
        rest = [ln for ln in rest if ln not in taken]
    return figures, rest


def _median_pitch(items, leaves, body) -> float:
    pitches = []
    for leaf in leaves:
        seq = [items[i] for i in leaf if items[i].kind == "line"]
        for a, b in pairwise(seq):
            pitch = b.line.cy - a.line.cy
            if 0 < pitch < 3 * body and abs(_size(a.line) - _size(b.line)) < 0.25 * body:
                pitches.append(pitch)
    if not pitches:
        return 1.5 * body
    pitches.sort()
    return pitches[len(pitches) // 4]  # lower quartile: the line pitch inside paragraphs


def _heading_level(line: OcrLine, body: float, titles: list[Box]) -> int | None:
    words = len(line.text.split())
    if words == 0 or words > 15 or line.text.rstrip().endswith(","):
        return None
    chars = [ch for ch in line.text if not ch.isspace()]
    if sum(ch.isalpha() for ch in chars) < 0.6 * len(chars):  # formulas, numbers, rules
        return None
    ratio = _size(line) / max(body, 1e-6)
    if ratio >= 1.45:
        return 1
    if ratio >= 1.2:
        return 2
    if ratio >= 0.9 and words <= 12 and any(_inside(line.box, t) for t in titles):
        return 3
    return None


def _leaf_blocks(items, body, pitch, titles, captions, page_height, first_page) -> list[Block]:
    from folioflow.ocr.schema import BBox

    def bbox(box: Box) -> BBox:
        return BBox(x0=box[0], y0=box[1], x1=box[2], y1=box[3])

    blocks: list[Block] = []
    para: list[OcrLine] = []
    leaf_right = max(it.box[2] for it in items)
    leaf_left = min(it.box[0] for it in items)

    def flush() -> None:
        if para:
            in_caption = sum(any(_inside(ln.box, c) for c in captions) for ln in para) > len(para) / 2
            kind = BlockType.CAPTION if in_caption else BlockType.PARAGRAPH
            blocks.append(Block(type=kind, text=_join_lines(para), bbox=bbox(union_box([ln.box for ln in para])),
                                confidence=round(sum(ln.confidence for ln in para) / len(para), 3)))
            para.clear()

    for pos, item in enumerate(items):
        if item.kind == "table":
            flush()
            blocks.append(Block(type=BlockType.TABLE, text=table_markdown(item.table), bbox=bbox(item.box),
                                attributes={"rows": item.table.n_rows, "cols": item.table.n_cols,
                                            "ruled": item.table.ruled}))
            continue
        if item.kind == "figure":
            flush()
            legible = item.extra.get("prose") or []
            attributes = {"text": item.extra["text"], **({"text_in_blocks": True} if legible else {})}
            blocks.append(Block(type=BlockType.FIGURE, text=FIGURE_MARKDOWN, bbox=bbox(item.box),
                                confidence=round(item.extra["score"], 3), attributes=attributes))
            if legible:  # what was read inside the figure reaches the index (a table the model took for a picture)
                blocks.append(Block(type=BlockType.PARAGRAPH, text="\n".join(ln.text for ln in legible),
                                    bbox=bbox(union_box([ln.box for ln in legible])),
                                    confidence=round(sum(ln.confidence for ln in legible) / len(legible), 3),
                                    attributes={"source": "figure_text"}))
            continue
        line = item.line
        standalone = not para or line.cy - para[-1].cy > 1.3 * pitch
        nxt = items[pos + 1].line if pos + 1 < len(items) and items[pos + 1].kind == "line" else None
        level = _heading_level(line, body, titles)
        if level == 3 and not (standalone and (nxt is None or nxt.cy - line.cy > 1.3 * pitch)):
            level = None
        if level is not None:
            flush()
            previous = blocks[-1] if blocks else None
            if (previous is not None and previous.bbox is not None and previous.type in (BlockType.HEADING, BlockType.TITLE)
                    and previous.level == level and previous.attributes.get("_last_cy") is not None
                    and line.cy - previous.attributes["_last_cy"] <= 1.35 * _size(line)):
                previous.attributes["_last_cy"] = line.cy
                previous.text = previous.text + " " + line.text
                previous.bbox = bbox(union_box([(previous.bbox.x0, previous.bbox.y0, previous.bbox.x1, previous.bbox.y1), line.box]))
                continue
            is_title = (first_page and level == 1 and _size(line) >= 1.8 * body and line.box[1] < 0.25 * page_height
                        and not any(b.type == BlockType.TITLE for b in blocks))
            blocks.append(Block(type=BlockType.TITLE if is_title else BlockType.HEADING, text=line.text, level=level,
                                bbox=bbox(line.box), confidence=round(line.confidence, 3),
                                attributes={"_last_cy": line.cy}))
            continue
        if para:
            prev = para[-1]
            same_size = abs(_size(line) - _size(prev)) <= 0.3 * max(_size(prev), _size(line), 1e-6)
            prev_ended = (prev.box[2] < leaf_left + 0.75 * (leaf_right - leaf_left)
                          and bool(_SENTENCE_END.search(prev.text.rstrip())))
            if standalone or not same_size or prev_ended:
                flush()
        para.append(line)
    flush()
    for block in blocks:
        if block.type in (BlockType.HEADING, BlockType.TITLE):
            block.text = "#" * (block.level or 1) + " " + block.text
            block.attributes.pop("_last_cy", None)
    return blocks


def _join_lines(lines: list[OcrLine]) -> str:
    out = ""
    for line in lines:
        text = line.text.strip()
        if not out:
            out = text
        elif out.endswith("-") and text[:1].islower() and len(out) > 1 and out[-2].isalpha():
            out = out[:-1] + text
        elif cjk_joined(out[-1], text[:1]):
            out += text
        else:
            out += " " + text
    return out




def blocks_markdown(blocks: list[Block]) -> str:
    """The page's Markdown: block texts in order, blank-line separated, without page
    headers/footers."""
    skip = (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER)
    return "\n\n".join(b.text for b in blocks if b.type not in skip and b.text.strip())
