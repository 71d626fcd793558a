"""Page headers and footers ("furniture"): detect them and keep them out of chunk text.

Two sources:

1. The engine's own layout labels: blocks typed ``page_header``/``page_footer`` in ``Page.blocks``
   (mapped onto the parsed Markdown by :mod:`folioflow.chunking.bboxes`).
2. Repetition: a short block among the first (last) ``edge_blocks`` blocks of a page whose
   normalised text (case folded, digits replaced by ``#``, whitespace collapsed, so that "Page 3 of
   10" and "Page 4 of 10" agree) appears at the same edge on at least ``min_pages`` different pages
   is a running header (footer). Where blocks have boxes, the repeats must lie in the same band:
   their vertical centres within :data:`BAND` of the page height of each other (a 10-K's "None."
   closing a short Item on several pages is body, not a footer). Headings are compared without folding digits ("Table 1" and
   "Table 3" are different headings, not one running header) and must repeat on at least 3
   pages (a title on the front and back cover is not a running header); the first occurrence of a
   repeated heading stays a heading (a document title repeated as running header still opens its
   section). Bare page numbers ("12", "- 12 -", "Page 12") at a page edge are
   footers/headers as soon as they repeat.

Candidates are short (at most 200 characters and 15 words); tables, formulas, lists and code are
never furniture. A repeated block of at least :data:`SENTENCE_WORDS` words is a sentence: its
first occurrence stays in the body (a sentence printed on every page must not vanish from every
page). Detected furniture is returned per page so chunks can carry it as metadata.

3. Printed page numbers inside the page body (:func:`mark_page_numbers`): an exhibit printed
   from HTML breaks its PDF pages where the printed ones do not end, so "2", "- 3 -" or "Page 4"
   stand alone between paragraphs mid-page, often mid-sentence. A block that is nothing but a
   page number is a footer when it belongs to an ascending run through the document (each next
   number one or two higher, after at least :data:`PAGE_TEXT_WORDS` words of text, at most two of
   a run on one PDF page, at least :data:`PAGE_RUN` numbers). A number followed by a short title
   ("3" above "Licensee's Responsibilities": a clause number in a margin column) is none; a
   title with a number of its own ("5" above "Section 5.2 ABILITY TO PERFORM") is not that number's.

4. The engine's header/footer blocks that its Markdown leaves out (the text layer and CPU OCR
   write page headers and footers as blocks only; :mod:`folioflow.ocr.finish` has decided which
   margin lines are furniture) join the parsed page as furniture blocks
   (:func:`engine_furniture`), so that chunks keep them as metadata and the sparse index
   searches them (an invoice number printed only in the running header).

5. Sentences cut by a page break (:func:`join_split_sentences`): where such a page number (or
   other furniture) stands between two paragraphs of one PDF page, or one PDF page ends and the
   next begins, and the first paragraph ends inside a sentence ("... license fee and" / "proposed
   delivery date ..."; "Within five" / "(5) business days"), the two halves are one paragraph
   again, so that the chunker's sentence splitting keeps the sentence in one chunk. A paragraph
   joined over a PDF page break keeps where each page's text starts, so each piece of it, and so
   each chunk, still spans the pages its own text is on.
"""

from __future__ import annotations

import re
from collections import defaultdict

from folioflow.chunking.parse import MdBlock, ParsedPage
from folioflow.ocr.schema import BlockType, Page

__all__ = ["BAND", "PAGE_RUN", "PAGE_TEXT_WORDS", "SENTENCE_WORDS", "SPLIT_MIN_WORDS", "collect_furniture", "engine_furniture",
           "furniture_text", "join_split_sentences", "mark_furniture", "mark_page_numbers", "normalise_furniture"]

_DIGITS = re.compile(r"\d+")
_ROMAN_PAGE = re.compile(r"^(?:page\s+)?[ivxlc]+$")
_NOT_FURNITURE = {"table", "formula", "list", "code"}
_MAX_CHARS = 200
_MAX_WORDS = 15
#: A repeated block of at least this many words keeps its first occurrence in the body.
SENTENCE_WORDS = 12
#: Repeats of a running header/footer lie within this share of the page height of each other.
BAND = 0.05
_ENGINE_LABELS = {BlockType.PAGE_HEADER: "header", BlockType.PAGE_FOOTER: "footer"}
#: A printed page number alone: "12", "- 12 -", "-12-", "Page 12", "Page 12 of 40" (a list item
#: "- 12 -" to a Markdown parser).
_PAGE_NUMBER = re.compile(r"^[-–—\s]{0,3}(?:page\s+)?(\d{1,3})(?:\s+of\s+\d{1,3})?[-–—\s]{0,3}$", re.IGNORECASE)
#: A title that carries its own clause number: "Section 5.2", "ARTICLE VI", "Clause 3", "§ 4".
_NUMBERED_TITLE = re.compile(r"^(?:(?:section|article|clause|schedule|exhibit|annex|appendix|part|§)\s*)"
                             r"(?:\d+(?:\.\d+)*|[IVXLC]+\b|[A-Z]\b)", re.IGNORECASE)
