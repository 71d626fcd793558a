"""The CPU stages of one document, runnable in any process: plan, convert, chunk.

:class:`Stages` needs no vector store, so the document task can run on a thread of the flow
process, on a Dask or Ray worker on another machine, or anywhere a :class:`StageSpec` (plain,
picklable settings) reaches. Each process builds its :class:`Stages` once per spec
(:func:`stages_for`); the flow process registers the instance it warmed up itself, so threads of
the default runner share the flow's converter, chunker and page-conversion pool.

Skip rule (:meth:`Stages.plan`): a document is ``skipped`` when the index knows it (:class:`Known`)
as indexed with no failed page, with the same :attr:`StageSpec.fingerprint` (embedding model,
chunker options and the OCR settings that decide the page text, see :func:`index_fingerprint`) and
either the same change token (etag, or size and mtime: the bytes are not even read) or, after
reading, the same content hash. Then no OCR, chunking or embedding runs. ``settings.force`` turns
skipping off: every document is read, converted, chunked and embedded again.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from folioflow.chunking.chunker import CHUNKER_VERSION, Chunker, ChunkerOptions
from folioflow.chunking.schema import Chunk
from folioflow.flows.cache import PageCache
from folioflow.flows.convert_pool import ConvertPool
from folioflow.flows.report import DocumentReport
from folioflow.flows.settings import Settings
from folioflow.flows.sources import SourceFile
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.errors import ConfigurationError, FolioflowError, TenancyError
from folioflow.ocr.ids import sha256_bytes, sha256_text
from folioflow.ocr.schema import Document, Page, SourceRef

__all__ = ["StageSpec", "Known", "current_known", "unchanged_by_token", "Planned", "Prepared", "Stages", "stages_for", "register_stages", "build_vlm_engine",
           "chunker_options", "index_fingerprint", "ocr_identity", "ocr_part", "rechunk_fingerprint", "recorded_ocr_part", "settings_change"]


@dataclass(frozen=True)
class StageSpec:
    """What a process needs to build the stages: settings and the index fingerprint decided by the
    flow process (:func:`index_fingerprint`: embedding model, chunker options, OCR settings)."""

    settings: Settings
    fingerprint: str
    in_process: bool = True  # False on Dask/Ray workers: no page-conversion pool inside them

    @property
    def key(self) -> str:
        secret = self.settings.ocr_api_key.get_secret_value() if self.settings.ocr_api_key else ""
        return sha256_text(f"{self.settings.model_dump_json()}|{sha256_text(secret)}|{self.fingerprint}|{self.in_process}")


@dataclass(frozen=True)
class Known:
    """What the index holds for a document: content hash, fingerprint, change token, counts;
    ``status`` of its registry record (``indexed`` or ``failed``: the last attempt failed) and the
    pages that failed when it was last indexed (``failed_pages``, 1-based); the ``tenant`` its
    points carry; its partial pages and their ``page N: reason`` notes (``partial_pages`` is
    ``None`` for a record written before ingest recorded them: :meth:`recorded_partials`)."""

    content_hash: str
    fingerprint: str | None
    change_token: str | None
    pages: int = 0
    chunks: int = 0
    engines: tuple[str, ...] = ()
    status: str = "indexed"
    failed_pages: tuple[int, ...] = ()
    tenant: str | None = None
    partial_pages: tuple[int, ...] | None = None
    partial_notes: tuple[str, ...] = ()

    @classmethod
    def from_record(cls, record: Any) -> Known:
        """What a registry record (:class:`~folioflow.indexing.registry.DocumentRecord`) says."""
        meta = record.metadata or {}
        return cls(content_hash=record.content_hash, fingerprint=meta.get("fingerprint"),
                   change_token=meta.get("change_token"), pages=record.pages, chunks=record.chunks,
                   engines=tuple(record.engines), status=record.status, tenant=record.tenant,
                   failed_pages=tuple(meta.get("failed_pages") or ()),
                   partial_pages=tuple(meta["partial_pages"] or ()) if "partial_pages" in meta else None,
                   partial_notes=tuple(meta.get("partial_notes") or ()))

    def recorded_partials(self, documents_dir: Path, doc_id: str) -> tuple[list[int], list[str]]:
        """The partial pages and their notes as ``status --documents`` shows them
        (:func:`folioflow.flows.queries.recorded_partial_pages`): the record's, or for a record
        written before ingest recorded them, those of its converted document kept in ``documents_dir``."""
        from folioflow.flows.queries import recorded_partial_pages

        recorded = {} if self.partial_pages is None else {"partial_pages": self.partial_pages,
                                                           "partial_notes": self.partial_notes}
        return recorded_partial_pages(recorded, documents_dir, doc_id, self.content_hash)

    def carry_to(self, report: DocumentReport, documents_dir: Path) -> None:
        """Fill the run report of a ``skipped`` document from what the index holds: pages, chunks, engines, partial pages, and their notes as its
        ``page_errors`` (where an indexing run puts their reasons)."""
        report.pages, report.chunks, report.engines = self.pages, self.chunks, list(self.engines)
        report.partial_pages, report.page_errors = self.recorded_partials(documents_dir, report.doc_id or "")


def current_known(known: Known | None, fingerprint: str, tenant: str | None, force: bool = False) -> Known | None:
    """``known`` when it can decide a skip: not ``force``, indexed with no failed page, under
    ``fingerprint`` and for ``tenant`` (a new tenant must reach every point's payload); else
    ``None`` (the document is processed). Whether it is skipped then depends on the change token
    or content hash (:meth:`Stages.plan`)."""
    if known is None or force or known.status != "indexed" or known.failed_pages:
        return None
    return known if known.fingerprint == fingerprint and known.tenant == tenant else None


def unchanged_by_token(known: Known | None, fingerprint: str, tenant: str | None, change_token: str | None,
                       force: bool = False) -> bool:
    """Whether a document is skipped without reading its bytes: :func:`current_known` and the
    same change token (etag, or size and mtime)."""
    current = current_known(known, fingerprint, tenant, force)
    return current is not None and change_token is not None and current.change_token == change_token


@dataclass
class Planned:
    """A document read from its source and checked against :class:`Known`."""

    file: SourceFile
    data: bytes | None
    content_hash: str | None
    source: SourceRef
    skip: bool
    why: str
    page_count: int = 0


@dataclass
class Prepared:
    """Result of the document task: the report, and for documents to index the converted
    document and its chunks (indexing happens in the flow process). A ``failed`` report with a
    ``document`` is a document converted with no usable page (recorded as failed by the flow)."""

    report: DocumentReport
    document: Document | None = None
    chunks: list[Chunk] = field(default_factory=list)
    change_token: str | None = None


def build_vlm_engine(settings: Settings):
    """The vLLM OCR engine for ``settings.ocr_endpoints``, ``profile``, ``ocr_api_key`` and the
    further ``vlm`` options (see :mod:`folioflow.ocr.vlm`); ``None`` without endpoints."""
    if not settings.ocr_endpoints:
        return None
    from folioflow.ocr.vlm import VlmEngine, VlmOptions

    return VlmEngine(VlmOptions(**{**settings.vlm, "endpoints": settings.ocr_endpoints, "profile": settings.profile,
                                   "api_key": settings.ocr_api_key}))


def chunker_options(settings: Settings) -> ChunkerOptions:
    """:class:`ChunkerOptions` from ``settings.chunking`` and ``max_tokens``. Raises
    :class:`ConfigurationError` naming the problem."""
    from pydantic import ValidationError

    try:
        return ChunkerOptions(**{**settings.chunking, "max_tokens": settings.max_tokens})
    except ValidationError as exc:  # one line naming each field, as load_settings does
        detail = "; ".join(f"chunking.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid chunking settings: {detail}") from exc


def ocr_identity(settings: Settings, vlm_engine=None) -> dict:
    """The OCR settings that decide a document's page text, as a JSON-able dict: the routing mode
    (``engine``: text layer, CPU OCR, VLM), the version of the passes over the converted pages
    (``conversion``: :data:`~folioflow.ocr.finish.CONVERSION_VERSION`) and of the text-layer reader
    (``text_engine``: :data:`~folioflow.ocr.engines.text_layer.TEXT_ENGINE_VERSION`) and of the page checks
    that re-route pages (``fidelity``: :data:`~folioflow.ocr.fidelity.FIDELITY_VERSION`), and unless the engine is
    ``text`` the CPU OCR engine, languages
    and render DPI, and the VLM engine's :attr:`~folioflow.ocr.engines.base.PageEngine.cache_key` (profile,
    prompt/sizing/sampling fingerprint, served model). Endpoint URLs, API keys, timeouts and
    concurrency are left out: they do not change the text a given model produces. ``vlm_engine``
    must be warmed up or able to warm up (its key needs the served model id)."""
    from folioflow.ocr.engines.base import DEFAULT_CPU_ENGINE
    from folioflow.ocr.engines.text_layer import TEXT_ENGINE_VERSION
    from folioflow.ocr.fidelity import FIDELITY_VERSION
    from folioflow.ocr.finish import CONVERSION_VERSION

    identity: dict = {"engine": settings.engine, "conversion": CONVERSION_VERSION, "text_engine": TEXT_ENGINE_VERSION,
                      "fidelity": FIDELITY_VERSION}
    if settings.engine != "text":
        identity.update(cpu_engine=settings.cpu_ocr_engine or DEFAULT_CPU_ENGINE, languages=list(settings.languages),
                        dpi=settings.dpi, vlm=vlm_engine.cache_key if vlm_engine is not None else None)
    return identity


def index_fingerprint(model: str, options: ChunkerOptions, ocr: dict) -> str:
    """What else than the bytes decides the indexed content, as ``MODEL|CHUNKER|ocr:OCR``: the
    embedding model name, a 12-hex hash of the chunker options (limit included) and the chunker's
    :data:`~folioflow.chunking.chunker.CHUNKER_VERSION` and a 12-hex hash
    of :func:`ocr_identity`. Stored on each document's record; a document indexed under another
    fingerprint is processed again (see :func:`settings_change` for the reason shown)."""
    return f"{model}|{_chunking_part(options)}|{ocr_part(ocr)}"


def _chunking_part(options: ChunkerOptions) -> str:
    return sha256_text(options.model_dump_json() + f"|chunker:{CHUNKER_VERSION}")[:12]


def ocr_part(ocr: dict) -> str:
    """The OCR part of :func:`index_fingerprint` for :func:`ocr_identity` ``ocr``: ``ocr:`` and 12 hex."""
    return f"ocr:{sha256_text(json.dumps(ocr, sort_keys=True))[:12]}"


def rechunk_fingerprint(model: str, options: ChunkerOptions, recorded: str | None) -> str:
    """The :func:`index_fingerprint` of a document chunked and embedded again from its kept
    conversion (:mod:`folioflow.flows.reindex`): this run's embedding model and chunker parts, and
    the OCR part ``recorded`` on its record, since its page text was not made again (``ocr:?`` when
    the record has none: the next ``ingest`` then converts it again)."""
    return f"{model}|{_chunking_part(options)}|{recorded_ocr_part(recorded) or 'ocr:?'}"


def recorded_ocr_part(fingerprint: str | None) -> str | None:
    """The OCR part (``ocr:...``) of a recorded :func:`index_fingerprint`; None when it has none."""
    return _fingerprint_parts(fingerprint)[2]


def _fingerprint_parts(fingerprint: str | None) -> tuple[str | None, str | None, str | None]:
    parts = (fingerprint or "").split("|")
    ocr = next((p for p in parts if p.startswith("ocr:")), None)
    rest = [p for p in parts if not p.startswith("ocr:")]
    return (rest[0] if rest and rest[0] else None, rest[1] if len(rest) > 1 else None, ocr)


def settings_change(old: str | None, new: str) -> str:
    """Which part of :func:`index_fingerprint` differs between ``old`` and ``new``, for the run
    report: e.g. ``"OCR (settings or conversion version) changed"`` or ``"embedding model, chunking
    (options or chunker version) changed"``."""
    names = ("embedding model", "chunking (options or chunker version)", "OCR (settings or conversion version)")
    changed = [name for name, a, b in zip(names, _fingerprint_parts(old), _fingerprint_parts(new), strict=True) if a != b]
    return f"{', '.join(changed or ['settings'])} changed"


