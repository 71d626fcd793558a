"""The FastAPI app: :func:`create_app` (see ``docs/service.md`` for the endpoints and settings).

One process: the lifespan loads the embedder once (the collection's model, else the settings'),
opens the store once and starts the ingest job worker; searches, listings and ingest runs all use
those (:class:`~folioflow.flows.pipeline.Shared`). Handlers hold no pipeline logic: search and
listing are :mod:`folioflow.flows.queries` (what ``folioflow query`` / ``status`` run), ingestion is
:func:`folioflow.flows.ingest.run_ingest`, OCR is :class:`~folioflow.ocr.converter.DocumentConverter`.

Errors: every deliberate error is a 4xx (or 503 when the store is unreachable) with a JSON body
``{"detail": "one-line reason"}``; an unexpected exception is logged and answered 500 with
``{"detail": "internal error"}``, never a trace. API keys never appear in logs or answers.
"""

import hmac
import json
import logging
import re
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from fastapi import Depends, FastAPI, HTTPException, Query, Request, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.body_limit import RequestBodyLimitMiddleware

from folioflow.flows.queries import (
    API_FILTER_NAMES,
    ChunkRow,
    IndexStatus,
    QueryHit,
    check_filters,
    index_status,
    resolve_document,
    search_index,
)
from folioflow.flows.service.client import announce
from folioflow.flows.service.config import ApiSettings
from folioflow.flows.service.jobs import JobQueue, JobTable, OrchestratorError, PrefectIngest
from folioflow.flows.service.models import (
    DeleteResult,
    DocumentDetail,
    ErrorBody,
    Health,
    IngestPath,
    Job,
    OcrPage,
    OcrRequest,
    OcrResult,
    QueryRequest,
    ReindexRequest,
    UploadedFile,
)
from folioflow.flows.settings import Settings
from folioflow.ocr.errors import (
    AmbiguousDocumentError,
    CollectionNotFoundError,
    ConfigurationError,
    DocumentLookupError,
    EngineUnavailableError,
    FolioflowError,
    ResourceLimitError,
    SourceAccessError,
    SourceError,
    StoreError,
    TenancyError,
)
from folioflow.ocr.schema import kept_document_path

__all__ = ["LockedStore", "Service", "create_app"]

log = logging.getLogger(__name__)

#: Version of the HTTP API (the OpenAPI ``info.version``; bumped when an endpoint changes incompatibly).
API_VERSION = "1"
#: Tenant names the API accepts (they name upload folders).
TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Source name recorded on uploaded documents (``folioflow status`` groups them under it).
UPLOAD_SOURCE = "upload"
#: Where the scripts, styles and icon of /docs and /redoc are served (fastapi-offline's files).
DOCS_STATIC = "/docs-static"
#: The job table's file in the data directory (unless the ``jobs_db`` setting names another).
JOBS_FILE = "api-jobs.sqlite"
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 413, 415, 422)}


class LockedStore:
    """A :class:`~folioflow.indexing.store.ChunkStore` whose methods run one at a time (an
    ``RLock``): the server's request threads search while the job worker writes, and the embedded
    backends are not documented as safe for concurrent use from several threads."""

    def __init__(self, store: Any):
        self._store = store
        self._lock = threading.RLock()

    @property
    def tenancy(self) -> bool:
        with self._lock:
            return bool(self._store.tenancy)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value):
            return value

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return value(*args, **kwargs)

        return locked


@dataclass
class Caller:
    """Who sent a request: the API key's tenant (None: not bound) and label."""

    tenant: str | None = None
    name: str | None = None


