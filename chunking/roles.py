"""Roles of contract blocks that a clause question should not land on: parties, definitions, signature, contents.

A contract's party block ("This Agreement is made ... by and between X and Y"), its defined-terms
block and its signature blocks ("IN WITNESS WHEREOF", "By: ___ Name: Title:") hold the words of
almost every question (the parties' names, "Agreement", defined terms) and answer few. Each is
kept whole in chunks of its own, and those chunks carry ``Chunk.metadata["role"]`` (:data:`ROLE`)
so a ranker can demote them. Found from the text:

* ``parties``: among the first :data:`PREAMBLE_BLOCKS` content blocks of the document, a paragraph
  that says the agreement is made/entered into/dated ... between/among ..., or one that names the
  parties and says they "agree as follows" (``X, a Michigan corporation ("MICOA"), and Y ("Agency")
  agree as follows:``; not the recitals' closing "NOW, THEREFORE, ..."), or the English form set
  over several blocks ("THIS AGREEMENT is made July 31, 2017" / "BETWEEN:" / each party / "- and
  -": :func:`_split_preamble`, all its blocks); and anywhere in the
  document, the preamble of a further agreement bound in the same file (an amendment after the
  agreement it amends): a paragraph opening with "This ... Agreement/Amendment/..." that is made
  or entered into ... between ... and names a party in quotes and parentheses (``("NETGEAR")``);
* ``definitions``: every block of a section whose title names definitions ("1. DEFINITIONS",
  "Defined Terms", "Definitions and Interpretation"; not "Interpretation" alone, an order of
  precedence or rules of construction), and runs of two or more paragraphs that each define a term
  (``“Affiliate” shall mean ...``, ``"Term" has the meaning ...``);
* ``signature``: from a paragraph opening with "IN WITNESS WHEREOF" or saying the agreement is
  "executed as of the date first above written" (or the first block holding signature labels
  ``By:``/``Name:``/``Title:``, or one label and a signature rule ``____`` or ``/s/``, or a short
  block with a label or a rule whose other half is in the next blocks: "Approved by:" above
  "/s/ Jane Smith", or two conformed signatures in a few short blocks; such a block takes with it the lead-in lines right above it, "EMPLOYEE:" or
  "Signed at Philadelphia this ____ day of ____") on, also inside a definitions section, through
  the following blocks of its section and the following non-clause sections whose blocks are all
  short (a signatory's name set as a heading), until a clause, exhibit or schedule heading, a
  paragraph of more than :data:`SIGNATURE_MAX_WORDS` words, or the opening of a next agreement
  ("WHEREAS", "NOW, THEREFORE", a party block);
* ``contents``: a table of contents on one of the first pages (:func:`contents_blocks`): it lists
  every clause's title and answers no clause question.

The party block is searched for among the first :data:`PREAMBLE_BLOCKS` content blocks that are
no table of contents, and takes with it a contract title in capitals right above it ("OUTSOURCING
AGREEMENT" repeated after the table of contents), which would otherwise be a chunk of its own.

:func:`split_by_role` cuts sections where the role changes, so the packer never puts a role's
blocks in a chunk with other text. Of a party block too long for one chunk (a preamble paragraph
that runs on into the services the agreement covers), only the first chunk carries the role.
"""

from __future__ import annotations

import re

from folioflow.chunking.parse import MdBlock
from folioflow.chunking.sections import Section
from folioflow.ocr.layout.clauses import (
    CAPITAL_LETTER,
    CONTENTS_PAGES,
    CONTENTS_TITLE,
    clause_title,
    contents_entry,
    contract_title,
)

__all__ = ["CONTENTS", "DEFINITIONS", "PARTIES", "PREAMBLE_BLOCKS", "ROLE", "ROLES", "SIGNATURE", "SIGNATURE_MAX_WORDS",
           "block_roles", "signature_path", "split_by_role"]

#: ``Chunk.metadata`` key of a chunk's role (absent for ordinary content).
ROLE = "role"
PARTIES, DEFINITIONS, SIGNATURE, CONTENTS = "parties", "definitions", "signature", "contents"
#: Every role value, for rankers and filters.
ROLES = (PARTIES, DEFINITIONS, SIGNATURE, CONTENTS)
#: Content blocks from the start of a document searched for the party block.
PREAMBLE_BLOCKS = 8
#: A signature run ends at a paragraph longer than this.
SIGNATURE_MAX_WORDS = 60

