"""The CPU OCR page pipeline shared by every recogniser (tesseract, rapidocr).

Per page: render (PDF pages at ``dpi``; images at their own resolution) -> grayscale -> blank
check -> orientation (0/90/180/270, :mod:`folioflow.ocr.engines.orientation`) -> upscale when the letters
are tiny (low-resolution scans) -> skew estimate and deskew -> recognise lines and words -> ink
height per line -> layout regions (rapid-layout) and ruled tables (OpenCV; grids inside a layout
figure belong to the figure, unless the figure covers most of the page) -> borderless tables in
layout table regions -> empty ruled cells read on their own -> blocks and Markdown (:mod:`folioflow.ocr.postprocess.blocks`) -> boxes to page points
in display space.

Page results: ``Page.rotation`` is the clockwise turn applied before OCR; ``attributes`` carry
``skew_degrees`` (clockwise skew found and removed), ``orientation`` (what the detector said),
``dpi`` (pixels per inch of the OCR'd image), ``ocr_confidence`` (mean line confidence),
``ink_read``/``ink_share``/``low_confidence_lines`` (fidelity evidence, see :mod:`folioflow.ocr.fidelity`) and
``blank`` for pages without ink and ``upscaled`` (factor) for low-resolution scans. Block boxes are in points, top-left origin, in the page's
display space (the orientation turn is undone; deskew is not, so boxes on skewed scans are off by
at most the skew angle).
"""

from __future__ import annotations

import time
from typing import Protocol

import cv2
import numpy as np

from folioflow.ocr.engines.base import PageEngine
from folioflow.ocr.engines.layout import LayoutDetector
from folioflow.ocr.engines.orientation import (
    OrientationDetector,
    deskew,
    estimate_skew,
    ink_ratio,
    rotate_upright,
    text_height,
)
from folioflow.ocr.fidelity import ink_read
from folioflow.ocr.postprocess.blocks import blocks_markdown, compose_blocks, page_sized
from folioflow.ocr.postprocess.lines import OcrLine
from folioflow.ocr.postprocess.tables import TableGrid, borderless_table, fill_cells, find_ruled_tables
from folioflow.ocr.render import PageHandle
from folioflow.ocr.schema import BBox, Block, Page

__all__ = ["PIPELINE_VERSION", "CpuOcrEngine", "Recognizer"]

#: Bump when the pipeline's output changes for the same input (part of the cache key).
PIPELINE_VERSION = "4"


class Recognizer(Protocol):
    """What the pipeline needs from an OCR backend."""

    name: str
    languages: list[str]

    @property
    def model(self) -> str: ...

    def warm_up(self) -> None: ...

    def recognize(self, image: np.ndarray) -> list[OcrLine]: ...