class Service:
    """What the app holds between requests: settings, the embedder, the store, the
    jobs and the metrics registry. Built by the lifespan (:meth:`start`), closed at shutdown."""

    def __init__(self, settings: Settings, api: ApiSettings):
        self.settings = settings
        self.api = api
        self.embedder: Any = None
        self.store: Any = None
        self.jobs: JobQueue | None = None
        self._starting = threading.Lock()
        self._vlm: Any = None
        self._vlm_lock = threading.Lock()
        self._users = 0
        # absolute (made so once, against the working directory at start): a job's paths, its
        # report's sources and its errors name the uploaded files wherever the reader stands
        self._upload_dir = Path(api.upload_dir or settings.data_dir / "uploads").expanduser().resolve()
        #: Held while an upload is renamed into place and while a clean-up checks and deletes one, so
        #: that a clean-up never deletes a file that an upload of the same name put there meanwhile.
        self.upload_lock = threading.Lock()
        #: Uploaded files renamed into place whose job is not queued yet (under :attr:`upload_lock`).
        self.uploading: dict[Path, int] = {}
        self.registry = CollectorRegistry()
        self.requests = Counter("folioflow_http_requests_total", "HTTP requests answered",
                                ("method", "route", "status"), registry=self.registry)
        self.latency = Histogram("folioflow_http_request_duration_seconds", "HTTP request latency, seconds",
                                 ("method", "route"), registry=self.registry,
                                 buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
        self.registry.register(_IndexCollector(self))

    @property
    def upload_dir(self) -> Path:
        """Where uploads are kept: the ``upload_dir`` setting or ``<data_dir>/uploads``, absolute
        and symlink-free (resolved when the service is built), as ingest records a file's URI."""
        return self._upload_dir

    def start(self) -> None:
        """Open the store, load the embedder (the collection's model when the collection exists)
        and the glossary, start the job worker, once however many lifespans start. Raises
        :class:`FolioflowError` when it cannot."""
        with self._starting:
            self._users += 1
            if self._users > 1:  # a second lifespan over the same app (a test client beside a fuzzer)
                return
            try:
                self._start()
            except BaseException:
                self._users -= 1
                raise

    def _start(self) -> None:
        from folioflow.indexing.embedder import Embedder
        from folioflow.indexing.store import open_store

        s = self.settings
        self.store = LockedStore(open_store(s.store_settings()))
        info = self.store.collection_info() or {}
        model = s.embedding_model or info.get("model")
        self.embedder = Embedder(model=model, device=s.device, precision=s.embedding_precision)
        self.embedder.warm_up()
        table = JobTable(self.api.jobs_db or self.settings.data_dir / JOBS_FILE)
        prefect = PrefectIngest(self.api.prefect_deployment) if self.api.ingest == "prefect" else None
        self.jobs = JobQueue({"ingest": self._ingest_job, "ocr": self._ocr_job, "reindex": self._reindex_job}, table, keep=self.api.max_jobs,
                             prefect=prefect, on_prefect_end=self._prefect_job_ended,
                             on_interrupted=self._prefect_job_ended)  # same clean-up: uploads not in the index

    def close(self) -> None:
        """Stop the job worker and close the store, when the last lifespan that started them ends."""
        with self._starting:
            self._users -= 1
            if self._users > 0:
                return
        if self.jobs is not None:
            self.jobs.close()
        if self.store is not None:
            self.store.close()
        with self._vlm_lock:
            if self._vlm is not None:
                self._vlm.close()
                self._vlm = None

    def _ingest_job(self, params: dict[str, Any], progress: Any) -> Any:
        try:
            return self._ingest(params["paths"], params["tenant"], params["force"], progress, params["source"],
                                params.get("retenant", True))
        finally:
            self.drop_unregistered_uploads(params.get("uploads", []))

    def _reindex_job(self, params: dict[str, Any], progress: Any) -> Any:
        from folioflow.flows.pipeline import Shared
        from folioflow.flows.reindex import reindex

        shared = Shared(embedder=self.embedder, store=cast(Any, self.store))
        return reindex(self.settings, doc_ids=params["doc_ids"], force=params["force"], progress=progress, shared=shared)

    def _prefect_job_ended(self, job: Job) -> None:
        """Delete the uploaded files of an ended Prefect job (or of a job its server's stop left
        unfinished) that its report says failed (every one when the run left no report) and that
        the registry does not hold: what a local job's end deletes, and, as there, only a file that
        is still the one the job's request wrote (``job.uploads``; a job recorded without them, by
        an older server, deletes none). A file the report says indexed is kept even when this
        server's store cannot see it."""
        failed = {Path(d.source).resolve() for d in job.documents if d.status == "failed"}
        self.drop_unregistered_uploads([u for u in job.uploads if not job.documents or Path(u.path).resolve() in failed])

    def drop_unregistered_uploads(self, uploads: list[UploadedFile]) -> list[Path]:
        """Delete the uploaded files of ``uploads`` (what one upload request wrote) that lie in
        :attr:`upload_dir`, that no registry record refers to (an upload that is not a document, or
        that could not be opened, has no record, so that no endpoint could list or delete it) and
        that are still the file that request wrote; returns those deleted. A document registered
        (indexed, or failed after it was opened) keeps its file: ``DELETE /v1/documents/{id}``
        removes it. The registry unreadable: nothing is deleted (logged).

        A job deletes only its own files: when a later request uploaded a file of the same name
        while the job was queued or ran (uploads are kept by name, so it replaced the job's file),
        the file there is that request's and is left to its job (a breaking trial lost such an
        upload: the earlier job's clean-up deleted it, and its own job failed 'not found'). The
        earlier job may itself have read the newer file, when the replacement came before it
        opened it: it then indexed the newest upload of that name, which is what the newer job
        would have done (that job finds it unchanged and skips it). The check and the delete hold
        :attr:`upload_lock`, as the upload's rename does, so no upload lands between them."""
        from folioflow.flows.pipeline import local_path

        root = self.upload_dir
        mine = [u for u in uploads if Path(u.path).resolve().is_relative_to(root)]
        if not mine or self.store is None:
            return []
        try:
            records = self.store.list_documents() if self.store.collection_info() else []
        except FolioflowError as exc:
            log.warning("uploads: cannot read the registry, kept %d uploaded file(s): %s", len(mine), exc)
            return []
        registered = {Path(p).resolve() for p in (local_path(r.uri) for r in records) if p}
        dropped, replaced = [], 0
        with self.upload_lock:
            for upload in mine:
                path = Path(upload.path)
                if path.resolve() in registered or not path.exists():
                    continue
                if not upload.is_current():  # another request's upload of the same name: its job's
                    replaced += 1
                    continue
                path.unlink(missing_ok=True)
                dropped.append(path)
        if dropped:
            log.info("uploads: deleted %d uploaded file(s) that are not in the index", len(dropped))
        if replaced:
            log.info("uploads: kept %d file(s) that a later upload of the same name replaced", replaced)
        return dropped

    def job_covering(self, record: Any, refresh: bool = True) -> Job | None:
        """The first queued or running ingest or reindex job of this server that would write
        ``record``'s document (None when none would): an ingest job whose paths are the document's
        file or a folder above it (an upload job's paths are its uploaded files), a reindex job
        that names its doc id (a reindex of every document names those there when it was queued). ``refresh``:
        read the state of Prefect's runs from Prefect (never while holding :attr:`upload_lock`:
        a run seen ended is cleaned up, which takes it)."""
        from folioflow.flows.pipeline import local_path

        if self.jobs is None:
            return None
        local = local_path(record.uri)
        file = Path(local).resolve() if local is not None else None
        for job, params in self.jobs.unfinished(refresh):
            if job.kind == "reindex":
                if record.doc_id in params.get("doc_ids", ()):
                    return job
            elif file is not None:
                for given in params.get("paths", ()):
                    root = Path(given).resolve()
                    if file == root or file.is_relative_to(root):
                        return job
        return None

    def _ocr_job(self, params: dict[str, Any], progress: Any) -> OcrResult:
        return convert_document(self.settings, **params, on_page=lambda page: progress.page_done(None, page),
                                vlm_engine=self.vlm_engine())

    def vlm_engine(self) -> Any:
        """The server's one VLM engine for ``POST /v1/ocr`` (built on first use from the settings'
        ``ocr_endpoints``; None without endpoints), shared by every request so that they share its
        endpoint health (a dead endpoint is found once, not once per request) and its connections.
        Closed with the service."""
        if not self.settings.ocr_endpoints:
            return None
        with self._vlm_lock:
            if self._vlm is None:
                from folioflow.flows.stages import build_vlm_engine

                self._vlm = build_vlm_engine(self.settings)
            return self._vlm

    def _ingest(self, paths: list[str], tenant: str | None, force: bool, progress: Any, source: str,
                retenant: bool = True) -> Any:
        from folioflow.flows.ingest import run_ingest
        from folioflow.flows.pipeline import Shared

        settings = self.settings.model_copy(update={"tenant": tenant or self.settings.tenant, "source_name": source,
                                                    "retenant": retenant and self.settings.retenant})
        shared = Shared(embedder=self.embedder, store=cast(Any, self.store))
        return run_ingest(paths, settings, force=force, progress=progress, shared=shared)


class _IndexCollector:
    """Prometheus gauges read at scrape time: documents and chunks in the index, jobs per state."""

    def __init__(self, service: Service):
        self.service = service

    def collect(self) -> Iterator[GaugeMetricFamily]:
        service = self.service
        documents = GaugeMetricFamily("folioflow_index_documents", "Documents in the index registry, per status",
                                      labels=["status"])
        chunks = GaugeMetricFamily("folioflow_index_chunks", "Chunk points in the index (committed)")
        jobs = GaugeMetricFamily("folioflow_jobs", "Jobs remembered, per kind (ingest, ocr) and state",
                                 labels=["kind", "state"])
        if service.store is not None:
            try:
                records = service.store.list_documents()
                for status in ("indexed", "failed"):
                    documents.add_metric([status], sum(1 for r in records if r.status == status))
                chunks.add_metric([], service.store.count())
            except FolioflowError as exc:
                log.warning("metrics: cannot read the index: %s", exc)
        if service.jobs is not None:
            counts = service.jobs.counts_by_kind()
            for kind in ("ingest", "ocr"):
                for state in ("queued", "running", "succeeded", "failed"):
                    jobs.add_metric([kind, state], counts.get((kind, state), 0))
        yield documents
        yield chunks
        yield jobs


def media_type(request: Request) -> str:
    """The request's media type: its ``Content-Type`` header without parameters, lower-cased
    (``"multipart/form-data"``, ``"application/json"``); ``""`` when the header is absent."""
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _status_for(exc: FolioflowError) -> int:
    """The HTTP status of a deliberate error."""
    if isinstance(exc, ResourceLimitError):
        return 413
    if isinstance(exc, AmbiguousDocumentError):  # a bad value (a name several documents share), not a missing one
        return 400
    if isinstance(exc, (DocumentLookupError, CollectionNotFoundError)):
        return 404
    if isinstance(exc, SourceAccessError):
        return 400
    if isinstance(exc, SourceError):
        return 422
    if isinstance(exc, StoreError | EngineUnavailableError | OrchestratorError):
        return 503
    if isinstance(exc, TenancyError | ConfigurationError):
        return 400
    return 422


#: The deepest nesting of arrays and objects a JSON body may have (the API's bodies nest 2 deep).
MAX_JSON_DEPTH = 64


def parse_json_body(body: bytes) -> Any:
    """``body`` parsed as JSON, as every route with a JSON body reads it (RFC 8259: UTF-8 text; a
    leading byte order mark is ignored). Raises :class:`HTTPException` 422 saying where the body is
    wrong: not UTF-8 (the byte and its 1-based offset), not JSON (the character and the parser's
    reason), or nested deeper than :data:`MAX_JSON_DEPTH` arrays and objects (FastAPI's own reading
    answered the first and the last with a bare 400 ``There was an error parsing the body``)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HTTPException(422, f"the body is not UTF-8 (at byte {exc.start + 1}, 0x{body[exc.start]:02x}: "
                                 f"{exc.reason}): send JSON as UTF-8") from None
    too_deep = f"the body nests deeper than {MAX_JSON_DEPTH} levels of arrays and objects"
    try:
        value = json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise HTTPException(422, f"the body is not valid JSON (at character {exc.pos + 1}: {exc.msg})") from None
    except RecursionError:  # nested past the interpreter's recursion limit (about 1000)
        raise HTTPException(422, too_deep) from None
    except ValueError as exc:  # a number of more digits than Python converts ("Exceeds the limit (4300 digits) ...")
        raise HTTPException(422, f"the body is not valid JSON ({str(exc).split(';')[0]})") from None
    level = [value] if isinstance(value, dict | list) else []
    for _ in range(MAX_JSON_DEPTH):  # level k + 1 after k rounds; any left after the last: too deep
        level = [child for node in level for child in (node.values() if isinstance(node, dict) else node)
                 if isinstance(child, dict | list)]
        if not level:
            return value
    raise HTTPException(422, too_deep)


class _JsonRequest(Request):
    """A request whose :meth:`json` is :func:`parse_json_body` (FastAPI reads a route's model body
    with it: its HTTPException reaches the client as raised)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = parse_json_body(await self.body())
        return self._json


class JsonBodyRoute(APIRoute):
    """The app's routes: FastAPI's, with the JSON body of a model parameter (``POST /v1/query``,
    ``/v1/reindex``) read by :func:`parse_json_body`, as :func:`read_json` reads the others'
    (``POST /v1/documents``, ``/v1/ocr``), so that every JSON route says why a body is refused."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(_JsonRequest(request.scope, request.receive))

        return handle


def _validation_reason(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        if error.get("type") == "json_invalid":  # FastAPI's loc: ("body", <0-based offset of the error>)
            at = [p for p in error.get("loc", ()) if isinstance(p, int)]
            why = str((error.get("ctx") or {}).get("error") or error.get("msg", "")).strip()
            where = f"at character {at[0] + 1}" if at else ""  # 1-based, as pydantic's "line 1 column N"
            said = ": ".join(part for part in (where, why) if part)
            return f"the body is not valid JSON ({said})" if said else "the body is not valid JSON"
        loc = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {error.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def create_app(settings: Settings, api: ApiSettings | None = None, url: str | None = None) -> FastAPI:
    """The ASGI app over ``settings`` (data dir or Qdrant URL, collection, OCR and run settings)
    and ``api`` (keys, limits, allowed roots; default :class:`ApiSettings` from the environment).
    The embedder and store are loaded when the app starts (its lifespan), not here. ``url``: the
    address clients reach it at; when given, the started app announces it in the data directory
    (:func:`folioflow.flows.service.client.announce`) until it stops."""
    service = Service(settings, api if api is not None else ApiSettings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start()
        announced = announce(settings.data_dir, url, settings.collection) if url else None
        try:
            yield
        finally:
            if announced is not None:
                announced.unlink(missing_ok=True)
            service.close()

    # Swagger UI (/docs) and ReDoc (/redoc) with their scripts and styles served by this process
    # from fastapi-offline's copy (under DOCS_STATIC), not from a CDN: they work on an offline host.
    app = FastAPIOffline(title="folioflow", version=API_VERSION, lifespan=lifespan, static_url=DOCS_STATIC,
                         description="Document ingestion and search: OCR, ingest jobs, hybrid search over the index "
                                     "(see docs/service.md).")
    app.state.service = service
    app.router.route_class = JsonBodyRoute  # the routes below read a JSON body with parse_json_body

    # Every route's body is counted while it is received (Starlette's RequestBodyLimitMiddleware):
    # a body sent in chunks without Content-Length, or with a lying one, stops at the limit with 413
    # instead of being read whole (FastAPI reads a JSON body before any check of ours runs). Added
    # before `measure`, so it sits inside it: its 413 reaches the route's body read as raised, not
    # wrapped in the exception group of BaseHTTPMiddleware's task group.
    app.add_middleware(RequestBodyLimitMiddleware, max_body_size=service.api.max_upload_bytes)

    @app.middleware("http")
    async def measure(request: Request, call_next: Callable[..., Any]) -> Response:
        started = time.perf_counter()
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > service.api.max_upload_bytes:
            # every route, before its body is read: FastAPI reads a JSON body (POST /v1/query) whole
            # before any check of ours runs (a trial's 3.2 MB query body got a 422 after it was read)
            response: Response = JSONResponse(
                {"detail": f"request body of {int(length)} bytes is over the limit of "
                           f"{service.api.max_upload_bytes} bytes (max_upload_bytes)"}, status_code=413)
        else:
            response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        service.requests.labels(request.method, route, str(response.status_code)).inc()
        service.latency.labels(request.method, route).observe(time.perf_counter() - started)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 413 and exc.detail == "Content Too Large":  # the body limit's own words
            exc = HTTPException(413, f"request body over the limit of {service.api.max_upload_bytes} bytes "
                                     "(max_upload_bytes)")
        return await http_exception_handler(request, exc)

    @app.exception_handler(FolioflowError)
    async def folioflow_error(request: Request, exc: FolioflowError) -> JSONResponse:
        detail = missing_collection() if isinstance(exc, CollectionNotFoundError) else str(exc)
        return JSONResponse({"detail": detail}, status_code=_status_for(exc))

    def missing_collection() -> str:
        """The server's own reason for a collection that is gone (the store's names the Python and
        command-line settings of a reader that looked in the wrong place; a server's collection
        is its own, absent only until the first ingest, which the read routes answer as an empty
        index, or when it was deleted behind the server's back)."""
        where = (f"on the Qdrant server {settings.qdrant_url}" if settings.qdrant_url
                 else f"in the data directory {settings.data_dir}")
        return (f"no collection {settings.collection!r} {where}: nothing is indexed there (POST /v1/documents "
                "creates it); the server's settings `collection` and `data_dir` (or `qdrant_url`) choose it")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": _validation_reason(exc)}, status_code=422)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s %s: %s", request.method, request.url.path, type(exc).__name__, exc_info=exc)
        return JSONResponse({"detail": "internal error"}, status_code=500)

    bearer = HTTPBearer(auto_error=False, description="An API key from the server's `keys` setting")

    def caller(request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Caller:
        keys = service.api.keys
        if not keys:
            return Caller()
        if credentials is None:
            sent = request.headers.get("authorization")
            reason = ("the Authorization header is not a bearer key: send `Authorization: Bearer <key>`" if sent
                      else "missing API key: send `Authorization: Bearer <key>`")
            raise HTTPException(401, reason, headers={"WWW-Authenticate": "Bearer"})
        given = credentials.credentials.encode()
        for key in keys:
            if hmac.compare_digest(key.key.get_secret_value().encode(), given):
                return Caller(tenant=key.tenant, name=key.name)
        raise HTTPException(401, "invalid API key", headers={"WWW-Authenticate": "Bearer"})

    Auth = Annotated[Caller, Depends(caller)]

    def json_body(request: Request, who: Auth) -> None:
        """415 unless the request says its body is JSON (``application/json`` or ``+json``): a
        form or text body is refused naming the type expected, after the key is checked (401
        first) and before the body is validated (never a 422 for a body that was not JSON)."""
        sent = media_type(request)
        if sent != "application/json" and not (sent.startswith("application/") and sent.endswith("+json")):
            raise HTTPException(415, f"send the body as application/json (Content-Type: application/json), "
                                     f"not {sent or 'a body without a Content-Type'}")

    def tenant_of(who: Caller, requested: str | None) -> str | None:
        if requested is not None and not TENANT_PATTERN.match(requested):
            raise HTTPException(400, "tenant: 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit")
        if who.tenant is not None:
            if requested is not None and requested != who.tenant:
                raise HTTPException(403, "this API key may not act for that tenant")
            return who.tenant
        return requested

    def visible(who: Caller, record: Any) -> bool:
        return who.tenant is None or record.tenant == who.tenant

    # -- health, metrics ---------------------------------------------------------------------------
    @app.get("/healthz", response_model=Health, tags=["service"])
    def healthz() -> Health:
        """Liveness and readiness: the store answers and the embedder is loaded."""
        records = service.store.list_documents() if service.store.collection_info() else []
        return Health(collection=settings.collection, location=settings.qdrant_url or str(settings.data_dir),
                      embedding_model=service.embedder.model_name, documents=len(records),
                      jobs_queued=(service.jobs.counts().get("queued", 0) if service.jobs else 0))

    @app.get("/metrics", tags=["service"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST.split(";")[0]: {"schema": {"type": "string"}}},
                              "description": "Prometheus text exposition"}})
    def metrics() -> Response:
        """Prometheus metrics: requests and latency per route, documents, chunks and jobs."""
        return Response(generate_latest(service.registry), media_type=CONTENT_TYPE_LATEST)

    # -- search and documents ----------------------------------------------------------------------
    @app.post("/v1/query", response_model=list[QueryHit], tags=["search"], responses=_ERRORS,
              dependencies=[Depends(json_body)])
    def query(body: QueryRequest, who: Auth) -> list[QueryHit]:
        """Search the index: the hits `folioflow query --json` prints, best first (none from an
        index that nothing was ingested into yet; a `doc` or `source` still has to name one)."""
        tenant = tenant_of(who, body.tenant)
        if service.store.tenancy and not tenant:
            raise HTTPException(400, "tenancy is on: the query needs the caller's tenant (the body's `tenant`, "
                                     "or an API key bound to a tenant)")
        if not index_exists():  # a fresh server: an empty index, not a missing one
            check_filters([], body.doc, body.source, API_FILTER_NAMES)  # 404: no such document / source
            return []
        return search_index(service.store, service.embedder, body.text, k=body.k, mode=body.mode, doc_ids=body.doc,
                            source=body.source, tenant=tenant, distinct_pages=body.distinct_pages,
                            glossary=body.glossary, route_titles=body.route_titles, profile=body.profile,
                            filter_names=API_FILTER_NAMES)

    def index_exists() -> bool:
        """Whether the collection exists: the server creates it with the first ingest, and until
        then the read routes answer as over an empty index (no documents, no hits)."""
        return service.store.collection_info() is not None

    def records_for(who: Caller) -> list[Any]:
        if not index_exists():
            return []
        return [r for r in service.store.list_documents() if visible(who, r)]

    @app.get("/v1/documents", response_model=IndexStatus, tags=["documents"], responses=_ERRORS)
    def list_documents(who: Auth) -> IndexStatus:
        """The index's documents: what `folioflow status --documents --json` prints (a tenant-bound
        key sees its tenant's documents only)."""
        records = records_for(who)
        if who.tenant is not None or not index_exists():
            points = sum(r.chunks for r in records)
        else:
            points = service.store.count()
        return index_status(settings, records, points, documents=True)

    def find(who: Caller, doc_id: str) -> Any:
        return resolve_document(records_for(who), doc_id, option="document", listing="GET /v1/documents")

    @app.get("/v1/documents/{doc_id:path}/converted", tags=["documents"], response_class=Response,
             responses={**_ERRORS, 200: {"content": {"application/json": {"schema": {"type": "object"}}},
                                         "description": "The converted Document JSON (docs/contracts.md)"}})
    def get_converted(doc_id: str, who: Auth) -> Response:
        """The converted document kept at ingest (the Document JSON that `folioflow show --format
        json` prints; its failed pages carry their errors). 404 with the reason when it was not
        kept: the document's last run failed, or `keep_documents` was off."""
        record = find(who, doc_id)
        path = kept_document_path(settings.documents_dir, record.doc_id)
        if not path.is_file():
            if record.status != "indexed":
                reason = "; ".join(record.errors[:3]) or "no reason recorded"
                raise HTTPException(404, f"{record.path} ({record.doc_id}) is not indexed: its last run failed: "
                                         f"{reason}")
            raise HTTPException(404, f"no converted document for {record.path} ({record.doc_id}) on the server "
                                     "(keep_documents was off when it was ingested)")
        return Response(path.read_bytes(), media_type="application/json")

    @app.get("/v1/documents/{doc_id:path}/chunks", response_model=list[ChunkRow], tags=["documents"], responses=_ERRORS)
    def get_chunks(doc_id: str, who: Auth,
                   page: Annotated[int | None, Query(ge=1, description="Only the chunks on this page (1-based)")] = None
                   ) -> list[ChunkRow]:
        """The document's indexed chunks in reading order: kind, heading path, page span, token
        count and Markdown (what `folioflow show DOC --chunks --format json` prints)."""
        from folioflow.flows.queries import document_chunks

        record = find(who, doc_id)
        if page is not None and page > max(record.pages, 0):
            raise HTTPException(404, f"no page {page}: the document has {record.pages} page(s)")
        return document_chunks(service.store.payloads(record.doc_id), page)

    # -- ingestion jobs ----------------------------------------------------------------------------
    async def read_uploads(request: Request, field: str) -> tuple[list[UploadFile], dict[str, str]]:
        try:
            form = await request.form(max_files=service.api.max_files, max_fields=20)
        except Exception as exc:  # noqa: BLE001 - python-multipart's parse errors: a bad request
            if isinstance(exc, StarletteHTTPException) and exc.status_code == 413:  # the body limit
                raise
            if "Too many files" in str(getattr(exc, "detail", "") or exc):  # Starlette's own 400 for max_files
                raise HTTPException(413, f"too many files: at most {service.api.max_files} per upload "
                                         "(max_files)") from None
            raise HTTPException(400, f"cannot parse the multipart body: {exc}".splitlines()[0]) from None
        files = [v for v in form.getlist(field) if isinstance(v, UploadFile)]
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not files:
            raise HTTPException(422, f"no file in the multipart field {field!r}")
        return files, fields

    async def read_json(request: Request, model: type[Any]) -> Any:
        """The body as ``model``, read as the routes with a model parameter read theirs
        (:func:`parse_json_body`; 422 with the reason)."""
        value = parse_json_body(await request.body())
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            reason = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors()[:5])
            raise HTTPException(422, f"invalid request: {reason or 'not a JSON object'}") from None

    def safe_name(upload: UploadFile) -> str:
        name = Path((upload.filename or "").replace("\\", "/")).name.strip()
        if not name or name in (".", "..") or name.startswith(".") or len(name) > 255 or "\x00" in name:
            raise HTTPException(400, f"bad file name {upload.filename!r}: give each file a plain name")
        return name

    def allowed(given: str, what: str) -> Path:
        """``given`` (a path, or a ``file://`` URI) resolved, when it exists under an allowed root."""
        from folioflow.flows.pipeline import local_path

        if "://" in given:
            try:
                local = local_path(given) if given.startswith("file://") else None
            except ValueError:  # urlparse: e.g. an unclosed "[" in the host part
                local = None
            if local is None:
                raise HTTPException(400, f"{what}: only file:// URIs of server-side paths are accepted")
            given = local
        roots = [root.resolve() for root in service.api.allowed_roots]
        if not roots:
            raise HTTPException(403, f"{what}: reading server-side paths is off: the operator allowed no roots "
                                     "(allowed_roots)")
        try:
            path = Path(given).resolve(strict=True)
        except (OSError, RuntimeError, ValueError):
            raise HTTPException(404, f"{what}: no such file or folder on the server") from None
        if not any(path.is_relative_to(root) for root in roots):
            raise HTTPException(403, f"{what}: that path is not under a root the operator allowed (allowed_roots)")
        return path

    def allowed_path(body: IngestPath) -> Path:
        if (body.path is None) == (body.uri is None):
            raise HTTPException(422, "give exactly one of path or uri")
        return allowed(cast(str, body.path if body.path is not None else body.uri),
                       "path" if body.path is not None else "uri")

    upload_body = {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": {
                    "type": "object", "required": ["files"],
                    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}},
                                   "tenant": {"type": "string"}, "force": {"type": "boolean"}}}},
                "application/json": {"schema": {"$ref": "#/components/schemas/IngestPath"}},
            },
        }
    }

    @app.post("/v1/documents", response_model=Job, status_code=202, tags=["documents"], openapi_extra=upload_body,
              responses=_ERRORS)
    async def add_documents(request: Request, response: Response, who: Auth) -> Job:
        """Ingest documents as a job: upload files (multipart field `files`, repeatable; fields
        `tenant`, `force`), or name a server-side file or folder under an allowed root (JSON
        `{"path": ...}` or `{"uri": "file://..."}`). Answers 202 with the queued job."""
        assert service.jobs is not None
        kind = media_type(request)
        if kind == "multipart/form-data":
            files, fields = await read_uploads(request, "files")
            tenant = tenant_of(who, fields.get("tenant") or None)
            force_text = fields.get("force", "").strip().lower()
            if force_text not in ("", "0", "false", "no", "off", "1", "true", "yes", "on"):
                raise HTTPException(422, f"force: give true or false, not {fields['force'][:40]!r}")
            force = force_text in ("1", "true", "yes", "on")
            folder = service.upload_dir / (tenant or "_shared")
            names = [safe_name(f) for f in files]
            if len(set(names)) != len(names):
                raise HTTPException(400, "two uploaded files have the same name")
            folder.mkdir(parents=True, exist_ok=True)
            paths: list[str] = []
            written: list[UploadedFile] = []  # by identity: the job's clean-up deletes these files only, never
            try:  # one of the same name that a later upload put there (see drop_unregistered_uploads)
                for upload, name in zip(files, names, strict=True):
                    target = folder / name
                    with tempfile.NamedTemporaryFile(dir=folder, prefix=".upload-", delete=False) as out:
                        await upload.seek(0)
                        shutil.copyfileobj(upload.file, out)
                    mine = UploadedFile.of(out.name, target)
                    with service.upload_lock:  # until its job is queued, a DELETE leaves the file alone
                        Path(out.name).replace(target)
                        service.uploading[target] = service.uploading.get(target, 0) + 1
                        paths.append(str(target))
                        written.append(mine)
                job = await run_in_threadpool(service.jobs.submit, names, paths, tenant, force=force,
                                              source=UPLOAD_SOURCE, uploads=written)
            except BaseException:  # not queued (Prefect unreachable, a write failed): the files would be nobody's
                await run_in_threadpool(service.drop_unregistered_uploads, written)
                raise
            finally:
                with service.upload_lock:
                    for target in map(Path, paths):
                        service.uploading[target] -= 1
                        if not service.uploading[target]:
                            del service.uploading[target]
        elif kind == "application/json":
            body = await read_json(request, IngestPath)
            tenant = tenant_of(who, body.tenant)
            path = allowed_path(body)
            # a tenant-bound key cannot take over a file that another tenant's documents (or the shared
            # ones) hold: the doc id is the file's, whoever names it
            job = await run_in_threadpool(service.jobs.submit, [str(path)], [str(path)], tenant, force=body.force,
                                          source=settings.source_name,  # (Prefect's client: not on the loop)
                                          retenant=who.tenant is None)
        else:
            raise HTTPException(415, "send multipart/form-data (field `files`) or application/json ({\"path\": ...})")
        response.headers["Location"] = f"/v1/jobs/{job.id}"
        return job

    @app.post("/v1/reindex", response_model=Job, status_code=202, tags=["documents"], responses=_ERRORS,
              dependencies=[Depends(json_body)])
    def reindex_documents(body: ReindexRequest, response: Response, who: Auth) -> Job:
        """Chunk and embed again, from their kept conversions, the documents this key may see (or
        those `doc` names), as a job: what `folioflow reindex` does, with the server's chunking
        settings and model. Answers 202 with the queued job; 404 when a `doc` names no document."""
        assert service.jobs is not None
        records = records_for(who)
        if body.doc:
            chosen = {resolve_document(records, key, option="doc", listing="GET /v1/documents").doc_id
                      for key in body.doc}
            doc_ids, shown = [r.doc_id for r in records if r.doc_id in chosen], list(body.doc)
        else:
            doc_ids, shown = [r.doc_id for r in records], ["all documents"]
        job = service.jobs.submit_reindex(doc_ids, shown, who.tenant, force=body.force)
        response.headers["Location"] = f"/v1/jobs/{job.id}"
        return job

    @app.get("/v1/jobs", response_model=list[Job], tags=["jobs"], responses=_ERRORS)
    def list_jobs(who: Auth) -> list[Job]:
        """The ingest jobs this server remembers, newest first (a tenant-bound key sees its own)."""
        assert service.jobs is not None
        return service.jobs.list(who.tenant)

    @app.get("/v1/jobs/{job_id}", response_model=Job, tags=["jobs"], responses=_ERRORS)
    def get_job(job_id: str, who: Auth) -> Job:
        """One job: state, progress and, once finished, the per-document report records."""
        assert service.jobs is not None
        job = service.jobs.get(job_id)
        if job is None or (who.tenant is not None and job.tenant != who.tenant):
            raise HTTPException(404, f"no job {job_id!r}")
        return job

    # -- OCR ---------------------------------------------------------------------------------------
    ocr_body = {
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": {
                    "type": "object", "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"},
                                   "output_format": {"type": "string", "enum": ["markdown", "html", "json"]},
                                   "page_range": {"type": "string"},
                                   "engine": {"type": "string", "enum": ["auto", "text", "ocr", "vlm"]},
                                   "password": {"type": "string"}}}},
                "application/json": {"schema": {"$ref": "#/components/schemas/OcrRequest"}},
            },
        }
    }
    ocr_answers: dict[int | str, dict[str, Any]] = {
        **_ERRORS, 200: {"model": OcrResult, "description": "The converted pages"},
        202: {"model": Job, "description": "A large document: converted as a job (see `GET /v1/jobs/{id}`)"}}

    @app.post("/v1/ocr", response_model=None, tags=["ocr"], openapi_extra=ocr_body, responses=ocr_answers)
    async def ocr(request: Request, who: Auth) -> Response:
        """Convert a PDF or image without indexing it, the way `folioflow convert` does: uploaded
        (multipart field `file`) or by reference (JSON `file_url`: a server path or `file://` URL
        under the allowed roots; `image_url`: `http(s)://` on an allowed host, or `data:`). Options
        `output_format` (markdown, html, json), `page_range` ("1-5,9"), `engine` (auto, text, ocr,
        vlm), `password`. Answers 200 with each page's status, engine, fallback reason, errors and
        content; a document of more pages than `ocr_job_pages` is converted as a job: 202 with the
        job, whose `ocr` holds the same answer once it succeeded."""
        kind = media_type(request)
        if kind == "multipart/form-data":
            files, fields = await read_uploads(request, "file")
            if len(files) != 1:
                raise HTTPException(422, "send exactly one file in the field `file`")
            try:
                body = OcrRequest.model_validate({k: v for k, v in fields.items()
                                                  if k in ("output_format", "page_range", "engine", "password") and v})
            except ValidationError as exc:
                field = ".".join(map(str, exc.errors()[0]["loc"]))
                choices = {"output_format": "markdown, html or json", "engine": "auto, text, ocr or vlm"}
                raise HTTPException(422, f"{field}: {choices.get(field, exc.errors()[0]['msg'])}") from None
            data = await files[0].read()
            name = files[0].filename or "upload"
        elif kind == "application/json":
            body = await read_json(request, OcrRequest)
            if (body.file_url is None) == (body.image_url is None):
                raise HTTPException(422, "give exactly one of file_url or image_url (or upload the file as multipart)")
            data, name = await run_in_threadpool(fetch_reference, body)
        else:
            raise HTTPException(415, "send multipart/form-data (field `file`) or application/json "
                                     "({\"file_url\": ...} or {\"image_url\": ...})")
        if body.engine == "vlm" and not settings.ocr_endpoints:  # the converter's reason names the CLI's option
            raise HTTPException(400, "engine 'vlm' needs a VLM endpoint and this server has none: the operator "
                                     "lists them in the server's settings (ocr_endpoints); use engine auto, text "
                                     "or ocr")
        params: dict[str, Any] = {"data": data, "name": name, "fmt": body.output_format, "engine": body.engine,
                  "page_range": body.page_range, "password": body.password}
        selected = await run_in_threadpool(count_pages, data, body.page_range, body.password)
        if selected > service.api.max_ocr_pages:
            raise HTTPException(413, f"{selected} pages selected, over the limit of {service.api.max_ocr_pages} "
                                     "pages per request (max_ocr_pages): narrow it with page_range")
        if selected > service.api.ocr_job_pages:
            assert service.jobs is not None
            job = service.jobs.submit_ocr(name, selected, who.tenant, params)
            return JSONResponse(job.model_dump(mode="json"), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})
        result = await run_in_threadpool(lambda: convert_document(settings, **params, vlm_engine=service.vlm_engine()))
        return JSONResponse(result.model_dump(mode="json"))

    def fetch_reference(body: OcrRequest) -> tuple[bytes, str]:
        """The bytes and file name of ``body``'s ``file_url`` or ``image_url`` (HTTP errors as
        above: 400/403/404/413/422 with the reason)."""
        limit = service.api.max_upload_bytes
        if body.file_url is not None:
            path = allowed(body.file_url, "file_url")
            if not path.is_file():
                raise HTTPException(422, "file_url: not a file")
            size = path.stat().st_size
            if size > limit:
                raise HTTPException(413, f"file_url: {size} bytes, over the limit of {limit} bytes (max_upload_bytes)")
            return path.read_bytes(), path.name
        return fetch_url(cast(str, body.image_url), service.api)

    def count_pages(data: bytes, page_range: str | None, password: str | None) -> int:
        from folioflow.ocr.pages import parse_page_range
        from folioflow.ocr.render import open_document

        with open_document(data, password=password) as opened:
            try:
                selected = len(parse_page_range(page_range, opened.page_count))
            except ValueError as exc:
                raise HTTPException(422, f"page_range: {exc}") from None
            if not selected:  # every page asked for is past the end (pages beyond it are dropped)
                pages = f"{opened.page_count} page" + ("" if opened.page_count == 1 else "s")
                raise HTTPException(422, f"page_range: {page_range!r} selects no page: the document has {pages}")
            return selected

    from folioflow.flows.service.ui import mount_ui  # the web UI at /ui and its page routes (docs/ui.md)

    mount_ui(app, service, caller, find)

    # -- the bare document routes, registered after every other route: a doc id may be a recorded path
    # with folders (`sub/nested.pdf`, sent as `sub%2Fnested.pdf`, which the server decodes before
    # routing), so they take the rest of the path and, matched first, would swallow
    # /v1/documents/{doc_id}/chunks, /converted and /pages/...
    @app.get("/v1/documents/{doc_id:path}", response_model=DocumentDetail, tags=["documents"], responses=_ERRORS)
    def get_document(doc_id: str, who: Auth) -> DocumentDetail:
        """One document (doc id or a unique prefix, recorded path or file name): pages, chunks,
        status, failed pages and errors, partial pages and their reasons, engines per page."""
        from folioflow.flows.queries import document_row

        record = find(who, doc_id)
        row = document_row(record, settings.documents_dir).model_dump()
        converted = kept_document_path(settings.documents_dir, record.doc_id).is_file()
        return DocumentDetail(**row, engines=list(record.engines), content_hash=record.content_hash,
                              mime_type=record.mime_type, converted=converted)

    @app.delete("/v1/documents/{doc_id:path}", response_model=DeleteResult, tags=["documents"],
                responses={**_ERRORS, 409: {"model": ErrorBody, "description": "A queued or running ingest or "
                                            "reindex job covers the document: delete it after the job ends"}})
    def delete_document(doc_id: str, who: Auth) -> DeleteResult:
        """Remove a document from the index (its points, its registry record, its kept converted
        JSON, and its uploaded file when it came by upload). 409 while a queued or running ingest
        or reindex job of this server covers the document (its file, a folder above it, or its
        doc id): that job would write it back when it ends; delete it after the job ends."""
        from folioflow.flows.pipeline import local_path

        record = find(who, doc_id)
        # a breaking trial deleted a document that a running job re-ingested: it came back when the
        # job ended, listed and searchable, with its uploaded file gone
        busy = service.job_covering(record)
        if busy is not None:
            doing = "reindexed" if busy.kind == "reindex" else "ingested"
            by = f"job {busy.id}" if who.tenant is None or busy.tenant == who.tenant else "a job of another tenant"
            raise HTTPException(409, f"{record.path} is being {doing} by {by} ({busy.state}); delete it after "
                                     "the job ends")
        local = local_path(record.uri)
        upload = Path(local) if local is not None and Path(local).resolve().is_relative_to(service.upload_dir) else None
        before = UploadedFile.of(upload) if upload is not None and upload.is_file() else None
        deleted = service.store.delete_document(record.doc_id)
        kept_document_path(settings.documents_dir, record.doc_id).unlink(missing_ok=True)
        if before is not None:
            with service.upload_lock:  # unless an upload of the same name came meanwhile: that is its job's
                if (before.is_current() and Path(before.path) not in service.uploading
                        and service.job_covering(record, refresh=False) is None):
                    Path(before.path).unlink(missing_ok=True)
        return DeleteResult(doc_id=record.doc_id, deleted_chunks=deleted)

    return app