_PARTIES = re.compile(r"\b(?:is|are|was)?\s*(?:made|entered\s+into|dated|executed|effective)\b.{0,400}?"
                      r"\b(?:by\s+and\s+between|by\s+and\s+among|between|among)\b", re.IGNORECASE | re.DOTALL)
#: "X ("Agency") and Y ("MICOA") ... agree as follows": a preamble without "made ... between".
_AGREES = re.compile(r"\bagrees?\s+as\s+follows\b", re.IGNORECASE)
#: "X ("WYZZ") and Y ("NEXSTAR") hereby enter into this Agreement ... dated November 28, 2001": the
#: parties as subject, no "between".
_ENTER_INTO = re.compile(r"\b(?:hereby\s+)?(?:enter|entered|enters)\s+into\s+this\s+(?:[\w-]+\s+){0,4}?"
                         r"(?:agreement|contract|amendment|addendum|license|lease)\b", re.IGNORECASE)
#: A party's defined name in parentheses: ``("Agency")``, ``(the "Company")``, ``(hereinafter "Seller")``.
_DEFINED_PARTY = re.compile(r"\(\s*(?:the\s+|hereinafter(?:\s+called)?\s+|each\s+a\s+)?[“\"'‘][A-Z]", re.IGNORECASE)
#: The preamble of a further agreement in the file: "This Amendment is entered into ... by and between".
_LATER_PREAMBLE = re.compile(r"^\W*THIS\s+(?:[\w#.,'’-]+\s+){0,8}?(?:AGREEMENT|AMENDMENT|ADDENDUM|CONTRACT|LEASE|"
                             r"LICEN[CS]E)\b[^.]{0,120}?\b(?:is|was)\s+(?:hereby\s+)?(?:made|entered\s+into)\b"
                             r"[^.]{0,400}?\bbetween\b", re.IGNORECASE | re.DOTALL)
_AGREEMENT = re.compile(r"\b(?:agreement|contract|amendment|addendum|license|lease)\b", re.IGNORECASE)
#: The first block of a party block set over several blocks, as English agreements set it: "THIS
#: AGREEMENT is made July 31, 2017" over "BETWEEN:", each party's description, "- and -".
_SPLIT_OPENING = re.compile(r"^\W*THIS\s+(?:[\w#.,'’-]+\s+){0,8}?(?:AGREEMENT|DEED|AMENDMENT|ADDENDUM|CONTRACT|LEASE|"
                            r"LICEN[CS]E)\b[^.]{0,160}?\b(?:is|was)\s+(?:hereby\s+)?(?:made|entered\s+into|dated)\b",
                            re.IGNORECASE)
#: A party block set over several blocks: at most this many blocks, each of at most this many words.
_SPLIT_BLOCKS = 6
_SPLIT_WORDS = 120
#: A block of such a party block after its opening: a connector ("- and -", "AND", "BETWEEN:") or a
#: party's description ("a company incorporated under the laws of ...", "hereinafter referred to as").
_PARTY_PIECE = re.compile(r"^\W*(?:and|between|among|by\s+and\s+between)\W*$|"
                          r"\b(?:incorporated|organi[sz]ed|existing|registered)\s+(?:and\s+existing\s+)?under\b|"
                          r"\bhereinafter\b|\b(?:a|an)\s+(?:[\w-]+\s+){0,4}?(?:company|corporation|partnership|"
                          r"limited\s+liability|association|trust|bank)\b", re.IGNORECASE)
#: A section title that names definitions ("1. DEFINITIONS", "Defined Terms", "Definitions and
#: Interpretation"); "Interpretation" alone is a clause of its own (an order of precedence, rules of
#: construction), not defined terms.
_DEFINITIONS_TITLE = re.compile(r"\b(?:definitions?|defined\s+terms)\b", re.IGNORECASE)
_DEFINES = re.compile(r"^\W*(?:\d{1,3}(?:\.\d{1,3})*\.?\s*)?(?:\([a-z0-9]{1,4}\)\s*)?[“\"‘'][^”\"’']{1,80}[”\"’']"
                      r"[^.]{0,80}?\b(?:shall\s+mean|means|mean|shall\s+have\s+the\s+meaning|has\s+the\s+meaning|"
                      r"shall\s+include|includes|refers\s+to)\b", re.IGNORECASE)
