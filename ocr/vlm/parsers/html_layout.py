"""chandra's HTML layout answers -> Markdown + blocks.

Format (datalab-to/chandra, ``chandra/prompts.py`` and ``chandra/output.py``): the answer is a
sequence of top-level ``<div data-label="LABEL" data-bbox="[x0, y0, x1, y1]">...</div>`` layout
blocks in reading order; boxes are on a ``0..bbox_scale`` grid of the image (1024 in current chandra,
1000 in its first release); the inner HTML uses a small tag set (``p``, ``h1``-``h5``, lists,
``table`` with ``colspan``/``rowspan``, ``math`` with ``display="block"`` for display math, ``img``
with an ``alt`` description, ``pre``/``code``...).

Conversion: HTML is parsed with BeautifulSoup (``html.parser``); inner HTML becomes Markdown with
markdownify, except that tables stay HTML (spans survive) and ``<math>`` becomes ``$...$`` /
``$$...$$``. Labels map to :class:`~folioflow.ocr.schema.BlockType` through :data:`LABELS`. Text that sits
outside any layout div is kept as a paragraph without a box (never dropped).
"""

from __future__ import annotations

import json
import re

from bs4 import BeautifulSoup, NavigableString, Tag
from markdownify import MarkdownConverter

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.schema import Block, BlockType
from folioflow.ocr.vlm.parsers.base import ParsedOutput, heading_level, join_blocks, normalised_box

__all__ = ["LABELS", "html_to_markdown", "make_html_layout_parser"]

#: chandra layout label -> folioflow block type.
LABELS: dict[str, BlockType] = {
    "caption": BlockType.CAPTION,
    "footnote": BlockType.FOOTNOTE,
    "equation-block": BlockType.FORMULA,
    "list-group": BlockType.LIST_ITEM,
    "page-header": BlockType.PAGE_HEADER,
    "page-footer": BlockType.PAGE_FOOTER,
    "image": BlockType.FIGURE,
    "figure": BlockType.FIGURE,
    "section-header": BlockType.HEADING,
    "table": BlockType.TABLE,
    "table-of-contents": BlockType.TABLE,
    "text": BlockType.PARAGRAPH,
    "complex-block": BlockType.OTHER,
    "code-block": BlockType.CODE,
    "form": BlockType.OTHER,
}


class _Converter(MarkdownConverter):
    """markdownify with folioflow's conventions: HTML tables kept verbatim, ``<math>`` as dollars,
    ``<img alt>`` as an image whose alt text carries the description."""

    def convert_math(self, el, text, parent_tags=None):  # noqa: D102 - markdownify hook
        body = el.get_text().strip()
        if el.get("display") == "block":
            return f"\n\n$$\n{body}\n$$\n\n"
        return f"${body}$"

    def convert_table(self, el, text, parent_tags=None):  # noqa: D102
        return "\n\n" + str(el) + "\n\n"

    def convert_img(self, el, text, parent_tags=None):  # noqa: D102
        alt = " ".join((el.get("alt") or "").split())
        return f"![{alt}]()"


_CONVERTER = _Converter(
    heading_style="ATX",
    bullets="-",
    escape_misc=False,
    escape_underscores=False,
    sub_symbol="<sub>",
    sup_symbol="<sup>",
)


def html_to_markdown(fragment: str) -> str:
    """Markdown of an HTML fragment (tables kept as HTML, math as ``$``/``$$``)."""
    text = _CONVERTER.convert(fragment)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _box(raw: str | None, scale: float):
    if not raw:
        return None
    try:
        coords = json.loads(raw)
    except ValueError:
        coords = raw.replace(",", " ").split()
    return normalised_box(coords, scale) if isinstance(coords, list) else None


def _block(label: str, inner: Tag, bbox, markdown: str) -> Block:
    kind = LABELS.get(label.lower(), BlockType.OTHER)
    level = None
    if kind is BlockType.HEADING:
        level = heading_level(markdown) or 2
        if heading_level(markdown) is None:  # a Section-Header without <hN>: make it a heading line
            markdown = "#" * level + " " + " ".join(markdown.split())
    elif kind is BlockType.TABLE and inner.find("table") is None:
        kind = BlockType.PARAGRAPH  # a Table-Of-Contents written as text
    elif kind is BlockType.CODE and not markdown.startswith("```"):
        markdown = f"```\n{inner.get_text()}\n```"
    return Block(type=kind, text=markdown, bbox=bbox, level=level, attributes={"label": label})


def make_html_layout_parser(bbox_scale: float = 1024.0):
    """A parser for chandra answers whose boxes are on a ``0..bbox_scale`` grid.

    The returned callable raises :class:`OutputValidationError` when a non-empty answer holds no
    ``data-label`` layout block at all (the model ignored the layout format)."""

    def parse(text: str) -> ParsedOutput:
        soup = BeautifulSoup(text.strip(), "html.parser")
        blocks: list[Block] = []
        labelled = 0
        for node in soup.contents:
            if isinstance(node, Tag) and node.name == "div" and node.get("data-label"):
                labelled += 1
                inner = node.decode_contents()
                markdown = html_to_markdown(inner)
                bbox = node.get("data-bbox")  # a string: bs4 splits only class-like attributes into lists
                blocks.append(
                    _block(str(node["data-label"]), node, _box(bbox if isinstance(bbox, str) else None, bbox_scale), markdown)
                )
            else:
                stray = html_to_markdown(str(node)) if isinstance(node, Tag) else str(node).strip()
                if isinstance(node, NavigableString) and not stray:
                    continue
                if stray:
                    blocks.append(Block(type=BlockType.PARAGRAPH, text=stray, attributes={"label": None}))
        if blocks and not labelled:
            raise OutputValidationError(
                "unparsable: no <div data-label=...> layout block in the chandra answer"
            )
        return ParsedOutput(markdown=join_blocks(blocks), blocks=blocks)

    return parse
