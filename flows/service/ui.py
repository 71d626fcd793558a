"""The web UI served by the API process (``/ui``), and the two page routes it reads.

The UI is server-rendered page shells (Jinja2 templates under ``templates/``) plus one vanilla
script (``static/app.js``) that calls the JSON API with ``fetch``: uploads and job progress
(``POST /v1/documents``, ``GET /v1/jobs/{id}``), the document list (``GET /v1/documents``), the
page view and search (``POST /v1/query``). Because every call goes through the script, an API key
typed into the header's key field (kept in the tab's ``sessionStorage``) is sent as
``Authorization: Bearer <key>`` on each request, images included (fetched as blobs); the shells
themselves hold no data and no secret. Nothing is loaded from outside the app (no CDN, no build
step): see ``docs/ui.md``.

Routes added to the API (they need the same key as the rest of ``/v1``):

- ``GET /v1/documents/{doc_id}/pages/{number}``: a :class:`PageView`: the page's size in points,
  status, engine and errors, its Markdown rendered to sanitized HTML
  (:func:`folioflow.ocr.export.page_html`, from the converted Document JSON the ingest kept in
  ``data_dir/documents``) and the document's chunks on that page with their bounding boxes.
- ``GET /v1/documents/{doc_id}/pages/{number}/image?dpi=N``: the page rendered to PNG from the
  source file (:mod:`folioflow.ocr.render`), when the source is a local file.
"""

import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, Field

from folioflow.flows.queries import ChunkRow, document_chunks

__all__ = ["ChunkView", "PageView", "mount_ui"]

