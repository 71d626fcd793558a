"""RapidOCR 3.x recogniser (PP-OCR ONNX models on onnxruntime CPU): page image -> text lines.

Only the models bundled in the ``rapidocr`` wheel are used (no download at run time): PP-OCRv6
"small" detection and recognition and the PP-OCR v2 mobile text-line direction classifier. The v6
recogniser is one multilingual model; rapidocr's ``default_models.yaml`` lists what it covers
(:data:`RAPIDOCR_LANGUAGES`): Chinese (simplified and traditional), English, Japanese and ~45
Latin-script languages (French, German, Spanish, ...). It has **no Korean, Arabic, Cyrillic or
Devanagari**; those need tesseract (see :mod:`folioflow.ocr.engines.cpu`).

Detection runs on the image scaled so its longer side is at most ``det_max_side`` pixels (rapidocr's
default, "at least 736 on the shorter side", runs the detector on a full 300 DPI page, which costs
~3x more for no gain on documents). Each detected box becomes one line; with ``word_boxes`` the
line is split into words using rapidocr's word boxes (used for table cells).
"""

from __future__ import annotations

import threading

import numpy as np

from folioflow.ocr.errors import EngineUnavailableError
from folioflow.ocr.postprocess.lines import OcrLine, OcrWord

__all__ = ["RAPIDOCR_LANGUAGES", "RapidOcrRecognizer", "rapidocr_supports"]

#: Tesseract codes whose script the bundled PP-OCRv6 multilingual model reads.
RAPIDOCR_LANGUAGES = frozenset({
    "eng", "chi_sim", "chi_tra", "jpn", "fra", "deu", "spa", "ita", "por", "nld", "swe", "dan", "nor",
    "fin", "pol", "ces", "slk", "slv", "hrv", "hun", "ron", "tur", "vie", "cat", "eus", "glg", "lat",
    "lit", "lav", "est", "isl", "gle", "cym", "ind", "msa", "afr", "sqi", "bos", "mlt", "swa", "tgl",
    "uzb", "aze", "oci",
})


#: Bump when the words made of rapidocr's boxes change (part of :attr:`RapidOcrRecognizer.model`).
WORDS_VERSION = "2"


def rapidocr_supports(languages: list[str]) -> bool:
    """True when every tesseract language code in ``languages`` is covered by the bundled model."""
    return all(lang in RAPIDOCR_LANGUAGES for lang in languages)


class RapidOcrRecognizer:
    """PP-OCRv6 (bundled) through rapidocr; one ``RapidOCR`` instance per thread.

    ``det_max_side``: longer side (pixels) the detector sees. ``word_boxes``: split lines into
    words (rapidocr ``return_word_box``). ``threads``: onnxruntime intra-op threads (-1 = all cores).
    """

    name = "rapidocr"

    def __init__(self, languages: list[str] | None = None, det_max_side: int = 1600,
                 word_boxes: bool = True, threads: int = -1, min_score: float = 0.5):
        self.languages = list(languages or ["eng"])
        self.det_max_side = det_max_side
        self.word_boxes = word_boxes
        self.threads = threads
        self.min_score = min_score
        self._local = threading.local()

    @property
    def model(self) -> str:
        """Model identity for the cache key."""
        from importlib.metadata import PackageNotFoundError, version

        try:
            installed = version("rapidocr")
        except PackageNotFoundError:
            installed = "?"
        return f"rapidocr {installed} PP-OCRv6-small det{self.det_max_side} words{WORDS_VERSION}"

    def warm_up(self) -> None:
        """Load the bundled models for this thread. Raises :class:`EngineUnavailableError`."""
        self._engine()

    def _engine(self):
        engine = getattr(self._local, "engine", None)
        if engine is None:
            try:
                from rapidocr import RapidOCR
            except ImportError as exc:
                raise EngineUnavailableError(f"rapidocr: not installed ({exc})") from exc
            params = {
                "Global.log_level": "error",  # it warns on every crop without text
                "Global.text_score": self.min_score,
                "Global.max_side_len": 100_000,  # the page is already sized by the renderer
                "Det.limit_type": "max",
                "Det.limit_side_len": self.det_max_side,
                "EngineConfig.onnxruntime.intra_op_num_threads": self.threads,
            }
            try:
                engine = RapidOCR(params=params)
            except Exception as exc:  # missing/corrupt bundled model files
                raise EngineUnavailableError(f"rapidocr: cannot load bundled models ({exc})") from exc
            self._local.engine = engine
        return engine

    def recognize(self, image: np.ndarray) -> list[OcrLine]:
        """OCR a grayscale or RGB ``image`` (H, W[, 3] uint8); lines in detection order (top to
        bottom), boxes in image pixels, confidences in [0, 1]."""
        engine = self._engine()
        if image.ndim == 3:
            image = np.ascontiguousarray(image[:, :, ::-1])  # rapidocr expects BGR arrays
        result = engine(image, return_word_box=self.word_boxes)
        if result.boxes is None or result.txts is None:
            return []
        words_per_line = getattr(result, "word_results", None) or ()
        lines: list[OcrLine] = []
        for index, (poly, text, score) in enumerate(zip(result.boxes, result.txts, result.scores, strict=True)):
            text = (text or "").strip()
            if not text:
                continue
            pts = np.asarray(poly, dtype=float)
            box = (float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max()))
            words = _words(words_per_line[index] if index < len(words_per_line) else None, box, text, float(score))
            line = OcrLine(words=words, box=box, confidence=float(score))
            lines.append(line)
        return lines

    def close(self) -> None:
        self._local.engine = None


