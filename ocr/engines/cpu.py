"""Offline CPU OCR engines for scanned pages, by name (the converter's contract:
:func:`get_cpu_engine` and :data:`DEFAULT_CPU_ENGINE`).

Engines (all run the pipeline of :mod:`ocr.engines.ocr_pipeline`: orientation, deskew, OCR,
tables, layout, Markdown):

* ``tesseract``: Tesseract 5 LSTM through tesserocr (:mod:`ocr.engines.tesseract`); any installed
  language pack (Debian tessdata: eng, fra, deu, chi_sim, jpn, kor, ara).
* ``rapidocr``: PP-OCRv6 small models bundled in the rapidocr wheel, onnxruntime CPU
  (:mod:`ocr.engines.rapid`); Chinese, English, Japanese and Latin-script languages only.
* ``auto`` (default): rapidocr when the configured languages include Chinese/Japanese, else
  tesseract; a page tesseract reads badly is re-read by the engine for the script tesseract's OSD
  finds (:mod:`ocr.engines.auto_ocr`).

Decision and numbers: see the end of this docstring (filled from
``tests/benchmarks/bench_cpu_ocr.py``).
"""

from __future__ import annotations

from ocr.engines.auto_ocr import AutoCpuEngine
from ocr.engines.base import PageEngine
from ocr.engines.ocr_pipeline import CpuOcrEngine
from ocr.engines.rapid import RapidOcrRecognizer
from ocr.engines.tesseract import TesseractRecognizer
from ocr.errors import ConfigurationError

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


CPU_ENGINES = {"auto": AutoCpuEngine, "tesseract": TesseractEngine, "rapidocr": RapidOcrEngine}
DEFAULT_CPU_ENGINE = "auto"


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
