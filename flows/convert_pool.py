"""Page conversion across processes: all cores of one machine for one document.

PDFium is not thread-safe (``folioflow.ocr.render.PDFIUM_LOCK`` serialises every call), so threads convert
one text-layer page at a time however many cores there are. :class:`ConvertPool` runs a
:class:`~folioflow.ocr.converter.DocumentConverter` in each of ``processes`` worker processes (``spawn``:
the flow process holds torch and Prefect threads, which ``fork`` would copy in an unsafe state)
and converts a document as page ranges spread over them; every worker has its own PDFium and its
own CPU OCR engine, and writes finished pages to the shared per-page cache, so a killed run keeps
every page a worker finished. Pages come back in page order.

Only embedded routes (text layer, CPU OCR) run here: with a VLM engine the flow converts in-process
(the VLM client keeps its endpoints busy by itself), and the embedded Qdrant store never leaves
the flow process.
"""

from __future__ import annotations

import math
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.finish import document_passes
from folioflow.ocr.render import RenderLimits, open_document
from folioflow.ocr.schema import Document, DocumentStatus, Page, PageStatus

__all__ = ["ConvertPool", "page_ranges"]

_CONVERTER: DocumentConverter | None = None


def _init_worker(options: ConvertOptions, cache_root: str | None) -> None:
    global _CONVERTER
    import os

    os.environ.setdefault("OMP_THREAD_LIMIT", "1")  # one tesseract thread per process
    from folioflow.flows.cache import PageCache

    _CONVERTER = DocumentConverter(options, page_cache=PageCache(cache_root) if cache_root else None)


def _convert_range(item: DocumentInput, page_range: str) -> Document:
    assert _CONVERTER is not None, "worker not initialised"
    base = _CONVERTER.options
    _CONVERTER.options = base.model_copy(update={"page_range": page_range})
    try:
        return _CONVERTER.convert(item)
    finally:
        _CONVERTER.options = base


def page_ranges(page_count: int, workers: int, max_span: int = 8) -> list[str]:
    """Split pages ``1..page_count`` into contiguous ranges (``"a-b"``) for ``workers`` processes:
    about four ranges per worker for load balance, at most ``max_span`` pages each (so progress
    and the cache advance steadily), at least one page each."""
    if page_count <= 0:
        return []
    span = max(1, min(max_span, math.ceil(page_count / (4 * max(1, workers)))))
    return [f"{start}-{min(start + span - 1, page_count)}" for start in range(1, page_count + 1, span)]


def merge(parts: list[Document], started: float, item: DocumentInput | None = None,
          limits: RenderLimits | None = None) -> Document:
    """One :class:`Document` from converted page ranges of the same source (in range order).
    ``item``: the source, opened again only when the duplicate-content check needs page images
    (:func:`folioflow.ocr.finish.document_passes`)."""
    head = parts[0]
    pages = sorted((p for part in parts for p in part.pages), key=lambda p: p.number)
    errors = [e for part in parts for e in part.errors]
    document = head.model_copy(update={"pages": pages, "errors": errors})
    opener = None
    if item is not None:
        opener = partial(open_document, item.data, password=item.password, limits=limits)
    # each part judged its headings, clauses and furniture alone: judge them over the whole document,
    # as one converter would
    document_passes(document, opener)
    document.status = document.compute_status() if pages else DocumentStatus.FAILED
    engines = Counter(p.engine for p in pages if p.status != PageStatus.FAILED)
    document.metadata["routing"] = {
        "pages_per_engine": dict(sorted(engines.items())),
        "fallback_pages": sum(1 for p in pages if p.status == PageStatus.FALLBACK),
        "partial_pages": sum(1 for p in pages if p.status == PageStatus.PARTIAL),
        "rerouted_pages": sum(1 for p in pages if p.fidelity is not None and p.fidelity.rerouted),
        "failed_pages": sum(1 for p in pages if p.status == PageStatus.FAILED),
        "seconds": round(time.perf_counter() - started, 3),
        "processes": len(parts),
    }
    return document


class ConvertPool:
    """A pool of ``processes`` converter processes (started on first use, stopped by
    :meth:`close`). ``cache_root``: the per-page cache every worker reads and writes."""

    def __init__(self, options: ConvertOptions, processes: int, cache_root: str | None):
        self.options, self.processes, self.cache_root = options, processes, cache_root
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.processes, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_init_worker, initargs=(self.options, self.cache_root))
        return self._pool

    def convert(self, item: DocumentInput, page_count: int, on_page: Callable[[Page], None] | None = None) -> Document:
        """Convert ``item`` (``page_count`` pages, as opened by the caller) across the pool.

        ``item.data`` should be a :class:`~pathlib.Path` (each worker opens the file itself;
        bytes are pickled to every worker). Raises what :meth:`DocumentConverter.convert` raises
        (:class:`~folioflow.ocr.errors.SourceError`) and ``BrokenProcessPool`` when a worker died."""
        started = time.perf_counter()
        selected = self.options.page_range
        ranges = page_ranges(page_count, self.processes) if selected is None else [selected]
        futures: list[Future] = [self._executor().submit(_convert_range, item, r) for r in ranges]
        parts = []
        try:
            for future in futures:  # in range order, so on_page sees pages in page order
                part = future.result()
                parts.append(part)
                if on_page is not None:
                    for page in part.pages:
                        on_page(page)
        except BrokenProcessPool:
            broken, self._pool = self._pool, None  # the next attempt starts fresh processes
            if broken is not None:
                broken.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            for future in futures:
                future.cancel()
        return merge(parts, started, item if self.options.fidelity else None, self.options.limits())

    def close(self) -> None:
        """Stop the worker processes (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def spool(data: bytes, folder: Path, name: str) -> Path:
    """Write ``data`` to ``folder/name`` (so pool workers open a file instead of receiving bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path
