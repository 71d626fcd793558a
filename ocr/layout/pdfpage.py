"""Characters, rules and images of one PDF page, read through PDFium (pypdfium2's raw API).

Everything is returned in **display space**: page points, origin at the top-left of the visible
page (crop box), y down, the page's ``/Rotate`` applied, i.e. what a viewer shows. PDFium reports
positions in PDF user space (origin bottom-left, unrotated); :func:`display_transform` derives the
affine map from ``FPDF_PageToDevice`` once per page and every box is mapped through it.

Callers must hold :data:`folioflow.ocr.render.PDFIUM_LOCK` around :func:`read_page` (PDFium is not
thread-safe); the returned objects are plain Python and safe to use without it.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

__all__ = ["Char", "Rect", "PageContent", "display_transform", "read_page"]

_BOLD_NAMES = ("bold", "black", "heavy", "semibold", "demibold", "extrabold")
_ITALIC_NAMES = ("italic", "oblique")
#: Style words of a font name's style part ("Arial-ItalicMT", "Times,Roman") that name a weight
#: below bold: such a name decides, not the weight PDFium reports (see :func:`_font_info`).
_PLAIN_STYLES = ("regular", "roman", "book", "light", "thin", "medium", "italic", "oblique")
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

    def text(self, *, invisible: bool = True) -> str:
        """The layer's text in its own order: each character as drawn, a space for a gap PDFium
        infers (``generated``); ``invisible=False`` leaves out text drawn invisible (an OCR layer
        under a scan, render mode 3)."""
        return "".join(" " if c.generated else c.text for c in self.chars if invisible or not c.invisible)


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


def _map_boxes(m: Affine, left: np.ndarray, bottom: np.ndarray, right: np.ndarray,
               top: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Display-space bounds (x0, y0, x1, y1) of user-space boxes: the four corners of each box
    through ``m``, then the smallest and largest coordinates (kept in corner order on ties, as
    Python's ``min``/``max`` would)."""
    a, b, c, d, e, f = m
    corners = [(left, bottom), (right, bottom), (left, top), (right, top)]
    xs = [a * x + c * y + e for x, y in corners]
    ys = [b * x + d * y + f for x, y in corners]
    x0, y0, x1, y1 = xs[0], ys[0], xs[0], ys[0]
    for px, py in zip(xs[1:], ys[1:], strict=True):
        x0, y0 = np.where(px < x0, px, x0), np.where(py < y0, py, y0)
        x1, y1 = np.where(px > x1, px, x1), np.where(py > y1, py, y1)
    return x0, y0, x1, y1


def _address(fn) -> int:
    """The C address of a pypdfium2 raw function (a resolved symbol: never NULL)."""
    address = ctypes.cast(fn, ctypes.c_void_p).value
    if address is None:  # pragma: no cover - pypdfium2 binds every symbol it exports
        raise ImportError(f"PDFium function {fn!r} is not bound")
    return address


def _bind(fn, restype):
    """``fn`` (a pypdfium2 raw function) re-bound without argument conversion, for the per-character
    loop: callers pass :class:`ctypes.c_void_p` handles, ``byref`` out-parameters and Python ints
    (C ``int``). Skips pypdfium2's per-call ``_as_parameter_`` and pointer-type checks, which cost
    more than the PDFium call itself; the C signatures are those of ``fpdf_text.h``/``fpdf_edit.h``."""
    proto = ctypes.CFUNCTYPE(restype)(_address(fn))
    proto.argtypes = None  # type: ignore[assignment]  # None (no conversion) is valid; typeshed lists sequences only
    return proto


