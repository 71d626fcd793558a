"""Is a page's text layer worth using? Character- and coverage-level checks.

A text layer is rejected (and the page goes to OCR) when it is:

* **empty** while the page shows something (images or vector paths; a truly blank page is fine);
* **invisible**: most characters use text render mode 3, the layer OCR tools lay over scans;
  re-running OCR is the only way to vouch for it;
* **garbage**: characters without a Unicode mapping (PDFium's ``FPDFText_HasUnicodeMapError``),
  U+FFFD, private-use or control characters, glyph-name leftovers like ``/G123`` or ``cid:12``,
  mojibake (UTF-8 read as Latin-1: ``Ã©``, ``â€™``), or tokens that are mostly symbols;
* **too small**: fewer than :data:`MIN_CHARS` characters, or text covering a tiny part of a page
  that is mostly image (a scan with a stray caption or a poster with text in the picture).

Thresholds are set on the corpus (``E_malformed/*nomapping*``, ``C_scanned_multilang`` OCR layers,
``pdfjs_fonts_scripts``) against born-digital FinanceBench and CUAD pages, which must all pass.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from ocr.layout.pdfpage import PageContent, Rect

__all__ = ["TextQuality", "MIN_CHARS", "measure_quality", "coverage", "unusable_reason"]

#: Pages with fewer visible, non-space characters than this go to OCR (unless the page is blank).
MIN_CHARS = 16
#: Share of bad characters above which the text layer is garbage.
MAX_BAD_SHARE = 0.05
#: Share of invisible (render mode 3) characters above which the layer is an OCR layer.
MAX_INVISIBLE_SHARE = 0.5

_GLYPH_NAMES = re.compile(r"/G\d+|/g\d+|\bcid:\d+|\(cid:\d+\)|\bglyph\d+|\buni[0-9A-F]{4}\b")
_MOJIBAKE = re.compile(r"Ã[\x80-\xbf©¨¢¤§¶¼½]|â€[\x80-\xbf™œ\"”“˜]|Â[\xa0-\xbf]")
_NUMERIC_PUNCT = set("$%(),.-–—€£¥*'’\"“”:;!?/&")
_ODD_CATEGORIES = {"So", "Sk", "Co", "Cc", "Cs", "Cn"}


def _implausible(token: str) -> bool:
    """A token that no language writes: odd symbols, or mostly punctuation of mixed kinds."""
    if any(unicodedata.category(ch) in _ODD_CATEGORIES and ch not in "©®°™" for ch in token):
        return True
    alnum = sum(ch.isalnum() for ch in token)
    odd = {ch for ch in token if not ch.isalnum() and ch not in _NUMERIC_PUNCT}
    return len(token) >= 3 and alnum < 0.5 * len(token) and len(odd) >= 1 and len(set(token) - set("0123456789")) >= 3


@dataclass
class TextQuality:
    """Measurements of a page's text layer. Counts are characters; ``text_coverage`` and
    ``image_coverage`` are shares of the page area (0..1, union of boxes)."""

    chars: int
    visible_chars: int
    invisible_chars: int
    bad_chars: int
    map_errors: int
    glyph_name_tokens: int
    mojibake: int
    implausible_tokens: int
    tokens: int
    text_coverage: float
    image_coverage: float
    has_paths: bool


def _bad(ch: str) -> bool:
    if ch == "\ufffd":
        return True
    cat = unicodedata.category(ch)
    if cat == "Co" or cat == "Cs":
        return True
    return cat == "Cc" and ch not in "\t\n\r"


def coverage(rects: list[Rect] | list[tuple[float, float, float, float]], width: float, height: float,
             cells: int = 128) -> float:
    """Share of the page (0..1) covered by the union of ``rects``, on a ``cells`` x ``cells`` grid."""
    if not rects or width <= 0 or height <= 0:
        return 0.0
    grid = np.zeros((cells, cells), dtype=bool)
    for r in rects:
        x0, y0, x1, y1 = (r.x0, r.y0, r.x1, r.y1) if isinstance(r, Rect) else r
        i0, i1 = int(max(0, y0) / height * cells), int(np.ceil(min(height, y1) / height * cells))
        j0, j1 = int(max(0, x0) / width * cells), int(np.ceil(min(width, x1) / width * cells))
        if i1 > i0 and j1 > j0:
            grid[i0:i1, j0:j1] = True
    return float(grid.mean())


def measure_quality(content: PageContent) -> TextQuality:
    """Measure the text layer of one page (see the module docstring for what is counted)."""
    chars = [c for c in content.chars if not c.text.isspace()]
    visible = [c for c in chars if not c.invisible]
    text = "".join(c.text if not c.generated else " " for c in content.chars if not c.invisible)
    tokens = text.split()
    implausible = sum(1 for t in tokens if _implausible(t))
    boxes = [(c.x0, c.y0, c.x1, c.y1) for c in visible]
    return TextQuality(
        chars=len(chars),
        visible_chars=len(visible),
        invisible_chars=len(chars) - len(visible),
        bad_chars=sum(1 for c in visible if _bad(c.text) or c.map_error),
        map_errors=sum(1 for c in visible if c.map_error),
        glyph_name_tokens=len(_GLYPH_NAMES.findall(text)),
        mojibake=len(_MOJIBAKE.findall(text)),
        implausible_tokens=implausible,
        tokens=len(tokens),
        text_coverage=coverage(boxes, content.width, content.height),
        image_coverage=coverage(content.images, content.width, content.height),
        has_paths=bool(content.paths),
    )


def unusable_reason(q: TextQuality) -> str | None:
    """The one-line reason the text layer should not be used, or ``None`` when it is usable."""
    if q.visible_chars == 0 and q.invisible_chars == 0:
        if q.image_coverage > 0 or q.has_paths:
            return "no text layer (page content is images or vector graphics)"
        return None  # blank page: nothing to OCR either
    if q.invisible_chars > MAX_INVISIBLE_SHARE * q.chars:
        return (f"invisible text layer: {q.invisible_chars} of {q.chars} characters use render mode 3 "
                "(an OCR layer over a scan)")
    if q.bad_chars > MAX_BAD_SHARE * q.visible_chars:
        return (f"garbage text layer: {q.bad_chars} of {q.visible_chars} characters lack a Unicode mapping "
                "or are replacement/private-use/control characters")
    if q.glyph_name_tokens >= 3 and q.glyph_name_tokens > 0.05 * q.tokens:
        return f"garbage text layer: {q.glyph_name_tokens} glyph-name tokens (/G123, cid:12)"
    if q.mojibake >= 3 and q.mojibake > 0.02 * q.tokens:
        return f"garbage text layer: {q.mojibake} mojibake sequences (UTF-8 decoded as Latin-1)"
    if q.tokens and q.implausible_tokens > 0.25 * q.tokens:
        return f"garbage text layer: {q.implausible_tokens} of {q.tokens} words are mostly symbols"
    if q.visible_chars < MIN_CHARS:
        return f"too little text: {q.visible_chars} visible characters"
    if q.image_coverage > 0.6 and q.text_coverage < 0.02:
        return (f"text covers {q.text_coverage:.1%} of a page that is {q.image_coverage:.0%} image "
                "(text inside the picture needs OCR)")
    return None
