"""The flow-process side of an ingestion run, without Prefect: models, store, index, prune.

:class:`Pipeline` wires the library packages (``ocr`` -> ``chunking`` -> ``indexing``) from
:class:`~folioflow.flows.settings.Settings`. It owns what must stay in one process: the embedder and the
vector store (embedded Qdrant allows one process per data dir), and it builds the CPU
:class:`~folioflow.flows.stages.Stages` (plan, convert, chunk) that document tasks run, in this process or on
Dask/Ray workers. The Prefect flows in :mod:`folioflow.flows.ingest` and :mod:`folioflow.flows.watch` call these
methods from tasks; keeping them here makes them testable without an orchestrator.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.schema import Chunk
from folioflow.flows.report import DocumentReport
from folioflow.flows.settings import Settings
from folioflow.flows.sources import SourceFile
from folioflow.flows.stages import (
    Known,
    Planned,
    Prepared,
    Stages,
    StageSpec,
    build_vlm_engine,
    chunker_options,
    index_fingerprint,
    ocr_identity,
    register_stages,
    unregister_stages,
)
from folioflow.indexing.embedder import Embedder
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.profiles import markdown_head, text_profile
from folioflow.indexing.routing import TICKER_PAGES, parties_in, tickers_in
from folioflow.indexing.store import ChunkStore, DocumentRecord, StoreSettings, open_store
from folioflow.ocr.errors import FolioflowError, IndexingError
from folioflow.ocr.schema import Document, PageStatus, kept_document_path

__all__ = ["MIN_FREE_BYTES", "Pipeline", "Planned", "Prepared", "Shared", "check_free_space", "local_file_exists", "local_path", "stale_records", "page_failures", "page_note",
           "page_partials"]


@dataclass(frozen=True)
class Shared:
    """An embedder (warmed up) and an open store that a long-lived process lends to each ingest
    run (see :class:`Pipeline`); the process closes the store itself."""

    embedder: Embedder
    store: ChunkStore


#: Free bytes an embedded store's file system must keep before a document is indexed: the store
#: maps its segment files into memory, and a write into a mapping on a full disk ends the process
#: with SIGBUS, which no handler can turn into an error (a breaking trial on a 2 MB tmpfs).
MIN_FREE_BYTES = 64 << 20


def check_free_space(data_dir: Path, needed: int = MIN_FREE_BYTES) -> None:
    """Raise :class:`~folioflow.ocr.errors.IndexingError` when the file system of ``data_dir`` (or
    of its nearest existing parent) has less than ``needed`` bytes free. Not a
    :class:`~folioflow.ocr.errors.StoreError`: waiting does not free a disk, so it is not retried."""
    import shutil

    existing = next((p for p in (Path(data_dir).absolute(), *Path(data_dir).absolute().parents) if p.exists()), None)
    if existing is None:
        return
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise IndexingError(f"the data dir's disk ({existing}) has {free / 2**20:.1f} MiB free, under the "
                            f"{needed / 2**20:.0f} MiB the embedded store needs to write safely: free some space and "
                            "run again (documents already indexed stay)")


class Pipeline:
    """Models, store and stages of one run. Cheap to construct; :meth:`warm_up` opens the store
    and builds the stages (raises :class:`~folioflow.ocr.errors.FolioflowError` subclasses when it
    cannot).

    The embedding model loads when the run first needs it (:meth:`load_model`): for the first
    document with pages to convert (its chunker counts the model's tokens), or the first one
    written to the index, which also creates a missing collection (:meth:`ensure_collection`).
    The run's fingerprint takes the model's name from the settings
    (:func:`~folioflow.indexing.embedder.canonical_model_name`), so a run whose every document is
    skipped or refused before a page is converted never loads it (nor creates a collection). A
    model that cannot be loaded fails the documents that needed it and is kept in
    :meth:`setup_error` for the flow to stop the run with. Loaded at :meth:`warm_up` as before:
    with a collection recorded under another model (the mismatch is raised there), on Dask or Ray
    workers (``in_process`` false: a worker's failure to load the tokenizer would only fail its
    documents, so the flow loads the model first as it did), and with ``convert=False``
    (re-chunking).

    ``shared``: a :class:`Shared` of an embedder and an open store that a long-lived process (the
    API server) owns: the run uses them instead of loading its own, and :meth:`close` leaves the
    store open (an embedded store admits one opener per process)."""

    def __init__(self, settings: Settings, vlm_engine=None, in_process: bool = True, shared: Shared | None = None):
        self.settings = settings
        self._vlm_engine = vlm_engine
        self._owns_vlm = False  # True once warm_up built the VLM engine (then close() closes it)
        self._in_process = in_process
        self._shared = shared
        self.embedder: Embedder | None = None
        self.store: ChunkStore | None = None
        self.indexer: Indexer | None = None
        self.stages: Stages | None = None
        self.chunker: Chunker | None = None  # set by warm_up(convert=False); else the stages' chunker
        self.spec: StageSpec | None = None
        self._write_lock = threading.Lock()
        self._model_lock = threading.RLock()
        self._model_ready = self._collection_ready = False
        self._model_error: FolioflowError | None = None

    # ------------------------------------------------------------------------------- set-up
    def warm_up(self, convert: bool = True) -> Pipeline:
        """Open the store and build the stages; the embedding model loads later, when first needed
        (class docstring). ``convert=False`` (re-chunking kept documents,
        :mod:`folioflow.flows.reindex`): the model is loaded now, and there is no OCR engine, VLM
        client or stages, only :attr:`chunker`; :attr:`fingerprint` is then not set and
        :meth:`index` needs one given."""
        s = self.settings
        if self._shared is not None:
            self.embedder = self._shared.embedder
        else:  # loads nothing yet: its model_name comes from the settings
            self.embedder = Embedder(model=s.embedding_model, device=s.device, precision=s.embedding_precision)
        options = chunker_options(s)
        self.store = self._shared.store if self._shared is not None else open_store(self.store_settings(s))
        self.indexer = Indexer(self.embedder, self.store)  # use_token_ids: set by load_model()
        info = self.store.collection_info()
        if not convert or not self._in_process or (info is not None and info.get("model") != self.embedder.model_name):
            self.ensure_collection()  # another model's collection: the mismatch is raised here
        if not convert:
            self.chunker = Chunker(self.embedder.token_counter(), options)
            return self
        # What else than the bytes decides the indexed content: the embedding model, the chunker's
        # options (limit included) and the OCR settings that decide the page text (the VLM engine's
        # key needs its served model: built and warmed up here, then shared with the stages).
        if self._vlm_engine is None:
            self._vlm_engine = build_vlm_engine(s)
            self._owns_vlm = self._vlm_engine is not None
        fingerprint = index_fingerprint(self.embedder.model_name, options, ocr_identity(s, self._vlm_engine))
        self.spec = StageSpec(settings=s, fingerprint=fingerprint, in_process=self._in_process)
        self.stages = Stages(self.spec, vlm_engine=self._vlm_engine, load_counter=self._token_counter).warm_up()
        register_stages(self.stages)
        return self

    def load_model(self) -> None:
        """Load the embedding model (idempotent, thread-safe). Raises the
        :class:`~folioflow.ocr.errors.FolioflowError` that loading raised, now and on every later
        call (:meth:`setup_error`)."""
        assert self.embedder is not None and self.indexer is not None
        with self._model_lock:
            if self._model_error is not None:
                raise self._model_error
            if self._model_ready:
                return
            try:
                self.embedder.warm_up()
                self.indexer.use_token_ids = self.embedder.takes_token_ids
            except FolioflowError as exc:
                self._model_error = exc
                raise
            self._model_ready = True

    def ensure_collection(self) -> None:
        """:meth:`load_model`, then create the collection if it is missing and check the model
        against it (``ensure_collection``; idempotent). Called from the flow's thread, where the
        store is closed: creating the embedded store's folder takes its lock in the creating
        thread. Raises as :meth:`load_model` does (an error is kept for :meth:`setup_error`)."""
        assert self.embedder is not None and self.store is not None
        with self._model_lock:
            self.load_model()
            if self._collection_ready:
                return
            if not self.settings.qdrant_url:  # creating the store writes its files too
                check_free_space(self.settings.data_dir)
            try:
                self.store.ensure_collection(self.embedder.dimension, self.embedder.model_name)
            except FolioflowError as exc:
                self._model_error = exc
                raise
            self._collection_ready = True

    def _token_counter(self):
        """The embedder's token counter, for the stages' chunker (loads the model first)."""
        self.load_model()
        assert self.embedder is not None
        return self.embedder.token_counter()

    def setup_error(self) -> FolioflowError | None:
        """Why this run cannot proceed, learnt after :meth:`warm_up`: the embedding model, the
        chunker built on it or the collection failed to load for a document (every later document
        failed with it)."""
        return self._model_error or (self.stages.setup_error if self.stages is not None else None)

    #: The vLLM OCR engine for ``s.ocr_endpoints`` and ``s.profile`` (see :func:`folioflow.flows.stages.build_vlm_engine`).
    vlm_engine_for = staticmethod(build_vlm_engine)

    @staticmethod
    def store_settings(s: Settings) -> StoreSettings:
        """``s.store_settings()`` (see :meth:`folioflow.flows.settings.Settings.store_settings`)."""
        return s.store_settings()

    @property
    def fingerprint(self) -> str:
        """What else than the bytes decides the indexed content: the embedding model, the chunker's
        options (limit included) and the OCR settings (see :func:`folioflow.flows.stages.index_fingerprint`)."""
        assert self.spec is not None
        return self.spec.fingerprint

    def close(self) -> None:
        if self.stages is not None:
            unregister_stages(self.stages)
            self.stages.close()
        if self._owns_vlm and self._vlm_engine is not None:
            self._vlm_engine.close()
            self._owns_vlm = False
        if self.store is not None and self._shared is None:
            self.store.close()

    # ------------------------------------------------------------------------------- index side
    def known(self, file: SourceFile) -> Known | None:
        """What the index holds for ``file`` (``None``: never indexed nor attempted). A record whose
        last attempt failed, or that was indexed with failed pages, comes back with that
        ``status`` / ``failed_pages``, so the document is processed again (:meth:`Stages.plan`)."""
        assert self.store is not None
        record = self.store.get_document(file.doc_id)
        return None if record is None else Known.from_record(record)

    def remember_token(self, file: SourceFile, change_token: str) -> None:
        """Store ``file``'s new change token on its record when its bytes did not change (so the
        next watch run skips it without reading)."""
        assert self.store is not None
        record = self.store.get_document(file.doc_id)
        if record is not None and (record.metadata or {}).get("change_token") != change_token:
            meta = {**(record.metadata or {}), "change_token": change_token}
            self.store.put_record(record.model_copy(update={"metadata": meta, "size": file.size, "mtime": file.mtime}))

    def save_document(self, document: Document) -> Path:
        path = kept_document_path(self.settings.documents_dir, document.doc_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
        tmp.write_text(document.model_dump_json())
        tmp.replace(path)
        return path

    def index(self, document: Document, chunks: list[Chunk], change_token: str | None = None,
              fingerprint: str | None = None, save: bool = True) -> DocumentRecord:
        """Embed and upsert the chunks, delete the document's stale points, write its record (with
        the errors of failed pages, if any: :func:`page_failures`, and the partial pages with their
        reasons: :func:`page_partials`) under ``fingerprint`` (default:
        this run's, :attr:`fingerprint`). ``save``: keep the converted document under
        ``documents_dir`` when the settings' ``keep_documents`` is on. Raises
        :class:`~folioflow.ocr.errors.IndexingError` (``StoreError`` is transient: retried), also
        when the embedded store's disk has less than :data:`MIN_FREE_BYTES` free (:func:`check_free_space`)."""
        assert self.indexer is not None
        if not self.settings.qdrant_url:
            check_free_space(self.settings.data_dir)
        self.ensure_collection()
        if save and self.settings.keep_documents:
            self.save_document(document)
        record = self._record(document, len(chunks), change_token, fingerprint or self.fingerprint)
        with self._write_lock:
            self.indexer.index(record, chunks)
        return record

    def record_failure(self, document: Document, error: str, change_token: str | None = None) -> DocumentRecord:
        """Record ``document`` (converted, but with no usable page) as ``failed`` in the registry
        with its page errors; its previous points, if any, stay untouched and searchable, and the
        next run retries it (:meth:`known`). Raises :class:`~folioflow.ocr.errors.StoreError`."""
        assert self.store is not None
        self.ensure_collection()  # the registry is created with the collection
        record = self._record(document, 0, change_token, self.fingerprint)
        if not record.errors:
            record = record.model_copy(update={"errors": [error]})
        with self._write_lock:
            self.store.record_failure(record)
        return record

    def _record(self, document: Document, chunks: int, change_token: str | None, fingerprint: str) -> DocumentRecord:
        source = document.source
        failures = page_failures(document)
        partials = page_partials(document)
        head = "\n\n".join(p.markdown for p in document.pages[:TICKER_PAGES])  # a cover, a preamble
        return DocumentRecord(
            doc_id=document.doc_id,
            uri=source.uri,
            path=source.path,
            source=source.source,
            tenant=source.tenant,
            content_hash=document.content_hash,
            pages=document.page_count,
            chunks=chunks,
            engines=document.engines(),
            indexed_at=datetime.now(UTC),
            errors=[*document.errors, *failures.values()][:50],
            mime_type=document.mime_type,
            size=source.size,
            mtime=source.mtime,
            embedding_model=self.embedder.model_name if self.embedder else None,
            metadata={"fingerprint": fingerprint, "status": document.status.value,
                      "failed_pages": sorted(failures), "partial_pages": sorted(partials),
                      "partial_notes": [partials[n] for n in sorted(partials)],
                      "change_token": change_token, "etag": source.etag,
                      "tickers": tickers_in(head), "parties": parties_in(head),
                      "text_profile": text_profile(markdown_head(p.markdown for p in document.pages)),
                      **{f"meta.{k}": v for k, v in source.metadata.items()}},
        )

    def prune(self, source_name: str, keep_uris: set[str], roots: list[str] | None = None,
              labelled: bool = True, still_there: Callable[[str], bool] | None = None) -> list[DocumentReport]:
        """Delete documents of ``source_name`` whose URI is not in ``keep_uris`` (and, when
        ``roots`` is given, lies under one of those URI prefixes, and, when ``still_there`` is
        given, for which ``still_there(uri)`` is false); a ``pruned`` report each, shown as
        ``source:path`` like listed documents (``labelled``) or as the local path the document
        was indexed from (its ``file://`` URI's path; the recorded path for other URIs)."""
        assert self.store is not None
        pruned = []
        for record in stale_records(self.store, source_name, keep_uris, roots, still_there):
            with self._write_lock:
                self.store.delete_document(record.doc_id)
            shown = f"{source_name}:{record.path}" if labelled else local_path(record.uri) or record.path
            pruned.append(DocumentReport(source=shown, doc_id=record.doc_id, status="pruned", pages=record.pages,
                                         chunks=record.chunks, source_name=source_name, tenant=record.tenant))
        return pruned

    @staticmethod
    def describe(report: DocumentReport, document: Document) -> None:
        """Copy page-level facts of ``document`` into ``report``."""
        report.pages = document.page_count
        report.engines = document.engines()
        report.fallback_pages = [p.number for p in document.pages if p.status == PageStatus.FALLBACK]
        report.failed_pages = [p.number for p in document.pages if p.status == PageStatus.FAILED]
        report.partial_pages = [p.number for p in document.pages if p.status == PageStatus.PARTIAL]
        report.rerouted_pages = [p.number for p in document.pages if p.fidelity is not None and p.fidelity.rerouted]
        report.fidelity = fidelity_summary(document)
        report.cached_pages = [p.number for p in document.pages if p.attributes.get("cache") == "hit"]
        notes = [f"page {p.number}: fallback: {p.fallback_reason}" for p in document.pages if p.fallback_reason]
        notes += [page_note(p.number, e) for p in document.pages for e in p.errors]
        report.page_errors = notes[:50]


def fidelity_summary(document: Document) -> dict[str, float]:
    """The run report's ``fidelity`` of a document: pages checked, their verdicts, re-routed pages
    and the lowest ``chars_recall``, ``plausibility`` and ``ink_read`` measured (see
    :mod:`folioflow.ocr.fidelity`)."""
    checked = [p.fidelity for p in document.pages if p.fidelity is not None]
    out: dict[str, float] = {"checked": len(checked)}
    for verdict in ("ok", "partial", "failed"):
        out[verdict] = sum(1 for f in checked if f.verdict == verdict)
    out["rerouted"] = sum(1 for f in checked if f.rerouted)
    for name in ("chars_recall", "plausibility", "ink_read"):
        values = [f.measures[name] for f in checked if name in f.measures]
        if values:
            out[f"min_{name}"] = min(values)
    return out


def page_note(number: int, text: str) -> str:
    """``text`` prefixed with ``page NUMBER:`` once (engines' messages often start with it already)."""
    prefix = f"page {number}:"
    return text if text.startswith(prefix) else f"{prefix} {text}"


def page_failures(document: Document) -> dict[int, str]:
    """The failed pages of ``document``: page number (1-based) -> its errors in one line, each
    prefixed ``page N:`` once (``"page N: failed"`` when the page gave no reason)."""
    return {p.number: "; ".join(page_note(p.number, e) for e in p.errors) or f"page {p.number}: failed"
            for p in document.pages if p.status == PageStatus.FAILED}


def page_partials(document: Document) -> dict[int, str]:
    """The partial pages of ``document`` (indexed with part of their content missing or
    implausible, :mod:`folioflow.ocr.fidelity`): page number (1-based) -> ``page N: reason``
    (:func:`folioflow.ocr.export.partial_reason`)."""
    from folioflow.ocr.export import partial_reason

    return {p.number: page_note(p.number, partial_reason(p)) for p in document.pages if p.status == PageStatus.PARTIAL}


def stale_records(store: ChunkStore, source_name: str, keep_uris: set[str], roots: list[str] | None = None,
                  still_there: Callable[[str], bool] | None = None) -> list[DocumentRecord]:
    """The records of ``source_name`` that :meth:`Pipeline.prune` deletes: URI not in
    ``keep_uris``, under one of ``roots`` (URI prefixes) when given, and not ``still_there(uri)``
    when that is given."""
    stale = []
    for record in store.list_documents(source=source_name):
        if record.uri in keep_uris:
            continue
        if roots is not None and not any(record.uri.startswith(root.rstrip("/") + "/") for root in roots):
            continue
        if still_there is not None and still_there(record.uri):
            continue
        stale.append(record)
    return stale


def local_file_exists(uri: str) -> bool:
    """Whether the ``file://`` URI ``uri`` names a file on disk now."""
    path = local_path(uri)
    return path is not None and Path(path).is_file()


def local_path(uri: str) -> str | None:
    """The local path of a ``file://`` URI (percent-decoded, as ``Path.as_uri`` encoded it), else ``None``."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(uri)
    return url2pathname(parsed.path) if parsed.scheme == "file" else None