_VOIDP, _INT, _ULONG = ctypes.c_void_p, ctypes.c_int, ctypes.c_ulong
_get_unicode = _bind(pdfium_c.FPDFText_GetUnicode, ctypes.c_uint)
_get_text = _bind(pdfium_c.FPDFText_GetText, _INT)
_text_index = _bind(pdfium_c.FPDFText_GetTextIndexFromCharIndex, _INT)
_is_generated = _bind(pdfium_c.FPDFText_IsGenerated, _INT)
_is_hyphen = _bind(pdfium_c.FPDFText_IsHyphen, _INT)
_has_map_error = _bind(pdfium_c.FPDFText_HasUnicodeMapError, _INT)
#: FPDFText_GetLooseCharBox with its out-parameter converted from a plain int address
_get_loose_box_at = ctypes.CFUNCTYPE(_INT, _VOIDP, _INT, _VOIDP)(
    _address(pdfium_c.FPDFText_GetLooseCharBox))
_get_text_object = _bind(pdfium_c.FPDFText_GetTextObject, _VOIDP)
_get_font_size = _bind(pdfium_c.FPDFText_GetFontSize, ctypes.c_double)
_get_matrix = _bind(pdfium_c.FPDFText_GetMatrix, _INT)
_get_char_angle = _bind(pdfium_c.FPDFText_GetCharAngle, ctypes.c_float)
_text_obj_font = _bind(pdfium_c.FPDFTextObj_GetFont, _VOIDP)
_text_obj_render_mode = _bind(pdfium_c.FPDFTextObj_GetTextRenderMode, _INT)
_font_base_name = _bind(pdfium_c.FPDFFont_GetBaseFontName, ctypes.c_size_t)
_font_weight = _bind(pdfium_c.FPDFFont_GetWeight, _INT)
_font_flags = _bind(pdfium_c.FPDFFont_GetFlags, _INT)
_INVISIBLE = pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE
#: Code points PDFium generates (word gaps, line breaks); ``FPDFText_IsGenerated`` is asked only
#: for these (``CPDF_TextPage`` creates generated characters with no other value).
_GENERATED_CODES = frozenset((0x20, 0x0A, 0x0D))


def _font_info(font: int | None, buffer) -> tuple[str, bool, bool]:
    """(base name without subset prefix, bold, italic) of a PDFium font handle (``None``: no font).
    Bold: a bold word in the name (:data:`_BOLD_NAMES`), the ForceBold flag, or a weight of 600 or
    more unless the name's style part (after its last ``-`` or ``,``) names a lighter style
    (:data:`_PLAIN_STYLES`)."""
    name = ""
    handle = _VOIDP(font or 0)
    if font:
        length = _font_base_name(handle, buffer, 256)
        name = buffer.raw[: max(0, min(length, 256) - 1)].decode("latin-1", "replace")
    lower = name.lower()
    weight = _font_weight(handle) if font else -1
    flags = _font_flags(handle) if font else 0
    style = lower.split("+", 1)[-1].replace(",", "-").rpartition("-")[2] if "-" in lower or "," in lower else ""
    # PDFium's weight comes from the descriptor's /FontWeight or, without one, from its /StemV; a
    # name whose style part says the weight (a FinanceBench 10-Q's "Arial-ItalicMT" has a /StemV
    # PDFium turns into weight 610, so its italic signature titles became bold headings) is trusted
    named_plain = any(k in style for k in _PLAIN_STYLES)
    bold = any(k in lower for k in _BOLD_NAMES) or bool(flags & _FORCE_BOLD) or (weight >= 600 and not named_plain)
    italic = bool(flags & _ITALIC_FLAG) or any(k in lower for k in _ITALIC_NAMES)
    return name.split("+", 1)[-1], bold, italic


def _angle(m: Affine, radians: float) -> int:
    """Display reading direction (0/90/180/270, or -1) of text whose PDFium char angle is
    ``radians`` (clockwise in PDF user space: a text matrix (0,1,-1,0) reads 270)."""
    theta = -radians
    dx = m[0] * math.cos(theta) + m[2] * math.sin(theta)
    dy = m[1] * math.cos(theta) + m[3] * math.sin(theta)
    degrees = math.degrees(math.atan2(dy, dx)) % 360.0
    quadrant = int(round(degrees / 90.0)) % 4 * 90
    return quadrant if abs((degrees - quadrant + 180.0) % 360.0 - 180.0) < 2.0 else -1


