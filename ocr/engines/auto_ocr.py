"""``auto`` CPU OCR: pick the recogniser by language, and by the page's script when OCR looks wrong.

Choice (from ``tests/benchmarks/bench_cpu_ocr.py``; numbers in :mod:`folioflow.ocr.engines.cpu`):

1. Configured languages with Chinese or Japanese, all covered by the bundled PP-OCRv6 model ->
   **rapidocr** (far lower CER on Chinese than tesseract's ``chi_sim``).
2. Otherwise -> **tesseract** with the configured languages (same quality as rapidocr on Latin
   scripts at a fraction of the time; the only choice for Korean and Arabic).
3. When the page read by tesseract looks wrong (mean line confidence below ``retry_below`` or no
   text on an inked page), tesseract's OSD names the page's script; if it is one the configured
   languages do not cover (Han/Japanese -> rapidocr, Hangul -> tesseract ``kor``, Arabic ->
   tesseract ``ara``, when their packs are installed) the page is read again that way; otherwise
   rapidocr reads it again when it covers the configured languages (hard Latin pages: coloured
   backgrounds, and CJK pages OSD misnames). The better-scoring result (mean confidence x
   characters recognised, capped) is kept.

``Page.engine`` names the recogniser that produced the kept result; ``attributes["auto"]`` records
the script found and whether a retry happened.
"""

from __future__ import annotations

import time

from folioflow.ocr.engines.base import PageEngine
from folioflow.ocr.engines.ocr_pipeline import CpuOcrEngine
from folioflow.ocr.engines.orientation import rotate_upright
from folioflow.ocr.engines.rapid import RapidOcrRecognizer, rapidocr_supports
from folioflow.ocr.engines.tesseract import TesseractRecognizer, available_tesseract_languages
from folioflow.ocr.render import PageHandle
from folioflow.ocr.schema import Page

__all__ = ["CJK_LANGUAGES", "SCRIPT_LANGUAGES", "AutoCpuEngine"]

CJK_LANGUAGES = frozenset({"chi_sim", "chi_tra", "jpn"})
#: tesseract OSD script name -> tesseract languages that read it
SCRIPT_LANGUAGES = {"Han": ["chi_sim", "eng"], "Japanese": ["jpn", "eng"], "Hiragana": ["jpn", "eng"],
                    "Katakana": ["jpn", "eng"], "Korean": ["kor", "eng"], "Hangul": ["kor", "eng"],
                    "Arabic": ["ara"], "Cyrillic": ["rus"], "Greek": ["ell"], "Devanagari": ["hin"]}


class AutoCpuEngine(PageEngine):
    """Language/script-aware choice between the tesseract and rapidocr pipelines (see module doc).
    ``options`` go to both :class:`CpuOcrEngine` pipelines.

    ``name`` (what pages record in ``Page.engine``) is the primary recogniser's, ``"tesseract"`` or
    ``"rapidocr"``: "auto" is a policy, the page says which recogniser read it (a page re-read
    after the script check records the other one). ``dpi`` applies to every pipeline.
    """

    def __init__(self, languages: list[str] | None = None, retry_below: float = 0.6, **options):
        self.languages = list(languages or ["eng"])
        self.retry_below = retry_below
        self.options = options
        self._engines: dict[tuple, CpuOcrEngine] = {}
        self._osd = TesseractRecognizer(["eng"])
        self.use_rapid = bool(CJK_LANGUAGES & set(self.languages)) and rapidocr_supports(self.languages)
        self.primary = self._engine("rapidocr" if self.use_rapid else "tesseract", self.languages)
        self.name = self.primary.name

    @property
    def dpi(self) -> int:
        """Render resolution of PDF pages for every pipeline (dots per inch)."""
        return self.primary.dpi

    @dpi.setter
    def dpi(self, value: int) -> None:
        self.options["dpi"] = value
        for engine in self._engines.values():
            engine.dpi = value

    def _engine(self, kind: str, languages: list[str]) -> CpuOcrEngine:
        key = (kind, tuple(languages))
        if key not in self._engines:
            if kind == "rapidocr":
                engine = CpuOcrEngine(RapidOcrRecognizer(languages), name="rapidocr", **self.options)
            else:
                engine = CpuOcrEngine(TesseractRecognizer(languages), name="tesseract", **self.options)
            self._engines[key] = engine
        return self._engines[key]

    def second_opinion(self) -> CpuOcrEngine | None:
        """The other recogniser for the configured languages: rapidocr when tesseract is primary
        and rapidocr covers them (its DB text detector finds text set into pictures, logos and
        photos that tesseract's page segmentation passes over), else ``None``."""
        if self.use_rapid or not rapidocr_supports(self.languages):
            return None
        return self._engine("rapidocr", self.languages)

    @property
    def cache_key(self) -> str:
        return f"auto:{self.primary.cache_key}:retry{self.retry_below}"

    def warm_up(self) -> None:
        self.primary.warm_up()

    def convert_page(self, page: PageHandle) -> Page:
        started = time.perf_counter()
        gray, dpi = self.primary.render(page)
        result = self.primary.convert_image(gray, page.number, page.width, page.height, dpi=dpi)
        decision: dict = {"primary": self.primary.name}
        if not self.use_rapid and not result.attributes.get("blank") and _score(result) < self.retry_below:
            _, _, script = self._osd.detect_orientation(rotate_upright(gray, result.rotation))
            decision["script"] = script
            alternative = self._alternative(script)
            if alternative is not None:
                retry = alternative.convert_image(gray, page.number, page.width, page.height, dpi=dpi)
                decision["retried"] = alternative.name + ":" + "+".join(alternative.languages)
                if _score(retry) > _score(result):
                    result = retry
        result.attributes["auto"] = decision
        result.seconds = time.perf_counter() - started
        return result

    def _alternative(self, script: str) -> CpuOcrEngine | None:
        wanted = SCRIPT_LANGUAGES.get(script)
        engine = None
        if wanted and wanted[0] not in self.languages:
            if wanted[0] in CJK_LANGUAGES and rapidocr_supports(wanted):
                engine = self._engine("rapidocr", wanted)
            elif all(lang in available_tesseract_languages() for lang in wanted):
                engine = self._engine("tesseract", wanted)
        if engine is None and rapidocr_supports(self.languages):
            # OSD names no other script (or a wrong one: it says Latin/Cyrillic on pinyin-annotated
            # Chinese): the multilingual PP-OCR model is the second opinion.
            engine = self._engine("rapidocr", self.languages)
        if engine is not None:
            engine.warm_up()
        return engine


def _score(page: Page) -> float:
    """Mean line confidence, scaled down for pages with little text (under 40 characters)."""
    chars = sum(len(b.text) for b in page.blocks)
    return float(page.attributes.get("ocr_confidence", 0.0)) * min(1.0, chars / 40)
