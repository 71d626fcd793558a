"""Clause structure of contracts and filings as headings, read from the text itself.

A document post-pass over the blocks of every page whose Markdown is built from its blocks (text
layer and CPU OCR pages; VLM pages keep the model's Markdown), run after
:func:`~folioflow.ocr.layout.blocks.relevel_headings` and again after the furniture review
(:func:`folioflow.ocr.finish.document_passes`). Typography often does not mark a clause title
(body size, not bold, or a run-in title at the start of its paragraph), so the title is recognised
by its form:

=====================================================  =========================================
form                                                   heading level
=====================================================  =========================================
``PART II``                                            1
``ARTICLE VIII`` / ``Article 5``, ``Item 8.``          2
``IV. INDEMNIFICATION`` / ``II - WORK BY LEO``         2 (a Roman number, its title in capitals)
``EXHIBIT A``, ``Schedule 3``, ``Annex I``, ...        2
``RECITALS`` / ``BACKGROUND`` / first ``WHEREAS``      the document's top clause level (2 or 3)
``Section 5.02``, ``11. Choice Of Law``, ``8.05 X.``   3 (+1 per extra number depth: "1.1" under "1.")
``(a) Title``, ``a. Title`` (lettered, with a title)   one below the deepest numbered clause
``Training. We will ...`` (unnumbered run-in title)    one below the deepest numbered clause
``TERM AND TERMINATION`` (capitals, alone, no number)  the top clause level (2 or 3); with numbered
                                                       clauses, one below the deepest of them
``H. POTENTIAL OPPORTUNITIES`` (capitals, a letter)    the top clause level; 2 with numbered clauses
a contract title on page 1 ("SUPPLY AGREEMENT")        1 (when no title was found by typography)
=====================================================  =========================================

A filing's Part title and its first Item's title in one block ("Part I - Financial Information
Item 1. Financial Statements") become two headings, levels 1 and 2 (:func:`_split_part_item`).

A clause title is either the whole block (short, title-like: at most 15 words, not a sentence,
see :func:`~folioflow.ocr.layout.blocks.reads_as_sentence`, and no running text after a stop) and the block becomes the heading, or
a *run-in* title that opens a paragraph ("11. Choice Of Law. This Agreement shall be governed
..."; a title of at most 10 capitalised words ended by ``.``/``:``): then a heading naming the
clause ("### 11. Choice Of Law") is inserted before the paragraph, which stays whole, clause number
included (``attributes["clause"]["synthetic"]``). In a contract, a heading made by typography that
holds such a title and the clause's first words (a bold first line: "Section 7.9 MODIFICATIONS.
Licensee shall not make any modifications to or") becomes the paragraph, under a heading naming the clause. A numbered title in capitals also runs in without
a stop when the text layer joined its line to the paragraph under it ("19. ENTIRE AGREEMENT,
GOVERNING LAW This Agreement ..."): the capitals up to a capitalised word in lower case. A clause number set apart from its title by a tab
("1." | "DEFINITIONS" on one row: two blocks) is joined to the block on its right, or to the
paragraph whose first line it is indented in (:func:`_row_partner`). A bare label
("ARTICLE VIII", "Item 8.") followed by a short title block takes that title in. Headings found
by typography that read as such a form get the form's level, so levels agree across pages; a
"heading" that is a signature label ("By:", "Name:", "Title:": large ink on a scan) becomes a
paragraph, and so do, in documents without ``Item`` headings, a label alone without its colon
("By", "SIGNATURE") and one that typography made of a signing party's name ("UTEK CORPORATION" in
bold a few short lines above "By: /s/"). A defined term in
quotes ('1.8 "GALEN Information" means ...') and an address line ("Galen Holdings PLC Att. Chief
Executive Officer ...") open no run-in title.

A line in capitals with no number ("TERM AND TERMINATION", "A. AUTHORITY OF AGENCY") is a title
only as a pattern of the document: followed by a body paragraph, not repeated three times (a
signature block's "MEMBER"), no party name, legend or signature label, and three such titles or
more in a document that has no ``Item`` headings (a filing's capitals are its cover, its officers
and its exhibits). A body paragraph is 8 words or more, or opens with a clause number ("1. This
agreement shall terminate:"). "I." after a block lettered "H." is the letter I, not Roman one.

A contract's table of contents lists every clause title and makes none a heading: after a block
titled "TABLE OF CONTENTS" or "Contents" on one of the first :data:`CONTENTS_PAGES` pages, its
tables and the blocks that read as its entries (:func:`contents_entry`) are left as text, and
headings among them become paragraphs, up to the first block that is no entry (a sentence, the
agreement's opening, its title in capitals, a heading that opens with no clause form).

The pass is idempotent: it removes the headings it inserted before it runs, and the blocks it
changed carry :data:`CLAUSE` so :func:`~folioflow.ocr.layout.blocks.relevel_headings` leaves them
alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from folioflow.ocr.layout.blocks import CLAUSE, page_markdown, pages_built_from_blocks, reads_as_sentence
from folioflow.ocr.schema import BBox, Block, BlockType, Page

__all__ = ["CAPITAL_LETTER", "CLAUSE", "CONTENTS_TITLE", "ClauseTitle", "clause_title", "contents_entry", "contract_title",
           "mark_clause_headings"]

# CLAUSE (from blocks): the ``Block.attributes`` key set on every block this pass made or changed:
# ``{"kind": str, "level": int, "synthetic": bool}`` (``synthetic``: a heading inserted before its paragraph).

_ROMAN = r"[IVXLC]{1,6}"
_FORMS: list[tuple[str, re.Pattern[str]]] = [
    ("part", re.compile(rf"^PART\s+({_ROMAN}|\d{{1,2}})\b\.?", re.IGNORECASE)),
    ("article", re.compile(rf"^ARTICLE\s+({_ROMAN}|\d{{1,3}}|[A-Z])\b\.?", re.IGNORECASE)),
    ("roman", re.compile(rf"^(?![CL][.\s])({_ROMAN})(?:\.|\s[-–—])(?=\s)")),
    ("item", re.compile(r"^ITEM\s+(\d{1,2}[A-D]?)\b\.?", re.IGNORECASE)),
    ("annex", re.compile(rf"^(?:EXHIBIT|SCHEDULE|ANNEX|APPENDIX|ADDENDUM|ATTACHMENT)\s+"
                         rf"([A-Z]{{1,2}}(?:-\d{{1,2}})?|\d{{1,2}}(?!\.\d)|{_ROMAN})\b\.?", re.IGNORECASE)),
    ("section", re.compile(r"^(?:SECTION|§)\s*(\d{1,3}(?:\.\d{1,3})*)\b\.?", re.IGNORECASE)),
    ("number", re.compile(r"^(\d{1,3}(?:\.\d{1,3})*)(?:\.|\))?(?=\s|$)")),
    ("letter", re.compile(r"^(?:\((?:[a-zA-Z]{1,2}|[ivxlcIVXLC]{1,5}|\d{1,2})\)(?=\s|$|[A-Z][a-z])|(?:[a-z]|[ivx]{1,4})[.)](?=\s|$))")),
    ("capital", re.compile(r"^([A-Z])[.)](?=\s)")),
]
#: An unnumbered run-in title: up to six capitalised words, the last of three letters or more (not
#: an initial: "John S. Smith"), ended by a period before a capitalised sentence ("Training. We will ...").
_PLAIN_RUN_IN = re.compile(r"^((?:[A-Z][\w’'-]*|of|and|the|to|in|for|on|or|a|an|by|with|upon|under|non-)"
                           r"(?:[ /](?:[A-Z][\w’'-]*|of|and|the|to|in|for|on|or|a|an|by|with|upon|under)){0,5})\.\s+(?=[A-Z“\"])")
_NOT_TITLES = {"mr", "mrs", "ms", "dr", "inc", "co", "corp", "ltd", "llc", "no", "st", "jr", "sr", "u.s", "att", "attn",
               "tel", "fax", "ave", "ste", "blvd", "dept", "esq"}
_RECITALS = re.compile(r"^(?:RECITALS?|BACKGROUND|PREAMBLE|W\s?I\s?T\s?N\s?E\s?S\s?S\s?E\s?T\s?H)\s*[:.]?$", re.IGNORECASE)
_WHEREAS = re.compile(r"^WHEREAS\b")
_CONTRACT_WORDS = re.compile(r"\b(?:AGREEMENT|CONTRACT|LICEN[CS]E|LEASE|AMENDMENT|ADDENDUM|MEMORANDUM|DEED|"
                             r"TERMS AND CONDITIONS)\b")
#: A clause number alone in a block ("1.", "1.1", "(a)", "3)"); a bare integer only before a heading.
_BARE_NUMBER = re.compile(r"^(?:\(?[a-z0-9]{1,3}(?:\.\d{1,3})*[.)]|\d{1,3}(?:\.\d{1,3})+|\d{1,3})$", re.IGNORECASE)
_SMALL_WORDS = {"of", "and", "the", "to", "in", "for", "on", "or", "a", "an", "by", "with", "at", "as", "upon",
                "under", "from", "into", "no", "not", "its", "&", "-", "–", "—", "/", "non"}
_RUN_IN = re.compile(r"^(.{2,90}?)([.:]|\s[-–—])\s+(?=\S)")
#: Characters of text that must follow a title in capitals run in without a stop.
_CAPS_RUN_IN_TEXT = 40
_TITLE_KINDS = ("part", "article", "item", "annex", "section", "roman")
#: Labels of a signature block; those that open a signature line by themselves come first.
_SIGNING_LABELS = "By|Name|Signature|Witness"
_LABELS = _SIGNING_LABELS + "|Title|Its|Date"
#: A signature label set large enough to look like a heading ("By: ____" on a scan).
_SIGNATURE_LABEL = re.compile(rf"^(?:{_LABELS})\s*:", re.IGNORECASE)
#: A signature block's label alone, without its colon ("By", "SIGNATURE", "DATE [*]").
_BARE_LABEL = re.compile(rf"(?:{_LABELS})\s*(?:\[\*\]|_+)?", re.IGNORECASE)
_SIGNING_LABEL = re.compile(rf"(?:{_SIGNING_LABELS})\s*:", re.IGNORECASE)


@dataclass
class ClauseTitle:
    """A clause title read from a block's text: ``kind`` (part, article, roman, item, annex,
    section, number, letter, run_in, recitals; caps for a title in capitals found by the document pass), ``title`` (the words naming the clause, number included),
    ``run_in`` (the title opens a longer paragraph) and ``depth`` (numbers in "1.2.3": 3)."""

    kind: str
    title: str
    run_in: bool
    depth: int = 1


def _title_words(text: str, max_words: int) -> bool:
    """Words of a title: at most ``max_words``, each capitalised, upper-case, a number or a small
    connector ("of", "and"), with at least one letter."""
    words = text.split()
    if not words or len(words) > max_words or not any(ch.isalpha() for ch in text):
        return False
    for w in words:
        core = w.strip("\"“”'‘’(),;")
        if not core or core.lower() in _SMALL_WORDS:
            continue
        if not (core[0].isupper() or core[0].isdigit() or core[0] in "$§"):
            return False
    return True


def _standalone(rest: str) -> bool:
    bare = rest.rstrip("\u201d\"')]} ")
    stop = next((m for m in re.finditer(r"(\S+)[.:]\s+", rest)  # not after "Inc." or an initial
                 if len(m.group(1).strip("(),")) > 1 and m.group(1).strip("(),").lower() not in _NOT_TITLES
                 and not _LEGAL_FORM.fullmatch(m.group(1).strip("(),").upper())), None)
    after = rest[stop.end():].split() if stop else []
    if len(after) >= RUN_ON_WORDS and sum(w[:1].islower() and w.lower() not in _SMALL_WORDS for w in after) >= 2:
        return False  # "MODIFICATIONS. Licensee shall not make any ...": the clause's text runs in
    # "Appointment and Obligations of the Remarketing Agent.": its lower-case words are connectors,
    # so the stop ends a title in title case, not a sentence
    sentence = reads_as_sentence(rest) and not (bare.endswith(".") and _title_words(bare.rstrip("."), 15))
    return (len(rest.split()) <= 15 and len(rest) <= 120 and not sentence
            and not bare.endswith((",", ";")) and (not rest or rest[:1].isupper() or rest[:1] in "\"“(-–—:"))


_LEGAL_FORM = re.compile(r"\b(?:INC|L\.?L\.?C|CORP|CORPORATION|LTD|LIMITED|L\.P|LLP|PLC|GMBH|N\.A|S\.A|B\.V|CO|COMPANY|"
                         r"BANK)\b")
_NOT_CAPS_TITLE = re.compile(r"^(?:CONFIDENTIAL(?!\s+(?:INFORMATION|DATA|MATERIALS?|RECORDS|KNOW-HOW)\b)|REDACTED|EXECUTION|DRAFT|FINAL|IN WITNESS|WITNESSETH|AGREED|ACCEPTED|"
                             r"ACKNOWLEDGED|SIGNATURE|SIGNED|BY|NAME|TITLE|DATE|DATED|PAGE|NOTE|TABLE OF CONTENTS|"
                             r"BETWEEN|AND|AMONG|SEAL|ATTEST|WITNESS|NOTARY|NOW|WHEREAS)\b")
#: A lettered clause whose title follows its letter without a space ("(d)Conditions for Transfers").
_GLUED_LETTER = re.compile(r"^\([^)\s]{1,5}\)\S")
#: A clause lettered in capitals ("H. POTENTIAL OPPORTUNITIES"): its letter.
CAPITAL_LETTER = re.compile(r"^([A-Z])[.)]\s")
#: A numbered clause opening the text under a title ("1. This agreement shall terminate:").
_BODY_NUMBER = re.compile(r"^\(?(?:\d{1,3}(?:\.\d{1,3})*|[a-z])[.)]\s+\S")
#: Fewest capitals titles (distinct texts) a document needs before any of them becomes a heading.
CAPS_TITLES_MIN = 3
#: Fewest words of the paragraph that must follow a title in capitals.
CAPS_BODY_WORDS = 8


def _caps_title(text: str) -> bool:
    """An unnumbered clause title in capitals on its own ("TERM AND TERMINATION", "DEFINITIONS.",
    "A. AUTHORITY OF AGENCY"): no lower-case letter, a word of three letters or more that is no
    Roman numeral, at most eight words, no figure, bracket, initial ("JOHN A. SMITH"), "/S/" or
    legal form ("ACME CORP.": a party), not a sentence, no trailing comma, semicolon, colon (a
    signature label "CUSTOMER:") or dash, not a legend ("CONFIDENTIAL", "IN WITNESS WHEREOF",
    "BY")."""
    text = " ".join(text.split())
    bare = re.sub(r"^[A-Z][.)]\s+", "", text).rstrip(".")
    words = [w.strip(".,;:'’\"“”-–—/&") for w in bare.split()]
    return (any(len(w) >= 3 and not re.fullmatch(_ROMAN, w) for w in words) and not any(ch.islower() or ch.isdigit() for ch in bare)
            and len(bare.split()) <= 8 and len(bare) <= 80 and not re.search(r"[\[\]()$#@*_{}<>=|]", bare)
            and not text.endswith((",", ";", ":", "-", "–", "—")) and bare[:1].isalpha() and "/S/" not in bare
            and not re.search(r"\b[A-Z]\.\s", bare) and not _LEGAL_FORM.search(bare)
            and not _NOT_CAPS_TITLE.match(bare) and not reads_as_sentence(text))


def _caps_run_in(rest: str) -> str | None:
    """A title in capitals run into its text without a stop, as a text layer joins a title line to
    the paragraph under it ("ENTIRE AGREEMENT, GOVERNING LAW This Agreement ..."): up to 10 words in
    capitals (connectors "&", "-" between them; one word needs four letters or more), then a capitalised word in lower case ("This") and
    at least :data:`_CAPS_RUN_IN_TEXT` more characters. Returns the title, or None."""
    words = rest.split(" ")
    title: list[str] = []
    for word in words[:11]:
        core = word.strip("\"“”'‘’(),;:")
        capitals = bool(core) and core.isupper() and sum(ch.isalpha() for ch in core) >= 2 and len(title) < 10
        if not (capitals or (title and word in ("&", "-", "–", "—", "/"))):
            break
        title.append(word)
    while title and title[-1] in ("&", "-", "–", "—", "/"):
        title.pop()
    if not title or (len(title) == 1 and sum(ch.isalpha() for ch in title[0]) < 4):
        return None  # "IBM Products are ...": one short word in capitals is a name, not a title
    joined = " ".join(title)
    if joined.count('"') % 2 or joined.count("“") > joined.count("”"):
        return None  # '1.8 "GALEN Information" means ...': a defined term whose quote the title would cut
    after = " ".join(words[len(title):])
    if not re.match(r"[A-Z][a-z]", after) or len(after) < _CAPS_RUN_IN_TEXT:
        return None
    return " ".join(title).rstrip(",;:")


def clause_title(text: str) -> ClauseTitle | None:
    """The clause title ``text`` (a block's plain text, no ``#`` marks) opens, or ``None``.

    ``"ARTICLE VIII"`` -> article, ``"Section 5.02 Governing Law"`` -> section, ``"11. Choice Of Law.
    This Agreement shall ..."`` -> number, run-in, title ``"11. Choice Of Law"``; ``"(a) Notices.
    All notices ..."`` -> letter, run-in; ``"RECITALS"`` -> recitals. A numbered or lettered
    sentence ("1. The Company shall pay ...") is no title."""
    text = " ".join(text.split())
    if _RECITALS.match(text):
        return ClauseTitle("recitals", text.rstrip(":."), run_in=False)
    for kind, pattern in _FORMS:
        m = pattern.match(text)
        if not m:
            continue
        label, rest = text[:m.end()].strip(), text[m.end():].strip()
        if kind == "capital":
            return _capital_run_in(label, rest)
        if kind == "roman" and not (_caps_title(rest) or _caps_run_in(rest) or _caps_title(rest.split(". ")[0])):
            continue  # "IV. INDEMNIFICATION" (capitals) is an article; "I. Introduction" may be a list
        rest = rest.lstrip("-–—:").strip() if kind in _TITLE_KINDS else rest
        depth = len(m.group(1).split(".")) if kind in ("number", "section") else 1
        if kind in ("number", "letter") and not rest:
            return None
        if kind == "number" and label.isdigit() and rest != rest.upper():
            return None  # "345 Park Avenue": a bare integer opens a title only in capitals ("1 GRANT")
        if _standalone(rest) and (kind in _TITLE_KINDS or _title_words(rest.rstrip("."), 15)):
            return ClauseTitle(kind, " ".join([label, rest]).strip().rstrip(".:"), run_in=False, depth=depth)
        run = _RUN_IN.match(rest)
        if run and _title_words(run.group(1), 10) and len(rest) > run.end():
            return ClauseTitle(kind, f"{label} {run.group(1).strip()}", run_in=True, depth=depth)
        caps = _caps_run_in(rest)
        if caps:
            return ClauseTitle(kind, f"{label} {caps}", run_in=True, depth=depth)
        return None
    plain = _PLAIN_RUN_IN.match(text)
    if plain:
        words = plain.group(1).split()
        last = words[-1].strip("’'-").lower()
        if len(last) >= 3 and last not in _NOT_TITLES and len(text) - plain.end() >= 40:
            return ClauseTitle("run_in", plain.group(1), run_in=True)
    return None


def _capital_run_in(label: str, rest: str) -> ClauseTitle | None:
    """A clause lettered with a capital and its title run in ("D. EXECUTION. The execution ...",
    "B. Conversion Project Manager. M&I will ..."), or None: a capital letter opens a title only
    run in, and the title's last word has three letters or more and is no abbreviation, with no
    initial and no figure of three digits ("P. O. Box 2511 Houston, Texas"); no legal form (a
    party's name)."""
    run = _RUN_IN.match(rest)
    if run and run.group(2) in ".:" and _title_words(run.group(1), 8) and len(rest) > run.end():
        title: str | None = run.group(1).strip()
    else:
        title = _caps_run_in(rest)
    if not title:
        return None
    last = title.split()[-1].strip("’'-.,").lower()
    if len(last) < 3 or last in _NOT_TITLES or _LEGAL_FORM.search(title.upper()) \
            or re.search(r"\b[A-Z]\.(?:\s|$)|\d{3,}", title):
        return None
    return ClauseTitle("capital", f"{label} {title}", run_in=True)


def _plain(block: Block) -> str:
    if block.type in (BlockType.HEADING, BlockType.TITLE) and block.text.startswith("#"):
        return block.text.lstrip("#").strip()
    return block.text.strip()


def _union(a: BBox | None, b: BBox | None) -> BBox | None:
    if a is None or b is None:
        return a or b
    return BBox(x0=min(a.x0, b.x0), y0=min(a.y0, b.y0), x1=max(a.x1, b.x1), y1=max(a.y1, b.y1))


_TEXT_TYPES = (BlockType.PARAGRAPH, BlockType.LIST_ITEM, BlockType.HEADING)


#: Where a clause number indented in a paragraph's first line may sit: within this share of the
#: paragraph's width from its left edge (a figure further right is a table's column).
AROUND_INDENT = 0.25
#: Text that a clause number opens: a word or a quoted defined term, not a figure ("0.2 $ 3.6").
_TEXT_START = re.compile(r"^[“\"‘']?[A-Za-z]")


def _row_partner(number: Block, blocks: list[Block]) -> Block | None:
    """The text block whose first line is on ``number``'s row: nearest to its right (a clause
    number in a margin column is read before the column of clause text), else one that spans the
    number's row from left of it to right of it, the number in the first :data:`AROUND_INDENT` of
    its width, and opens with a word (TRICITY's "21.10" indented in the first line of "Affiliates.
    All processing ...", whose further lines start at the left margin; not a table row's figures)."""
    a = number.bbox
    if a is None:
        return None
    height = max(a.y1 - a.y0, 1e-6)
    row = [b for b in blocks if b is not number and b.type in _TEXT_TYPES and b.bbox is not None
           and abs(b.bbox.y0 - a.y0) < 0.6 * height and not _BARE_NUMBER.match(_plain(b))]
    right = [b for b in row if b.bbox is not None and b.bbox.x0 >= a.x1 - 1]
    if right:
        return min(right, key=lambda b: b.bbox.x0 if b.bbox is not None else 0.0)
    around = [b for b in row if b.bbox is not None and b.bbox.x0 < a.x0 and b.bbox.x1 > a.x1 + 4 * (a.x1 - a.x0)
              and a.x0 - b.bbox.x0 <= AROUND_INDENT * (b.bbox.x1 - b.bbox.x0) and _TEXT_START.match(_plain(b))]
    return min(around, key=lambda b: b.bbox.x0 if b.bbox is not None else 0.0, default=None)


def _joined(first: str, block: Block, bbox: BBox | None, heading: bool) -> Block:
    """``block`` with ``first`` put before its text (as a heading when ``heading``)."""
    text = f"{first} {_plain(block)}"
    if not heading:
        return Block(type=block.type, text=text, bbox=bbox, level=block.level,
                     attributes={**block.attributes, CLAUSE: {"kind": "joined", "level": None, "synthetic": False}})
    level = block.level if block.type == BlockType.HEADING and block.level else 3
    return Block(type=BlockType.HEADING, text="#" * level + " " + text, bbox=bbox, level=level,
                 attributes={**block.attributes, CLAUSE: {"kind": "joined", "level": level, "synthetic": False}})


#: A filing's Part heading with its first Item's title in the same block, as a text layer joins two
#: title lines ("Part I - Financial Information Item 1. Financial Statements (unaudited)"): the
#: Part's label and up to eight title words, then "Item"/"ITEM" (capitalised: "item 2" is a reference).
_PART_ITEM = re.compile(rf"^(PART\s+(?:{_ROMAN}|\d{{1,2}})\b\.?(?:\s*[-–—:.]?\s+(?P<words>[^,;]{{1,80}}?))?)"
                        r"\s+((?-i:Item|ITEM)\s+\d{1,2}[A-D]?\b.*)$", re.IGNORECASE)


#: ``Block.attributes`` key of the two blocks :func:`_split_part_item` made of one: a bare Item label
#: among them takes in as its title only a heading on its last line (:func:`_same_row_heading`).
_SPLIT = "part_item_split"


def _same_row_heading(label: Block, title: Block) -> bool:
    """Whether ``title`` is a heading whose first line is on ``label``'s last line: MGM's "Part I.
    FINANCIAL INFORMATION Item 1." with "Financial Statements" right of "Item 1.", not Microsoft's
    "PART II Item 9A" above the next page's first heading, nor a paragraph ("NOTE 4 — INVESTMENTS")."""
    return (title.type == BlockType.HEADING and label.bbox is not None and title.bbox is not None
            and label.bbox.y0 <= title.bbox.y0 < label.bbox.y1)


#: Pages a block's text must stand on to be a running head that :func:`_split_part_item` leaves whole.
RUNNING_PAGES = 3


def _running_texts(pages: list[Page]) -> set[str]:
    """Texts (whitespace normalised) that blocks of any type hold on :data:`RUNNING_PAGES` pages or
    more: running heads ("PART II Item 8" above every page of Microsoft's statements), whose
    repeats the furniture review takes out after the first."""
    on: dict[str, set[int]] = {}
    for page in pages:
        for block in page.blocks:
            on.setdefault(" ".join(_plain(block).split()), set()).add(page.number)
    return {text for text, numbers in on.items() if len(numbers) >= RUNNING_PAGES}


def _split_part_item(blocks: list[Block], running: AbstractSet[str] = frozenset()) -> list[Block]:
    """A text block holding a Part title and its first Item's title (:data:`_PART_ITEM`) becomes two
    blocks of its type, each with the whole block's box (the text layer's line boxes are not kept),
    so the Item gets its own heading under the Part's and the Items after it do not read as the
    first one's siblings under a heading that names it. Only when the Item's text reads as an Item
    title (:func:`clause_title`) and the Part's words as a title, and not for a text of ``running``
    (a running head, left whole so the furniture review finds its repeats); other blocks are
    returned as they are."""
    out: list[Block] = []
    for block in blocks:
        plain = " ".join(_plain(block).split())
        m = _PART_ITEM.match(plain) if block.type in _TEXT_TYPES and plain not in running else None
        item = clause_title(m.group(3)) if m else None
        words = m.group("words") if m else None
        if m is None or item is None or item.kind != "item" or words and not _title_words(words.rstrip("."), 8):
            out.append(block)
            continue
        for text in (m.group(1), m.group(3)):
            attributes = {**block.attributes, _SPLIT: True}
            if block.type == BlockType.HEADING:
                level = block.level or 2
                out.append(Block(type=block.type, text="#" * level + " " + text, bbox=block.bbox, level=level,
                                 attributes=attributes))
            else:
                out.append(Block(type=block.type, text=text, bbox=block.bbox, level=block.level, attributes=attributes))
    return out


def _join_numbers(blocks: list[Block]) -> list[Block]:
    """A clause number alone in a block joins the text block whose first line is on its row (a
    bare integer only when that block is a heading); a bare label ("ARTICLE VIII", "Item 8.") takes
    in a short title block right after it."""
    replaced: dict[int, Block] = {}
    dropped: set[int] = set()
    for block in blocks:
        plain = _plain(block)
        if block.type not in _TEXT_TYPES or not _BARE_NUMBER.match(plain):
            continue
        partner = _row_partner(block, blocks)
        if partner is None or id(partner) in replaced or (plain.isdigit() and partner.type != BlockType.HEADING):
            continue
        replaced[id(partner)] = _joined(plain, partner, _union(block.bbox, partner.bbox),
                                        heading=partner.type == BlockType.HEADING)
        dropped.add(id(block))
    merged = [replaced.get(id(b), b) for b in blocks if id(b) not in dropped]
    out: list[Block] = []
    i = 0
    while i < len(merged):
        block = merged[i]
        nxt = merged[i + 1] if i + 1 < len(merged) else None
        plain = _plain(block)
        label = clause_title(plain) if block.type in _TEXT_TYPES else None
        if nxt is not None and label is not None and nxt.type in (BlockType.PARAGRAPH, BlockType.HEADING) \
                and label.kind in _TITLE_KINDS and label.title == plain.rstrip(".:") \
                and (not block.attributes.get(_SPLIT) or _same_row_heading(block, nxt)) \
                and re.fullmatch(r"\S+\s+\S+", label.title) and clause_title(_plain(nxt)) is None:
            title = clause_title(f"{plain} {_plain(nxt)}")
            if title is not None and not title.run_in:
                out.append(_joined(plain, nxt, _union(block.bbox, nxt.bbox), heading=True))
                i += 2
                continue
        out.append(block)
        i += 1
    return out


def contract_title(text: str) -> bool:
    """Whether ``text`` (a block's plain text) reads as a contract's title: at most 12 words in
    capitals naming an instrument ("OUTSOURCING AGREEMENT", "CONTRACT CARRIAGE RULES"), not a
    sentence and no clause title ("EXHIBIT A - LICENSE AGREEMENT" is an exhibit's)."""
    return (len(text.split()) <= 12 and text == text.upper() and bool(_CONTRACT_WORDS.search(text))
            and not reads_as_sentence(text) and clause_title(text) is None and not CAPITAL_LETTER.match(text))


def _contract_title(block: Block) -> bool:
    return block.type in (BlockType.PARAGRAPH, BlockType.HEADING) and contract_title(_plain(block))


#: The title of a table of contents ("TABLE OF CONTENTS", "Contents", "TABLE OF CONTENTS: Page").
CONTENTS_TITLE = re.compile(r"^\W*(?:TABLE\s+OF\s+CONTENTS|CONTENTS)\s*:?\s*(?:PAGE\s*)?$", re.IGNORECASE)
#: Pages after its title that a table of contents may still run on.
CONTENTS_PAGES = 4
#: The opening of an agreement's text: a table of contents never holds it.
_MADE = re.compile(r"\b(?:BY\s+AND\s+BETWEEN|IS\s+MADE|ARE\s+MADE|ENTERED\s+INTO|WHEREAS|WITNESSETH)\b", re.IGNORECASE)


def contents_entry(text: str) -> bool:
    """Whether ``text`` (a block's plain text, ``#`` marks allowed) reads as lines of a table of
    contents: clause numbers and titles ("8. FEES 8.1 Fee Structure 8.2 Conversion", "1.
    Definitions......3", "Article 1 Definitions . . . 1"), page numbers ("Page", "ii", "1 1"), lists
    of schedules and exhibits. Not an entry: a sentence (:func:`~folioflow.ocr.layout.blocks.reads_as_sentence`),
    text in lower case (more than one word in ten, connectors aside), an agreement's opening ("by and
    between", "is made", "WHEREAS"), or the contract's title (:func:`contract_title`: the body begins)."""
    plain = " ".join(text.lstrip("#").split())
    if not plain or reads_as_sentence(plain) or _MADE.search(plain) or contract_title(plain):
        return False
    words = re.findall(r"[A-Za-z][\w'’-]*", plain)
    lower = [w for w in words if w[0].islower() and w.lower() not in _SMALL_WORDS]
    return len(lower) <= max(1, len(words) // 10)


def _contents_run(pages: list[Page]) -> set[tuple[int, int]]:
    """The blocks (``(id(page), index)``) of a contract's table of contents: after the first block
    titled as one (:data:`CONTENTS_TITLE`) in the first pages, every table and every block that
    reads as its lines (:func:`contents_entry`; a heading only when it opens with a clause form,
    "## Article 1 Definitions": another is the body's title), up to the first that does not, within
    :data:`CONTENTS_PAGES` pages; page headers, footers and pictures are passed over. Empty without
    such a title, or when fewer than two entries follow it (a clause titled "Contents")."""
    run: set[tuple[int, int]] = set()
    start: int | None = None
    for page in pages:
        if start is None and page.number > CONTENTS_PAGES:
            break
        if start is not None and page.number > start + CONTENTS_PAGES:
            break
        for i, block in enumerate(page.blocks):
            if block.type not in (*_TEXT_TYPES, BlockType.TABLE, BlockType.TITLE):
                continue
            plain = _plain(block)
            if start is None:
                if block.type != BlockType.TABLE and CONTENTS_TITLE.match(plain):
                    start = page.number
                continue
            heading = block.type == BlockType.HEADING
            if block.type == BlockType.TABLE or (block.type != BlockType.TITLE and contents_entry(plain) and (
                    not heading or any(pattern.match(plain) for _, pattern in _FORMS))):
                run.add((id(page), i))
                continue
            return run if len(run) >= 2 else set()
    return run if len(run) >= 2 else set()


def mark_clause_headings(pages: list[Page]) -> int:
    """Clause titles of a whole document become headings with levels (see the module docstring).
    Changes ``pages`` in place (blocks, and the Markdown of a changed page rebuilt from its blocks);
    pages whose Markdown is not their blocks' (VLM output) are left alone. Returns the number of
    headings made or re-levelled."""
    built = pages_built_from_blocks(pages)
    found: list[tuple[Page, int, ClauseTitle]] = []
    running = _running_texts(built)
    for page in built:
        page.blocks = _join_numbers(_split_part_item(
            [b for b in page.blocks if not (b.attributes.get(CLAUSE) or {}).get("synthetic")], running))
        for i, block in enumerate(page.blocks):
            if block.type in _TEXT_TYPES:
                title = clause_title(_plain(block))
                if title is not None:
                    found.append((page, i, title))
    if not found and not built:
        return 0
    found = _letter_i(built, found)
    contents: set[tuple[int, int]] = set()
    filing = any(t.kind == "item" for _, _, t in found)  # a filing's "Item" titles: no contract rules
    if not filing:  # a filing's capitals are its cover, officers, exhibits
        contents = _contents_run(built)  # a contract's table of contents: its lines are no clauses
        found = [f for f in found if (id(f[0]), f[1]) not in contents]
        found += _caps_titles(built, {(id(page), i) for page, i, _ in found} | contents)
    else:  # a filing's "A. Basis of Presentation." is a note's paragraph, left as the filing sets it, and
        # "(a)Refer to Note 11" a table's footnote
        found = [f for f in found if f[2].kind != "capital" and not _GLUED_LETTER.match(_plain(f[0].blocks[f[1]]))]
    kinds = {t.kind for _, _, t in found}
    numbered = [t.depth for _, _, t in found if t.kind == "number"]
    base = min(numbered) if numbered else 1
    top = 2 if kinds & {"article", "roman", "item", "part"} else 3
    deepest = max([3 + d - base for d in numbered] + [3]) if numbered else 3

    def level(t: ClauseTitle) -> int:
        fixed = {"part": 1, "article": 2, "roman": 2, "item": 2, "annex": 2, "section": 3, "recitals": top}
        if t.kind in fixed:
            return fixed[t.kind]
        if t.kind == "number":
            return min(6, 3 + t.depth - base)
        if t.kind == "caps" and CAPITAL_LETTER.match(t.title):
            return 2 if numbered else top  # "H. POTENTIAL OPPORTUNITIES" above its "1. Other Programs"
        if t.kind == "caps" and not numbered:
            return top  # the document's clauses: "TERM AND TERMINATION" in an unnumbered contract
        if t.kind == "capital" and not numbered and not kinds & {"article", "roman", "part", "caps"}:
            return top  # "A. Definitions. The following ..." lettering the contract's own clauses
        return min(6, deepest + 1)  # a lettered sub-clause, an unnumbered run-in title or one in capitals

    changed = 0
    for page in built:
        for i, block in enumerate(page.blocks):
            if (id(page), i) in contents and block.type == BlockType.HEADING:
                block.type, block.level, block.text = BlockType.PARAGRAPH, None, _plain(block)
                block.attributes[CLAUSE] = {"kind": "contents", "level": None, "synthetic": False}
                changed += 1
    inserts: dict[int, list[tuple[int, Block]]] = {}
    for page, i, title in found:
        block = page.blocks[i]
        lvl = level(title)
        mark = {"kind": title.kind, "level": lvl, "synthetic": False}
        if title.run_in:
            if block.type == BlockType.HEADING and (filing or not _runs_on(_plain(block), title)):
                continue  # a heading that reads as a run-in clause is left as typography made it
            if block.type == BlockType.HEADING:  # its first line is the clause's text too: a paragraph
                block.type, block.level, block.text = BlockType.PARAGRAPH, None, _plain(block)
            heading = Block(type=BlockType.HEADING, text="#" * lvl + " " + title.title, bbox=block.bbox, level=lvl,
                            attributes={CLAUSE: {**mark, "synthetic": True}})
            inserts.setdefault(id(page), []).append((i, heading))
            block.attributes[CLAUSE] = mark
        else:
            block.type, block.level, block.text = BlockType.HEADING, lvl, "#" * lvl + " " + _plain(block)
            block.attributes[CLAUSE] = mark
        changed += 1
    for page in built:
        for i, heading in reversed(inserts.get(id(page), [])):
            page.blocks.insert(i, heading)
    changed += _recitals_and_title(built, top)
    for page in built:
        for block in page.blocks:
            if block.type != BlockType.HEADING:
                continue
            plain = _plain(block)
            if _SIGNATURE_LABEL.match(plain) or not filing and _BARE_LABEL.fullmatch(plain.strip()):
                block.type, block.level, block.text = BlockType.PARAGRAPH, None, plain
                block.attributes[CLAUSE] = {"kind": "label", "level": None, "synthetic": False}
                changed += 1
    if not filing:
        changed += _party_names(built)
    for page in built:
        page.markdown = page_markdown(page.blocks)
    return changed


#: Words of running text after a run-in title that make a heading block the clause's paragraph.
RUN_ON_WORDS = 4


def _runs_on(text: str, title: ClauseTitle) -> bool:
    """Whether a heading block holding the run-in ``title`` goes on with the clause's own text
    (NEON's "Section 7.9 MODIFICATIONS. Licensee shall not make any modifications to or", its first
    line set bold): :data:`RUN_ON_WORDS` words or more after the title, two of them in lower case."""
    rest = " ".join(text.split())[len(" ".join(title.title.split())):].lstrip(" .:-–—").split()
    return len(rest) >= RUN_ON_WORDS and sum(w[:1].islower() for w in rest) >= 2


#: Blocks looked at after a heading for the signature line that makes it a party's name.
PARTY_LOOKAHEAD = 4


def _party_names(pages: list[Page]) -> int:
    """Headings that typography made of a signing party's name ("UTEK CORPORATION" in bold above
    "By: /s/ ...") become paragraphs, so the signature block stays one section and the name no
    clause's title: a heading of at most eight words that is no clause title, followed on its page
    within :data:`PARTY_LOOKAHEAD` blocks by a signature line (:func:`_signature_line`), with
    nothing longer than ten words (a clause's text) between them; a heading that opens with a
    clause form ("Article VII [Miscellaneous]") stays.
    Returns the number of headings made paragraphs."""
    changed = 0
    for page in pages:
        for i, block in enumerate(page.blocks):
            plain = _plain(block)
            if block.type != BlockType.HEADING or (block.attributes.get(CLAUSE) or {}).get("kind") \
                    or len(plain.split()) > 8 or clause_title(plain) is not None or _contract_title(block) \
                    or any(pattern.match(plain) for _, pattern in _FORMS):
                continue
            for after in page.blocks[i + 1:i + 1 + PARTY_LOOKAHEAD]:
                text = _plain(after)
                if _signature_line(text):
                    block.type, block.level, block.text = BlockType.PARAGRAPH, None, plain
                    block.attributes[CLAUSE] = {"kind": "party", "level": None, "synthetic": False}
                    changed += 1
                    break
                if after.type != BlockType.HEADING and len(text.split()) > 10:
                    break
    return changed


def _signature_line(text: str) -> bool:
    """A signature line: ``By:`` / ``Name:`` / ``Signature:`` or ``/s/`` in a block of at most ten
    words, or a ``Title:`` / ``Date:`` label of at most six ("Title: Defra project NF 0426 'The
    genetic improvement ...'" in a list of agreements is no signature)."""
    words = len(text.split())
    if _SIGNING_LABEL.match(text) or "/s/" in text.lower():
        return words <= 10
    return bool(_SIGNATURE_LABEL.match(text)) and words <= 6


def _letter_i(pages: list[Page], found: list[tuple[Page, int, ClauseTitle]]) -> list[tuple[Page, int, ClauseTitle]]:
    """``found`` without the Roman "I" titles that follow a block lettered "H." (the ninth lettered
    clause, "I. NOTICES" after "H. ADDRESSES OF PARTIES", is no article I); one with its title run
    in is read as lettered with a capital (:func:`_capital_run_in`)."""
    roman_i = {(id(page), i) for page, i, t in found if t.kind == "roman" and re.match(r"I\b", t.title)}
    if not roman_i:
        return found
    after_h: set[tuple[int, int]] = set()
    last = None
    for page in pages:
        for i, block in enumerate(page.blocks):
            if (id(page), i) in roman_i and last == "H":
                after_h.add((id(page), i))
            m = CAPITAL_LETTER.match(_plain(block))
            last = m.group(1) if m else last
    out: list[tuple[Page, int, ClauseTitle]] = []
    for page, i, title in found:
        if (id(page), i) in after_h:  # the ninth letter, its title run in ("I. NOTICES. Any notice ...")
            text = " ".join(_plain(page.blocks[i]).split())
            letter = CAPITAL_LETTER.match(text)
            capital = _capital_run_in(text[:letter.end()].strip(), text[letter.end():].strip()) if letter else None
            if capital is not None:
                out.append((page, i, capital))
            continue
        out.append((page, i, title))
    return out


def _caps_titles(pages: list[Page], taken: set[tuple[int, int]]) -> list[tuple[Page, int, ClauseTitle]]:
    """Paragraphs that read as unnumbered clause titles in capitals (:func:`_caps_title`), each
    followed by a body paragraph (:data:`CAPS_BODY_WORDS` words or more, or opening with a clause
    number) that is no signature label,
    when the document has :data:`CAPS_TITLES_MIN` distinct such titles or more; a text found three
    times or more is a running head or a signature block's party label ("MEMBER"), not a title."""
    flow = [(page, i, b) for page in pages for i, b in enumerate(page.blocks)
            if b.type in (*_TEXT_TYPES, BlockType.TABLE, BlockType.TITLE)]
    texts = [" ".join(_plain(block).split()) for _, _, block in flow]
    seen = Counter(text.rstrip(".").upper() for text in texts)
    titles: list[tuple[Page, int, ClauseTitle]] = []
    for j, ((page, i, block), plain) in enumerate(zip(flow, texts, strict=True)):
        if block.type not in (BlockType.PARAGRAPH, BlockType.LIST_ITEM) or (id(page), i) in taken \
                or not _caps_title(plain) or seen[plain.rstrip(".").upper()] > 2 or j + 1 >= len(flow):
            continue
        body = flow[j + 1][2]
        text = _plain(body)
        if body.type in (BlockType.PARAGRAPH, BlockType.LIST_ITEM) and any(ch.islower() for ch in text) \
                and (len(text.split()) >= CAPS_BODY_WORDS or _BODY_NUMBER.match(text)) and not _SIGNATURE_LABEL.match(text):
            titles.append((page, i, ClauseTitle("caps", plain.rstrip(".:"), run_in=False)))
    return titles if len({t.title for _, _, t in titles}) >= CAPS_TITLES_MIN else []


def _recitals_and_title(pages: list[Page], top: int) -> int:
    """A "Recitals" heading before the first ``WHEREAS`` paragraph that no recitals heading precedes,
    and a level-1 heading for an upper-case contract title among the first blocks of the first page
    when the page has no title or level-1 heading."""
    changed = 0
    if pages and pages[0].number == 1:
        first = pages[0]
        body = [b for b in first.blocks if b.type not in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER)]
        if not any(b.type == BlockType.TITLE or (b.type == BlockType.HEADING and b.level == 1) for b in body):
            for block in body[:6]:
                if _contract_title(block):
                    block.type, block.level, block.text = BlockType.HEADING, 1, "# " + _plain(block)
                    block.attributes[CLAUSE] = {"kind": "title", "level": 1, "synthetic": False}
                    changed += 1
                    break
    last_heading: Block | None = None
    for page in pages:
        for i, block in enumerate(page.blocks):
            if block.type in (BlockType.HEADING, BlockType.TITLE):
                last_heading = block
            elif block.type == BlockType.PARAGRAPH and _WHEREAS.match(block.text):
                if last_heading is None or (last_heading.attributes.get(CLAUSE) or {}).get("kind") != "recitals":
                    heading = Block(type=BlockType.HEADING, text="#" * top + " Recitals", bbox=block.bbox, level=top,
                                    attributes={CLAUSE: {"kind": "recitals", "level": top, "synthetic": True}})
                    page.blocks.insert(i, heading)
                    return changed + 1
                return changed
    return changed
