"""Is a page's text layer worth using? Character- and coverage-level checks.

A text layer is rejected (and the page goes to OCR) when it is:

* **empty** while the page shows something (images or vector paths; a truly blank page is fine);
* **invisible**: most characters use text render mode 3, the layer OCR tools lay over scans;
  re-running OCR is the only way to vouch for it;
* **garbage**: characters without a Unicode mapping (PDFium's ``FPDFText_HasUnicodeMapError``),
  U+FFFD, private-use or control characters, glyph-name leftovers like ``/G123`` or ``cid:12``,
  mojibake (UTF-8 read as Latin-1: ``Ã©``, ``â€™``), or tokens that are mostly symbols;
* **too small**: fewer than :data:`MIN_CHARS` characters on a page that also shows something
  OCR could read beyond them (an image, or curved vector shapes that may be outlined glyphs), or
  text covering a tiny part of a page that is mostly image (a scan with a stray caption or a
  poster with text in the picture). A short text layer on a page of text and straight rules only
  is the whole page: OCR can read nothing more, and reads less (pdf.js's ``vertical.pdf``, eight
  characters of vertical Japanese, came back from OCR with half of them).

Thresholds are set on the corpus (``E_malformed/*nomapping*``, ``C_scanned_multilang`` OCR layers,
``pdfjs_fonts_scripts``) against born-digital FinanceBench and CUAD pages, which must all pass.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from folioflow.ocr.layout.pdfpage import PageContent, Rect

__all__ = ["TextQuality", "MIN_CHARS", "MAX_RULE_SEGMENTS", "measure_quality", "coverage", "unusable_reason"]

#: Pages with fewer visible, non-space characters than this go to OCR (unless the page is blank).
MIN_CHARS = 16
#: Share of bad characters above which the text layer is garbage.
MAX_BAD_SHARE = 0.05
#: Paths with more segments than this are curves (glyph outlines, logos); rectangles have at most 5.
MAX_RULE_SEGMENTS = 5
#: Share of invisible (render mode 3) characters above which the layer is an OCR layer.
MAX_INVISIBLE_SHARE = 0.5

_GLYPH_NAMES = re.compile(r"/G\d+|/g\d+|\bcid:\d+|\(cid:\d+\)|\bglyph\d+|\buni[0-9A-F]{4}\b")
_MOJIBAKE = re.compile(r"Ã[\x80-\xbf©¨¢¤§¶¼½]|â€[\x80-\xbf™œ\"”“˜]|Â[\xa0-\xbf]")
_NUMERIC_PUNCT = set("$%(),.-–—€£¥*'’\"“”:;!?/&")
_ODD_CATEGORIES = {"So", "Sk", "Co", "Cc", "Cs", "Cn"}


#: A redaction marker of an SEC exhibit ("[***]", "[*]", "***"): asterisks, perhaps bracketed.
_REDACTION = re.compile(r"^[\[(]?\*+[\])]?[.,;:]?$")


def _implausible(token: str) -> bool:
    """A token that no language writes: odd symbols, or mostly punctuation of mixed kinds. A
    redaction marker ("[***]": CERES's seed tables hold more markers than words) is written."""
    if _REDACTION.match(token):
        return False
    if any(unicodedata.category(ch) in _ODD_CATEGORIES and ch not in "©®°™" for ch in token):
        return True
    alnum = sum(ch.isalnum() for ch in token)
    odd = {ch for ch in token if not ch.isalnum() and ch not in _NUMERIC_PUNCT}
    return len(token) >= 3 and alnum < 0.5 * len(token) and len(odd) >= 1 and len(set(token) - set("0123456789")) >= 3


@dataclass
class TextQuality:
    """Measurements of a page's text layer. Counts are characters; ``text_coverage`` and
    ``image_coverage`` are shares of the page area (0..1, union of boxes); ``curve_paths``: vector
    paths of more than :data:`MAX_RULE_SEGMENTS` segments (not straight rules or boxes)."""

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
    curve_paths: int = 0


def _bad(ch: str) -> bool:
    if ch == "\ufffd":
        return True
    cat = unicodedata.category(ch)
    if cat == "Co" or cat == "Cs":
        return True
    return cat == "Cc" and ch not in "\t\n\r"


def coverage(rects: list[Rect] | list[tuple[float, float, float, float]], width: float, height: float,
             cells: int = 128) -> float:
    """Share of the page (0..1) covered by the union of ``rects``, on a ``cells`` x ``cells`` grid
    (a cell counts when any box touches it; boxes are clipped to the page)."""
    if not rects or width <= 0 or height <= 0:
        return 0.0
    boxes = [(r.x0, r.y0, r.x1, r.y1) if isinstance(r, Rect) else r for r in rects]
    x0, y0, x1, y1 = (np.array(v, dtype=np.float64) for v in zip(*boxes, strict=True))
    return _grid_coverage(x0, y0, x1, y1, width, height, cells)


def _grid_coverage(x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray, width: float,
                   height: float, cells: int = 128) -> float:
    """:func:`coverage` of boxes given as coordinate arrays (display points)."""
    if not len(x0) or width <= 0 or height <= 0:
        return 0.0
    i0 = (np.maximum(y0, 0.0) / height * cells).astype(np.int64)
    i1 = np.ceil(np.minimum(y1, height) / height * cells).astype(np.int64)
    j0 = (np.maximum(x0, 0.0) / width * cells).astype(np.int64)
    j1 = np.ceil(np.minimum(x1, width) / width * cells).astype(np.int64)
    keep = (i1 > i0) & (j1 > j0)
    if not keep.any():
        return 0.0
    i0, i1, j0, j1 = i0[keep], i1[keep], j0[keep], j1[keep]
    # paint all boxes at once: +1/-1 at the corners of each box, then a 2-D prefix sum
    marks = np.zeros((cells + 1, cells + 1), dtype=np.int64)
    np.add.at(marks, (i0, j0), 1)
    np.add.at(marks, (i0, j1), -1)
    np.add.at(marks, (i1, j0), -1)
    np.add.at(marks, (i1, j1), 1)
    covered = marks.cumsum(axis=0).cumsum(axis=1)[:cells, :cells] > 0
    return float(covered.mean())


def measure_quality(content: PageContent) -> TextQuality:
    """Measure the text layer of one page (see the module docstring for what is counted)."""
    parts: list[str] = []  # text of the visible layer, PDFium's generated chars as spaces
    visible: list = []  # visible, non-space characters
    invisible = bad = map_errors = 0
    bad_text: dict[str, bool] = {}  # a page has few distinct characters: classify each once
    for c in content.chars:
        text = c.text
        if c.invisible:
            invisible += not text.isspace()
            continue
        parts.append(" " if c.generated else text)
        if text.isspace():
            continue
        visible.append(c)
        if c.map_error:
            map_errors += 1
            bad += 1
        else:
            known = bad_text.get(text)
            if known is None:
                known = bad_text[text] = _bad(text)
            bad += known
    text = "".join(parts)
    tokens = text.split()
    # a token of letters and digits only is never implausible (no odd category is alphanumeric)
    implausible = sum(1 for t in tokens if not t.isalnum() and _implausible(t))
    return TextQuality(
        chars=len(visible) + invisible,
        visible_chars=len(visible),
        invisible_chars=invisible,
        bad_chars=bad,
        map_errors=map_errors,
        glyph_name_tokens=len(_GLYPH_NAMES.findall(text)),
        mojibake=len(_MOJIBAKE.findall(text)),
        implausible_tokens=implausible,
        tokens=len(tokens),
        text_coverage=_grid_coverage(np.array([c.x0 for c in visible]), np.array([c.y0 for c in visible]),
                                     np.array([c.x1 for c in visible]), np.array([c.y1 for c in visible]),
                                     content.width, content.height),
        image_coverage=coverage(content.images, content.width, content.height),
        has_paths=bool(content.paths),
        curve_paths=sum(1 for r in content.paths if r.segments > MAX_RULE_SEGMENTS),
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
    # Left refused on purpose, as ambiguous: pypdf's habibi-rotated.pdf (24 characters: "habibi"
    # and its Arabic spelling twice, plus a third copy in a font without a Unicode map) is 21%
    # unmapped characters, and 2 of its 3 words hold control or modifier symbols. OCR reads less
    # of it ("habibi" only), but its layer reads no better: PDFium gives every glyph of a shaped
    # Arabic word the word's box, so the line comes out interleaved ("h <arabic>abibi\x03 ..."). An
    # absolute allowance for short pages would equally pass a few words of unmapped glyphs; the
    # share is what this gate has to judge how much a page would lose.
    if q.bad_chars > MAX_BAD_SHARE * q.visible_chars:
        return (f"garbage text layer: {q.bad_chars} of {q.visible_chars} characters lack a Unicode mapping "
                "or are replacement/private-use/control characters")
    if q.glyph_name_tokens >= 3 and q.glyph_name_tokens > 0.05 * q.tokens:
        return f"garbage text layer: {q.glyph_name_tokens} glyph-name tokens (/G123, cid:12)"
    if q.mojibake >= 3 and q.mojibake > 0.02 * q.tokens:
        return f"garbage text layer: {q.mojibake} mojibake sequences (UTF-8 decoded as Latin-1)"
    if q.tokens and q.implausible_tokens > 0.25 * q.tokens:
        return f"garbage text layer: {q.implausible_tokens} of {q.tokens} words are mostly symbols"
    if q.visible_chars < MIN_CHARS and (q.image_coverage > 0 or q.curve_paths):
        return f"too little text: {q.visible_chars} visible characters"
    if q.image_coverage > 0.6 and q.text_coverage < 0.02:
        return (f"text covers {q.text_coverage:.1%} of a page that is {q.image_coverage:.0%} image "
                "(text inside the picture needs OCR)")
    return None
