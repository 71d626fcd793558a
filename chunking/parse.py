"""Page Markdown -> typed blocks, with markdown-it-py.

Every OCR engine folioflow runs writes Markdown with its own habits: the text layer and CPU OCR
write pipe tables, chandra and OmniDocBench-style output put HTML ``<table>`` blocks (with
``rowspan``/``colspan``) inside the Markdown, olmOCR starts with YAML front matter, formulas come as
``$$...$$``, ``\\[...\\]``, bare ``\\begin{align}`` environments or MathML ``<math>``. This module
parses a page with markdown-it-py (CommonMark + GFM tables, mdit-py-plugins for front matter,
dollar math, bracket math and amsmath environments) and returns one :class:`MdBlock` per top-level
block, each carrying its **exact source text** (a slice of the page Markdown, by line) so chunks
can hold the document's own Markdown.

Repairs the parser cannot do by itself:

* An HTML ``<table>`` or ``<math>`` block containing blank lines ends, for CommonMark, at the first
  blank line; such blocks are extended to their closing tag.
* Tokens without a line map (bracket math) take the lines between their neighbours.

Block kinds: ``heading`` (with ``level`` and plain ``title``), ``paragraph``, ``list`` (with item
spans), ``table`` (pipe or HTML), ``formula``, ``code``, ``figure`` (``alt`` text), ``caption``,
``quote``, ``html``. Thematic breaks, front matter, page-marker and other comments are dropped
(front matter goes to ``ParsedPage.front_matter``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.amsmath import amsmath_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.texmath import texmath_plugin

from folioflow.ocr.schema import BBox

__all__ = ["CAPTION_RE", "MdBlock", "ParsedPage", "markdown_parser", "parse_markdown"]

#: A caption: "Table 3", "Figure 2:", "Fig. 4.", "Exhibit 10.1", "Listing 1", "Chart 2", "表 3", "图 2".
CAPTION_RE = re.compile(
    r"^\s*(?:\*\*|__|\*|_)?\s*(?:table|tab\.|figure|fig\.|exhibit|listing|chart|schedule|表|图)\s*[\dIVXA-Z]",
    re.IGNORECASE,
)
_IMAGE_ONLY = re.compile(r"^\s*(?:!\[(?P<alt>[^\]]*)\]\([^)]*\)\s*)+$")
_IMG_ALT = re.compile(r"""alt\s*=\s*["']([^"']*)["']""", re.IGNORECASE)
_MAX_CAPTION_CHARS = 400


@dataclass
class MdBlock:
    """One top-level block of a page.

    ``text`` is the exact Markdown (source lines, trailing whitespace removed); ``start``/``end`` are
    its character offsets in the page Markdown. ``items`` are (start, end) offsets of list items
    relative to ``text``. ``page`` is 1-based; ``bboxes`` are in page points (filled by
    :mod:`folioflow.chunking.bboxes`); ``furniture`` is ``"header"``/``"footer"`` for page headers/footers.
    A paragraph that a page break cut and that was joined again
    (:func:`folioflow.chunking.headers.join_split_sentences`) runs on over later pages:
    ``page_breaks`` lists ``(offset in text, page)`` where each later page's text starts, and
    ``bbox_pages`` gives the page of each box (empty: all on ``page``).
    """

    kind: str
    text: str
    start: int = 0
    end: int = 0
    page: int = 1
    level: int | None = None
    title: str | None = None
    alt: str | None = None
    items: list[tuple[int, int]] = field(default_factory=list)
    bboxes: list[BBox] = field(default_factory=list)
    furniture: str | None = None
    hint: str | None = None  # layout label from the engine's blocks (caption, footnote, ...)
    page_breaks: list[tuple[int, int]] = field(default_factory=list)
    bbox_pages: list[int] = field(default_factory=list)

    def page_at(self, offset: int) -> int:
        """The 1-based page that holds character ``offset`` of ``text``."""
        page = self.page
        for start, later in self.page_breaks:
            if offset >= start:
                page = later
        return page

    @property
    def last_page(self) -> int:
        """The page on which the block's text ends."""
        return self.page_breaks[-1][1] if self.page_breaks else self.page

    def box_pages(self) -> list[int]:
        """The 1-based page of each of ``bboxes``: ``bbox_pages``, or ``page`` for every box when
        the block was never joined over a page break."""
        return self.bbox_pages if len(self.bbox_pages) == len(self.bboxes) else [self.page] * len(self.bboxes)


