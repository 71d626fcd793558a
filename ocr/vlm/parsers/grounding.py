"""DeepSeek-OCR grounding answers -> Markdown + blocks.

Format (deepseek-ai/DeepSeek-OCR, prompt ``<|grounding|>Convert the document to markdown.``; the
vLLM recipe serves it with ``skip_special_tokens=False`` so the tags survive): every block starts
with ``<|ref|>LABEL<|/ref|><|det|>[[x1, y1, x2, y2]]<|/det|>`` followed by its Markdown, on a
``0..999`` grid of the image (DeepSeek-OCR's own drawing code divides by 999). Several boxes
``[[...], [...]]`` are merged into their union. Tables are HTML ``<table>``; formulas are LaTeX in
``\\[ \\]`` (rewritten to ``$$``); images are a bare ``image`` tag. The end-of-sentence token
``<｜end▁of▁sentence｜>`` may trail the answer and is removed.

Labels map to :class:`~folioflow.ocr.schema.BlockType` through :data:`LABELS`; unknown labels become
``other`` (kept, with their text). Text before the first tag becomes a paragraph without a box.
Coordinates are read with ``json`` (never ``eval``).
"""

from __future__ import annotations

import json
import re

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.schema import BBox, Block, BlockType
from folioflow.ocr.vlm.parsers.base import (
    ParsedOutput,
    heading_level,
    join_blocks,
    normalise_math,
    normalised_box,
)

__all__ = ["LABELS", "GRID", "parse_grounding"]

#: DeepSeek-OCR coordinates run 0..999.
GRID = 999.0

LABELS: dict[str, BlockType] = {
    "title": BlockType.TITLE,
    "sub_title": BlockType.HEADING,
    "text": BlockType.PARAGRAPH,
    "table": BlockType.TABLE,
    "table_caption": BlockType.CAPTION,
    "table_footnote": BlockType.FOOTNOTE,
    "image": BlockType.FIGURE,
    "figure": BlockType.FIGURE,
    "image_caption": BlockType.CAPTION,
    "figure_caption": BlockType.CAPTION,
    "equation": BlockType.FORMULA,
    "formula": BlockType.FORMULA,
    "header": BlockType.PAGE_HEADER,
    "footer": BlockType.PAGE_FOOTER,
    "page_header": BlockType.PAGE_HEADER,
    "page_footer": BlockType.PAGE_FOOTER,
    "footnote": BlockType.FOOTNOTE,
    "code": BlockType.CODE,
    "list": BlockType.LIST_ITEM,
}

_TAG = re.compile(r"<\|ref\|>(.*?)<\|/ref\|>\s*<\|det\|>(.*?)<\|/det\|>", re.DOTALL)
_EOS = ("<｜end▁of▁sentence｜>", "<|end▁of▁sentence|>", "<|end_of_sentence|>")
_COLON_MACROS = {r"\coloneqq": ":=", r"\eqqcolon": "=:"}


def _union(raw: str) -> BBox | None:
    try:
        coords = json.loads(raw.strip())
    except ValueError:
        return None
    if coords and isinstance(coords[0], (int, float)):
        coords = [coords]
    boxes = [b for b in (normalised_box(c, GRID) for c in coords if isinstance(c, list)) if b is not None]
    if not boxes:
        return None
    return BBox(
        x0=min(b.x0 for b in boxes),
        y0=min(b.y0 for b in boxes),
        x1=max(b.x1 for b in boxes),
        y1=max(b.y1 for b in boxes),
    )


def _clean(text: str) -> str:
    for macro, plain in _COLON_MACROS.items():
        text = text.replace(macro, plain)
    return normalise_math(text).strip()


def _block(label: str, bbox: BBox | None, text: str) -> Block:
    kind = LABELS.get(label.strip().lower(), BlockType.OTHER)
    level = None
    if kind in (BlockType.TITLE, BlockType.HEADING):
        level = heading_level(text)
        if level is None and text:  # the model sometimes omits the '#' marks
            level = 1 if kind is BlockType.TITLE else 2
            text = "#" * level + " " + " ".join(text.split())
    elif kind is BlockType.PARAGRAPH and text.lstrip().startswith(("- ", "* ", "• ")):
        kind = BlockType.LIST_ITEM
    return Block(type=kind, text=text, bbox=bbox, level=level, attributes={"label": label.strip()})


def parse_grounding(text: str) -> ParsedOutput:
    """Parse a grounding answer. Raises :class:`OutputValidationError` when a non-empty answer has
    no ``<|ref|>..<|det|>`` tag (the model did not follow the grounding format)."""
    for eos in _EOS:
        text = text.replace(eos, "")
    matches = list(_TAG.finditer(text))
    if not matches:
        if text.strip():
            raise OutputValidationError(
                "unparsable: no <|ref|>/<|det|> grounding tag in the DeepSeek-OCR answer"
            )
        return ParsedOutput(markdown="", blocks=[])
    blocks: list[Block] = []
    lead = _clean(text[: matches[0].start()])
    if lead:
        blocks.append(Block(type=BlockType.PARAGRAPH, text=lead, attributes={"label": None}))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        blocks.append(_block(match.group(1), _union(match.group(2)), _clean(text[match.end() : end])))
    return ParsedOutput(markdown=join_blocks(blocks), blocks=blocks)