class CpuOcrEngine(PageEngine):
    """A :class:`PageEngine` running the CPU OCR pipeline around one :class:`Recognizer`.

    ``dpi``: render resolution of PDF pages. ``max_side``: longest side in pixels of the image
    OCR'd (larger pages are scaled down; the renderer's pixel limit applies too).
    ``orientation``: ``"rapid"``, ``"osd"`` or ``"none"``. ``layout``: use rapid-layout regions
    (borderless tables, figures, header/footer/title hints). ``blank_ink``: pages with a smaller
    fraction of dark pixels are blank (ok, empty Markdown). ``min_text_px``: pages whose median glyph
    height is below this many pixels (72-100 DPI scans) are upscaled (cubic) to about twice it.
    """

    def __init__(self, recognizer: Recognizer, name: str | None = None, dpi: int = 300, max_side: int = 4200,
                 orientation: str = "rapid", deskew: bool = True, layout: bool = True, blank_ink: float = 0.0003,
                 min_text_px: float = 12.0):
        self.recognizer = recognizer
        self.name = name or recognizer.name
        self.dpi = dpi
        self.max_side = max_side
        self.deskew = deskew
        self.blank_ink = blank_ink
        self.min_text_px = min_text_px
        self.orientation = OrientationDetector(orientation)
        self.layout = LayoutDetector() if layout else None

    @property
    def languages(self) -> list[str]:
        return self.recognizer.languages

    @property
    def cache_key(self) -> str:
        parts = [self.name, self.recognizer.model, f"dpi{self.dpi}", f"ori-{self.orientation.method}",
                 f"deskew{int(self.deskew)}", f"layout{int(self.layout is not None)}", f"v{PIPELINE_VERSION}"]
        return ":".join(parts)

    def warm_up(self) -> None:
        self.recognizer.warm_up()
        if self.layout is not None:
            self.layout.warm_up()

    def render(self, page: PageHandle) -> tuple[np.ndarray, float]:
        """Grayscale image of ``page`` and its resolution in pixels per inch."""
        if page.is_pdf:
            dpi = float(self.dpi)
        else:  # images: keep their own pixels (72 dpi when they record none: 1 px = 1 pt)
            image = getattr(page, "_image", None)
            dpi = image.width * 72.0 / page.width if image is not None and page.width else float(self.dpi)
        image = page.render(dpi=dpi, max_side=self.max_side)
        gray = np.asarray(image.convert("L"))
        return gray, gray.shape[1] * 72.0 / max(page.width, 1e-6)

    def convert_page(self, page: PageHandle) -> Page:
        started = time.perf_counter()
        gray, dpi = self.render(page)
        result = self.convert_image(gray, page.number, page.width, page.height, dpi=dpi)
        result.seconds = time.perf_counter() - started
        return result

    def convert_image(self, gray: np.ndarray, number: int, width: float, height: float, dpi: float = 0.0,
                      rotation: int | None = None) -> Page:
        """Run the pipeline on a grayscale page image (H, W uint8) of a page ``width`` x ``height``
        points in display space. ``rotation`` (0/90/180/270, clockwise turn that makes the image
        upright): known already, so the orientation detector is not asked. Raises
        :class:`~folioflow.ocr.errors.OcrError` from the recogniser."""
        page = Page(number=number, width=width, height=height, engine=self.name, model=self.recognizer.model,
                    attributes={"dpi": round(dpi, 1), "languages": list(self.languages)})
        attributes = page.attributes  # pydantic copied the dict: write to the page's own
        if ink_ratio(gray) < self.blank_ink:
            attributes["blank"] = True
            return page
        if rotation is None:
            rotation, details = self.orientation.detect(gray)
            attributes["orientation"] = details
        else:
            attributes["orientation"] = {"given": rotation}
        upright = rotate_upright(gray, rotation)
        glyphs = text_height(upright)
        if 0 < glyphs < self.min_text_px:  # low-resolution scan: tesseract/PP-OCR want ~20 px letters
            factor = min(4.0, 2 * self.min_text_px / glyphs, self.max_side / max(upright.shape[:2]))
            if factor > 1.2:
                upright = cv2.resize(upright, None, fx=factor, fy=factor, interpolation=cv2.INTER_CUBIC)
                attributes["upscaled"] = round(factor, 2)
        skew = estimate_skew(upright) if self.deskew else 0.0
        if abs(skew) >= 0.2:
            upright = deskew(upright, skew)
        attributes["skew_degrees"] = skew
        page.rotation = rotation
        lines = self.recognizer.recognize(upright)
        _measure_ink_heights(upright, lines)
        regions = self.layout.detect(upright) if self.layout is not None else []
        # a page-sized "figure" is the page itself mislabelled (ocr.postprocess.blocks): its grids are tables
        figures = [r.box for r in regions if r.label == "figure" and not page_sized(r.box, upright.shape[1], upright.shape[0])]
        tables = [t for t in find_ruled_tables(upright) if not any(_inside_share(t.box, f) > 0.8 for f in figures)]
        words = [w for ln in lines for w in ln.words]
        # fidelity evidence (folioflow.ocr.fidelity): how much of the ink the words read cover
        read, share = ink_read(upright, [(*w.box, w.confidence) for w in words], figures)
        attributes["ink_read"], attributes["ink_share"] = round(read, 4), round(share, 5)
        if lines:
            attributes["low_confidence_lines"] = round(sum(1 for ln in lines if ln.confidence < 0.5) / len(lines), 4)
        for region in regions:
            if region.label == "table" and not any(_overlaps(region.box, t.box) for t in tables):
                grid = borderless_table(words, region.box)
                if grid is not None:
                    tables.append(grid)
        remaining = set(map(id, words))
        kept = []
        for table in tables:
            rest = fill_cells(table, [w for w in words if id(w) in remaining])
            if table.ruled:
                self._read_empty_cells(upright, table)
            filled = sum(1 for cell in table.cells if cell.text)
            if filled >= 0.4 * len(table.cells):  # else rules around text (boxes, shading), not a table
                kept.append(table)
                remaining &= set(map(id, rest))
        tables = kept
        lines = _drop_words(lines, remaining)
        h, w = upright.shape[:2]
        blocks = compose_blocks(lines, w, h, tables, regions, first_page=number == 1)
        _to_display_points(blocks, w, h, width, height, rotation)
        page.blocks = blocks
        page.markdown = blocks_markdown(blocks)
        if lines:
            attributes["ocr_confidence"] = round(sum(ln.confidence for ln in lines) / len(lines), 3)
        attributes["layout_regions"] = [r.label for r in regions]
        return page


    def _read_empty_cells(self, gray: np.ndarray, table: TableGrid, limit: int = 150) -> None:
        """OCR each empty cell of a ruled table on its own crop (inside the rules, on a white margin):
        full-page segmentation misses lone digits and words on shaded header cells."""
        read = getattr(self.recognizer, "recognize_cell", self.recognizer.recognize)
        h, w = gray.shape[:2]
        for cell in [c for c in table.cells if not c.text][:limit]:
            x0, y0 = int(max(0, cell.box[0] + 4)), int(max(0, cell.box[1] + 4))
            x1, y1 = int(min(w, cell.box[2] - 4)), int(min(h, cell.box[3] - 4))
            if x1 - x0 < 8 or y1 - y0 < 8:
                continue
            crop = gray[y0:y1, x0:x1]
            if ink_ratio(crop) < 0.002:
                continue
            crop = cv2.copyMakeBorder(crop, 16, 16, 16, 16, cv2.BORDER_CONSTANT, value=int(np.median(crop)))
            cell.text = " ".join(line.text for line in read(crop)).strip()


