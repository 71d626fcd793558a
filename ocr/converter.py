"""Documents to typed :class:`~folioflow.ocr.schema.Document` objects, page by page, with engine routing.

:class:`DocumentConverter` opens a PDF or image, selects pages (``page_range``), routes every page
to the text layer, CPU OCR or a VLM (rules in :mod:`folioflow.ocr.routing`), falls back to the embedded
route when the VLM fails a page, and streams pages out in order (``on_page``). Pages are
converted one at a time; VLM pages go to the engine in windows (at least ``vlm_window``, and twice
the fleet's capacity) converted in the background while embedded pages proceed, so no more than a
window of rendered images is alive at once and the endpoints stay busy.

Only a document that cannot be opened raises (a :class:`~folioflow.ocr.errors.SourceError` subclass);
page failures are data (``Page.status``/``Page.errors``) and the document's status is derived
from its pages.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from folioflow.ocr.engines.base import PageEngine, failed_page
from folioflow.ocr.engines.text_layer import TextLayerAnalysis, TextLayerEngine, analyze_text_layer
from folioflow.ocr.errors import ConfigurationError, FolioflowError, SourceAccessError
from folioflow.ocr.extras import installed, require
from folioflow.ocr.fidelity import FidelityReview
from folioflow.ocr.finish import document_passes, ocr_regions
from folioflow.ocr.guard import DocumentGuard, Inspection, shared_guard
from folioflow.ocr.ids import doc_id_for, sha256_bytes, sha256_file
from folioflow.ocr.pages import PageCache, parse_page_range, validate_page_range
from folioflow.ocr.render import OpenedDocument, PageHandle, RenderLimits, open_document
from folioflow.ocr.routing import Route, choose_route, embedded_route
from folioflow.ocr.schema import Document, DocumentStatus, Page, PageStatus, SourceRef

__all__ = ["ConvertOptions", "DocumentInput", "DocumentConverter"]


class ConvertOptions(BaseModel):
    """How to convert documents.

    ``engine``: routing mode (see :mod:`folioflow.ocr.routing`). ``cpu_engine``: CPU OCR engine name for
    :func:`folioflow.ocr.engines.cpu.get_cpu_engine` (``None`` = its default); ``languages``: tesseract-style
    codes. ``dpi`` / ``max_image_width``: render resolution (dots per inch) and image width cap
    (pixels) handed to OCR/VLM engines that expose a ``dpi`` / ``max_image_width`` attribute
    (``None`` keeps each engine's own). ``page_range``: ``"1-5,9"`` (1-based, ``None`` = all).
    ``max_pages`` / ``max_image_pixels`` / ``max_render_pixels`` / ``allow_truncated``: see
    :class:`~folioflow.ocr.render.RenderLimits`.
    ``vlm_window``: pages handed to the VLM engine per ``convert_pages`` call.
    ``guard``: inspect each document in a time-limited worker process first (:mod:`folioflow.ocr.guard`), so
    a file that crashes or hangs PDFium fails alone (pages that did are ``failed`` with the reason;
    the rest is converted); ``guard_open_timeout_s`` / ``guard_page_timeout_s``: its deadlines.
    ``fidelity``: check every page against independent evidence, re-route failing pages and mark
    them ``partial``/``failed`` with the measured reason (:mod:`folioflow.ocr.fidelity`).
    """

    engine: Literal["auto", "text", "ocr", "vlm"] = "auto"
    cpu_engine: str | None = None
    languages: list[str] = Field(default_factory=lambda: ["eng"])
    dpi: int | None = Field(default=None, ge=36, le=1200)
    max_image_width: int | None = Field(default=None, ge=64)
    page_range: str | None = None
    max_pages: int = Field(default=0, ge=0)
    max_image_pixels: int = 200_000_000
    max_render_pixels: int = 40_000_000
    allow_truncated: bool = False
    vlm_window: int = Field(default=8, ge=1)
    guard: bool = True
    guard_open_timeout_s: float = Field(default=60.0, gt=0)
    guard_page_timeout_s: float = Field(default=30.0, gt=0)
    fidelity: bool = True

    @field_validator("page_range")
    @classmethod
    def _check_range(cls, value: str | None) -> str | None:
        return validate_page_range(value) if value is not None else None

    def limits(self) -> RenderLimits:
        return RenderLimits(max_image_pixels=self.max_image_pixels, max_render_pixels=self.max_render_pixels,
                            max_pages=self.max_pages, allow_truncated=self.allow_truncated)


@dataclass
class DocumentInput:
    """One document to convert: its bytes or local path, where it comes from, and its password."""

    data: bytes | Path
    source: SourceRef
    password: str | None = None


@dataclass
class _Pending:
    number: int
    route: Route
    why: str
    analysis: TextLayerAnalysis | None
    started: float
    handle: PageHandle | None = None


class DocumentConverter:
    """Converts documents with the text layer, a CPU OCR engine and optionally a VLM engine.

    Raises :class:`ConfigurationError` when ``options.engine == "vlm"`` and no ``vlm_engine`` is
    given. ``vlm_engine`` belongs to the caller: :meth:`close` closes only the engines the
    converter built itself (CPU OCR, alternates, its inspection pool), so one VLM engine may serve
    several converters (the API server's, shared by its requests). ``page_cache`` (see :class:`~folioflow.ocr.pages.PageCache`) is consulted before an engine runs
    and fed with every ``ok`` page, keyed by content hash, page number and the engine's cache key.
    """

    def __init__(self, options: ConvertOptions | None = None, vlm_engine: PageEngine | None = None,
                 page_cache: PageCache | None = None):
        self.options = options or ConvertOptions()
        if self.options.engine == "vlm" and vlm_engine is None:
            raise ConfigurationError("engine 'vlm' needs a VLM engine (--ocr-endpoint); none was configured")
        self.vlm_engine = vlm_engine
        self.page_cache = page_cache
        self.text_engine = TextLayerEngine()
        self._cpu: PageEngine | None = None
        self._cpu_lock = threading.Lock()  # flows share one converter between worker threads
        self._alternates: dict[str, PageEngine | None] = {}  # other CPU recognisers, for re-routed pages
        self._guard: DocumentGuard | None = None
        self._inspections: dict[tuple, Inspection] = {}  # the last few, so plan + convert inspect once

    @property
    def cpu_engine(self) -> PageEngine:
        """The CPU OCR engine, created and warmed up on first use. Raises
        :class:`~folioflow.ocr.errors.MissingExtraError` without the ``ocr`` extra (a page routed
        to OCR then fails with that one-line reason)."""
        with self._cpu_lock:
            if self._cpu is None:
                require("ocr", "OCR of scanned pages")
                from folioflow.ocr.engines.cpu import get_cpu_engine

                engine = get_cpu_engine(self.options.cpu_engine, self.options.languages)
                self._configure(engine)
                engine.warm_up()
                self._cpu = engine
            return self._cpu

    def alternate_engine(self, name: str) -> PageEngine | None:
        """The CPU OCR pipeline with recogniser ``name`` (``tesseract`` or ``rapidocr``) for pages
        the fidelity check re-routes, created and warmed up on first use; ``None`` when it does not
        cover the configured languages, cannot start or the ``ocr`` extra is not installed."""
        if not installed("ocr"):
            return None
        from folioflow.ocr.engines.cpu import RapidOcrEngine, TesseractEngine
        from folioflow.ocr.engines.rapid import rapidocr_supports

        with self._cpu_lock:
            if name not in self._alternates:
                engine: PageEngine | None = None
                try:
                    if name == "rapidocr" and rapidocr_supports(self.options.languages):
                        engine = RapidOcrEngine(self.options.languages)
                    elif name == "tesseract":
                        engine = TesseractEngine(self.options.languages)
                    if engine is not None:
                        self._configure(engine)
                        engine.warm_up()
                except FolioflowError:
                    engine = None
                self._alternates[name] = engine
            return self._alternates[name]

    def _configure(self, engine: PageEngine) -> None:
        if self.options.dpi is not None and hasattr(engine, "dpi"):
            engine.dpi = self.options.dpi
        if self.options.max_image_width is not None and hasattr(engine, "max_image_width"):
            engine.max_image_width = self.options.max_image_width

    def warm_up(self) -> None:
        """Load the engines this configuration will use (CPU OCR unless ``engine="text"``/``"vlm"``;
        with ``engine="auto"`` only when the ``ocr`` extra is installed, else scanned pages fail
        naming it). Raises :class:`~folioflow.ocr.errors.MissingExtraError` for ``engine="ocr"``
        without the ``ocr`` extra."""
        auto_cpu = self.options.engine == "auto" and not self.vlm_engine and installed("ocr")
        if self.options.engine == "ocr" or auto_cpu:
            _ = self.cpu_engine
        if self.vlm_engine is not None:
            self._configure(self.vlm_engine)
            self.vlm_engine.warm_up()

    def close(self) -> None:
        """Close the engines this converter built (not ``vlm_engine``: its owner closes it)."""
        for engine in (self._cpu, *self._alternates.values()):
            if engine is not None:
                engine.close()
        if self._guard is not None:
            self._guard.close()

    @property
    def guard(self) -> DocumentGuard:
        """The inspection pool: the process-wide one for default deadlines, else this converter's."""
        o = self.options
        if o.guard_open_timeout_s == 60.0 and o.guard_page_timeout_s == 30.0:
            return shared_guard()
        if self._guard is None:
            self._guard = DocumentGuard(open_timeout_s=o.guard_open_timeout_s, page_timeout_s=o.guard_page_timeout_s)
        return self._guard

    def inspect(self, item: DocumentInput, content_hash: str | None = None) -> Inspection:
        """Open ``item`` in a guard worker and check the pages ``options.page_range`` selects
        (see :mod:`folioflow.ocr.guard`). Returns the :class:`~folioflow.ocr.guard.Inspection` (page count, unsafe
        pages); raises the :class:`~folioflow.ocr.errors.SourceError` the document deserves. With
        ``options.guard`` off, opens it in-process instead (no unsafe pages are found)."""
        data = item.data
        if isinstance(data, Path) and not data.is_file():
            raise SourceAccessError(f"not found: {data}" if not data.exists() else f"not a file: {data}")
        if not self.options.guard:
            with open_document(data, password=item.password, limits=self.options.limits()) as opened:
                return Inspection(mime_type=opened.mime_type, page_count=opened.page_count, repairs=opened.repairs)
        if content_hash is None:
            content_hash = sha256_file(data) if isinstance(data, Path) else sha256_bytes(data)
        key = (content_hash, item.password, self.options.page_range, self.options.limits())
        found = self._inspections.get(key)
        if found is not None:
            return found
        result = self.guard.inspect(data, password=item.password, limits=self.options.limits(),
                                    page_range=self.options.page_range)
        while len(self._inspections) >= 8:
            self._inspections.pop(next(iter(self._inspections)))
        self._inspections[key] = result
        return result

    # -- one document ---------------------------------------------------------------------------
    def convert(self, item: DocumentInput, on_page: Callable[[Page], None] | None = None) -> Document:
        """Convert ``item``; calls ``on_page`` with each finished page, in page order.

        Raises :class:`~folioflow.ocr.errors.SourceError` (a subclass with a one-line reason) when the
        document cannot be opened: missing or unreadable file, unsupported format, encrypted,
        corrupt, over a limit.
        """
        data = item.data
        if isinstance(data, Path):
            if not data.is_file():
                raise SourceAccessError(f"not found: {data}" if not data.exists() else f"not a file: {data}")
            try:
                content_hash = sha256_file(data)
            except OSError as exc:
                raise SourceAccessError(f"cannot read {data.name}: {exc.strerror or exc}") from exc
        else:
            content_hash = sha256_bytes(data)
        started = time.perf_counter()
        inspection = self.inspect(item, content_hash) if self.options.guard else None
        unsafe = inspection.unsafe if inspection is not None else {}
        with open_document(data, password=item.password, limits=self.options.limits()) as opened:
            numbers = parse_page_range(self.options.page_range, opened.page_count)
            document = Document(doc_id=doc_id_for(item.source.uri), content_hash=content_hash, source=item.source,
                                mime_type=opened.mime_type, page_count=opened.page_count,
                                metadata=dict(opened.metadata))
            if not numbers:
                document.errors.append(f"page range {self.options.page_range!r} selects no page of a "
                                       f"{opened.page_count}-page document")
            if opened.repairs:
                document.metadata["repairs"] = list(opened.repairs)
            for page in self._pages(opened, numbers, content_hash, unsafe):
                document.pages.append(page)
                if on_page is not None:
                    on_page(page)
            # heading levels over the whole document, clause titles, furniture and duplicates
            document_passes(document, opened if self.options.fidelity else None)
        document.status = document.compute_status() if document.pages else DocumentStatus.FAILED
        engines = Counter(p.engine for p in document.pages if p.status != PageStatus.FAILED)
        document.metadata["routing"] = {
            "pages_per_engine": dict(sorted(engines.items())),
            "fallback_pages": sum(1 for p in document.pages if p.status == PageStatus.FALLBACK),
            "partial_pages": sum(1 for p in document.pages if p.status == PageStatus.PARTIAL),
            "rerouted_pages": sum(1 for p in document.pages if p.fidelity is not None and p.fidelity.rerouted),
            "failed_pages": sum(1 for p in document.pages if p.status == PageStatus.FAILED),
            "seconds": round(time.perf_counter() - started, 3),
        }
        return document

    # -- routing ----------------------------------------------------------------------------------
    def _pages(self, doc: OpenedDocument, numbers: list[int], content_hash: str,
               unsafe: dict[int, str] | None = None) -> Iterator[Page]:
        """Yield one page per number, in order. VLM-routed pages are collected into windows of
        ``max(vlm_window, 2 * engine capacity)`` and converted in a background thread while the
        embedded pages in between are converted here, so neither waits for the other; a reorder
        buffer restores page order (it holds finished ``Page`` objects only, never images)."""
        capacity = int(getattr(self.vlm_engine, "capacity", 0) or 0) if self.vlm_engine is not None else 0
        size = max(self.options.vlm_window, 2 * capacity)
        done: dict[int, Page] = {}
        position = 0
        windows: list[Future] = []

        def ready() -> Iterator[Page]:
            nonlocal position
            for future in [f for f in windows if f.done()]:
                windows.remove(future)
                done.update((page.number, page) for page in future.result())
            while position < len(numbers) and numbers[position] in done:
                yield done.pop(numbers[position])
                position += 1

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="vlm-window") as pool:
            window: list[_Pending] = []
            for number in numbers:
                if unsafe and number in unsafe:  # crashed or hung the guard: never loaded here
                    done[number] = Page(number=number, width=0, height=0, engine="guard", status=PageStatus.FAILED,
                                        errors=[unsafe[number]])
                    yield from ready()
                    continue
                pending = self._route(doc, number)
                if isinstance(pending, Page):
                    done[number] = pending
                elif pending.route == "vlm":
                    window.append(pending)
                    if len(window) >= size:
                        windows.append(pool.submit(list, self._run_vlm(doc, window, content_hash)))  # runs in the pool
                        window = []
                else:
                    done[number] = self._run_embedded(doc, pending, content_hash)
                yield from ready()
            if window:
                windows.append(pool.submit(list, self._run_vlm(doc, window, content_hash)))
            for future in list(windows):
                future.result()
            yield from ready()

    def _route(self, doc: OpenedDocument, number: int) -> _Pending | Page:
        started = time.perf_counter()
        mode = self.options.engine
        analysis = handle = None
        if mode in ("auto", "text"):
            try:
                handle = doc.page(number)
                analysis = analyze_text_layer(handle)
            except FolioflowError as exc:
                if mode == "text":
                    return self._failed(doc, number, "text", str(exc), started)
        route, why = choose_route(mode, analysis.assessment if analysis else None, self.vlm_engine is not None)
        return _Pending(number, route, why, analysis, started, handle if route == "text" else None)

    def _failed(self, doc: OpenedDocument, number: int, engine: str, reason: str, started: float) -> Page:
        try:
            page = failed_page(doc.page(number), engine, reason)
        except FolioflowError as exc:
            page = Page(number=number, width=0, height=0, engine=engine, status=PageStatus.FAILED, errors=[reason, str(exc)])
        page.seconds = time.perf_counter() - started
        return page

    def _engine(self, route: Route) -> PageEngine:
        if route == "text":
            return self.text_engine
        if route == "vlm":
            assert self.vlm_engine is not None
            return self.vlm_engine
        return self.cpu_engine

    def _cached(self, content_hash: str, number: int, engine: PageEngine) -> Page | None:
        if self.page_cache is None:
            return None
        page = self.page_cache.get(content_hash, number, engine.cache_key)
        if page is not None:
            page.attributes["cache"] = "hit"
        return page

    def _store(self, content_hash: str, page: Page, engine: PageEngine) -> None:
        if self.page_cache is not None and page.status == PageStatus.OK:
            self.page_cache.put(content_hash, page.number, engine.cache_key, page)

    def _run_embedded(self, doc: OpenedDocument, pending: _Pending, content_hash: str) -> Page:
        """Convert one page with the text layer or CPU OCR (route ``text``/``ocr``)."""
        try:
            engine = self._engine(pending.route)
        except FolioflowError as exc:  # CPU engine unavailable or misconfigured
            return self._failed(doc, pending.number, pending.route, str(exc), pending.started)
        page = self._cached(content_hash, pending.number, engine)
        if page is None:
            if pending.route == "text":
                try:
                    page = self.text_engine.convert_page(pending.handle or doc.page(pending.number), pending.analysis)
                except FolioflowError as exc:
                    return self._failed(doc, pending.number, "text", str(exc), pending.started)
            else:
                page = next(iter(engine.convert_pages(doc, [pending.number])))
            self._store(content_hash, page, engine)
        page.attributes.setdefault("route", pending.route)
        page.attributes.setdefault("route_reason", pending.why)
        if pending.analysis is not None:
            page.attributes.setdefault("text_layer", pending.analysis.assessment.as_dict())
        if self.options.fidelity:
            page = self._review(doc, pending, page, content_hash)
        page.seconds = time.perf_counter() - pending.started
        return page

    def _review(self, doc: OpenedDocument, pending: _Pending, page: Page, content_hash: str) -> Page:
        """The fidelity check of one embedded page (:mod:`folioflow.ocr.fidelity`), with the
        converter's engines (and page cache) for re-routed pages and image regions."""

        def reroute(route: str, number: int) -> Page | None:
            try:
                engine = self.cpu_engine if route == "ocr" else self.alternate_engine(route.split(":", 1)[1])
            except FolioflowError:
                return None
            if engine is None:
                return None
            found = self._cached(content_hash, number, engine)
            if found is None:
                found = next(iter(engine.convert_pages(doc, [number])))
                self._store(content_hash, found, engine)
            found.attributes["route"] = route
            return found

        def region_ocr(number: int, regions: list[tuple[float, float, float, float]]):
            try:
                cpu = self.cpu_engine
            except FolioflowError:
                return None
            second = cpu.second_opinion() if hasattr(cpu, "second_opinion") else None
            return ocr_regions(getattr(cpu, "primary", cpu), doc.page(number), regions, second=second,
                               languages=self.options.languages)

        return FidelityReview(self.options.languages, reroute, region_ocr).review(page, pending.route, pending.analysis)

    def _run_vlm(self, doc: OpenedDocument, window: list[_Pending], content_hash: str) -> Iterator[Page]:
        """Convert a window of VLM-routed pages; failed pages fall back to the embedded route."""
        if not window:
            return
        assert self.vlm_engine is not None
        results: dict[int, Page] = {}
        todo = []
        for pending in window:
            cached = self._cached(content_hash, pending.number, self.vlm_engine)
            if cached is not None:
                results[pending.number] = cached
            else:
                todo.append(pending.number)
        if todo:
            for page in self.vlm_engine.convert_pages(doc, todo):
                results[page.number] = page
                self._store(content_hash, page, self.vlm_engine)
        for pending in window:
            page = results.get(pending.number) or self._failed(
                doc, pending.number, self.vlm_engine.name, "VLM engine returned no page", pending.started)
            if page.status == PageStatus.FAILED:
                page = self._fallback(doc, pending, page, content_hash)
            else:
                if self.options.fidelity:
                    page = FidelityReview(self.options.languages, lambda route, number: None).review(page, "vlm")
                page.attributes.setdefault("route", "vlm")
                page.attributes.setdefault("route_reason", pending.why)
                if page.seconds is None:
                    page.seconds = time.perf_counter() - pending.started
            yield page

    def _fallback(self, doc: OpenedDocument, pending: _Pending, vlm_page: Page, content_hash: str) -> Page:
        reason = "; ".join(vlm_page.errors) or "VLM engine failed the page"
        if pending.analysis is None:
            try:
                pending.analysis = analyze_text_layer(doc.page(pending.number))
            except FolioflowError:
                pending.analysis = None
        route = embedded_route(pending.analysis.assessment if pending.analysis else None)
        page = self._run_embedded(doc, _Pending(pending.number, route, "fallback after VLM failure",
                                                pending.analysis, pending.started), content_hash)
        if page.status == PageStatus.OK:  # a partial page stays partial (fallback_reason says it fell back)
            page.status = PageStatus.FALLBACK
        else:
            page.errors = [f"VLM: {reason}"] + page.errors
        page.fallback_reason = reason
        page.attributes["vlm_engine"] = vlm_page.engine
        return page