#: A paragraph cut by a printed page break has at least this many words before the break.
SPLIT_MIN_WORDS = 6
#: Words after which a sentence cannot end ("... the Licensed Products or" / "Documentation, ...").
_OPEN_WORDS = frozenset(["a", "an", "and", "any", "as", "at", "between", "by", "each", "for", "from", "in", "into",
                         "its", "of", "on", "or", "such", "than", "that", "the", "their", "this", "to", "under",
                         "upon", "which", "with", "within", "without"])
_NUMBER_WORDS = frozenset(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                           "twelve", "fifteen", "twenty", "thirty", "forty", "fifty", "sixty", "ninety", "hundred",
                           "thousand"])
_NUMERAL = re.compile(r"^\(\d+\)\s+\w")
#: Words of text that lie between two printed page numbers of one run, at least.
PAGE_TEXT_WORDS = 40
#: Printed page numbers that make a run, at least.
PAGE_RUN = 3


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
    seen: dict[tuple[str, str], list[tuple[int, float | None]]] = defaultdict(list)
    edges: list[tuple[str, str, MdBlock, float | None]] = []
    for page in pages:
        top, bottom = _candidates(page, edge_blocks)
        for where, group in (("header", top), ("footer", bottom)):
            for block in group:
                key = normalise_furniture(block.text, fold_digits=block.kind != "heading")
                if not key:
                    continue
                y = _centre(block, page.height)
                seen[(where, key)].append((page.number, y))
                edges.append((where, key, block, y))
    first_heading: set[tuple[str, str]] = set()
    first_sentence: set[tuple[str, str]] = set()
    for where, key, block, y in edges:
        if block.furniture:
            continue
        if block.kind == "heading" and (where, key) not in first_heading:
            first_heading.add((where, key))  # a title repeated as running header opens its section once
            continue
        if len(block.text.split()) >= SENTENCE_WORDS and (where, key) not in first_sentence:
            first_sentence.add((where, key))  # a sentence repeated on every page stays in the body once
            continue
        pages_with = {n for n, other in seen[(where, key)] if y is None or other is None or abs(other - y) <= BAND}
        page_number_only = key in ("#", "- # -", "page #", "# of #", "page # of #") or bool(_ROMAN_PAGE.match(key))
        needed = max(3, min_pages) if block.kind == "heading" else min_pages
        if len(pages_with) >= needed or (page_number_only and len(pages_with) >= 2):
            block.furniture = where


def mark_page_numbers(pages: list[ParsedPage]) -> int:
    """Mark the printed page numbers inside the page body as footers (module docstring, 3):
    paragraph or list blocks that hold nothing but a page number and make an ascending run. Page
    numbers already marked (at a page edge) count in runs and stay as they are; other furniture is
    no text between them. Returns the number of blocks marked."""
    runs: list[list[tuple[MdBlock, int, int]]] = []  # (block, number, words of text before it)
    words = 0
    for page in pages:
        for i, block in enumerate(page.blocks):
            match = _PAGE_NUMBER.match(block.text) if block.kind in ("paragraph", "list") else None
            if match is None or _titled(page.blocks[i + 1:i + 2]):
                words += 0 if block.furniture else len(block.text.split())
                continue
            number = int(match.group(1))
            fits = [run for run in runs if 1 <= number - run[-1][1] <= 2 and words - run[-1][2] >= PAGE_TEXT_WORDS
                    and sum(b.page == block.page for b, _, _ in run) < 2]
            if fits:
                min(fits, key=lambda run: number - run[-1][1]).append((block, number, words))
            else:
                runs.append([(block, number, words)])
    marked = 0
    for run in runs:
        if len(run) >= PAGE_RUN:
            for block, _, _ in run:
                if not block.furniture:
                    block.furniture = "footer"
                    marked += 1
    return marked


def join_split_sentences(pages: list[ParsedPage]) -> int:
    """Join the two halves of a sentence that a page break cut (module docstring, 5), in place:
    paragraph A, then nothing but furniture (a printed page number, a running header) or the end
    of A's PDF page, then paragraph B (on the same page or the next), where A (at least
    :data:`SPLIT_MIN_WORDS` words) ends inside a sentence and B goes on with it. B's text joins
    A's after a space, its boxes join A's boxes, B leaves its page, and a B on the next page is
    recorded in A's ``page_breaks`` and ``bbox_pages``; the furniture stays. After a join over a PDF
    page break, the next paragraphs at the top of that page join A as long as each goes on with the
    sentence. Returns the number of joins."""
    joined = 0
    prev: MdBlock | None = None  # the last body block
    prev_page = 0
    for page in pages:
        out: list[MdBlock] = []
        between = False  # furniture seen since the last body block on this page
        body = False  # a body block of this page kept so far
        for block in page.blocks:
            if block.furniture:
                between = True
                out.append(block)
                continue
            broken = between if prev_page == page.number else (prev_page == page.number - 1 and not body)
            if broken and prev is not None and _continues(prev, block):
                # prev_page stays the page where the sentence began: the paragraphs at the top of the
                # next page that go on with it (a text layer splits them at line gaps) join it too,
                # up to the first one that does not
                _join(prev, block)
                joined += 1
            else:
                out.append(block)
                prev, prev_page, body = block, page.number, True
            between = False
        page.blocks = out
    return joined


