"""A filing's numbered notes as a heading level: the sub-headings of a note nest under it.

The notes to a filing's financial statements are numbered ("Note 4 – Derivative instruments",
"NOTE 12 — INCOME TAXES") and each note has sub-headings of its own ("Derivatives netting",
"Level 3 inputs"). Typography often sets both in the same size, so a note's first sub-heading
closed the note: every later chunk of the note had the sub-heading, not the note, in its heading
path (a chunk about derivatives netting without "Note 4 – Derivative instruments" above it). A
note's number is the level a reader of a filing navigates by, below the Part and the Item.

:func:`nest_note_headings` is a document post-pass, run last in
:func:`folioflow.ocr.finish.document_passes`, over pages whose Markdown is built from their blocks
(text-layer and CPU OCR pages; VLM pages keep the model's Markdown, as in the clause pass). Between a
note heading and the next one (whose number is higher), every other heading moves down so that the
shallowest of them sits one level below the note; their levels relative to one another are kept.
The last note's span ends at the first heading that follows the notes (:data:`AFTER_NOTES`: a Part
or Item, a document title, a heading above the note's level, or one that names the auditor's or
management's report, a glossary, a financial statement schedule, the signatures or the exhibits);
with none, nothing marks where the last note ends and its span is left as set. Also left as set: a
span between two notes that holds a Part or Item heading or a document title, and a span whose
next note does not number higher (numbering that starts again: another set of statements). The
note headings keep their own levels. The pass is idempotent: a heading it moved carries
:data:`NOTE_LEVEL` (``{"from": level before, "to": level after}``), and a second run first puts
back every heading still at its ``to`` level, then nests again.
"""

from __future__ import annotations

import re

from folioflow.ocr.layout.blocks import page_markdown, pages_built_from_blocks
from folioflow.ocr.schema import Block, BlockType, Page

__all__ = ["AFTER_NOTES", "NOTE_HEADING", "NOTE_LEVEL", "nest_note_headings"]

#: ``Block.attributes`` key of a heading this pass moved: ``{"from": int, "to": int}``.
NOTE_LEVEL = "note_level"

#: A note's own heading: "Note 4 – Derivative instruments", "NOTE 12 — INCOME TAXES", "Note 1:
#: Summary ...", "Note 3. Leases". Group 1: the note's number.
NOTE_HEADING = re.compile(r"^(?:NOTE|Note)\s+(\d{1,2})(?:\s*[-–—:.]|\s+[A-Z]|$)")
#: A heading no note holds: a filing's Part or Item.
_ABOVE_NOTES = re.compile(r"^(?:PART\s+(?:[IVX]{1,4}|\d)\b|ITEM\s+\d{1,2}[A-D]?\b)", re.IGNORECASE)
#: A heading of a section that follows a filing's notes (and so ends the last note): the auditor's
#: or management's report, a glossary, a financial statement schedule ("SCHEDULE II — VALUATION AND
#: QUALIFYING ACCOUNTS"), the signatures, the exhibits.
AFTER_NOTES = re.compile(r"^(?:reports?\s+of\s+(?:independent|management)|management['’]s\s+(?:annual\s+)?report|"
                         r"glossary|schedule\s+[IVX]{1,4}\b|signatures?$|exhibits?\b|index\s+to\s+exhibits)",
                         re.IGNORECASE)
_MAX_LEVEL = 6


def _plain(block: Block) -> str:
    """A heading's text without its Markdown ``#`` marks (``"### Note 4 – X"`` at level 3)."""
    return block.text[block.level + 1:] if block.type == BlockType.HEADING and block.level else block.text


def _set_level(block: Block, level: int) -> None:
    block.text = "#" * level + " " + _plain(block)
    block.level = level


def nest_note_headings(pages: list[Page]) -> int:
    """Nest each numbered note's sub-headings under the note (see the module docstring).

    ``pages``: a converted document's pages in order; changed in place (heading levels and text,
    and a changed page's Markdown rebuilt from its blocks). Pages whose Markdown is not their
    blocks' are neither read nor changed. Returns the number of headings this run set below a note.
    """
    built = pages_built_from_blocks(pages)
    touched: set[int] = set()
    for page in built:
        for block in page.blocks:
            moved_before = block.attributes.pop(NOTE_LEVEL, None)
            if moved_before and block.type == BlockType.HEADING and block.level == moved_before["to"]:
                _set_level(block, int(moved_before["from"]))
                touched.add(id(page))
    order: list[tuple[Page, Block]] = [(page, block) for page in built for block in page.blocks
                                       if block.type == BlockType.TITLE or (block.type == BlockType.HEADING and block.level)]
    notes: list[tuple[int, int]] = []  # (place in order, note number)
    for i, (_, block) in enumerate(order):
        m = NOTE_HEADING.match(_plain(block)) if block.type == BlockType.HEADING else None
        if m:
            notes.append((i, int(m.group(1))))
    if len(notes) >= 2:  # the last note ends at the first heading after the notes, if any
        last, last_number = notes[-1]
        last_level = order[last][1].level or 1
        end = next((i for i in range(last + 1, len(order))
                    if order[i][1].type == BlockType.TITLE or (order[i][1].level or 1) < last_level
                    or _ABOVE_NOTES.match(_plain(order[i][1])) or AFTER_NOTES.match(_plain(order[i][1]))), None)
        if end is not None:
            notes.append((end, last_number + 1))
    moved = 0
    for (here, number), (after, next_number) in zip(notes, notes[1:], strict=False):
        if next_number <= number:
            continue
        note_level = order[here][1].level or 1
        span = order[here + 1:after]
        if not span or any(b.type == BlockType.TITLE or _ABOVE_NOTES.match(_plain(b)) for _, b in span):
            continue
        shift = note_level + 1 - min(b.level or 1 for _, b in span)
        if shift <= 0:
            continue
        for page, block in span:
            level = min(_MAX_LEVEL, (block.level or 1) + shift)
            if level != block.level:
                block.attributes[NOTE_LEVEL] = {"from": block.level, "to": level}
                _set_level(block, level)
                touched.add(id(page))
                moved += 1
    for page in built:
        if id(page) in touched:
            page.markdown = page_markdown(page.blocks)
    return moved