_WITNESS = re.compile(r"^\W*IN\s+WITNESS\s+(?:WHEREOF|THEREOF|OF\s+THE\s+FOREGOING)\b|^[^.]{0,80}\b(?:executed|signed)\b[^.]{0,60}\bas\s+of\s+the\s+"
                      r"(?:date|day)\b[^.]{0,40}\b(?:first\s+)?(?:above\s+)?written", re.IGNORECASE)
_SIGNATURE_LABEL = re.compile(r"(?:^|\s)(?:By|Name|Title|Its|Signature|Signed|Date)\s*:", re.IGNORECASE)
_OPENING = re.compile(r"^\W*(?:WHEREAS|NOW,?\s+THEREFORE|RECITALS?)\b", re.IGNORECASE)
_RULE = re.compile(r"_{4,}|/s/")
#: A signature itself: a conformed one (``/s/ Jane Smith``) or a line of nothing but a rule.
_SIGNED = re.compile(r"/s/|^[\s_]*_{4,}[\s_]*$", re.MULTILINE)
#: Words of a block that may carry a signature run into a following section (a signatory's name or
#: title set as a heading, the next party's block).
_SIGNATURE_SECTION_WORDS = 25
#: A signature block split over blocks ("Approved by:" / "/s/ Jane Smith" / "Date: ..."): each
#: piece's most words, and the blocks searched for its label and rule.
_SIGNATURE_PIECE_WORDS = 12
_SIGNATURE_WINDOW = 3
#: Lead-in lines above a signature block: at most this many blocks of at most this many words.
_LEAD_IN_BLOCKS = 4
_LEAD_IN_WORDS = 25
#: A signing party's name above its signature: at most this many words, each capitalised.
_PARTY_NAME_WORDS = 6
#: Clause kinds (:func:`folioflow.ocr.layout.clauses.clause_title`) a signature block does not
#: belong to: its heading path stops above them.
_CLAUSE_KINDS = {"number", "letter", "capital", "run_in", "section", "roman", "article"}
_SIGNING_LEAD = re.compile(r"^\W*(?:signed|executed|dated|agreed|accepted|approved|acknowledged)\b", re.IGNORECASE)
#: A date written out ("25th day of May, 1999", "May 25, 1999"): a lead-in that holds one says when the
#: agreement was made or takes effect ("Signed and effective this 25th day of May, 1999.") and stays text.
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b",
                    re.IGNORECASE)


def _words(block: MdBlock) -> int:
    return len(block.text.split())


def _signature_block(block: MdBlock) -> bool:
    labels = len(_SIGNATURE_LABEL.findall(block.text))
    return _words(block) <= SIGNATURE_MAX_WORDS and (labels >= 2 or (labels >= 1 and bool(_RULE.search(block.text))))


def _split_signature(blocks: list[MdBlock], i: int) -> bool:
    """Whether ``blocks[i]`` opens a signature block split over short blocks: it holds a signature
    label or a signature (``/s/``, a line of underscores), and it and the next ones
    (:data:`_SIGNATURE_WINDOW` in all, each at most :data:`_SIGNATURE_PIECE_WORDS` words) hold both,
    or two conformed signatures without labels ("/s/ [Illegible]" above "/s/ [Illegible] ---- SAGEM").
    A form's blank (``DATE OF ORDER:____``) is no signature."""
    label = rule = False
    conformed = 0
    for block in blocks[i:i + _SIGNATURE_WINDOW]:
        if _words(block) > _SIGNATURE_PIECE_WORDS:
            break
        label = label or bool(_SIGNATURE_LABEL.search(block.text))
        rule = rule or bool(_SIGNED.search(block.text))
        conformed += "/s/" in block.text.lower()
        if block is blocks[i] and not (label or rule):
            return False
        if label and rule or conformed >= 2:
            return True
    return False


def _party_name(text: str) -> bool:
    words = [w for w in text.split() if any(ch.isalpha() for ch in w)]
    return 0 < len(words) <= _PARTY_NAME_WORDS and all(w.lstrip("\"“'‘(")[:1].isupper() for w in words) \
        and not text.rstrip().endswith((";", ","))


def signature_path(path: list[str]) -> list[str]:
    """The heading path of a signature block found under ``path``: without the clauses at its end
    (ORBSAT's signatures follow "L. ATTORNEY'S FEES" but are no part of it); the document title,
    parts, items and exhibits stay."""
    out = list(path)
    while out and (CAPITAL_LETTER.match(out[-1]) or (title := clause_title(out[-1])) is not None and title.kind in _CLAUSE_KINDS):
        out.pop()
    return out