_HERE = Path(__file__).parent
#: Resolution bounds of the page image route (dots per inch).
MIN_DPI, MAX_DPI = 24, 300
#: Longest side of a rendered page image, pixels (a poster-sized page is scaled down to this).
MAX_IMAGE_SIDE = 3000
#: Content-Security-Policy of the UI's pages: only the app's own script, styles and images
#: (``blob:``: page images fetched with the API key), no inline script, no framing.
UI_CSP = ("default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
          "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


class ChunkView(ChunkRow):
    """One chunk of a document as the page view shows it: a :class:`~folioflow.flows.queries.ChunkRow`
    and ``bboxes``, its boxes on the page asked for, ``[x0, y0, x1, y1]`` in page points (top-left
    origin, the page's ``width`` x ``height``)."""

    bboxes: list[list[float]] = Field(default_factory=list)


class PageView(BaseModel):
    """``GET /v1/documents/{doc_id}/pages/{number}``: one page of an indexed document. ``html``:
    its Markdown rendered to sanitized HTML (None when the converted document was not kept:
    ``keep_documents`` off); ``width``/``height``: points (display space, rotation applied)."""

    doc_id: str
    number: int
    pages: int
    width: float
    height: float
    status: str | None = None
    engine: str | None = None
    errors: list[str] = Field(default_factory=list)
    html: str | None = None
    chunks: list[ChunkView] = Field(default_factory=list)


class _DocumentCache:
    """The last few converted documents read from ``data_dir/documents`` (a page view loads one
    page after another of the same document), keyed by path, modification time and size."""

    def __init__(self, size: int = 4):
        self.size = size
        self._items: OrderedDict[tuple[str, int, int], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path) -> Any:
        from folioflow.ocr.schema import Document

        try:
            stat = path.stat()
        except OSError:
            return None
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        document = Document.model_validate_json(path.read_bytes())
        with self._lock:
            self._items[key] = document
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return document


def _source_path(record: Any) -> Path:
    """The local source file of ``record``; 404 when it is not a local file or is gone."""
    from folioflow.flows.pipeline import local_path

    local = local_path(record.uri)
    if local is None:
        raise HTTPException(404, "the document's source is not a local file: its pages cannot be rendered here")
    path = Path(local)
    if not path.is_file():
        raise HTTPException(404, "the document's source file is no longer on the server")
    return path


def _chunks_on(payloads: list[dict[str, Any]], number: int) -> list[ChunkView]:
    """The chunks of page ``number`` (:func:`~folioflow.flows.queries.document_chunks`), each with its boxes there."""
    chunks = []
    for payload in payloads:
        for row in document_chunks([payload], number):
            boxes = [[float(v) for v in box[1:5]] for box in (payload.get("metadata") or {}).get("bboxes") or []
                     if len(box) == 5 and int(box[0]) == number]
            chunks.append(ChunkView(**row.model_dump(), bboxes=boxes))
    return sorted(chunks, key=lambda c: c.index)


def mount_ui(app: FastAPI, service: Any, auth: Callable[..., Any], find: Callable[[Any, str], Any]) -> None:
    """Add the web UI (``/ui``, ``/ui/static``) and the page routes to ``app``. ``service``: the
    app's :class:`~folioflow.flows.service.app.Service`; ``auth``: the API's caller dependency
    (bearer key check); ``find(caller, doc_id)``: the caller's visible document record or
    :class:`~folioflow.ocr.errors.DocumentLookupError` (404)."""
    templates = Jinja2Templates(directory=str(_HERE / "templates"))
    app.mount("/ui/static", StaticFiles(directory=str(_HERE / "static")), name="ui-static")
    documents = _DocumentCache()
    Auth = Annotated[Any, Depends(auth)]

    def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        response = templates.TemplateResponse(request, name, {"page": name.removesuffix(".html"), **context},
                                              status_code=status_code)
        response.headers["Content-Security-Policy"] = UI_CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    @app.get("/ui", include_in_schema=False)
    def ui_home() -> RedirectResponse:
        return RedirectResponse("/ui/documents")

    @app.get("/ui/upload", response_class=HTMLResponse, include_in_schema=False)
    def ui_upload(request: Request) -> HTMLResponse:
        return page(request, "upload.html")

    @app.get("/ui/documents", response_class=HTMLResponse, include_in_schema=False)
    def ui_documents(request: Request) -> HTMLResponse:
        return page(request, "documents.html")

    @app.get("/ui/documents/{doc_id}", response_class=HTMLResponse, include_in_schema=False)
    def ui_document(request: Request, doc_id: str) -> HTMLResponse:
        """The document page's shell, or a 404 page saying that no document matches ``doc_id``.

        The key is resolved as ``GET /v1/documents/{doc_id}`` resolves it (doc id, unique prefix,
        recorded path or file name) only where every caller may see every document: a server
        without API keys. With keys, the shell answers 200 for any key, known or not: a page load
        carries no key (the page's script sends it with each API call), so the server cannot tell
        whose tenant is asking, and a 404 here would tell anyone without a key whether a document
        of that id, prefix or file name exists. The script then asks ``GET /v1/documents/{doc_id}``
        with the key and shows its 404 ("No such document" and the API's reason). A key that
        several documents share also gets the shell: the script shows the API's 400 listing them.
        docs/ui.md says the same."""
        from folioflow.ocr.errors import AmbiguousDocumentError, DocumentLookupError

        if not service.api.keys:
            try:
                find(auth(request, None), doc_id)  # keyless: the caller that sees every document
            except AmbiguousDocumentError:
                pass
            except DocumentLookupError:
                return page(request, "document.html", status_code=404, doc_id=doc_id, missing=True)
        return page(request, "document.html", doc_id=doc_id)

    @app.get("/ui/search", response_class=HTMLResponse, include_in_schema=False)
    def ui_search(request: Request) -> HTMLResponse:
        return page(request, "search.html")

    @app.get("/v1/documents/{doc_id:path}/pages/{number}", response_model=PageView, tags=["documents"])
    def get_page(doc_id: str, number: int, who: Auth) -> PageView:
        """One page of an indexed document: size in points, status, engine, errors, its Markdown as
        sanitized HTML and the chunks on it with their bounding boxes (page points, top-left origin)."""
        from folioflow.ocr.export import page_html

        record = find(who, doc_id)
        if not 1 <= number <= max(record.pages, 0):
            raise HTTPException(404, f"no page {number}: the document has {record.pages} page(s)")
        from folioflow.ocr.schema import kept_document_path

        document = documents.get(kept_document_path(service.settings.documents_dir, record.doc_id))
        converted = None
        if document is not None:
            converted = next((p for p in document.pages if p.number == number), None)
        if converted is not None:
            width, height = converted.width, converted.height
            view = PageView(doc_id=record.doc_id, number=number, pages=record.pages, width=width, height=height,
                            status=converted.status.value, engine=converted.engine, errors=list(converted.errors),
                            html=page_html(converted))
        else:  # the converted form was not kept: the page's size from the source itself
            from folioflow.ocr.render import open_document

            with open_document(_source_path(record)) as opened:
                handle = opened.page(number)
                width, height = handle.width, handle.height
                handle.close()
            engine = record.engines[number - 1] if number <= len(record.engines) else None
            view = PageView(doc_id=record.doc_id, number=number, pages=record.pages, width=width, height=height,
                            engine=engine)
        view.chunks = _chunks_on(service.store.payloads(record.doc_id), number)
        return view

    @app.get("/v1/documents/{doc_id:path}/pages/{number}/image", tags=["documents"], response_class=Response,
             responses={200: {"content": {"image/png": {"schema": {"type": "string", "format": "binary"}}},
                              "description": "The page as PNG"}})
    def get_page_image(doc_id: str, number: int, who: Auth,
                       dpi: Annotated[int, Query(ge=MIN_DPI, le=MAX_DPI, description="Resolution, dots per inch")] = 100
                       ) -> Response:
        """The page rendered to PNG at ``dpi`` from the document's source file (a local file only;
        the longer side capped at 3000 px)."""
        from folioflow.ocr.render import open_document

        record = find(who, doc_id)
        if not 1 <= number <= max(record.pages, 0):
            raise HTTPException(404, f"no page {number}: the document has {record.pages} page(s)")
        with open_document(_source_path(record)) as opened:
            if number > opened.page_count:
                raise HTTPException(404, f"no page {number}: the source file has {opened.page_count} page(s)")
            handle = opened.page(number)
            image = handle.render(dpi=dpi, max_side=MAX_IMAGE_SIDE)
            handle.close()
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=False)
        return Response(out.getvalue(), media_type="image/png", headers={"Cache-Control": "private, no-cache"})