class _ObjectInfo:
    """(font name, bold, italic, invisible, size in points, display angle, upright) of the text object of
    char ``i``, read at the first char seen of each object (all are constant within an object).
    Fonts are read once per font handle; size and angle once per (font size, matrix), since the
    angle is a function of the matrix (``FPDFText_GetCharAngle`` is ``atan2f(c, a)`` of it)."""

    def __init__(self, tp: ctypes.c_void_p, m: Affine) -> None:
        self._tp, self._m = tp, m
        self._matrix = pdfium_c.FS_MATRIX()
        self._matrix_ref = ctypes.byref(self._matrix)
        self._buffer = ctypes.create_string_buffer(256)
        self._fonts: dict[int, tuple[str, bool, bool]] = {}
        self._geometry: dict[tuple, tuple[float, int, bool]] = {}
        self.objects: dict[int, tuple] = {}

    def __call__(self, obj: int | None, i: int) -> tuple:
        if obj:
            handle = _VOIDP(obj)
            font = _text_obj_font(handle) or 0
            known = self._fonts.get(font)
            if known is None:
                known = self._fonts[font] = _font_info(font, self._buffer)
            info: tuple = known + (_text_obj_render_mode(handle) == _INVISIBLE,)
        else:
            info = ("", False, False, False)
        tp, cm = self._tp, self._matrix
        size = _get_font_size(tp, i)
        key = (size, cm.a, cm.b, cm.c, cm.d) if _get_matrix(tp, i, self._matrix_ref) else (size,)
        geometry = self._geometry.get(key)
        if geometry is None:
            if len(key) > 1:  # the size is in text space: scale it
                size *= math.sqrt(abs(cm.a * cm.d - cm.b * cm.c))
            angle = _angle(self._m, _get_char_angle(tp, i))
            geometry = self._geometry[key] = (size, angle, angle == 0)
        info += geometry
        if obj:
            self.objects[obj] = info
        return info


def _read_chars(pdf_page: pdfium.PdfPage, m: Affine) -> list[Char]:
    textpage = pdf_page.get_textpage()
    try:
        count = pdfium_c.FPDFText_CountChars(textpage)
        return _chars(_VOIDP(ctypes.cast(textpage.raw, ctypes.c_void_p).value), count, m)
    finally:
        textpage.close()


def _codes(tp: ctypes.c_void_p, count: int) -> list[int]:
    """``FPDFText_GetUnicode`` of every character. When every character has a place in the page
    text (the last one's text index is ``count - 1``) and the text is ``count`` UTF-16 units, one
    ``FPDFText_GetText`` call gives them all: the page text holds each character's code point,
    except that PDFium writes U+FFFE for characters without one and for hyphenation marks
    (code point 0 or 2), which are asked for one by one."""
    if _text_index(tp, count - 1) == count - 1:
        buffer = (ctypes.c_uint16 * (count + 1))()
        if _get_text(tp, 0, count, buffer) == count + 1:
            units = np.frombuffer(buffer, dtype=np.uint16)[:count]  # type: ignore[call-overload]  # a ctypes array is a buffer; numpy's stubs omit it
            codes = units.tolist()
            for k in np.flatnonzero(units == 0xFFFE).tolist():
                codes[k] = _get_unicode(tp, k)
            return codes
    return list(map(_get_unicode, repeat(tp, count), range(count)))


