"""The interface every page engine implements (text layer, CPU OCR, VLM client).

Engines have cheap constructors; heavy loading (models, tessdata, HTTP clients) happens in
:meth:`PageEngine.warm_up`, called once before the first page. An engine never raises for a bad
page from :meth:`PageEngine.convert_pages`: it returns a :class:`~folioflow.ocr.schema.Page` whose ``status``
is ``failed`` and whose ``errors`` say why. :meth:`PageEngine.convert_page` may raise
:class:`~folioflow.ocr.errors.OcrError`; the default :meth:`convert_pages` turns that into a failed page.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence

from folioflow.ocr.errors import FolioflowError
from folioflow.ocr.render import OpenedDocument, PageHandle
from folioflow.ocr.schema import Page, PageStatus

__all__ = ["DEFAULT_CPU_ENGINE", "PageEngine", "failed_page"]

#: the CPU OCR engine used when none is configured (one of folioflow.ocr.engines.cpu.CPU_ENGINES); here,
#: not in that module, so that settings and cache keys name it without importing OpenCV (the ``ocr`` extra)
DEFAULT_CPU_ENGINE = "auto"


def failed_page(page: PageHandle, engine: str, reason: str) -> Page:
    """A ``failed`` page carrying ``reason`` (no content), sized like ``page``."""
    return Page(
        number=page.number,
        width=page.width,
        height=page.height,
        engine=engine,
        status=PageStatus.FAILED,
        errors=[reason],
    )


class PageEngine(ABC):
    """Turns pages into structured Markdown + blocks.

    Subclasses set :attr:`name` (recorded as ``Page.engine``) and implement :meth:`convert_page`.
    Engines that batch (VLM clients) override :meth:`convert_pages`.
    """

    #: Engine name recorded in ``Page.engine`` (e.g. ``"text"``, ``"tesseract"``, ``"vlm:chandra"``).
    name: str = "engine"

    def warm_up(self) -> None:  # noqa: B027 - an optional hook: engines without models keep the no-op
        """Load models/data. Idempotent. Raises :class:`~folioflow.ocr.errors.EngineUnavailableError`."""

    @property
    def cache_key(self) -> str:
        """Identity of this engine's output for the per-page OCR cache: engine name, model and
        prompt/version. Two engines with the same key must produce interchangeable pages."""
        return self.name

    @abstractmethod
    def convert_page(self, page: PageHandle) -> Page:
        """Convert one page. May raise :class:`~folioflow.ocr.errors.OcrError` (or any
        :class:`~folioflow.ocr.errors.FolioflowError`) for a page it cannot convert."""

    def convert_pages(self, doc: OpenedDocument, numbers: Sequence[int]) -> Iterator[Page]:
        """Convert the given 1-based page numbers of ``doc``; yields exactly one page per number,
        in the given order. Never raises for a single bad page."""
        for number in numbers:
            started = time.perf_counter()
            try:
                handle = doc.page(number)
            except FolioflowError as exc:
                yield Page(number=number, width=0, height=0, engine=self.name,
                           status=PageStatus.FAILED, errors=[str(exc)])
                continue
            try:
                result = self.convert_page(handle)
            except FolioflowError as exc:
                result = failed_page(handle, self.name, str(exc))
            except Exception as exc:  # noqa: BLE001 - an engine bug must not lose the rest of the document
                result = failed_page(handle, self.name, f"page {number}: {type(exc).__name__}: {exc}")
            if result.seconds is None:
                result.seconds = time.perf_counter() - started
            yield result

    def close(self) -> None:  # noqa: B027 - an optional hook: engines holding nothing keep the no-op
        """Release resources (clients, worker pools)."""
