"""Document-level passes run once every page is converted: furniture by evidence, and the
invariant that no page carries another page's content.

**Furniture by evidence** (:func:`review_furniture`). An engine labels lines in a page's margins
as page headers/footers by position alone (the text layer: the top and bottom 7% of the page),
which took a one-page document's title, the only line of a tall page or a line 32 pt from the top
of a letter page for a running header, and dropped it. Here a margin line is furniture only when
the evidence says so:

* it is a page number ("12", "- 12 -", "Page 3 of 10", roman numerals), at a page edge; or
* its text (case-folded, digits folded, so "Invoice 4711 - page 2" and "... page 3" agree) stands
  in the same band (header or footer, at a vertical position within :data:`BAND_TOLERANCE_PT` or
  3% of the page height) on at least two pages (an engine-labelled margin line) or three pages (a
  paragraph in the outer :data:`EDGE_SHARE` of the page that the engine did not label: a contract's
  "[***] Certain information ... omitted" legend; or a heading in the bottom one: a filing agent's
  "Source: ..." line set larger than the body, which heads nothing); or
* it is a heading repeated word for word (digits included) at the top of three consecutive pages or
  more (:data:`RUNNING_HEAD_GAP`), not the first of them:
  a running head set as a heading (Pfizer's "... NOTES TO CONDENSED CONSOLIDATED FINANCIAL
  STATEMENTS" above every notes page) would cut each note's later pages from the note's heading;
  its first occurrence heads what follows, so a title carried on ("... (continued)") still heads
  its pages from the first.

Every other margin line is body text (``paragraph``), so a line that repeats nowhere, and any
line of a one-page document that is no page number, stays in the Markdown. A long sentence (at
least :data:`SENTENCE_WORDS` words) repeated on every page keeps its first occurrence in the body,
so it never vanishes everywhere. Furniture blocks keep ``attributes["furniture"]`` (the band and
the pages it repeats on); the chunker keeps them in every chunk's metadata of their page, the
sparse (BM25) index searches them, and ``folioflow show`` marks them. Decided from the geometry and
``attributes["margin"]`` (the engine's original label), never from the current type, so running
the pass on a part of a document and then on the whole gives the whole's answer.

**One page, one content** (:func:`check_duplicates`): pages read from pixels (OCR, VLM) whose text
is identical are compared on their rendered images (the correlation of 96 x 96 ink thumbnails, the
best over the four quarter turns, since OCR reads a rotated scan upright);
when the images differ (correlation below :data:`MIN_IMAGE_SIMILARITY`), every such page after
the first is ``failed`` ("content identical to page N's while the page images differ"). Identical
text from identical images (a blank form scanned twice) is left alone, and so is a text of fewer
than :data:`MIN_DUPLICATE_WORDS` words ("Notes", "Intentionally left blank", a lone page label):
short texts recur on different pages legitimately and say nothing about a carried-over page.
Text-layer pages are read from their own page's text objects and are not checked.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from folioflow.ocr.errors import FolioflowError
from folioflow.ocr.fidelity import MIN_OCR_PLAUSIBILITY, known_words, page_text, plausibility, words
from folioflow.ocr.ids import sha256_text
from folioflow.ocr.layout.blocks import join_broken_headings, relevel_headings
from folioflow.ocr.layout.clauses import mark_clause_headings
from folioflow.ocr.layout.notes import nest_note_headings
from folioflow.ocr.render import OpenedDocument, PageHandle
from folioflow.ocr.schema import BBox, Block, BlockType, Document, Page, PageStatus

__all__ = ["BAND_TOLERANCE_PT", "CONVERSION_VERSION", "MIN_DUPLICATE_WORDS", "MIN_IMAGE_SIMILARITY", "EDGE_SHARE", "SENTENCE_WORDS", "check_duplicates", "document_passes",
           "finish_document", "ocr_regions", "review_furniture"]

#: Bump when the document passes (:func:`document_passes`: heading levels, clause headings, furniture,
#: tables of contents) make other pages from the same engine output. Part of the OCR settings'
#: fingerprint (:func:`folioflow.flows.stages.ocr_identity`): the next ingest converts indexed
#: documents again (engine output from the page cache), and ``folioflow reindex``, which re-chunks
#: kept conversions, leaves that to it. Before version 1 such changes bumped
#: :data:`~folioflow.chunking.chunker.CHUNKER_VERSION` (up to 16). 2: a heading repeated at the foot
#: of pages is a running footer. 3: a filing's Part title and its first Item's title in one block are
#: two headings; a heading repeated word for word at the top of three consecutive pages or more is
#: a running header after its first occurrence. 4: a filing's numbered note holds the headings up to
#: the next note (:func:`~folioflow.ocr.layout.notes.nest_note_headings`). 5: a heading that breaks
#: off a sentence the next block goes on with is merged into it
#: (:func:`~folioflow.ocr.layout.blocks.join_broken_headings`).
CONVERSION_VERSION = "5"

#: Share of the page height at the top and bottom in which unlabelled paragraphs may be furniture.
EDGE_SHARE = 0.12
#: Two occurrences are in the same band when their distance to the page edge differs by at most this (points).
BAND_TOLERANCE_PT = 18.0
#: A repeated margin text of at least this many words is a sentence: its first occurrence stays body.
SENTENCE_WORDS = 12
#: Longest text (characters) taken as furniture.
MAX_FURNITURE_CHARS = 400
#: Correlation of two pages' ink thumbnails below which their images differ.
MIN_IMAGE_SIMILARITY = 0.8
#: Identical texts shorter than this (words) are not compared: short labels recur legitimately.
MIN_DUPLICATE_WORDS = 5

_PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,7})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$",
                          re.IGNORECASE)
_MARGINS = {BlockType.PAGE_HEADER: "header", BlockType.PAGE_FOOTER: "footer"}
_CANDIDATE_TYPES = {BlockType.PARAGRAPH, BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER}


def _key(text: str) -> str:
    text = re.sub(r"[#*_`>|]", " ", text.casefold())
    return " ".join(re.sub(r"\d+", "#", text).split())


def _plain(block: Block) -> str:
    return block.text.lstrip("#").strip() if block.type in (BlockType.HEADING, BlockType.TITLE) else block.text.strip()


#: Most pages between two occurrences of a heading repeated at the top of pages for both to be one
#: running head: 1, on consecutive pages (two same-named sections a page apart are sections).
RUNNING_HEAD_GAP = 1


def _run_of(number: int, pages: list[int]) -> list[int]:
    """The pages of ``pages`` (sorted) in the run around ``number`` whose steps are at most
    :data:`RUNNING_HEAD_GAP`."""
    start = end = pages.index(number)
    while start > 0 and pages[start] - pages[start - 1] <= RUNNING_HEAD_GAP:
        start -= 1
    while end + 1 < len(pages) and pages[end + 1] - pages[end] <= RUNNING_HEAD_GAP:
        end += 1
    return pages[start:end + 1]


#: Group key prefix of headings in the top band (:func:`review_furniture`).
_HEADING_KEY = "\x00heading "


def _exact(block: Block) -> str:
    return " ".join(_plain(block).casefold().split())


def is_page_number(text: str) -> bool:
    """Whether ``text`` is a bare page number ("12", "- 12 -", "Page 3 of 10", "iv")."""
    return bool(_PAGE_NUMBER.match(text.strip()))


def _candidate(page: Page, block: Block) -> tuple[str, bool] | None:
    """``(band, engine_labelled)`` of a block that may be furniture, else ``None``."""
    margin = block.attributes.get("margin")
    if margin in ("header", "footer"):
        return margin, True
    if block.type in _MARGINS and "margin" not in block.attributes:  # the engine's label, seen the first time
        block.attributes["margin"] = _MARGINS[block.type]
        return _MARGINS[block.type], True
    if block.bbox is None or page.height <= 0:
        return None
    if (block.type in _CANDIDATE_TYPES or _titled(block)) and block.bbox.y1 <= EDGE_SHARE * page.height:
        return "header", False
    if (block.type in _CANDIDATE_TYPES or block.type == BlockType.HEADING) \
            and block.bbox.y0 >= (1 - EDGE_SHARE) * page.height:
        # a heading at a page's foot heads nothing: a filing agent's "Source: ..." line, set in a
        # font larger than the body's, is read as one
        return "footer", False
    return None


def _titled(block: Block) -> bool:
    """A heading or title, or a heading the review made furniture before (its level kept in
    ``heading_level``)."""
    return block.type in (BlockType.HEADING, BlockType.TITLE) \
        or (block.type == BlockType.PAGE_HEADER and "heading_level" in block.attributes)


def _edge_distance(page: Page, block: Block, band: str) -> float | None:
    if block.bbox is None:
        return None
    return block.bbox.y0 if band == "header" else page.height - block.bbox.y1


def _markdown_of(blocks: list[Block]) -> str:
    skip = (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER)
    return "\n\n".join(b.text for b in blocks if b.type not in skip and b.text.strip())


def review_furniture(pages: list[Page]) -> int:
    """Decide furniture by evidence over ``pages`` (one document, see the module docstring), in
    place; returns the number of blocks whose type changed. A changed page's Markdown is rebuilt
    from its blocks when it was made from them (text layer, CPU OCR); otherwise (VLM Markdown)
    the texts that changed side are added to or removed from it."""
    found: list[tuple[Page, Block, str, bool, str]] = []
    for page in pages:
        if page.status == PageStatus.FAILED:
            continue
        for block in page.blocks:
            cand = _candidate(page, block)
            if cand is None:
                continue
            text = _plain(block)
            if not text or len(text) > MAX_FURNITURE_CHARS:
                continue
            titled = cand[0] == "header" and not cand[1] and _titled(block)
            # headings at the top repeat only as headings, word for word, digits included
            found.append((page, block, cand[0], cand[1], _HEADING_KEY + _exact(block) if titled else _key(text)))
    groups: dict[tuple[str, str], list[tuple[Page, Block]]] = defaultdict(list)
    for page, block, band, _, key in found:
        groups[(band, key)].append((page, block))

    def repeats(band: str, key: str, page: Page, block: Block) -> list[int]:
        """Pages on which the text stands in the same band as on ``page``."""
        mine = _edge_distance(page, block, band)
        out = set()
        for other_page, other in groups[(band, key)]:
            theirs = _edge_distance(other_page, other, band)
            tolerance = max(BAND_TOLERANCE_PT, 0.03 * max(page.height, other_page.height))
            if mine is None or theirs is None or abs(mine - theirs) <= tolerance:
                out.add(other_page.number)
        return sorted(out)

    decided: dict[int, tuple[Block, Page, str | None, int]] = {}
    first_sentence: set[tuple[str, str]] = set()
    for page, block, band, labelled, key in sorted(found, key=lambda f: f[0].number):
        text = _plain(block)
        furniture: str | None = None
        on = repeats(band, key, page, block)
        if is_page_number(text):
            furniture = band
        elif key.startswith(_HEADING_KEY):
            # a heading repeated word for word at the top of three consecutive pages or more is a running head
            # (Pfizer's "PFIZER INC. AND SUBSIDIARY COMPANIES NOTES TO CONDENSED CONSOLIDATED FINANCIAL
            # STATEMENTS" above every note's page): its first occurrence heads what follows, the others
            # would cut the note they stand in from its heading path. Texts are compared whole, digits
            # included ("EXHIBIT 2" is no repeat of "EXHIBIT 1"), on pages at most RUNNING_HEAD_GAP apart
            # (3M's exhibits each have a "Notifications" section, pages apart; JPMorgan's segments a
            # "Selected metrics" table every other page). A clause title repeats too (Microsoft's
            # "PART II" / "Item 8" above every page of its statements).
            run = _run_of(page.number, on)
            if len(run) >= 3 and page.number != run[0] and block.type != BlockType.TITLE:
                furniture = band
        elif len(on) >= (2 if labelled else 3) and block.type != BlockType.TITLE \
                and (labelled or block.type != BlockType.HEADING or band == "footer"):
            furniture = band
            if len(words(text)) >= SENTENCE_WORDS and (band, key) not in first_sentence:
                first_sentence.add((band, key))
                furniture = None  # a repeated sentence stays in the body once
        decided[id(block)] = (block, page, furniture, len(on))
    changed = 0
    touched: dict[int, tuple[Page, list[Block]]] = {}
    for block, page, furniture, count in decided.values():
        before = list(page.blocks)
        if furniture is not None:
            new_type = BlockType.PAGE_HEADER if furniture == "header" else BlockType.PAGE_FOOTER
            block.attributes["furniture"] = {"band": furniture, "pages": count}
        else:
            new_type = block.type if block.type not in _MARGINS else BlockType.PARAGRAPH
            if new_type == BlockType.PARAGRAPH and "heading_level" in block.attributes:
                new_type = BlockType.HEADING  # a heading taken for furniture on part of the document
            block.attributes.pop("furniture", None)
        if new_type != block.type:
            touched.setdefault(id(page), (page, [Block(**b.model_dump()) for b in before]))
            if block.type == BlockType.HEADING:  # to furniture: its text without the heading's "## "
                block.attributes["heading_level"] = block.level or 1
                block.text, block.level = _plain(block), None
            elif new_type == BlockType.HEADING:
                block.level = int(block.attributes.pop("heading_level"))
                block.text = "#" * block.level + " " + block.text
            block.type = new_type
            changed += 1
    for page, before in touched.values():
        _rebuild_markdown(page, before)
    return changed


def _rebuild_markdown(page: Page, before: list[Block]) -> None:
    if page.markdown.strip() == _markdown_of(before).strip():
        page.markdown = _markdown_of(page.blocks)
        return
    text = page.markdown
    for old, new in zip(before, page.blocks, strict=False):
        if old.type == new.type or not new.text.strip():
            continue
        if new.type in _MARGINS and (old.text in text or new.text in text):
            text = text.replace(old.text if old.text in text else new.text, "", 1)  # a heading's with its "## "
        elif old.type in _MARGINS and new.text not in text:
            text = (new.text + "\n\n" + text) if old.type == BlockType.PAGE_HEADER else (text + "\n\n" + new.text)
    page.markdown = re.sub(r"\n{3,}", "\n\n", text).strip()


def _thumbnail(handle: PageHandle) -> np.ndarray:
    """The page's ink on a 96 x 96 grid (0 = paper, 1 = black), mean-centred."""
    image = handle.render(dpi=36).convert("L").resize((96, 96))
    ink = 1.0 - np.asarray(image, dtype=np.float32) / 255.0
    return ink - ink.mean()