def convert_document(settings: Settings, data: bytes, name: str, fmt: Literal["markdown", "html", "json"],
                     engine: str, page_range: str | None, password: str | None,
                     on_page: Callable[[Any], None] | None = None, vlm_engine: Any = None) -> OcrResult:
    """Convert ``data`` (a PDF or image named ``name``) with the run settings' OCR engines, the way
    ``folioflow convert`` does, without indexing it; ``on_page`` is called with each finished page.
    ``vlm_engine``: a VLM engine shared between requests (the server's, see
    :meth:`Service.vlm_engine`), left open; None builds one for this call from the settings' endpoints
    and closes it after. Raises :class:`FolioflowError` (unreadable, encrypted, unsupported document;
    bad page range; engine unavailable)."""
    from folioflow.flows.stages import build_vlm_engine
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.export import page_html, page_markdown
    from folioflow.ocr.ids import sha256_bytes
    from folioflow.ocr.schema import SourceRef

    try:
        options = ConvertOptions(engine=cast(Any, engine), cpu_engine=settings.cpu_ocr_engine,
                                 languages=settings.languages, page_range=page_range)
    except ValidationError as exc:
        raise HTTPException(422, f"page_range: {exc.errors()[0]['msg']}") from None
    own = vlm_engine is None and bool(settings.ocr_endpoints)  # built here for this call, closed here
    vlm = build_vlm_engine(settings) if own else vlm_engine
    try:
        converter = DocumentConverter(options, vlm_engine=vlm)
        try:
            source = SourceRef(uri=f"upload://{sha256_bytes(data)}/{name}", path=name, source="api")
            document = converter.convert(DocumentInput(data=data, source=source, password=password), on_page=on_page)
        finally:
            converter.close()  # its own engines only: the server's VLM engine outlives the request
    finally:
        if own and vlm is not None:
            vlm.close()
    pages = []
    for page in document.pages:
        content: str | dict
        if fmt == "markdown":
            content = page_markdown(page)
        elif fmt == "html":
            content = page_html(page)
        else:
            content = page.model_dump(mode="json")
        pages.append(OcrPage(number=page.number, status=page.status.value, engine=page.engine,
                             fallback_reason=page.fallback_reason, errors=list(page.errors), seconds=page.seconds,
                             content=content))
    return OcrResult(filename=name, content_hash=document.content_hash, mime_type=document.mime_type,
                     page_count=document.page_count, status=document.status.value, output_format=fmt,
                     errors=list(document.errors), pages=pages)