def _boxes(tp: ctypes.c_void_p, count: int, m: Affine) -> tuple[list[bool], list, list, list, list]:
    """Loose boxes of all ``count`` characters in display space: (found, x0, y0, x1, y1) lists.
    PDFium writes every box into one float array; numpy maps them all at once (same float
    operations, in the same order, as mapping each box in Python)."""
    buffer = (ctypes.c_float * (4 * count))()
    base = ctypes.addressof(buffer)
    found = list(map(_get_loose_box_at, repeat(tp, count), range(count), range(base, base + 16 * count, 16)))
    rects = np.frombuffer(buffer, dtype=np.float32).reshape(count, 4).astype(np.float64)  # type: ignore[call-overload]  # a ctypes array is a buffer; numpy's stubs omit it
    left, top, right, bottom = rects[:, 0], rects[:, 1], rects[:, 2], rects[:, 3]  # FS_RECTF order
    a, b, c, d, e, f = m
    if b == 0 and c == 0:
        xa, xb = a * left + e, a * right + e
        ya, yb = d * bottom + f, d * top + f
        x0, x1 = np.where(xa <= xb, xa, xb), np.where(xa <= xb, xb, xa)
        y0, y1 = np.where(ya <= yb, ya, yb), np.where(ya <= yb, yb, ya)
    else:
        x0, y0, x1, y1 = _map_boxes(m, left, bottom, right, top)
    return found, x0.tolist(), y0.tolist(), x1.tolist(), y1.tolist()


def _chars(tp: ctypes.c_void_p, count: int, m: Affine) -> list[Char]:
    """The characters of the text page ``tp``. Code points, text objects, map errors and boxes
    come from one PDFium call per character each, issued by ``map`` (no Python loop around the
    calls); font and geometry are looked up once per text object."""
    if count <= 0:
        return []
    codes = _codes(tp, count)
    objects = list(map(_get_text_object, repeat(tp, count), range(count)))
    errors = list(map(bool, map(_has_map_error, repeat(tp, count), range(count))))
    found, xs0, ys0, xs1, ys1 = _boxes(tp, count, m)
    object_info = _ObjectInfo(tp, m)
    infos = object_info.objects
    chars: list[Char] = []
    append = chars.append
    low_next = -1  # index of a low surrogate already folded into the previous character
    columns = zip(range(count), codes, objects, errors, found, xs0, ys0, xs1, ys1, strict=True)
    for i, code, obj, error, ok, x0, y0, x1, y1 in columns:
        if 0x20 < code < 0xD800:  # not a control, space, hyphen marker or surrogate
            text = chr(code)
            generated = False
        else:
            if i == low_next:
                continue
            if 0xD800 <= code <= 0xDBFF and i + 1 < count:  # PDFium splits astral characters (math
                low = codes[i + 1]                             # italic 𝑥, emoji) into UTF-16 surrogates
                if 0xDC00 <= low <= 0xDFFF:
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    low_next = i + 1
            generated = code in _GENERATED_CODES and bool(_is_generated(tp, i))
            if generated and code != 0x20:  # a line break PDFium inferred: keep one word gap
                if chars and not chars[-1].text.isspace():
                    last = chars[-1]
                    append(Char("\n", last.x1, last.y0, last.x1, last.y1, last.size, last.font, False, False,
                                last.upright, last.invisible, False, True, last.angle))
                continue
            try:
                text = chr(code)
            except ValueError:
                text = "\ufffd"
            if code == 2 or (code == 0xFFFE and _is_hyphen(tp, i)):
                text = "-"  # PDFium reports a line-end hyphenation hyphen as U+0002
        if not ok:
            continue
        info = infos.get(obj)
        if info is None:
            info = object_info(obj, i)
        name, bold, italic, invisible, size, angle, upright = info
        append(Char(text, x0, y0, x1, y1, size if size > 0 else (y1 - y0), name, bold, italic, upright,
                    invisible, error, generated, angle))
    return chars


_page_object = _bind(pdfium_c.FPDFPage_GetObject, _VOIDP)
_form_object = ctypes.CFUNCTYPE(_VOIDP, _VOIDP, _ULONG)(
    _address(pdfium_c.FPDFFormObj_GetObject))
_object_type = ctypes.CFUNCTYPE(_INT, _VOIDP)(_address(pdfium_c.FPDFPageObj_GetType))
_object_bounds = ctypes.CFUNCTYPE(_INT, _VOIDP, _VOIDP, _VOIDP, _VOIDP, _VOIDP)(
    _address(pdfium_c.FPDFPageObj_GetBounds))