def _join(first: MdBlock, second: MdBlock) -> None:
    """Append paragraph ``second`` to ``first`` (see :func:`join_split_sentences`)."""
    offset = len(first.text) + 1
    first.bbox_pages = [*first.box_pages(), *second.box_pages()]
    if second.page != first.last_page:
        first.page_breaks.append((offset, second.page))
    else:
        first.end = second.end
    first.page_breaks.extend((offset + at, page) for at, page in second.page_breaks)
    first.text = f"{first.text} {second.text}"
    first.bboxes = [*first.bboxes, *second.bboxes]


def _continues(first: MdBlock, second: MdBlock) -> bool:
    """Whether paragraph ``second`` goes on with the sentence that paragraph ``first`` leaves open."""
    if first.kind != "paragraph" or second.kind != "paragraph" or second.hint != first.hint:
        return False
    head, tail = first.text.rstrip(), second.text.lstrip()
    words = head.split()
    if len(words) < SPLIT_MIN_WORDS or not tail:
        return False
    last = words[-1].casefold()
    if not (head[-1].islower() or head[-1] == ","):
        return False
    if tail[0].islower():
        return True
    if last in _NUMBER_WORDS and _NUMERAL.match(tail):
        return True  # "within five" / "(5) days"
    return last.rstrip(",") in _OPEN_WORDS and tail[0].isalnum()


def _titled(after: list[MdBlock]) -> bool:
    """Whether the block after a number alone is the title it numbers: a short line (at most 8
    words) that opens with no number of its own ("5.2 Ability", "Section 5.2 Ability", "ARTICLE VI
    Term" carry theirs) and ends with no stop."""
    if not after or after[0].furniture:
        return False
    text = after[0].text.lstrip("#* ").strip()
    return (0 < len(text.split()) <= 8 and not text[:1].isdigit() and not text.endswith((".", ";", ","))
            and not _PAGE_NUMBER.match(text) and not _NUMBERED_TITLE.match(text))


def _centre(block: MdBlock, height: float | None) -> float | None:
    """Vertical centre of ``block``'s boxes as a share of the page height, or None without boxes."""
    if not block.bboxes or not height:
        return None
    return (min(b.y0 for b in block.bboxes) + max(b.y1 for b in block.bboxes)) / 2 / height


def collect_furniture(pages: list[ParsedPage]) -> dict[int, dict[str, list[str]]]:
    """Furniture text per page: ``{page: {"header": [...], "footer": [...]}}`` (pages without
    furniture are absent)."""
    out: dict[int, dict[str, list[str]]] = {}
    for page in pages:
        for block in page.blocks:
            if block.furniture:
                out.setdefault(page.number, {"header": [], "footer": []})[block.furniture].append(block.text)
    return out


def engine_furniture(page: Page, parsed: ParsedPage, markdown: str) -> int:
    """Add the engine's page header/footer blocks of ``page`` that ``markdown`` leaves out to
    ``parsed`` as furniture blocks (headers first, footers last; in place). Returns how many were
    added."""
    heads: list[MdBlock] = []
    feet: list[MdBlock] = []
    # whole lines only: a page number "33" is not in a Markdown that says "by day 33."
    lines = {line.strip() for line in markdown.splitlines()}
    for block in page.blocks:
        label = _ENGINE_LABELS.get(block.type)
        text = block.text.strip()
        if label is None or not text or text in lines or ("\n" in text and text in markdown):
            continue
        at = 0 if label == "header" else len(markdown)
        md = MdBlock(kind="paragraph", text=text, start=at, end=at, page=page.number, furniture=label,
                     bboxes=[block.bbox] if block.bbox is not None else [])
        (heads if label == "header" else feet).append(md)
    parsed.blocks[:0] = heads
    parsed.blocks.extend(feet)
    return len(heads) + len(feet)


def furniture_text(metadata: dict) -> str:
    """The page headers and footers a chunk's ``metadata`` carries (``page_headers``,
    ``page_footers``), one per line: what the sparse index adds to the chunk's text."""
    return "\n".join([*metadata.get("page_headers", []), *metadata.get("page_footers", [])])