def _words(raw, box, text: str, score: float) -> list[OcrWord]:
    """Words of one line from rapidocr's ``word_results`` entry ((text, score, polygon) tuples);
    one word spanning the line when absent or inconsistent. On a line with any Chinese or
    Japanese, rapidocr gives one entry per *character*, the Latin letters and digits included
    ("T", "h", "e", ...): those are grouped back into the words the line's text spells (its
    spaces), split again where a gap wider than the line's letter height separates two characters
    (table cells). Taken one per character they were joined with spaces ("T h e b i g g e s t",
    "6 0 1 1 2 8"), which no search finds."""
    pieces: list[OcrWord] = []
    for item in raw or ():
        try:
            wtext, wscore, wpoly = item
            pts = np.asarray(wpoly, dtype=float)
            wbox = (float(pts[:, 0].min()), float(pts[:, 1].min()), float(pts[:, 0].max()), float(pts[:, 1].max()))
        except (TypeError, ValueError, IndexError):
            return [OcrWord(text=text, box=box, confidence=score)]
        if str(wtext).strip():
            pieces.append(OcrWord(text=str(wtext).strip(), box=wbox, confidence=float(wscore)))
    if not pieces or "".join(w.text for w in pieces).replace(" ", "") != text.replace(" ", ""):
        return [OcrWord(text=text, box=box, confidence=score)]
    return _group(pieces, text)


def _group(pieces: list[OcrWord], text: str) -> list[OcrWord]:
    """Merge ``pieces`` (in line order, their texts spelling ``text`` without its spaces) into the
    space-separated tokens of ``text``, split at gaps wider than the median piece height."""
    heights = sorted(w.box[3] - w.box[1] for w in pieces)
    gap_limit = max(heights[len(heights) // 2], 1.0)
    groups: list[list[OcrWord]] = []
    at = 0
    for token in text.split():
        need, got = len(token), list[OcrWord]()
        while at < len(pieces) and sum(len(w.text) for w in got) < need:
            got.append(pieces[at])
            at += 1
        if sum(len(w.text) for w in got) != need:  # a piece straddles two tokens: keep rapidocr's pieces
            return pieces
        current = [got[0]]
        for prev, nxt in zip(got, got[1:], strict=False):
            if nxt.box[0] - prev.box[2] > gap_limit:
                groups.append(current)
                current = []
            current.append(nxt)
        groups.append(current)
    out = []
    for group in groups:
        x0 = min(w.box[0] for w in group)
        y0 = min(w.box[1] for w in group)
        x1 = max(w.box[2] for w in group)
        y1 = max(w.box[3] for w in group)
        out.append(OcrWord(text="".join(w.text for w in group), box=(x0, y0, x1, y1),
                           confidence=sum(w.confidence for w in group) / len(group)))
    return out