_path_segments = ctypes.CFUNCTYPE(_INT, _VOIDP)(_address(pdfium_c.FPDFPath_CountSegments))
_PATH, _IMAGE, _FORM = pdfium_c.FPDF_PAGEOBJ_PATH, pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_FORM


def _rects(objects: list[int], kinds: list[int], m: Affine) -> list[Rect]:
    """Display-space bounds of path and image objects (all bounds read into one array and
    mapped by :func:`_map_boxes`); objects without bounds are left out."""
    n = len(objects)
    buffer = (ctypes.c_float * (4 * n))()
    base = ctypes.addressof(buffer)
    end = base + 16 * n
    found = list(map(_object_bounds, objects, range(base, end, 16), range(base + 4, end, 16),
                     range(base + 8, end, 16), range(base + 12, end, 16)))
    values = np.frombuffer(buffer, dtype=np.float32).reshape(n, 4).astype(np.float64)  # type: ignore[call-overload]  # a ctypes array is a buffer; numpy's stubs omit it
    x0, y0, x1, y1 = _map_boxes(m, values[:, 0], values[:, 1], values[:, 2], values[:, 3])
    out = []
    boxes = zip(x0.tolist(), y0.tolist(), x1.tolist(), y1.tolist(), strict=True)
    for obj, kind, ok, (rx0, ry0, rx1, ry1) in zip(objects, kinds, found, boxes, strict=True):
        if ok:
            out.append(Rect(rx0, ry0, rx1, ry1, "image") if kind == _IMAGE else
                       Rect(rx0, ry0, rx1, ry1, "path", _path_segments(obj)))
    return out


def _read_objects(pdf_page: pdfium.PdfPage, m: Affine, content: PageContent) -> None:
    """Bounds of the path and image objects of the page, descending into form XObjects (8 deep),
    in content order. Objects are fetched and typed by ``map`` (most objects are text, skipped)."""
    matrix = pdfium_c.FS_MATRIX()
    found: list[Rect] = []

    def walk(objects: list[int], transform: Affine, depth: int) -> None:
        pending: list[int] = []  # path and image objects since the last form
        kinds: list[int] = []
        for obj, kind in zip(objects, map(_object_type, objects), strict=True):
            if kind in (_PATH, _IMAGE):
                pending.append(obj)
                kinds.append(kind)
            elif kind == _FORM:
                handle = ctypes.cast(obj, pdfium_c.FPDF_PAGEOBJECT)
                if depth < 8 and pdfium_c.FPDFPageObj_GetMatrix(handle, matrix):
                    if pending:
                        found.extend(_rects(pending, kinds, transform))
                        pending, kinds = [], []
                    inner = _compose((matrix.a, matrix.b, matrix.c, matrix.d, matrix.e, matrix.f), transform)
                    count = max(0, pdfium_c.FPDFFormObj_CountObjects(handle))
                    walk(list(map(_form_object, repeat(obj, count), range(count))), inner, depth + 1)
        if pending:
            found.extend(_rects(pending, kinds, transform))

    page = _VOIDP(ctypes.cast(pdf_page.raw, _VOIDP).value)
    count = max(0, pdfium_c.FPDFPage_CountObjects(pdf_page))
    walk(list(map(_page_object, repeat(page, count), range(count))), m, 0)
    content.images.extend(r for r in found if r.kind == "image")
    content.paths.extend(r for r in found if r.kind == "path")


def read_page(pdf_page: pdfium.PdfPage, graphics: bool = True) -> PageContent:
    """Read the characters (and, with ``graphics``, path and image bounds) of ``pdf_page``.

    Caller holds :data:`folioflow.ocr.render.PDFIUM_LOCK`. Generated line breaks become one ``"\n"``
    blank and generated spaces (PDFium's word gaps) a ``" "``, both with ``generated=True``. Raises
    :class:`pypdfium2.PdfiumError` if PDFium cannot load the page's text.
    """
    width, height = pdf_page.get_size()
    m = display_transform(pdf_page)
    content = PageContent(width=width, height=height, chars=_read_chars(pdf_page, m))
    if graphics:
        _read_objects(pdf_page, m, content)
    return content
