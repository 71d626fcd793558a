"""Characters, rules and images of one PDF page, read through PDFium (pypdfium2's raw API).

Everything is returned in **display space**: page points, origin at the top-left of the visible
page (crop box), y down, the page's ``/Rotate`` applied, i.e. what a viewer shows. PDFium reports
positions in PDF user space (origin bottom-left, unrotated); :func:`display_transform` derives the
affine map from ``FPDF_PageToDevice`` once per page and every box is mapped through it.

Callers must hold :data:`ocr.render.PDFIUM_LOCK` around :func:`read_page` (PDFium is not
thread-safe); the returned objects are plain Python and safe to use without it.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

__all__ = ["Char", "Rect", "PageContent", "display_transform", "read_page"]

_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demibold", "extrabold")
_ITALIC_NAMES = ("italic", "oblique")
_FORCE_BOLD = 1 << 18  # PDF font descriptor flag ForceBold (PDF 32000-1:2008, table 123)
_ITALIC_FLAG = 1 << 6


@dataclass(slots=True)
class Char:
    """One character. Box in display points (x0 < x1, y0 < y1, y down). ``size`` is the font size
    in points; ``angle`` the reading direction in display space, clockwise degrees (0 = left to
    right, 90 = downwards, 180, 270; -1 for any other angle); ``upright`` is ``angle == 0``;
    ``invisible`` for text render mode 3 (the usual OCR layer); ``map_error`` when PDFium found
    no Unicode mapping."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    font: str
    bold: bool
    italic: bool
    upright: bool
    invisible: bool
    map_error: bool
    generated: bool
    angle: int = 0


@dataclass(slots=True)
class Rect:
    """An axis-aligned box in display points: a path's bounds (``kind="path"``) or an image's
    (``kind="image"``). ``segments`` is the path's segment count (rectangles have at most 5)."""

    x0: float
    y0: float
    x1: float
    y1: float
    kind: str
    segments: int = 0

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0


@dataclass
class PageContent:
    """What :func:`read_page` found on a page: ``width``/``height`` in display points."""

    width: float
    height: float
    chars: list[Char] = field(default_factory=list)
    paths: list[Rect] = field(default_factory=list)
    images: list[Rect] = field(default_factory=list)


Affine = tuple[float, float, float, float, float, float]


def display_transform(pdf_page: pdfium.PdfPage) -> Affine:
    """The affine map ``(a, b, c, d, e, f)`` from PDF user space to display space:
    ``x' = a*x + c*y + e``, ``y' = b*x + d*y + f`` (points). Derived from three points passed
    through ``FPDF_PageToDevice`` at 64 device units per point (error below 1/64 pt)."""
    scale = 64.0
    width, height = pdf_page.get_size()
    size_x, size_y = max(1, round(width * scale)), max(1, round(height * scale))
    out = []
    for px, py in ((0.0, 0.0), (1000.0, 0.0), (0.0, 1000.0)):
        dx, dy = ctypes.c_int(), ctypes.c_int()
        pdfium_c.FPDF_PageToDevice(pdf_page, 0, 0, size_x, size_y, 0, px, py, dx, dy)
        out.append((dx.value / scale, dy.value / scale))
    (e, f), (x1, y1), (x2, y2) = out
    return ((x1 - e) / 1000.0, (y1 - f) / 1000.0, (x2 - e) / 1000.0, (y2 - f) / 1000.0, e, f)


def _compose(m: Affine, n: Affine) -> Affine:
    """Apply ``m`` first, then ``n``."""
    a, b, c, d, e, f = m
    A, B, C, D, E, F = n
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def _map_box(m: Affine, left: float, bottom: float, right: float, top: float) -> tuple[float, float, float, float]:
    a, b, c, d, e, f = m
    xs, ys = [], []
    for x, y in ((left, bottom), (right, bottom), (left, top), (right, top)):
        xs.append(a * x + c * y + e)
        ys.append(b * x + d * y + f)
    return min(xs), min(ys), max(xs), max(ys)


