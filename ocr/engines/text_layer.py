"""The ``text`` engine: structured Markdown from a born-digital PDF page's own text layer.

Pipeline per page (all PDFium calls under :data:`~folioflow.ocr.render.PDFIUM_LOCK`, one read of the page):
characters, rules and images (:mod:`folioflow.ocr.layout.pdfpage`) -> quality checks
(:mod:`folioflow.ocr.layout.quality`) -> lines (:mod:`folioflow.ocr.layout.lines`) -> tables
(:mod:`folioflow.ocr.layout.tables`) -> labelled blocks in reading order (:mod:`folioflow.ocr.layout.blocks`).

:func:`assess_text_layer` answers the router's question (use the text layer, or OCR/VLM?) and
carries ``has_table``/``has_formula``/``has_image`` for VLM routing. :class:`TextLayerEngine`
produces the page; given the analysis the router already made, it does not read the page twice.
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field

from folioflow.ocr.engines.base import PageEngine
from folioflow.ocr.errors import OcrError
from folioflow.ocr.layout.blocks import Figure, body_sizes, build_blocks, dominant_size, page_markdown
from folioflow.ocr.layout.formulas import has_math_font
from folioflow.ocr.layout.lines import Line, build_lines
from folioflow.ocr.layout.orientation import dominant_angle, upright_view, vertical_writing
from folioflow.ocr.layout.pdfpage import PageContent, read_page
from folioflow.ocr.layout.quality import TextQuality, measure_quality, unusable_reason
from folioflow.ocr.layout.tables import TableResult, find_tables
from folioflow.ocr.render import PDFIUM_LOCK, PageHandle
from folioflow.ocr.schema import BBox, Block, BlockType, Page, PageStatus

__all__ = ["TextLayerAssessment", "TextLayerAnalysis", "assess_text_layer", "analyze_text_layer", "TextLayerEngine"]

#: Bump when the engine's output changes for the same input (part of the page-cache key, and of the
#: OCR settings' fingerprint: :func:`folioflow.flows.stages.ocr_identity`).
#: 11: hanging-indent list labels and bullets read with the text of their row.
#: 12: two Chinese or Japanese characters at a line break meet with no space.
TEXT_ENGINE_VERSION = "12"
#: Images smaller than this share of the page are decoration (logos, rules), not figures.
MIN_FIGURE_SHARE = 0.02


@dataclass
class TextLayerAssessment:
    """Whether a page's text layer is usable, and what the page holds.

    ``usable``: the text layer can replace OCR; ``reason``: why not (one line) or ``None``.
    ``has_table``/``has_formula``/``has_image``: a table, a display formula (or math fonts), an
    image of at least 2% of the page; computed for usable pages only (``False`` otherwise).
    ``chars``/``visible_chars``/``invisible_chars``/``bad_chars``: character counts;
    ``text_coverage``/``image_coverage``: shares of the page area (0..1); ``text_angle``: the
    dominant reading direction in display space (clockwise degrees; 90 = text runs downwards,
    as in CJK vertical writing).
    """

    usable: bool
    reason: str | None
    has_table: bool = False
    has_formula: bool = False
    has_image: bool = False
    chars: int = 0
    visible_chars: int = 0
    invisible_chars: int = 0
    bad_chars: int = 0
    text_coverage: float = 0.0
    image_coverage: float = 0.0
    text_angle: int = 0

    def as_dict(self) -> dict:
        """JSON-ready dict (stored in ``Page.attributes["text_layer"]``)."""
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@dataclass
class TextLayerAnalysis:
    """Everything read from one page; blocks are filled for usable pages."""

    assessment: TextLayerAssessment
    content: PageContent | None = None
    quality: TextQuality | None = None
    lines: list[Line] = field(default_factory=list)
    tables: list[TableResult] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    body_size: float = 0.0
    #: characters per font size (points): the page's share of the document's body size
    font_chars: Counter[float] = field(default_factory=Counter)


def _figures(content: PageContent) -> list[Figure]:
    area = content.width * content.height
    out = []
    for r in content.images:
        x0, y0 = max(0.0, r.x0), max(0.0, r.y0)
        x1, y1 = min(content.width, r.x1), min(content.height, r.y1)
        share = max(0.0, x1 - x0) * max(0.0, y1 - y0) / max(area, 1e-6)
        if MIN_FIGURE_SHARE <= share <= 0.9 and x1 - x0 >= 36 and y1 - y0 >= 36:
            out.append(Figure(x0, y0, x1, y1))
    return out


#: Spacing accents (TeX draws accents as glyphs of their own) -> (combining mark, letters it is
#: composed with): only letters that carry that accent in European languages, so an acute used as an
#: apostrophe ("don´t", "it´s") stays as it is.
_SPACING_ACCENTS = {
    "\u00b4": ("\u0301", "aeiouyczsAEIOUYCZS"),  # acute
    "\u02c6": ("\u0302", "aeiouAEIOU"),  # circumflex
    "\u02dc": ("\u0303", "anoANO"),  # tilde
    "\u00a8": ("\u0308", "aeiouyAEIOUY"),  # diaeresis
    "\u02c7": ("\u030c", "cdenrstzCDENRSTZ"),  # caron
    "\u02d8": ("\u0306", "agAG"),  # breve
    "\u02da": ("\u030a", "auAU"),  # ring
    "\u00b8": ("\u0327", "cstCST"),  # cedilla
    "\u02dd": ("\u030b", "ouOU"),  # double acute
}
_ACCENTED = re.compile("([A-Za-z])([" + "".join(_SPACING_ACCENTS) + "])")


def _compose(match: re.Match) -> str:
    mark, letters = _SPACING_ACCENTS[match.group(2)]
    return match.group(1) + mark if match.group(1) in letters else match.group(0)


def compose_spacing_accents(text: str) -> str:
    """Join a letter and the spacing accent drawn after it into one accented letter ("Mina´cˇ" ->
    "Mináč", "Basˇic´" -> "Bašić"): TeX-made PDFs draw an accent as a glyph of its own after the
    letter, so the name was in no index as a reader spells it. Only letters that carry that accent
    are composed (see ``_SPACING_ACCENTS``); the result is NFC."""
    if not any(ch in text for ch in _SPACING_ACCENTS):
        return text
    return unicodedata.normalize("NFC", _ACCENTED.sub(_compose, text))


def analyze_text_layer(page: PageHandle) -> TextLayerAnalysis:
    """Read and assess ``page``; for a usable text layer also find lines, tables and blocks.

    Image pages (PNG/JPEG/TIFF) have no text layer: ``usable=False``. Raises
    :class:`~folioflow.ocr.errors.OcrError` when PDFium cannot read the page's text.
    """
    if not page.is_pdf:
        return TextLayerAnalysis(TextLayerAssessment(usable=False, reason="image page: no text layer"))
    try:
        with PDFIUM_LOCK:
            content = read_page(page.pdf_page)
    except Exception as exc:  # PdfiumError and ctypes errors on broken pages
        raise OcrError(f"page {page.number}: cannot read the text layer: {exc}") from exc
    quality = measure_quality(content)
    reason = unusable_reason(quality)
    assessment = TextLayerAssessment(
        usable=reason is None, reason=reason, chars=quality.chars, visible_chars=quality.visible_chars,
        invisible_chars=quality.invisible_chars, bad_chars=quality.bad_chars,
        text_coverage=quality.text_coverage, image_coverage=quality.image_coverage,
    )
    analysis = TextLayerAnalysis(assessment=assessment, content=content, quality=quality)
    if reason is not None:
        return analysis
    angle = dominant_angle(content.chars)
    vertical = angle == 0 and vertical_writing(content.chars)  # CJK columns: read as text turned 90
    if vertical:
        angle = 90
    view, back = upright_view(content, angle, upright_glyphs=vertical)
    lines = build_lines(view.chars)
    tables = find_tables(view, lines)
    figures = _figures(view)
    blocks = build_blocks(lines, tables, figures, view.width, view.height, page.number)
    if angle:
        for block in blocks:
            if block.bbox is not None:
                x0, y0, x1, y1 = back((block.bbox.x0, block.bbox.y0, block.bbox.x1, block.bbox.y1))
                block.bbox = BBox(x0=x0, y0=y0, x1=x1, y1=y1)
        assessment.text_angle = angle
    analysis.lines, analysis.tables, analysis.blocks = lines, tables, blocks
    analysis.font_chars = body_sizes(lines)
    analysis.body_size = dominant_size(analysis.font_chars) or 10.0
    assessment.has_table = bool(tables)
    assessment.has_formula = any(b.type == BlockType.FORMULA for b in blocks) or any(
        has_math_font(ln.fonts) for ln in lines)
    assessment.has_image = bool(figures) or quality.image_coverage >= MIN_FIGURE_SHARE
    return analysis


def assess_text_layer(page: PageHandle) -> TextLayerAssessment:
    """Decide whether ``page``'s text layer is usable (see :mod:`folioflow.ocr.layout.quality` for the
    checks) and flag tables, formulas and images for VLM routing."""
    return analyze_text_layer(page).assessment


class TextLayerEngine(PageEngine):
    """Born-digital pages to structured Markdown from the PDF text layer (no rendering, no model).

    A page whose text layer is unusable (see :func:`assess_text_layer`) comes back ``failed``
    with the reason; the router sends such pages to OCR instead.
    """

    name = "text"

    @property
    def cache_key(self) -> str:
        return f"text:{TEXT_ENGINE_VERSION}"

    def convert_page(self, page: PageHandle, analysis: TextLayerAnalysis | None = None) -> Page:
        """Convert one page; reuses ``analysis`` from :func:`analyze_text_layer` when given."""
        started = time.perf_counter()
        analysis = analysis or analyze_text_layer(page)
        result = Page(number=page.number, width=page.width, height=page.height, engine=self.name,
                      attributes={"text_layer": analysis.assessment.as_dict()})
        if not analysis.assessment.usable:
            result.status = PageStatus.FAILED
            result.errors = [f"page {page.number}: text layer unusable: {analysis.assessment.reason}"]
        else:
            for block in analysis.blocks:
                block.text = compose_spacing_accents(block.text)
            result.blocks = analysis.blocks
            result.markdown = page_markdown(analysis.blocks)
            result.attributes["body_size"] = analysis.body_size
            # characters per font size: the document's body size for relevel_headings
            result.attributes["font_chars"] = {str(k): v for k, v in sorted(analysis.font_chars.items())}
        result.seconds = time.perf_counter() - started
        return result