class Stages:
    """Plan, convert and chunk for one :class:`StageSpec`. ``counter``: a token counter already
    loaded; ``load_counter``: a function that loads one (the flow passes its embedder's, which loads
    the embedding model); with neither, the tokenizer is loaded from the model's name.

    The chunker, and with it the token counter, is built by the first :meth:`convert` (or
    :meth:`chunk`), not by :meth:`warm_up`: a run whose every document is skipped or refused before
    a page is converted loads no tokenizer or model. A chunker that cannot be built (the model or
    its tokenizer cannot be loaded, chunking options the model's limit refuses) fails that
    document and every later one with the same error, which :attr:`setup_error` keeps for the flow
    (:func:`folioflow.flows.ingest.run_body` then stops the run with it)."""

    def __init__(self, spec: StageSpec, counter=None, vlm_engine=None, load_counter: Callable[[], Any] | None = None):
        self.spec, self.settings = spec, spec.settings
        self._counter, self._load_counter, self._vlm = counter, load_counter, vlm_engine
        self._owns_vlm = False  # a VLM engine given is its giver's to close; one built here is closed here
        self.converter: DocumentConverter | None = None
        self.chunker: Chunker | None = None  # built by the first convert() or chunk()
        self.setup_error: FolioflowError | None = None
        self._chunker_lock = threading.Lock()
        self.pool: ConvertPool | None = None
        self.cache = PageCache(self.settings.cache_dir)

    def ready_chunker(self) -> Chunker:
        """The chunker, built on first use (see the class docstring). Raises the
        :class:`~folioflow.ocr.errors.FolioflowError` that building it raised, now and on every
        later call."""
        with self._chunker_lock:
            if self.setup_error is not None:
                raise self.setup_error
            if self.chunker is None:
                try:
                    if self._counter is None and self._load_counter is not None:
                        self._counter = self._load_counter()
                    elif self._counter is None:
                        from folioflow.chunking.tokens import HFTokenCounter

                        self._counter = HFTokenCounter.from_pretrained(self.settings.embedding_model)
                    self.chunker = Chunker(self._counter, chunker_options(self.settings))
                except FolioflowError as exc:
                    self.setup_error = exc
                    raise
            return self.chunker

    def warm_up(self) -> Stages:
        s = self.settings
        if self._vlm is None:
            self._vlm = build_vlm_engine(s)
            self._owns_vlm = self._vlm is not None
        extra: dict[str, Any] = {"cpu_engine": s.cpu_ocr_engine} if s.cpu_ocr_engine else {}
        self.options = ConvertOptions(engine=s.engine, languages=s.languages, dpi=s.dpi,
                                      allow_truncated=s.allow_truncated, **extra)
        self.converter = DocumentConverter(self.options, vlm_engine=self._vlm, page_cache=self.cache)
        processes = s.resolved_convert_processes if self.spec.in_process else 1
        if self._vlm is None and processes > 1:
            self.pool = ConvertPool(self.options, processes, s.cache_dir)
        self.converter.warm_up()  # engine problems stop the run here, before any document
        return self

    def close(self) -> None:
        for part in (self.pool, self.converter):
            if part is not None:
                part.close()
        if self._owns_vlm and self._vlm is not None:
            self._vlm.close()

    # ------------------------------------------------------------------------------------ stages
    def password_for(self, file: SourceFile) -> str | None:
        """The source's password for ``file``, else the settings' (glob on path or name)."""
        from folioflow.flows.source_config import matches

        password = file.password()
        if password is None:
            for pattern, secret in self.settings.passwords.items():
                if matches(file.path, [pattern]) or matches(Path(file.path).name, [pattern]):
                    return secret.get_secret_value()
        return password

    def source_ref(self, file: SourceFile, size: int | None = None) -> SourceRef:
        return SourceRef(uri=file.uri, path=file.path, source=file.source_name or self.settings.source_name,
                         tenant=self.tenant_of(file), size=size or file.size,
                         mtime=file.mtime, etag=file.etag, metadata=file.metadata)

    def plan(self, file: SourceFile, known: Known | None) -> Planned:
        """Decide whether ``file`` needs work (see module docstring); reads and opens it unless the
        change token shows it unchanged: :meth:`read_plan`, then :meth:`inspect` unless skipped.
        Raises ``OSError`` (transient reads), :class:`~folioflow.ocr.errors.SourceError`
        (unreadable document)."""
        planned = self.read_plan(file, known)
        return planned if planned.skip else self.inspect(planned)

    def read_plan(self, file: SourceFile, known: Known | None) -> Planned:
        """The first half of :meth:`plan`: reads ``file`` (unless the change token shows it unchanged)
        and decides from its bytes, without opening the document (``page_count`` 0 until
        :meth:`inspect`), so a document refused on opening still says what changed. ``Planned.why``
        says why: ``new``, ``changed`` (bytes), ``retry: ...`` (last attempt failed, or some pages
        failed), ``... settings changed`` (see :func:`settings_change`), ``forced``
        (``settings.force``), or ``unchanged (change token)`` / ``unchanged (content hash)`` when
        skipped. Raises ``OSError`` (transient reads), :class:`~folioflow.ocr.errors.TenancyError`
        (``settings.retenant`` off and the document indexed for another tenant or for none)."""
        tenant = self.tenant_of(file)
        if known is not None and not self.settings.retenant and known.tenant != tenant:
            # a tenant-bound caller of the API names a file that another tenant's documents hold (or the
            # shared ones): it must not take it over (the other tenant's name is not given)
            owner = "for no tenant (shared)" if known.tenant is None else "for another tenant"
            raise TenancyError(f"already indexed {owner}; a run for tenant {tenant!r} cannot move "
                               "it (upload a copy, or ask an administrator)")
        current = current_known(known, self.spec.fingerprint, tenant, self.settings.force)
        if current is not None and current.change_token == file.change_token:
            return Planned(file, None, current.content_hash, self.source_ref(file), True, "unchanged (change token)",
                           current.pages)
        data = file.read_bytes()
        content_hash = sha256_bytes(data)
        source = self.source_ref(file, len(data))
        if current is not None and current.content_hash == content_hash:
            return Planned(file, None, content_hash, source, True, "unchanged (content hash)", current.pages)
        return Planned(file, data, content_hash, source, False, self._why(known, content_hash, file))

    def inspect(self, planned: Planned) -> Planned:
        """``planned`` with its ``page_count``: the document opened in a guard process
        (``ocr.guard``: a hostile file fails alone). Raises
        :class:`~folioflow.ocr.errors.SourceError` (not a document, encrypted, truncated, ...)."""
        assert self.converter is not None and planned.data is not None and planned.content_hash is not None
        item = DocumentInput(data=planned.data, source=planned.source, password=self.password_for(planned.file))
        planned.page_count = self.converter.inspect(item, planned.content_hash).page_count
        return planned

    def _why(self, known: Known | None, content_hash: str, file: SourceFile) -> str:
        """Why a document that is not skipped is processed (see :meth:`plan`)."""
        if known is None:
            return "new"
        if known.content_hash != content_hash:
            return "changed"
        if known.status != "indexed":
            return "retry: the last attempt failed"
        if known.failed_pages:
            return f"retry: page{'s' if len(known.failed_pages) > 1 else ''} " \
                   f"{', '.join(map(str, known.failed_pages))} failed last time"
        if known.fingerprint != self.spec.fingerprint:
            return settings_change(known.fingerprint, self.spec.fingerprint)
        if known.tenant != self.tenant_of(file):
            return f"tenant changed ({known.tenant!r} -> {self.tenant_of(file)!r})"
        return "forced"

    def tenant_of(self, file: SourceFile) -> str | None:
        """The tenant ``file``'s points get: its configured source's, else the settings'."""
        return file.tenant if file.config else self.settings.tenant

    def convert(self, planned: Planned, on_page: Callable[[Page], None] | None = None) -> Document:
        """OCR every page (cached pages are reused), across the process pool when there is one.
        Builds the chunker first (:meth:`ready_chunker`: a model that cannot be loaded fails the
        document before its pages are read). Raises :class:`~folioflow.ocr.errors.SourceError` when
        the document cannot be opened."""
        assert self.converter is not None and planned.data is not None
        self.ready_chunker()
        password = self.password_for(planned.file)
        if self.pool is None or planned.page_count < 2:
            return self.converter.convert(DocumentInput(data=planned.data, source=planned.source, password=password),
                                          on_page=on_page)
        with tempfile.TemporaryDirectory(prefix="folioflow-convert-") as folder:
            path = Path(folder) / f"{planned.content_hash}.bin"
            path.write_bytes(planned.data)
            item = DocumentInput(data=path, source=planned.source, password=password)
            return self.pool.convert(item, planned.page_count, on_page)

    def chunk(self, document: Document) -> list[Chunk]:
        return self.ready_chunker().chunk(document)


_REGISTRY: dict[str, Stages] = {}
_REGISTRY_LOCK = threading.Lock()


def register_stages(stages: Stages) -> None:
    """Make ``stages`` the instance :func:`stages_for` returns for its spec in this process."""
    with _REGISTRY_LOCK:
        _REGISTRY[stages.spec.key] = stages


def unregister_stages(stages: Stages) -> None:
    with _REGISTRY_LOCK:
        if _REGISTRY.get(stages.spec.key) is stages:
            del _REGISTRY[stages.spec.key]


def stages_for(spec: StageSpec) -> Stages:
    """This process's :class:`Stages` for ``spec``, built and warmed up on first use (worker
    processes keep the last two specs' stages)."""
    with _REGISTRY_LOCK:
        stages = _REGISTRY.get(spec.key)
        if stages is None:
            stages = Stages(spec).warm_up()
            while len(_REGISTRY) >= 2:
                _REGISTRY.pop(next(iter(_REGISTRY))).close()
            _REGISTRY[spec.key] = stages
        return stages