def fetch_url(url: str, api: ApiSettings) -> tuple[bytes, str]:
    """The bytes and file name of ``url``: a ``data:`` URL (RFC 2397, decoded by the standard
    library), or an ``http(s)://`` URL on a host of ``api.ocr_url_hosts`` (redirects followed only
    to allowed hosts), fetched with httpx and refused with 413 once more than
    ``api.max_upload_bytes`` bytes arrive. Raises :class:`HTTPException`: 400 bad URL, 403 host not
    allowed, 413 too large, 422 the fetch failed (status, timeout of ``api.ocr_url_timeout`` s)."""
    import urllib.request

    import httpx

    limit = api.max_upload_bytes
    if url.startswith("data:"):
        header, _, payload = url.partition(",")
        if header.endswith(";base64"):
            import base64
            import binascii
            import urllib.parse

            try:  # the standard library's decoder drops what is no base64 ("!!!!" read as 0 bytes)
                base64.b64decode(urllib.parse.unquote(payload), validate=True)
            except (binascii.Error, ValueError):
                raise HTTPException(400, "image_url: the data: URL's payload is not valid base64") from None
        try:
            with urllib.request.urlopen(url) as answer:  # noqa: S310 - data: only (checked above)
                data = answer.read(limit + 1)
        except (ValueError, OSError) as exc:
            raise HTTPException(400, f"image_url: not a valid data: URL ({type(exc).__name__})") from None
        if len(data) > limit:
            raise HTTPException(413, f"image_url: over the limit of {limit} bytes (max_upload_bytes)")
        return data, "data-url"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        raise HTTPException(400, "image_url: not a valid URL") from None
    if parsed.scheme not in ("http", "https"):
        raise HTTPException(400, "image_url: give an http://, https:// or data: URL (file_url for server files)")
    if not api.ocr_url_hosts:
        raise HTTPException(403, "image_url: fetching URLs is off: the operator allowed no hosts (ocr_url_hosts)")

    def check_host(request: httpx.Request) -> None:  # every request, redirects included
        if not api.host_allowed(request.url.host):
            raise HTTPException(403, f"image_url: host {request.url.host!r} is not allowed (ocr_url_hosts)")

    name = Path(parsed.path).name or "image_url"
    received = bytearray()
    try:
        with httpx.Client(timeout=api.ocr_url_timeout, follow_redirects=True, max_redirects=5,
                          event_hooks={"request": [check_host]}) as client, client.stream("GET", parsed) as answer:
            if answer.status_code >= 400:
                raise HTTPException(422, f"image_url: the server answered {answer.status_code}")
            declared = answer.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise HTTPException(413, f"image_url: {int(declared)} bytes, over the limit of {limit} bytes "
                                         "(max_upload_bytes)")
            for chunk in answer.iter_bytes():
                received += chunk
                if len(received) > limit:
                    raise HTTPException(413, f"image_url: over the limit of {limit} bytes (max_upload_bytes)")
    except httpx.TimeoutException:
        raise HTTPException(422, f"image_url: no answer within {api.ocr_url_timeout:g} s (ocr_url_timeout)") from None
    except httpx.HTTPError as exc:
        raise HTTPException(422, f"image_url: cannot fetch it: {type(exc).__name__}") from None
    return bytes(received), name