@dataclass
class ParsedPage:
    """Blocks of one page in reading order, plus its front matter (raw YAML text) if any."""

    number: int
    blocks: list[MdBlock]
    front_matter: str | None = None
    height: float | None = None  # page height in points, when the engine gave one


@lru_cache(maxsize=2)
def markdown_parser(inline: bool = True) -> MarkdownIt:
    """The shared markdown-it-py parser: CommonMark with HTML, GFM tables, front matter,
    ``$``/``$$`` math (spaces allowed; a ``$`` next to a digit is currency), ``\\[...\\]``/``\\(...\\)`` math and amsmath
    environments. ``inline=False``: block structure only (a third faster); inline content is
    parsed on demand for the few blocks that need it (heading titles, image alt text)."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.use(front_matter_plugin)
    md.use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True)
    md.use(texmath_plugin, delimiters="brackets")
    md.use(amsmath_plugin)
    if not inline:
        md.disable("inline")
    return md


def _inline_text(token: Token | None) -> str:
    """Plain text of an inline token (emphasis and links reduced to their text)."""
    if token is None:
        return ""
    children = token.children
    if not children and token.content:
        parsed = markdown_parser().parseInline(token.content)
        children = parsed[0].children if parsed else None
    if not children:
        return token.content.strip()
    parts = []
    for child in children:
        if child.type in ("text", "code_inline", "math_inline", "math_inline_double"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
        elif child.type == "html_inline":
            continue
    return " ".join("".join(parts).split())


def parse_markdown(markdown: str, page: int = 1) -> ParsedPage:
    """Parse one page's Markdown into blocks (see the module docstring). Never raises on odd
    Markdown: anything the parser does not classify becomes a ``paragraph`` or ``html`` block."""
    lines = markdown.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    tokens = markdown_parser(inline=False).parse(markdown)
    # top-level spans: (open index, close index) into tokens
    spans: list[tuple[int, int]] = []
    depth = 0
    for i, tok in enumerate(tokens):
        if tok.level == 0 and tok.nesting >= 0 and depth == 0:
            spans.append((i, i))
        if tok.nesting == 1:
            depth += 1
        elif tok.nesting == -1:
            depth -= 1
            if depth == 0:
                spans[-1] = (spans[-1][0], i)
    maps: list[list[int] | None] = [tokens[a].map for a, _ in spans]
    # Tokens without a map (texmath brackets): take the lines between their neighbours.
    for k, m in enumerate(maps):
        if m is None:
            before = maps[k - 1] if k else None
            lo = before[1] if before else 0
            hi = next((mm[0] for mm in maps[k + 1:] if mm), len(lines))
            maps[k] = [lo, hi]

    def text_of(lo: int, hi: int) -> tuple[str, int, int]:
        while hi > lo and not lines[hi - 1].strip():
            hi -= 1
        while lo < hi and not lines[lo].strip():
            lo += 1
        start, end = offsets[lo], offsets[hi]
        raw = markdown[start:end].rstrip()
        return raw, start, start + len(raw)

    blocks: list[MdBlock] = []
    front_matter = None
    skip_until = -1
    for (a, b), m in zip(spans, maps, strict=True):
        assert m is not None  # every map was filled in above
        lo, hi = m
        if lo < skip_until:
            continue
        tok = tokens[a]
        ttype = tok.type
        if ttype == "front_matter":
            front_matter = tok.content
            continue
        if ttype == "hr":
            continue
        if ttype == "html_block":
            hi = _extend_html(lines, lo, hi, tok.content)
            skip_until = hi
        text, start, end = text_of(lo, hi)
        if not text:
            continue
        block = MdBlock(kind="paragraph", text=text, start=start, end=end, page=page)
        if ttype == "heading_open":
            block.kind = "heading"
            block.level = int(tok.tag[1])
            block.title = _inline_text(tokens[a + 1]) or text.strip("# \t=-")
        elif ttype == "paragraph_open":
            image = _IMAGE_ONLY.match(text)
            if image:
                block.kind, block.alt = "figure", _inline_text(tokens[a + 1])
            elif len(text) <= _MAX_CAPTION_CHARS and CAPTION_RE.match(text):
                block.kind = "caption"
        elif ttype in ("bullet_list_open", "ordered_list_open"):
            block.kind = "list"
            block.items = _list_items(tokens, a, b, offsets, lines, start, text)
        elif ttype == "table_open":
            block.kind = "table"
        elif ttype in ("math_block", "math_block_label", "amsmath"):
            block.kind = "formula"
        elif ttype in ("fence", "code_block"):
            block.kind = "code"
        elif ttype == "blockquote_open":
            block.kind = "quote"
        elif ttype == "html_block":
            block.kind = _html_kind(text)
            if block.kind == "figure":
                alt = _IMG_ALT.search(text)
                block.alt = alt.group(1).strip() if alt else ""
            elif block.kind == "comment":
                if text.strip().lower() == "<!-- image -->":
                    block.kind, block.alt = "figure", ""
                else:
                    continue
        if block.kind == "table" and ttype == "html_block":
            blocks.extend(_split_tables(block))
            continue
        blocks.append(block)
    return ParsedPage(number=page, blocks=blocks, front_matter=front_matter)


_TABLE_TAG = re.compile(r"<(/?)table\b[^>]*>", re.IGNORECASE)


def _split_tables(block: MdBlock) -> list[MdBlock]:
    """An HTML block holding several top-level tables (no blank line between them) becomes one
    block per table, plus ``html`` blocks for any markup between them."""
    spans, depth, start = [], 0, 0
    for m in _TABLE_TAG.finditer(block.text):
        if not m.group(1):
            if depth == 0:
                start = m.start()
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                spans.append((start, m.end()))
    if len(spans) < 2:
        return [block]
    out, pos = [], 0
    for s, e in spans + [(len(block.text), len(block.text))]:
        between = block.text[pos:s]
        if between.strip():
            lead = len(between) - len(between.lstrip())
            text = between.strip()
            out.append(MdBlock(kind="html", text=text, start=block.start + pos + lead,
                               end=block.start + pos + lead + len(text), page=block.page))
        if e > s:
            out.append(MdBlock(kind="table", text=block.text[s:e], start=block.start + s, end=block.start + e,
                               page=block.page))
        pos = e
    return out


def _html_kind(text: str) -> str:
    head = text.lstrip()[:200].lower()
    if head.startswith("<!--"):
        return "comment"
    if "<table" in text.lower():
        return "table"
    if head.startswith("<math"):
        return "formula"
    if head.startswith("<img"):
        return "figure"
    return "html"


def _extend_html(lines: list[str], lo: int, hi: int, content: str) -> int:
    """End line of an HTML block that opens ``<table``/``<math`` but is cut by a blank line:
    extended to the line holding the matching close tag (nesting counted); unchanged otherwise."""
    for tag in ("table", "math"):
        opener, closer = re.compile(rf"<{tag}\b", re.IGNORECASE), re.compile(rf"</{tag}\s*>", re.IGNORECASE)
        if len(opener.findall(content)) <= len(closer.findall(content)):
            continue
        depth = 0
        for i in range(lo, len(lines)):
            depth += len(opener.findall(lines[i])) - len(closer.findall(lines[i]))
            if depth <= 0:
                return max(hi, i + 1)
        return len(lines)
    return hi


def _list_items(tokens: list[Token], a: int, b: int, offsets: list[int], lines: list[str],
                block_start: int, block_text: str) -> list[tuple[int, int]]:
    """(start, end) of each item of the list spanning tokens[a..b], relative to the block text."""
    items = []
    level = tokens[a].level + 1
    for tok in tokens[a + 1:b]:
        if tok.type == "list_item_open" and tok.level == level and tok.map:
            lo, hi = tok.map
            while hi > lo and not lines[hi - 1].strip():
                hi -= 1
            s = max(0, offsets[lo] - block_start)
            e = min(len(block_text), offsets[hi] - block_start)
            seg = block_text[s:e]
            e = s + len(seg.rstrip())
            if e > s:
                items.append((s, e))
    return items or [(0, len(block_text))]
