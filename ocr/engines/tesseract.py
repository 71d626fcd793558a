"""Tesseract 5 recogniser (through tesserocr): page image -> text lines with word boxes.

* Language packs are tesseract's codes (``eng``, ``fra``, ``deu``, ``chi_sim``, ``jpn``, ``kor``,
  ``ara``, ...) joined with ``+``; they must exist in :data:`TESSDATA` (Debian:
  ``/usr/share/tesseract-ocr/5/tessdata``, override with ``TESSDATA_PREFIX``).
* A ``PyTessBaseAPI`` handle is not thread-safe: each thread gets its own (``threading.local``).
  ``OMP_THREAD_LIMIT=1`` is set before tesserocr loads, as tesseract's OpenMP threads only slow
  down concurrent pages (tesseract's own FAQ recommends it for parallel use). An OpenMP runtime reads
  the variable once, when it loads, and PyTorch's CPU wheel carries its own ``libgomp``: loaded after
  the variable is set, it would run the embedder on one thread (measured: CPU embedding 15.4 instead
  of 33.4 texts/s) and, under bf16 autocast with two torch threads, return wrong vectors (min cosine
  -0.04 to fp32). So PyTorch, when installed, is imported first
  (by :func:`load_tesserocr`, on first use: importing this module loads neither), and
  :class:`folioflow.indexing.embedder.Embedder` also caps torch's threads at the limit if it finds one. (The
  PyPI tesserocr wheel's bundled libtesseract is built without OpenMP; the variable matters for a
  tesserocr built against Debian's libtesseract.)
* :meth:`TesseractRecognizer.recognize` passes a timeout to ``Recognize`` (tesseract's cancel
  monitor), so one pathological page cannot hang a batch.
* :meth:`TesseractRecognizer.detect_orientation` runs tesseract's OSD (``osd.traineddata``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from pathlib import Path

import numpy as np
from PIL import Image

from folioflow.ocr.errors import EngineUnavailableError, OcrError
from folioflow.ocr.postprocess.lines import OcrLine, OcrWord

__all__ = ["TESSDATA", "TesseractRecognizer", "available_tesseract_languages", "load_tesserocr"]

TESSDATA = os.environ.get("TESSDATA_PREFIX", "/usr/share/tesseract-ocr/5/tessdata")


def load_tesserocr():
    """Import and return ``tesserocr``, the first time with ``OMP_THREAD_LIMIT=1`` set before
    libtesseract loads and PyTorch (when installed; conversion-only installs have none) imported
    before that, so torch's own OpenMP runtime does not read the limit (see module docstring).
    Done here rather than at module import so that importing this module costs no torch.
    Raises :class:`ImportError` when tesserocr is not installed."""
    if "tesserocr" not in sys.modules:
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    import tesserocr

    return tesserocr


def available_tesseract_languages(tessdata: str = TESSDATA) -> list[str]:
    """Language codes with a ``*.traineddata`` file in ``tessdata`` (``osd`` excluded), sorted."""
    root = Path(tessdata)
    return sorted(p.stem for p in root.glob("*.traineddata") if p.stem != "osd")


class TesseractRecognizer:
    """Tesseract LSTM recogniser with page segmentation ``PSM.AUTO`` (columns and blocks).

    ``languages``: tesseract codes, tried jointly (``["eng", "fra"]`` -> ``eng+fra``).
    ``timeout_s``: per-page recognition limit in seconds (0 = none); exceeding it raises
    :class:`~folioflow.ocr.errors.OcrError`.
    """

    name = "tesseract"

    def __init__(self, languages: list[str] | None = None, timeout_s: float = 120.0, tessdata: str = TESSDATA):
        self.languages = list(languages or ["eng"])
        self.timeout_s = timeout_s
        self.tessdata = tessdata
        self._local = threading.local()
        self._version = ""

    @property
    def model(self) -> str:
        """``tesseract <version> <langs>``, part of the engine's cache key."""
        if not self._version:
            try:
                self._version = load_tesserocr().tesseract_version().split()[1]
            except (ImportError, IndexError):
                return f"tesseract ? {'+'.join(self.languages)}"
        return f"tesseract {self._version} {'+'.join(self.languages)}"

    def warm_up(self) -> None:
        """Check tesserocr and the language packs, and create this thread's handle.
        Raises :class:`EngineUnavailableError` naming what is missing."""
        try:
            load_tesserocr()
        except ImportError as exc:
            raise EngineUnavailableError(f"tesseract: tesserocr is not installed ({exc})") from exc
        have = set(available_tesseract_languages(self.tessdata))
        missing = [lang for lang in self.languages if lang not in have]
        if missing:
            raise EngineUnavailableError(
                f"tesseract: no traineddata for {missing} in {self.tessdata} (have {sorted(have)})"
            )
        self._api()

    def _api(self):
        api = getattr(self._local, "api", None)
        if api is None:
            tesserocr = load_tesserocr()

            api = tesserocr.PyTessBaseAPI(path=self.tessdata, lang="+".join(self.languages),
                                          psm=tesserocr.PSM.AUTO)
            self._local.api = api
        return api

    def recognize(self, image: np.ndarray) -> list[OcrLine]:
        """OCR a grayscale or RGB ``image`` (H, W[, 3] uint8). Returns lines in tesseract's reading
        order with word boxes in image pixels and confidences in [0, 1]. Raises :class:`OcrError`
        on timeout."""
        tesserocr = load_tesserocr()

        return self._run(image, tesserocr.PSM.AUTO)

    def recognize_cell(self, image: np.ndarray) -> list[OcrLine]:
        """OCR a small crop (a table cell) as one block of text (``PSM.SINGLE_BLOCK``): page
        segmentation drops isolated digits and short words that a cell often holds."""
        tesserocr = load_tesserocr()

        return self._run(image, tesserocr.PSM.SINGLE_BLOCK)

    def _run(self, image: np.ndarray, psm) -> list[OcrLine]:
        tesserocr = load_tesserocr()
        from tesserocr import RIL

        api = self._api()
        api.SetPageSegMode(psm)
        api.SetImage(Image.fromarray(image))
        if not api.Recognize(timeout=int(self.timeout_s * 1000)):
            raise OcrError(f"tesseract: recognition failed or timed out after {self.timeout_s:.0f}s")
        iterator = api.GetIterator()
        lines: list[OcrLine] = []
        words: list[OcrWord] = []
        block = -1
        line_block = -1
        if iterator is None:
            return lines
        for item in tesserocr.iterate_level(iterator, RIL.WORD):
            if item.IsAtBeginningOf(RIL.BLOCK):
                block += 1
            if item.IsAtBeginningOf(RIL.TEXTLINE) and words:
                lines.append(_make_line(words, line_block))
                words = []
            try:
                text = (item.GetUTF8Text(RIL.WORD) or "").strip()
            except RuntimeError:  # tesserocr: "No text returned" for empty words
                continue
            box = item.BoundingBox(RIL.WORD)
            if not text or box is None:
                continue
            if not words:
                line_block = block
            x0, y0, x1, y1 = box
            words.append(OcrWord(text=text, box=(float(x0), float(y0), float(x1), float(y1)),
                                 confidence=max(0.0, item.Confidence(RIL.WORD)) / 100.0))
        if words:
            lines.append(_make_line(words, line_block))
        return [line for line in lines if _has_content(line)]

    def detect_orientation(self, image: np.ndarray) -> tuple[int, float, str]:
        """Tesseract OSD on ``image``: (clockwise degrees the page must be rotated to be upright,
        confidence (15 = reasonably confident, per tesseract), script name). Returns
        ``(0, 0.0, "")`` when OSD finds too little text."""
        tesserocr = load_tesserocr()

        api = getattr(self._local, "osd", None)
        if api is None:
            api = tesserocr.PyTessBaseAPI(path=self.tessdata, lang="osd", psm=tesserocr.PSM.OSD_ONLY)
            self._local.osd = api
        api.SetImage(Image.fromarray(image))
        try:
            result = api.DetectOrientationScript()
        except RuntimeError:  # "Too few characters" and similar
            return 0, 0.0, ""
        if not result:
            return 0, 0.0, ""
        # orient_deg: how far the *image* is rotated clockwise; undoing it is a counter-clockwise turn.
        return (360 - int(result["orient_deg"])) % 360, float(result["orient_conf"]), str(result["script_name"])

    def close(self) -> None:
        """End this thread's handles (others end when their threads' locals are collected)."""
        for attr in ("api", "osd"):
            api = getattr(self._local, attr, None)
            if api is not None:
                api.End()
                setattr(self._local, attr, None)