def _lead_in(blocks: list[MdBlock], i: int, roles: dict[int, str]) -> list[MdBlock]:
    """The lead-in lines right above a signature block that starts at ``blocks[i]``, nearest last:
    paragraphs without a role of at most :data:`_LEAD_IN_WORDS` words that name a signatory
    ("EMPLOYEE:", at most 6 words ending in a colon), open with "Signed", "Executed", "Dated",
    "Agreed", "Accepted", "Approved" or "Acknowledged" and name no month ("Signed and effective this
    25th day of May, 1999" is the effective date, text), or are a signing party's name (at most
    :data:`_PARTY_NAME_WORDS` words, each capitalised: "UTEK CORPORATION", "Intuit Inc.",
    "Client: Stamps.com Inc.")."""
    out: list[MdBlock] = []
    for block in reversed(blocks[max(0, i - _LEAD_IN_BLOCKS):i]):
        text = block.text.strip()
        if block.kind != "paragraph" or id(block) in roles or _words(block) > _LEAD_IN_WORDS or not (
                (text.endswith(":") and _words(block) <= 6) or _SIGNING_LEAD.match(text) and not _MONTH.search(text)
                or _party_name(text)):
            break
        out.insert(0, block)
    return out


def _preamble(text: str) -> bool:
    """The party block that opens a document (module docstring)."""
    if _PARTIES.search(text) and _AGREEMENT.search(text):
        return True
    return (bool(_AGREES.search(text) or _ENTER_INTO.search(text)) and bool(_DEFINED_PARTY.search(text))
            and not _OPENING.match(text))


def _split_preamble(content: list[MdBlock], i: int, section_of: dict[int, int]) -> list[MdBlock]:
    """The blocks of a party block set over several blocks from ``content[i]`` on ("THIS AGREEMENT is
    made July 31, 2017" / "BETWEEN:" / "PROFOUND MEDICAL INC., a company incorporated ..." / "- and
    -" / "PHILIPS MEDICAL SYSTEMS NEDERLAND B.V., ..."), or ``[]``: ``content[i]`` opens as one
    (:data:`_SPLIT_OPENING`) without being a whole preamble itself, and with the paragraphs and lists
    after it in its section, up to :data:`_SPLIT_BLOCKS` blocks of at most :data:`_SPLIT_WORDS` words
    each and before the recitals ("WHEREAS"), their first blocks read as one (:func:`_preamble`).
    After the block that completes it, the run takes only the blocks that describe a party or join
    two (:data:`_PARTY_PIECE`, or a party's defined name in parentheses): "1. Section 4.2 is
    deleted" after "THIS AMENDMENT is made ..." / "The Supply Agreement between Acme and Beta is
    amended as follows:" is a clause."""
    if not _SPLIT_OPENING.match(content[i].text):
        return []
    run: list[MdBlock] = []
    for block in content[i:i + _SPLIT_BLOCKS]:
        if block.kind not in ("paragraph", "list") or section_of.get(id(block)) != section_of.get(id(content[i])) \
                or _words(block) > _SPLIT_WORDS or (run and _OPENING.match(block.text)):
            break
        run.append(block)
    for n in range(2, len(run) + 1):
        if _preamble(" ".join(b.text for b in run[:n])):
            out = run[:n]
            for block in run[n:]:  # the parties' descriptions and the connectors between them
                if not (_PARTY_PIECE.search(block.text) or _DEFINED_PARTY.search(block.text)):
                    break
                out.append(block)
            return out
    return []


def _clause_heading(section: Section) -> bool:
    return bool(section.path) and clause_title(section.path[-1]) is not None


def _contents_title(text: str) -> bool:
    return bool(CONTENTS_TITLE.match(text.lstrip("#").strip()))


def contents_blocks(sections: list[Section]) -> set[int]:
    """The blocks (``id(block)``) of a table of contents: in a section titled as one
    (:data:`~folioflow.ocr.layout.clauses.CONTENTS_TITLE`) or after a paragraph so titled, on one of
    the first :data:`~folioflow.ocr.layout.clauses.CONTENTS_PAGES` pages and for as many after it, the
    tables and the blocks that read as its lines (:func:`~folioflow.ocr.layout.clauses.contents_entry`),
    up to the first that does not (the contract's title or its opening, where no heading came
    between); the title paragraph with them."""
    out: set[int] = set()
    start: int | None = None  # the page of the title
    for section in sections:
        listing = bool(section.path) and _contents_title(section.path[-1]) and bool(section.blocks) \
            and section.blocks[0].page <= CONTENTS_PAGES
        if listing:
            start = section.blocks[0].page
        for block in section.blocks:
            if block.kind in ("paragraph", "caption") and _contents_title(block.text) and block.page <= CONTENTS_PAGES:
                listing, start = True, block.page
                out.add(id(block))
            elif listing and start is not None and block.page <= start + CONTENTS_PAGES and (
                    block.kind == "table" or block.kind in ("paragraph", "caption", "list") and contents_entry(block.text)):
                out.add(id(block))
            else:
                listing = False
    return out


