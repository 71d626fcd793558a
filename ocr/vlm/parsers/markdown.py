"""Generic Markdown answers -> blocks (the ``markdown`` profile, and olmOCR's body text).

The answer is parsed with markdown-it-py (CommonMark + GFM tables + ``$$`` math from
mdit-py-plugins); every top-level block becomes one :class:`~folioflow.ocr.schema.Block` whose text is the
exact source lines of that block, so ``Page.markdown`` and the blocks never disagree. Plain Markdown
carries no coordinates: bboxes are ``None``.

A wrapping code fence (```` ```markdown ... ``` ````, which chat-tuned VLMs often add) is removed.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from folioflow.ocr.schema import Block, BlockType
from folioflow.ocr.vlm.parsers.base import ParsedOutput, heading_level, join_blocks

__all__ = ["split_markdown", "parse_markdown"]

_MD = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin, allow_space=True, double_inline=True)
_FENCE = re.compile(r"^\s*```(?:markdown|md)?[ \t]*\n(.*?)\n```\s*$", re.DOTALL | re.IGNORECASE)
_IMAGE_ONLY = re.compile(r"^\s*!\[[^\]]*\]\([^)]*\)\s*$")

_OPENING_TYPES = {
    "heading_open": BlockType.HEADING,
    "paragraph_open": BlockType.PARAGRAPH,
    "bullet_list_open": BlockType.LIST_ITEM,
    "ordered_list_open": BlockType.LIST_ITEM,
    "table_open": BlockType.TABLE,
    "blockquote_open": BlockType.PARAGRAPH,
    "fence": BlockType.CODE,
    "code_block": BlockType.CODE,
    "math_block": BlockType.FORMULA,
    "math_block_label": BlockType.FORMULA,
    "html_block": BlockType.OTHER,
}


def unwrap_fence(text: str) -> str:
    """Remove one code fence wrapping the whole answer, if there is one."""
    match = _FENCE.match(text)
    return match.group(1) if match else text


def split_markdown(text: str) -> list[Block]:
    """Top-level Markdown blocks of ``text`` in order (headings with their level; HTML blocks that
    hold a ``<table>`` typed as tables; a paragraph made of one image typed as a figure)."""
    lines = text.splitlines()
    blocks: list[Block] = []
    for token in _MD.parse(text):
        if token.level != 0 or token.nesting < 0 or token.map is None:
            continue
        kind = _OPENING_TYPES.get(token.type)
        if kind is None:  # hr, front matter, ...: not content
            continue
        start, end = token.map
        source = "\n".join(lines[start:end]).strip()
        if not source:
            continue
        level = None
        if kind is BlockType.HEADING:
            level = int(token.tag[1]) if token.tag[1:].isdigit() else heading_level(source)
        elif kind is BlockType.OTHER and "<table" in source.lower():
            kind = BlockType.TABLE
        elif kind is BlockType.PARAGRAPH and _IMAGE_ONLY.match(source):
            kind = BlockType.FIGURE
        blocks.append(Block(type=kind, text=source, level=level))
    return blocks


def parse_markdown(text: str) -> ParsedOutput:
    """Parse a Markdown answer. Never raises: any text is Markdown (validity of the answer is judged
    by finish reason and repetition, see :mod:`folioflow.ocr.vlm.validity`)."""
    body = unwrap_fence(text.strip())
    blocks = split_markdown(body)
    return ParsedOutput(markdown=join_blocks(blocks), blocks=blocks)