def _handle(ptr) -> int:
    return ctypes.cast(ptr, ctypes.c_void_p).value or 0


class _FontCache:
    """Font name / bold / italic per PDFium font handle (few fonts per page, many chars)."""

    def __init__(self) -> None:
        self._fonts: dict[int, tuple[str, bool, bool]] = {}
        self._objects: dict[int, tuple[str, bool, bool, bool]] = {}
        self._buffer = ctypes.create_string_buffer(256)

    def font(self, font) -> tuple[str, bool, bool]:
        key = _handle(font)
        hit = self._fonts.get(key)
        if hit is None:
            name = ""
            if key:
                length = pdfium_c.FPDFFont_GetBaseFontName(font, self._buffer, 256)
                name = self._buffer.raw[: max(0, min(length, 256) - 1)].decode("latin-1", "replace")
            lower = name.lower()
            weight = pdfium_c.FPDFFont_GetWeight(font) if key else -1
            flags = pdfium_c.FPDFFont_GetFlags(font) if key else 0
            bold = weight >= 600 or any(k in lower for k in _BOLD_NAMES) or bool(flags & _FORCE_BOLD)
            italic = bool(flags & _ITALIC_FLAG) or any(k in lower for k in _ITALIC_NAMES)
            hit = (name.split("+", 1)[-1], bold, italic)
            self._fonts[key] = hit
        return hit

    def text_object(self, obj) -> tuple[str, bool, bool, bool]:
        key = _handle(obj)
        hit = self._objects.get(key)
        if hit is None:
            if key:
                name, bold, italic = self.font(pdfium_c.FPDFTextObj_GetFont(obj))
                invisible = pdfium_c.FPDFTextObj_GetTextRenderMode(obj) == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE
            else:
                name, bold, italic, invisible = "", False, False, False
            hit = (name, bold, italic, invisible)
            self._objects[key] = hit
        return hit


def _char_geometry(textpage, i: int, m: Affine, cm) -> tuple[float, int]:
    """(font size in points, display angle) of char ``i``: constant within one text object."""
    size = pdfium_c.FPDFText_GetFontSize(textpage, i)
    if pdfium_c.FPDFText_GetMatrix(textpage, i, cm):  # the size is in text space: scale it
        size *= math.sqrt(abs(cm.a * cm.d - cm.b * cm.c))
    # PDFium's angle turns clockwise in PDF user space (a text matrix (0,1,-1,0) reads 270)
    theta = -pdfium_c.FPDFText_GetCharAngle(textpage, i)
    dx = m[0] * math.cos(theta) + m[2] * math.sin(theta)
    dy = m[1] * math.cos(theta) + m[3] * math.sin(theta)
    degrees = math.degrees(math.atan2(dy, dx)) % 360.0
    quadrant = int(round(degrees / 90.0)) % 4 * 90
    angle = quadrant if abs((degrees - quadrant + 180.0) % 360.0 - 180.0) < 2.0 else -1
    return size, angle