def block_roles(sections: list[Section]) -> dict[int, str]:
    """The role of each block that has one, by ``id(block)`` (see the module docstring)."""
    roles: dict[int, str] = {id_: CONTENTS for id_ in contents_blocks(sections)}
    content = [b for s in sections for b in s.blocks if id(b) not in roles]
    section_of = {id(b): n for n, s in enumerate(sections) for b in s.blocks}
    first = True
    for i, block in enumerate(content):
        if block.kind != "paragraph":
            continue
        opening = first and i < PREAMBLE_BLOCKS and _preamble(block.text)
        split = [] if opening or not first or i >= PREAMBLE_BLOCKS else _split_preamble(content, i, section_of)
        if split:
            opening = True
            roles.update({id(b): PARTIES for b in split})
        if opening or _LATER_PREAMBLE.match(block.text) and _DEFINED_PARTY.search(block.text):
            roles[id(block)] = PARTIES
            first = first and not opening
            above = content[i - 1] if i else None  # the agreement's title right above ("OUTSOURCING AGREEMENT")
            if above is not None and above.kind == "paragraph" and id(above) not in roles and contract_title(above.text):
                roles[id(above)] = PARTIES
    signing = False
    for section in sections:
        title = section.path[-1] if section.path else ""
        if signing and section.heading is not None and (
                _clause_heading(section) or any(_words(b) > _SIGNATURE_SECTION_WORDS for b in section.blocks)):
            signing = False
        definitions = bool(section.path) and bool(_DEFINITIONS_TITLE.search(title)) and len(title.split()) <= 8
        run: list[MdBlock] = []
        blocks = section.blocks
        for i, block in enumerate(blocks):
            if _WITNESS.match(block.text):
                signing = True
            elif not signing and (_signature_block(block) or _split_signature(blocks, i)):
                signing = True
                roles.update({id(b): SIGNATURE for b in _lead_in(blocks, i, roles)})
            elif signing and (_OPENING.match(block.text) or _PARTIES.search(block.text[:300]) and _AGREEMENT.search(block.text)):
                signing = False  # the next agreement (an addendum's recitals or preamble) begins
            elif signing and (block.kind in ("table",) and _words(block) > 4 * SIGNATURE_MAX_WORDS
                              or block.kind != "table" and _words(block) > SIGNATURE_MAX_WORDS):
                signing = False
            if signing:
                roles[id(block)] = SIGNATURE
            elif definitions:
                roles.setdefault(id(block), DEFINITIONS)
                continue
            if block.kind == "paragraph" and _DEFINES.match(block.text):
                run.append(block)
                continue
            if len(run) >= 2:
                roles.update({id(b): DEFINITIONS for b in run if id(b) not in roles})
            run = []
        if len(run) >= 2:
            roles.update({id(b): DEFINITIONS for b in run if id(b) not in roles})
    return roles


def split_by_role(sections: list[Section]) -> list[tuple[Section, str | None]]:
    """``sections`` cut into runs of consecutive blocks of one role, each with its role (``None``:
    ordinary content). A section's heading stays with its first run; the runs keep its path, a
    signature run without the clauses at its end (:func:`signature_path`)."""
    roles = block_roles(sections)
    out: list[tuple[Section, str | None]] = []
    for section in sections:
        if not any(id(b) in roles for b in section.blocks):
            out.append((section, None))
            continue
        current: Section | None = None
        role: str | None = None
        listing = bool(section.path) and _contents_title(section.path[-1])
        for block in section.blocks:
            r = roles.get(id(block))
            if current is None or r != role:
                path = signature_path(section.path) if r == SIGNATURE else list(section.path)
                if listing and r != CONTENTS and current is not None:
                    path = path[:-1]  # the agreement's opening after its table of contents, with no heading between
                current = Section(path=path, heading=section.heading if current is None else None)
                role = r
                out.append((current, role))
            current.blocks.append(block)
    return out