def _similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Correlation of two thumbnails (1.0: the same picture; blank pages count as the same), the
    best over the four quarter turns of ``a``: OCR reads a page turned by 90, 180 or 270 degrees
    upright, so the same content scanned in another orientation is the same picture."""
    best = -1.0
    for turns in range(4):
        turned = np.rot90(a, turns)
        norm = float(np.sqrt((turned * turned).sum() * (b * b).sum()))
        best = max(best, float((turned * b).sum()) / norm if norm > 1e-6 else 1.0)
    return best


def check_duplicates(pages: list[Page], opened: OpenedDocument) -> list[int]:
    """Fail every pixel-read page whose text equals an earlier page's while their images differ
    (module docstring); returns the page numbers failed."""
    groups: dict[str, list[Page]] = defaultdict(list)
    for page in pages:
        if page.status == PageStatus.FAILED or page.attributes.get("route") == "text" or page.engine == "text":
            continue
        found = words(page_text(page))
        if len(found) >= MIN_DUPLICATE_WORDS:
            groups[sha256_text(" ".join(found))].append(page)
    failed = []
    for same in groups.values():
        if len(same) < 2:
            continue
        try:
            first = _thumbnail(opened.page(same[0].number))
        except (FolioflowError, IndexError):
            continue
        for page in same[1:]:
            try:
                similarity = _similarity(_thumbnail(opened.page(page.number)), first)
            except (FolioflowError, IndexError) as exc:
                reason = f"page {page.number}: {exc}"
            else:
                if similarity >= MIN_IMAGE_SIMILARITY:
                    continue
                reason = (f"page {page.number}: content identical to page {same[0].number}'s while the page images "
                          f"differ (correlation {similarity:.2f}): not this page's content")
            page.attributes["rejected_markdown"] = page.markdown[:2000]
            page.markdown, page.blocks, page.status = "", [], PageStatus.FAILED
            page.errors.append(reason)
            failed.append(page.number)
    return failed


def document_passes(document: Document,
                    opened: OpenedDocument | Callable[[], AbstractContextManager[OpenedDocument]] | None = None) -> None:
    """Every document-level pass over a converted ``document``'s pages, in place and in order:
    text-layer heading levels against the whole document's body size
    (:func:`~folioflow.ocr.layout.blocks.relevel_headings`), a heading that is the first line of a
    sentence merged into the block that goes on with it
    (:func:`~folioflow.ocr.layout.blocks.join_broken_headings`), clause structure
    (:func:`~folioflow.ocr.layout.clauses.mark_clause_headings`), furniture and duplicates
    (:func:`finish_document`; ``opened`` as there), then clause structure again: a clause number or
    an "EXHIBIT 1" / "PART I" set alone high on its page is a page-header candidate on the first
    clause pass, and body text once the furniture review finds no other page repeating it. The
    clause pass is idempotent, so the second one changes only what the review returned to the body.
    Last, a filing's numbered notes take in the headings up to the next note
    (:func:`~folioflow.ocr.layout.notes.nest_note_headings`)."""
    relevel_headings(document.pages)
    join_broken_headings(document.pages)
    mark_clause_headings(document.pages)
    finish_document(document, opened)
    mark_clause_headings(document.pages)
    nest_note_headings(document.pages)


def finish_document(document: Document,
                    opened: OpenedDocument | Callable[[], AbstractContextManager[OpenedDocument]] | None = None) -> None:
    """Run the document-level passes on a converted ``document`` (in place): furniture by evidence
    always, the duplicate-content invariant when ``opened`` (the open document, or a function
    opening it) is given."""
    review_furniture(document.pages)
    if opened is None:
        return
    texts = [" ".join(words(page_text(p))) for p in document.pages
             if p.status != PageStatus.FAILED and p.engine != "text"]
    if len(texts) == len(set(texts)):
        return  # nothing to compare: no rendering
    context = nullcontext(opened) if isinstance(opened, OpenedDocument) else opened()
    with context as doc:
        check_duplicates(document.pages, doc)


def _known_words(page: Page) -> float:
    """Lexicon words read on ``page`` (rate x words of its plausibility; 0 without a verdict)."""
    judged = plausibility(page_text(page), list(page.attributes.get("languages") or ["eng"]))
    return judged.rate * judged.words if judged is not None else 0.0


def ocr_regions(engine, handle: PageHandle, regions: list[tuple[float, float, float, float]],
                dpi: float = 300.0, second=None,
                languages: list[str] | None = None) -> tuple[str, list[Block]] | None:
    """OCR image regions (boxes in page points) of a page with a CPU OCR pipeline
    (:class:`~folioflow.ocr.engines.ocr_pipeline.CpuOcrEngine`): the page is rendered once at ``dpi``
    and each region cropped and read on its own. Returns ``(engine names joined by "+", blocks in
    page points)`` (margin labels and headings become paragraphs: a region has no page margins), or
    ``None`` when the page cannot be rendered. A region the orientation detector turns is read
    upright too, and the reading with more lexicon words is kept (the page around it is upright).

    ``second``: another pipeline (rapidocr beside tesseract). When the words of 3 letters or more
    that ``engine`` read in all regions are under :data:`~folioflow.ocr.fidelity.MIN_OCR_PLAUSIBILITY`
    lexicon words (``languages``' lexicons: :func:`~folioflow.ocr.fidelity.known_words`), every
    region is read by ``second`` too and each keeps the reading with more lexicon words of any length
    (ties: the first). A photo's fragments ("TAEPOWER OF STOR") mark the page; the second reading recovers text
    set into the picture that the first never found (a logo's "by FutureSkill")."""
    try:
        image = handle.render(dpi=dpi)
    except FolioflowError:
        return None
    gray = np.asarray(image.convert("L"))
    sx = gray.shape[1] / max(handle.width, 1e-6)
    sy = gray.shape[0] / max(handle.height, 1e-6)
    crops = []
    for x0, y0, x1, y1 in regions:
        crop = gray[max(0, int(y0 * sy)):int(y1 * sy), max(0, int(x0 * sx)):int(x1 * sx)]
        if crop.size == 0 or min(crop.shape[:2]) < 16:
            continue
        crops.append(((x0, y0, x1, y1), np.ascontiguousarray(crop)))
    readings = [_read_region(engine, handle.number, box, crop) for box, crop in crops]
    used = {engine.name}
    if second is not None and readings:
        known, judged = known_words("\n".join(_region_text(r) for r in readings if r is not None), languages)
        if judged and known < MIN_OCR_PLAUSIBILITY * judged:
            for i, (box, crop) in enumerate(crops):
                other = _read_region(second, handle.number, box, crop)
                mine = readings[i]
                if other is not None and (mine is None or known_words(_region_text(other), languages, 1)[0]
                                          > known_words(_region_text(mine), languages, 1)[0]):
                    readings[i] = other
                    used.add(second.name)
    blocks: list[Block] = []
    for (box, _), sub in zip(crops, readings, strict=True):
        if sub is None:
            continue
        x0, y0 = box[0], box[1]
        for block in sub.blocks:
            if block.type == BlockType.FIGURE or not block.text.strip():
                continue
            if block.type in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER, BlockType.HEADING, BlockType.TITLE):
                block = Block(type=BlockType.PARAGRAPH, text=block.text.lstrip("#").strip(), bbox=block.bbox,
                              confidence=block.confidence)
            if block.bbox is not None:
                b = block.bbox
                block.bbox = BBox(x0=b.x0 + x0, y0=b.y0 + y0, x1=b.x1 + x0, y1=b.y1 + y0)
            blocks.append(block)
    return "+".join(n for n in (engine.name, second.name if second is not None else "") if n in used), blocks


def _region_text(page: Page) -> str:
    """The text a region's reading holds (figure placeholders left out)."""
    return "\n".join(b.text for b in page.blocks if b.type != BlockType.FIGURE)


def _read_region(engine, number: int, box: tuple[float, float, float, float], crop: np.ndarray) -> Page | None:
    """One region read by ``engine`` (a page in the region's own points), upright when the
    orientation detector's turn reads fewer lexicon words; ``None`` when the engine fails."""
    x0, y0, x1, y1 = box
    dpi_crop = crop.shape[1] * 72.0 / max(x1 - x0, 1e-6)
    try:
        sub = engine.convert_image(crop, number, x1 - x0, y1 - y0, dpi=dpi_crop)
        if sub.rotation:
            # the page's own text is upright, and the orientation detector misjudges pictures
            # (a chart whose year labels stand on end was read upside down): read it upright
            # too and keep the reading with more lexicon words
            upright = engine.convert_image(crop, number, x1 - x0, y1 - y0, dpi=dpi_crop, rotation=0)
            if _known_words(upright) > _known_words(sub):
                sub = upright
    except FolioflowError:
        return None
    return sub