def _read_chars(pdf_page: pdfium.PdfPage, m: Affine) -> list[Char]:
    textpage = pdf_page.get_textpage()
    get_unicode, is_generated = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_IsGenerated
    get_box, get_object = pdfium_c.FPDFText_GetLooseCharBox, pdfium_c.FPDFText_GetTextObject
    map_error = pdfium_c.FPDFText_HasUnicodeMapError
    addressof = ctypes.addressof
    a, b, c, d, e, f = m
    axis_aligned = b == 0 and c == 0
    try:
        count = pdfium_c.FPDFText_CountChars(textpage)
        fonts = _FontCache()
        objects: dict[int, tuple] = {}  # font, size and angle are constant within a text object
        rect = pdfium_c.FS_RECTF()
        cm = pdfium_c.FS_MATRIX()
        chars: list[Char] = []
        low_next = -1  # index of a low surrogate already folded into the previous character
        for i in range(count):
            if i == low_next:
                continue
            code = get_unicode(textpage, i)
            if 0xD800 <= code <= 0xDBFF and i + 1 < count:  # PDFium splits astral characters (math
                low = get_unicode(textpage, i + 1)           # italic 𝑥, emoji) into UTF-16 surrogates
                if 0xDC00 <= low <= 0xDFFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    low_next = i + 1
            generated = bool(is_generated(textpage, i))
            if generated and code in (10, 13):  # a line break PDFium inferred: keep one word gap
                if chars and not chars[-1].text.isspace():
                    last = chars[-1]
                    chars.append(Char(" ", last.x1, last.y0, last.x1, last.y1, last.size, last.font, False, False,
                                      last.upright, last.invisible, False, True, last.angle))
                continue
            try:
                text = chr(code)
            except ValueError:
                text = "\ufffd"
            if code == 2 or (code == 0xFFFE and pdfium_c.FPDFText_IsHyphen(textpage, i)):
                text = "-"  # PDFium reports a line-end hyphenation hyphen as U+0002
            if not get_box(textpage, i, rect):
                continue
            if axis_aligned:
                xa, xb = a * rect.left + e, a * rect.right + e
                ya, yb = d * rect.bottom + f, d * rect.top + f
                x0, x1 = (xa, xb) if xa <= xb else (xb, xa)
                y0, y1 = (ya, yb) if ya <= yb else (yb, ya)
            else:
                x0, y0, x1, y1 = _map_box(m, rect.left, rect.bottom, rect.right, rect.top)
            obj = get_object(textpage, i)
            key = addressof(obj.contents) if obj else 0
            info = objects.get(key) if key else None
            if info is None:
                info = fonts.text_object(obj) + _char_geometry(textpage, i, m, cm)
                if key:
                    objects[key] = info
            name, bold, italic, invisible, size, angle = info
            chars.append(Char(
                text=text, x0=x0, y0=y0, x1=x1, y1=y1, size=size if size > 0 else (y1 - y0),
                font=name, bold=bold, italic=italic, upright=angle == 0, invisible=invisible,
                map_error=bool(map_error(textpage, i)), generated=generated, angle=angle,
            ))
        return chars
    finally:
        textpage.close()


def _read_objects(pdf_page: pdfium.PdfPage, m: Affine, content: PageContent) -> None:
    left, bottom, right, top = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    matrix = pdfium_c.FS_MATRIX()

    def walk(count: int, get, parent, transform: Affine, depth: int) -> None:
        for index in range(count):
            obj = get(parent, index)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
                if depth < 8 and pdfium_c.FPDFPageObj_GetMatrix(obj, matrix):
                    inner = _compose((matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f), transform)
                    walk(pdfium_c.FPDFFormObj_CountObjects(obj), pdfium_c.FPDFFormObj_GetObject, obj, inner, depth + 1)
                continue
            if kind not in (pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE):
                continue
            if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                continue
            x0, y0, x1, y1 = _map_box(transform, left.value, bottom.value, right.value, top.value)
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                content.images.append(Rect(x0, y0, x1, y1, "image"))
            else:
                segments = pdfium_c.FPDFPath_CountSegments(obj)
                content.paths.append(Rect(x0, y0, x1, y1, "path", segments))

    walk(pdfium_c.FPDFPage_CountObjects(pdf_page), lambda _p, i: pdfium_c.FPDFPage_GetObject(pdf_page, i),
         pdf_page, m, 0)


def read_page(pdf_page: pdfium.PdfPage, graphics: bool = True) -> PageContent:
    """Read the characters (and, with ``graphics``, path and image bounds) of ``pdf_page``.

    Caller holds :data:`ocr.render.PDFIUM_LOCK`. Generated line breaks are dropped; generated
    spaces (PDFium's word gaps) are kept with ``generated=True``. Raises
    :class:`pypdfium2.PdfiumError` if PDFium cannot load the page's text.
    """
    width, height = pdf_page.get_size()
    m = display_transform(pdf_page)
    content = PageContent(width=width, height=height, chars=_read_chars(pdf_page, m))
    if graphics:
        _read_objects(pdf_page, m, content)
    return content
