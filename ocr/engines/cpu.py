"""Offline CPU OCR engines for scanned pages, by name.

Interim version (lead): a plain tesseract engine that returns the page text as paragraphs. The
CPU-OCR work replaces it with measured engines (tesseract via tesserocr, rapidocr), orientation and
skew correction, and Markdown with headings and tables. :func:`get_cpu_engine` is the contract.
"""

from __future__ import annotations

import os
import threading

from ocr.engines.base import PageEngine
from ocr.errors import ConfigurationError, EngineUnavailableError
from ocr.render import PageHandle
from ocr.schema import Block, BlockType, Page

__all__ = ["DEFAULT_CPU_ENGINE", "CPU_ENGINES", "get_cpu_engine", "TesseractEngine"]

TESSDATA = os.environ.get("TESSDATA_PREFIX", "/usr/share/tesseract-ocr/5/tessdata/")


class TesseractEngine(PageEngine):
    """Tesseract 5 through tesserocr, one API handle per thread (tesserocr handles are not shared)."""

    name = "tesseract"

    def __init__(self, languages: list[str] | None = None, dpi: int = 300):
        self.languages = languages or ["eng"]
        self.dpi = dpi
        self._local = threading.local()

    def warm_up(self) -> None:
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")
        try:
            import tesserocr  # noqa: F401
        except ImportError as exc:
            raise EngineUnavailableError(f"tesseract: tesserocr not installed ({exc})") from exc

    def _api(self):
        api = getattr(self._local, "api", None)
        if api is None:
            import tesserocr

            api = tesserocr.PyTessBaseAPI(path=TESSDATA, lang="+".join(self.languages))
            self._local.api = api
        return api

    def convert_page(self, page: PageHandle) -> Page:
        image = page.render(dpi=self.dpi)
        api = self._api()
        api.SetImage(image)
        text = api.GetUTF8Text() or ""
        paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
        blocks = [Block(type=BlockType.PARAGRAPH, text=p) for p in paragraphs]
        return Page(number=page.number, width=page.width, height=page.height, engine=self.name,
                    markdown="\n\n".join(paragraphs), blocks=blocks)


CPU_ENGINES = {"tesseract": TesseractEngine}
DEFAULT_CPU_ENGINE = "tesseract"


def get_cpu_engine(name: str | None = None, languages: list[str] | None = None) -> PageEngine:
    """Return a new CPU OCR engine by name (``"tesseract"``; default :data:`DEFAULT_CPU_ENGINE`).
    Raises :class:`ConfigurationError` for an unknown name."""
    name = name or DEFAULT_CPU_ENGINE
    try:
        return CPU_ENGINES[name](languages=languages)
    except KeyError:
        raise ConfigurationError(f"unknown CPU OCR engine {name!r}; choose from {sorted(CPU_ENGINES)}") from None