_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")
_HANGUL = re.compile("^[\uac00-\ud7af]+$")


def _make_line(words: list[OcrWord], block: int) -> OcrLine:
    """One line from tesseract's words. The word iterator yields right-to-left words in logical
    order but each word's characters in visual order (measured on the corpus's Arabic page against
    its text layer and ``GetUTF8Text``), so RTL words are reversed back. Hangul syllables tesseract
    split into separate "words" less than a fifth of the line height apart are joined."""
    if any(_RTL.search(w.text) for w in words):
        words = [OcrWord(w.text[::-1] if _RTL.search(w.text) else w.text, w.box, w.confidence) for w in words]
        return OcrLine.from_words(words, block_id=block)
    height = max(w.box[3] - w.box[1] for w in words)
    merged: list[OcrWord] = []
    for word in words:
        prev = merged[-1] if merged else None
        if (prev is not None and _HANGUL.match(prev.text[-1]) and _HANGUL.match(word.text[0])
                and word.box[0] - prev.box[2] < 0.2 * height):
            box = (prev.box[0], min(prev.box[1], word.box[1]), word.box[2], max(prev.box[3], word.box[3]))
            merged[-1] = OcrWord(prev.text + word.text, box, min(prev.confidence, word.confidence))
        else:
            merged.append(word)
    return OcrLine.from_words(merged, block_id=block)


def _has_content(line: OcrLine) -> bool:
    """False for noise: no letter or digit, or a short line tesseract itself does not believe."""
    if not any(ch.isalnum() for ch in line.text):
        return False
    return not (len(line.words) <= 2 and line.confidence < 0.3)