def _inside_share(a, b) -> float:
    """Share of box ``a``'s area inside box ``b``."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return max(0.0, w) * max(0.0, h) / max((a[2] - a[0]) * (a[3] - a[1]), 1e-6)


def _overlaps(a, b) -> bool:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w > 0 and h > 0 and w * h > 0.3 * smaller


def _drop_words(lines: list[OcrLine], keep: set[int]) -> list[OcrLine]:
    out = []
    for line in lines:
        words = [w for w in line.words if id(w) in keep]
        if len(words) == len(line.words):
            out.append(line)
        elif words:
            new = OcrLine.from_words(words, block_id=line.block_id)
            new.attrs = dict(line.attrs)
            out.append(new)
    return out


def _measure_ink_heights(gray: np.ndarray, lines: list[OcrLine]) -> None:
    """Store each line's text height in pixels in ``line.attrs["ink_height"]``: the run of inked
    rows around the line's vertical centre inside its box. Detector boxes are padded and tesseract's
    may reach into the neighbouring line; the ink run is neither."""
    _, ink = cv2.threshold(gray, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    h, w = ink.shape
    for line in lines:
        x0, y0, x1, y1 = (int(max(0, line.box[0])), int(max(0, line.box[1])), int(min(w, line.box[2])), int(min(h, line.box[3])))
        if x1 <= x0 or y1 <= y0:
            continue
        rows = ink[y0:y1, x0:x1].sum(axis=1)
        if rows.max() == 0:
            continue
        inked = rows >= max(1, 0.02 * rows.max())
        centre = int(np.argmax(rows[len(rows) // 4: max(len(rows) // 4 + 1, 3 * len(rows) // 4)])) + len(rows) // 4
        top = bottom = centre
        while top > 0 and inked[top - 1]:
            top -= 1
        while bottom < len(rows) - 1 and inked[bottom + 1]:
            bottom += 1
        line.attrs["ink_height"] = float(bottom - top + 1)


def _to_display_points(blocks: list[Block], w_px: int, h_px: int, width: float, height: float, rotation: int) -> None:
    """Convert block boxes from upright-image pixels to display-space points (undo ``rotation``)."""
    up_w, up_h = (width, height) if rotation in (0, 180) else (height, width)
    sx, sy = up_w / max(w_px, 1), up_h / max(h_px, 1)
    for block in blocks:
        if block.bbox is None:
            continue
        b = block.bbox
        corners = [_unrotate(x * sx, y * sy, rotation, width, height) for x, y in ((b.x0, b.y0), (b.x1, b.y1))]
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        block.bbox = BBox(x0=round(min(xs), 2), y0=round(min(ys), 2), x1=round(max(xs), 2), y1=round(max(ys), 2))


def _unrotate(xu: float, yu: float, rotation: int, width: float, height: float) -> tuple[float, float]:
    """Map a point of the upright frame back to the display frame (``width`` x ``height``) that was
    turned clockwise by ``rotation`` degrees to become upright."""
    if rotation == 90:
        return yu, height - xu
    if rotation == 180:
        return width - xu, height - yu
    if rotation == 270:
        return width - yu, xu
    return xu, yu

