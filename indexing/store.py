"""The chunk store: one indexing interface over Qdrant server, qdrant-client local mode and Qdrant Edge.

Collections. A chunk collection (default ``folioflow``) with a named dense vector ``dense``
(cosine), a named multivector ``sentences`` (cosine, MaxSim: a chunk's sentence vectors, contracts
only, :class:`~folioflow.indexing.indexer.Indexer`) and a sparse vector ``bm25`` with Qdrant's IDF
modifier (:mod:`folioflow.indexing.sparse`), payload
indexes created at creation, before any upload (:mod:`folioflow.indexing.payload`); and its documents
registry ``<collection>__documents`` (:mod:`folioflow.indexing.registry`). Point ids are
:func:`folioflow.chunking.schema.point_id` (uuid5 of doc id, chunk index, chunk content hash).

Writes. :meth:`ChunkStore.replace_document` makes a document's points exactly its new chunks, in
four steps, so that a search never sees part of a version:

1. upsert the points whose ids are already committed (unchanged chunks: same id, same text);
2. upsert the new points *pending*: payload key :data:`PENDING` = :data:`PENDING_VALUE` (and
   :data:`PENDING_SINCE`, POSIX seconds). Every search and count filters pending points out;
3. commit: one filtered update removes :data:`PENDING` from the document's points (a single
   operation in Qdrant's write-ahead log: after a crash it is replayed whole or not at all);
4. delete the document's points that are not in the new set, then write its registry record.

A crash (or a store that becomes unreachable) before step 3 leaves the old version searchable and
the new points invisible; between 3 and 4 both whole versions are searchable for a moment, never
neither and never a part. The registry record is written last, so the next run sees the old record
(or none), redoes the document, re-uses the same point ids and lands in the same state (writes are
idempotent). Pending points of a document that is never written again (it vanished from its
source before its first commit) stay invisible; :meth:`ChunkStore.sweep_pending` removes those
older than an hour (run by :meth:`folioflow.indexing.indexer.Indexer.prune`).

Backends (``StoreSettings.backend``):

* ``server``: a Qdrant server or cluster by URL (:mod:`folioflow.indexing.qdrant_client_store`);
* ``local``: qdrant-client's local mode under ``<data_dir>/qdrant`` (pure Python, exact search);
* ``edge``: qdrant-edge-py, the Qdrant engine in-process, under ``<data_dir>/edge``
  (:mod:`folioflow.indexing.edge_store`);
* ``auto`` (default): ``server`` when ``url`` is set, else the embedded backend whose folder
  already exists in ``data_dir``, else :data:`EMBEDDED_DEFAULT`.

Embedded default: **Edge**, by measurement (``python tests/benchmarks/bench_stores.py --n 100000
--small 10000``; the figures are in ``docs/benchmarks.md``, "Embedded store in detail"): it writes
and searches far faster than local mode, which commits every point to sqlite on its own and scans
payloads in Python for filters, for a small loss of recall to its HNSW index. Caveats:
qdrant-edge-py is beta; its BM25 IDF counts deleted points until segments are optimised; flows
should call :meth:`ChunkStore.optimize` after a bulk ingest.

Embedded stores hold their folder exclusively: a second process (or a second store in the same
process) opening the same data dir gets a :class:`~folioflow.ocr.errors.StoreLockedError` (a
:class:`StoreError`) naming the holder's pid and command line; :func:`check_unlocked` tells it
without opening anything.

Opening a store never creates anything: on a data directory (or collection) that does not exist it
opens empty, holds no lock, and searches return nothing; :meth:`ChunkStore.ensure_collection`
(ingest) creates the folder and takes the lock then. Readers that need an existing collection (the
retriever, ``folioflow query``) call :meth:`ChunkStore.require_collection`, which raises
:class:`~folioflow.ocr.errors.CollectionNotFoundError` naming where it looked.
"""

from __future__ import annotations

import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
from pydantic import BaseModel, SecretStr

from folioflow.chunking.schema import Chunk
from folioflow.indexing.payload import chunk_payload
from folioflow.indexing.registry import (
    COLLECTION_RECORD_ID,
    REGISTRY_SCHEMA,
    DocumentRecord,
    record_from_payload,
    record_payload,
    record_point_id,
)
from folioflow.indexing.sparse import SparseVec
from folioflow.ocr.errors import (
    CollectionNotFoundError,
    ConfigurationError,
    FolioflowError,
    StoreError,
    StoreLockedError,
    TenancyError,
)
from folioflow.ocr.extras import require

__all__ = [
    "DENSE",
    "EMBEDDED_DEFAULT",
    "PENDING",
    "PENDING_SINCE",
    "PENDING_VALUE",
    "SEARCHED_TEXT_FACTS",
    "SPARSE",
    "ChunkStore",
    "DataDirLock",
    "check_unlocked",
    "locked_error",
    "process_command",
    "DocumentRecord",
    "PointData",
    "ReplaceResult",
    "SearchFilter",
    "SearchHit",
    "StoreSettings",
    "open_store",
]

log = logging.getLogger(__name__)

#: Embedded backend used when nothing else decides (see the module docstring for the measurement).
EMBEDDED_DEFAULT = "edge"
#: Names of the two vectors of every chunk point.
DENSE, SPARSE = "dense", "bm25"
#: Named multivector of a chunk's sentence vectors (one per sentence, the same embedding model as
#: :data:`DENSE`), compared with MaxSim: a dense query scores a chunk by its best sentence. Only
#: collections created with it (record key ``sentence_vectors``) have it; a point may have none.
SENTENCES = "sentences"
#: Payload key marking a point written but not yet committed (searches never return it), and the
#: POSIX time it was written at.
PENDING, PENDING_SINCE = "folioflow_state", "folioflow_pending_since"
#: Value of :data:`PENDING` on pending points (a keyword: Qdrant Edge 0.9 does not match booleans).
PENDING_VALUE = "pending"

#: Record ``metadata`` keys read from a document's text at ingest (``text_profile``: what it reads
#: as, :func:`folioflow.indexing.profiles.text_profile`; ``tickers``:
#: :func:`folioflow.indexing.routing.tickers_in`; ``parties``:
#: :func:`folioflow.indexing.routing.parties_in`). They describe the indexed text, so a failed
#: re-conversion keeps the previous version's (:meth:`ChunkStore.record_failure`).
SEARCHED_TEXT_FACTS = ("text_profile", "tickers", "parties")

Mode = Literal["dense", "sparse", "hybrid"]
#: The modes of :meth:`ChunkStore.search`: the retriever's and ``sentences`` (:data:`SENTENCES`).
StoreMode = Literal["dense", "sparse", "hybrid", "sentences"]


class StoreSettings(BaseModel):
    """Where and how chunks are stored.

    ``data_dir``: embedded storage root. ``url``/``api_key``: Qdrant server (``https://`` for TLS).
    ``shard_number``/``replication_factor``/``write_consistency_factor``: applied when the
    collection is created on a server. ``tenancy``: every write needs a tenant and every search
    must name one. ``batch_size``/``parallel``: server upload batching; ``retries``: attempts per
    server request (tenacity, exponential backoff) before :class:`StoreError`; ``timeout`` in seconds.
    """

    data_dir: Path = Path("./.folioflow")
    url: str | None = None
    api_key: SecretStr | None = None
    collection: str = "folioflow"
    backend: Literal["auto", "edge", "local", "server"] = "auto"
    tenancy: bool = False
    shard_number: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None
    prefer_grpc: bool = False
    timeout: float = 60.0
    batch_size: int = 256
    parallel: int = 2
    retries: int = 4

    def resolved_backend(self) -> str:
        """The backend ``auto`` stands for (see module docstring)."""
        if self.backend != "auto":
            return self.backend
        if self.url:
            return "server"
        root = Path(self.data_dir)
        if (root / "edge" / self.collection).exists():
            return "edge"
        if (root / "qdrant" / "collection" / self.collection).exists():
            return "local"
        return EMBEDDED_DEFAULT


@dataclass
class SearchFilter:
    """Metadata filter applied inside Qdrant. Lists match any of their values; the page range
    keeps chunks overlapping ``[page_from, page_to]`` (1-based, inclusive)."""

    doc_ids: Sequence[str] | None = None
    sources: Sequence[str] | None = None
    tenant: str | None = None
    kinds: Sequence[str] | None = None
    #: Chunk roles (``metadata.extra.role``: a contract's ``parties``, ``definitions``, ``signature``
    #: blocks, :mod:`folioflow.chunking.roles`); chunks without a role never match.
    roles: Sequence[str] | None = None
    page_from: int | None = None
    page_to: int | None = None


@dataclass
class SearchHit:
    """One scored point: ``payload`` is ``{"page_content", "metadata"}`` (see :mod:`folioflow.indexing.payload`).
    ``score``: cosine similarity (dense), BM25 (sparse) or the RRF score (hybrid)."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass
class PointData:
    """A point to upsert: ``dense`` (dim,) float32, ``sparse`` or None, ``payload``; ``sentences``
    (n, dim) float32, one row per sentence of the chunk, or None (no :data:`SENTENCES` vector)."""

    id: str
    dense: np.ndarray
    sparse: SparseVec | None
    payload: dict[str, Any]
    sentences: np.ndarray | None = None


@dataclass
class ReplaceResult:
    """Outcome of :meth:`ChunkStore.replace_document`: points written and stale points removed."""

    upserted: int = 0
    deleted: int = 0
    ids: list[str] = field(default_factory=list)


#: Lock and owner files inside an embedded backend's folder (:class:`DataDirLock`).
LOCK_FILE, OWNER_FILE = ".folioflow.lock", ".folioflow-owner"
#: Embedded backends' folders under the data directory (``edge``: Qdrant Edge, ``qdrant``: local mode).
EMBEDDED_FOLDERS = ("edge", "qdrant")


def process_command(pid: int) -> str | None:
    """The command line of process ``pid`` (its arguments joined by spaces, white space collapsed
    to one line, at most 300 characters), from psutil when installed, else ``/proc/<pid>/cmdline``; None when the process is
    gone or cannot be read."""
    try:
        import psutil

        parts = psutil.Process(pid).cmdline()
    except ImportError:
        try:
            parts = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\x00")
        except OSError:
            return None
    except Exception:  # noqa: BLE001 - psutil.NoSuchProcess, AccessDenied, ZombieProcess: nothing to show
        return None
    shown = " ".join(" ".join(p.split()) for p in parts if p.strip())  # one line: no newlines of a `-c` script
    return (shown[:297] + "...") if len(shown) > 300 else shown or None


def locked_error(folder: Path, direct: str | None = None) -> StoreLockedError:
    """The :class:`StoreLockedError` for ``folder`` held by another process: names the holder's
    pid and command line (from the owner file the holder wrote) and the ways out (``folioflow
    api``, stopping the holder, a Qdrant server). ``direct``: the folioflow command that met the
    lock when it cannot go through the API server (``eval chunks``, ``watch``, ...); held by the
    server, the message then says to stop it or to use a copy instead of going through it."""
    owner = Path(folder) / OWNER_FILE
    try:
        pid: int | None = int(owner.read_text().strip())
    except (OSError, ValueError):
        pid = None
    command = process_command(pid) if pid is not None else None
    if pid is None:
        holder = "another process (its pid was not recorded)"
    else:
        holder = f"pid {pid}" + (f" ({command})" if command else "")
    if command and direct and re.search(r"folioflow(\.flows\.cli)?\S*\s+api\b", command):
        # held by the API server, and this command cannot go through it
        message = (f"data dir {folder} is held by the folioflow API server ({holder}), and `folioflow {direct}` "
                   "cannot go through it (it reads the store itself). Stop the server while it runs, or run it on "
                   "a copy of the data dir (--data-dir COPY, copied while the server is stopped), or keep the "
                   "index in a Qdrant server (--qdrant-url) that both use")
    elif command and re.search(r"folioflow(\.flows\.cli)?\S*\s+api\b", command):
        # the holder is the API server: the way out is to go through it, not to start one
        message = (f"data dir {folder} is held by the folioflow API server ({holder}): go through it. The CLI "
                   "finds it by itself (api.json in the data dir; or --api-url); in Python use "
                   "FolioRetriever.connect(data_dir) or FolioRetriever(api_url=...)")
    else:
        message = (f"data dir {folder} is in use by {holder}: the embedded store admits one process at a time. Run "
                   "`folioflow api` on this data dir and `folioflow ingest`, `reindex`, `query`, `status`, `show` "
                   "and FolioRetriever go through it; or stop that process, or use a Qdrant server (--qdrant-url)")
    return StoreLockedError(message, pid=pid, command=command, folder=str(folder))


def check_unlocked(settings: StoreSettings) -> None:
    """Raise :class:`StoreLockedError` at once when an embedded store's folder under
    ``settings.data_dir`` is held by another process (or another open store in this process); do
    nothing for a Qdrant server (``settings.url``) or a folder that does not exist. Takes the lock
    for an instant and releases it (``flock``: a holder that exits, even killed, frees it). Meant
    for commands that would otherwise find out late: after loading a model or starting Prefect.
    Raises :class:`StoreError` when the lock cannot be written (read-only, no permission)."""
    if settings.url:
        return
    from filelock import FileLock, Timeout

    for name in EMBEDDED_FOLDERS:
        folder = Path(settings.data_dir) / name
        if not (folder / LOCK_FILE).exists():
            continue
        probe = FileLock(str(folder / LOCK_FILE), timeout=0)
        try:
            probe.acquire()
        except Timeout:
            raise locked_error(folder) from None
        except OSError as exc:  # a read-only file system, no permission (DataDirLock says the same)
            raise StoreError(f"cannot lock the data dir {folder}: {exc.strerror or exc}: folioflow writes its lock "
                             "file there, also to search (copy a read-only store to a writable place)") from None
        probe.release()


class DataDirLock:
    """Exclusive, non-blocking lock on an embedded backend's folder (``filelock``, ``flock`` on
    POSIX). Raises :class:`StoreLockedError` naming the holder's pid and command line when another
    process (or another open store in this process) holds it (:func:`locked_error`), and
    :class:`StoreError` with the reason when the lock cannot be written (a read-only or full file
    system, no permission)."""

    def __init__(self, folder: Path):
        from filelock import FileLock, Timeout

        self._owner = folder / OWNER_FILE
        self._lock = FileLock(str(folder / LOCK_FILE), timeout=0)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
            self._owner.write_text(str(os.getpid()))
        except Timeout:
            raise locked_error(folder) from None
        except OSError as exc:  # a read-only or full file system, no permission
            self.release()
            raise StoreError(f"cannot lock the data dir {folder}: {exc.strerror or exc}: folioflow writes its lock "
                             "file there, also to search (copy a read-only store to a writable place)") from None

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self._lock.is_locked:
            self._lock.release()


class ChunkStore(ABC):
    """The indexing interface; backends implement the ``_``-prefixed primitives."""

    backend = "abstract"

    def __init__(self, settings: StoreSettings):
        self.settings = settings
        self.collection = settings.collection
        self._info: dict[str, Any] | None = None

    # -- backend primitives --------------------------------------------------------------------
    @abstractmethod
    def _create_collections(self, dim: int) -> None: ...
    @abstractmethod
    def _upsert(self, points: list[PointData]) -> None: ...
    @abstractmethod
    def _delete_where(self, doc_id: str, keep: set[str]) -> None: ...
    @abstractmethod
    def _ids_where(self, doc_id: str, committed: bool = False) -> set[str]: ...
    @abstractmethod
    def _commit(self, doc_id: str) -> None:
        """Remove :data:`PENDING` and :data:`PENDING_SINCE` from ``doc_id``'s points (one operation)."""
    @abstractmethod
    def _pending(self) -> list[tuple[str, str, float]]:
        """``(point id, doc id, pending since)`` of every pending point."""
    @abstractmethod
    def _payloads_where(self, doc_id: str) -> list[dict[str, Any]]:
        """Payloads of ``doc_id``'s committed points (any order)."""
    @abstractmethod
    def _delete_ids(self, ids: set[str]) -> None: ...
    @abstractmethod
    def _count(self, flt: SearchFilter | None, pending: bool = False) -> int:
        """Committed points matching ``flt`` (with ``pending``: pending ones only)."""
    @abstractmethod
    def _search(self, dense: np.ndarray | None, sparse: SparseVec | None, mode: StoreMode, k: int,
                flt: SearchFilter | None, score_threshold: float | None, mmr_diversity: float | None,
                fetch_k: int, rrf_k: int) -> list[SearchHit]: ...
    @abstractmethod
    def _reg_put(self, point_id: str, payload: dict[str, Any]) -> None: ...
    @abstractmethod
    def _reg_get(self, point_id: str) -> dict[str, Any] | None: ...
    @abstractmethod
    def _reg_scroll(self, source: str | None) -> list[dict[str, Any]]: ...
    @abstractmethod
    def _reg_delete(self, point_id: str) -> None: ...
    @abstractmethod
    def _close(self) -> None: ...

    # -- public API ------------------------------------------------------------------------------
    def ensure_collection(self, dim: int, model: str, sparse: dict[str, Any] | None = None) -> dict[str, Any]:
        """Create the chunk and registry collections (vectors, payload indexes) if missing, and
        return the collection record. Raises :class:`ConfigurationError` when the collection exists
        with another embedding model or dimension (mixing models would make search meaningless)."""
        info = self.collection_info()
        if info is not None:
            if info.get("dimension") != dim or info.get("model") != model:
                raise ConfigurationError(
                    f"collection {self.collection!r} holds {info.get('model')} ({info.get('dimension')} dims), "
                    f"not {model} ({dim} dims): use another collection or delete it")
            if self.settings.tenancy and not info.get("tenancy"):  # turned on: recorded for every later process
                info = {**info, "tenancy": True}
                self._reg_put(COLLECTION_RECORD_ID, info)
                self._info = info
            return info
        self._create_collections(dim)
        info = {"kind": "collection", "model": model, "dimension": dim, "sparse": sparse or {},
                "schema": REGISTRY_SCHEMA, "created_at": datetime.now(UTC).isoformat(),
                "tenancy": self.settings.tenancy, "sentence_vectors": True}
        self._reg_put(COLLECTION_RECORD_ID, info)
        self._info = info
        return info

    @property
    def tenancy(self) -> bool:
        """Tenancy is on when these settings say so or the collection was created (or once
        written) with it: it is recorded with the collection, so a process that forgets the
        setting still cannot search without a tenant."""
        return bool(self.settings.tenancy or (self.collection_info() or {}).get("tenancy"))

    @property
    def sentence_vectors(self) -> bool:
        """Whether the collection holds the :data:`SENTENCES` multivector (collections created
        before it existed do not: their chunks are searched by their chunk vectors alone)."""
        return bool((self.collection_info() or {}).get("sentence_vectors"))

    def collection_info(self) -> dict[str, Any] | None:
        """The collection record (model, dimension, sparse settings), or None before creation."""
        if self._info is None:
            self._info = self._reg_get(COLLECTION_RECORD_ID)
        return self._info

    def require_collection(self) -> dict[str, Any]:
        """The collection record, for readers (a retriever, ``folioflow query``) that need an
        existing collection. Raises :class:`CollectionNotFoundError` naming the data directory (or
        server) and collection looked in, the collections found there, and the settings that
        choose them (``data_dir``/``--data-dir``/``FOLIOFLOW_DATA_DIR``, ``collection``/
        ``--collection``/``FOLIOFLOW_COLLECTION``). Opening a store never creates one: only
        :meth:`ensure_collection` (ingest) does."""
        info = self.collection_info()
        if info is None:
            raise CollectionNotFoundError(self._missing_collection())
        return info

    def _missing_collection(self) -> str:
        """The one-line reason of :meth:`require_collection`."""
        data_dir = Path(self.settings.data_dir).absolute()
        point_dir = ("point at the data directory `folioflow ingest` wrote with StoreSettings(data_dir=...) in "
                     "Python, or --data-dir / FOLIOFLOW_DATA_DIR on the command line")
        if self.settings.url is None and not data_dir.is_dir():
            return (f"no folioflow index at {data_dir}: that data directory does not exist (a relative data_dir "
                    f"is resolved against the working directory, {Path.cwd()}); {point_dir}")
        where = (f"on the Qdrant server {self.settings.url}" if self.settings.url
                 else f"in data directory {data_dir} ({self.backend} store)")
        try:
            names = sorted(n for n in self._collection_names() if not n.endswith("__documents"))
        except FolioflowError:  # the listing is a hint; the missing collection is the error
            names = []
        found = f"collections there: {', '.join(repr(n) for n in names)}" if names else "no folioflow collection there"
        fix = ("pass the collection `folioflow ingest` used with StoreSettings(collection=...) in Python, or "
               "--collection / FOLIOFLOW_COLLECTION on the command line; or "
               + ("point at another server (url / --qdrant-url / QDRANT_URL)" if self.settings.url else point_dir)
               + " (nothing is created by searching: ingest documents first to create it)")
        return f"no collection {self.collection!r} {where} ({found}): {fix}"

    def _collection_names(self) -> list[str]:
        """Names of the collections the backend holds (a hint for :meth:`require_collection`)."""
        return []

    def get_document(self, doc_id: str) -> DocumentRecord | None:
        """The registry record of ``doc_id``, or None."""
        payload = self._reg_get(record_point_id(doc_id))
        return record_from_payload(payload) if payload and payload.get("kind") == "document" else None

    def list_documents(self, source: str | None = None) -> list[DocumentRecord]:
        """Every registry record (of one source if given), sorted by path."""
        recs = [record_from_payload(p) for p in self._reg_scroll(source) if p.get("kind") == "document"]
        return sorted(recs, key=lambda r: (r.source, r.path, r.doc_id))

    def is_current(self, doc_id: str, content_hash: str, model: str | None = None) -> bool:
        """True when ``doc_id`` is indexed from bytes with ``content_hash`` (and ``model``): the
        flow can skip it with no OCR, chunking or embedding."""
        rec = self.get_document(doc_id)
        return bool(rec and rec.status == "indexed" and rec.content_hash == content_hash
                    and (model is None or rec.embedding_model in (None, model)))

    def replace_document(self, record: DocumentRecord, chunks: Sequence[Chunk], dense: np.ndarray,
                         sparse: Sequence[SparseVec] | None,
                         sentences: Sequence[np.ndarray | None] | None = None) -> ReplaceResult:
        """Make ``record.doc_id``'s points exactly ``chunks``: upsert, delete stale, write record.

        ``dense``: (len(chunks), dim) float32; ``sparse``: one vector per chunk or None;
        ``sentences``: per chunk an (n, dim) float32 array of its sentences' vectors or None, or
        None for none at all (kept only when the collection has :attr:`sentence_vectors`). Raises
        :class:`TenancyError` (tenancy on, no tenant), ``ValueError`` (shapes, foreign chunks),
        :class:`StoreError` (backend)."""
        if self.tenancy and not record.tenant:
            raise TenancyError(f"tenancy is on: document {record.path} has no tenant")
        if len(dense) != len(chunks) or (sparse is not None and len(sparse) != len(chunks)):
            raise ValueError(f"{len(chunks)} chunks but {len(dense)} dense / "
                             f"{'no' if sparse is None else len(sparse)} sparse vectors")
        if sentences is not None and len(sentences) != len(chunks):
            raise ValueError(f"{len(chunks)} chunks but {len(sentences)} sentence vector sets")
        if not self.sentence_vectors:
            sentences = None
        if any(c.doc_id != record.doc_id for c in chunks):
            raise ValueError(f"chunks of another document passed for {record.doc_id}")
        points = [PointData(c.id, np.asarray(dense[i], dtype=np.float32), sparse[i] if sparse is not None else None,
                            chunk_payload(c, record), _sentence_rows(sentences, i)) for i, c in enumerate(chunks)]
        new_ids = {p.id for p in points}
        committed = self._ids_where(record.doc_id, committed=True)
        same = [p for p in points if p.id in committed]
        fresh = [p for p in points if p.id not in committed]
        now = datetime.now(UTC).timestamp()
        for p in fresh:
            p.payload = {**p.payload, PENDING: PENDING_VALUE, PENDING_SINCE: now}
        if same:
            self._upsert(same)
        if fresh:
            self._upsert(fresh)
            self._commit(record.doc_id)
        stale = self._ids_where(record.doc_id) - new_ids
        if stale:
            self._delete_where(record.doc_id, new_ids)
        record = record.model_copy(update={"chunks": len(chunks), "indexed_at": datetime.now(UTC)})
        self._reg_put(record_point_id(record.doc_id), record_payload(record))
        return ReplaceResult(upserted=len(points), deleted=len(stale), ids=[p.id for p in points])

    def pending_count(self) -> int:
        """Points written but never committed (a write interrupted before its commit)."""
        return self._count(None, pending=True)

    def sweep_pending(self, older_than_s: float = 3600.0) -> int:
        """Delete pending points written more than ``older_than_s`` seconds ago (their write was
        interrupted and never redone); returns how many. Younger ones may belong to a write in
        progress in another process and are left alone."""
        cutoff = datetime.now(UTC).timestamp() - older_than_s
        old = {pid for pid, _doc, since in self._pending() if since <= cutoff}
        if old:
            self._delete_ids(old)
        return len(old)

    def record_failure(self, record: DocumentRecord) -> None:
        """Record a failed document without touching its points (its previous version, if any,
        stays searchable); a later run retries it because its status is not ``indexed``. While the
        previous version's points stay, so do the facts read from its text
        (:data:`SEARCHED_TEXT_FACTS`: what it reads as, its tickers), which profile choice and
        routing use; a failed conversion has no text to read them from."""
        prev = self.get_document(record.doc_id)
        update: dict[str, Any] = {"status": "failed", "chunks": prev.chunks if prev else 0}
        if prev is not None and prev.chunks:
            kept = {k: prev.metadata[k] for k in SEARCHED_TEXT_FACTS if k in prev.metadata}
            update["metadata"] = {**record.metadata, **kept}
        rec = record.model_copy(update=update)
        self._reg_put(record_point_id(record.doc_id), record_payload(rec))

    def put_record(self, record: DocumentRecord) -> None:
        """Write ``record`` to the registry without touching its points (e.g. to remember a new
        change token for a document whose bytes did not change)."""
        self._reg_put(record_point_id(record.doc_id), record_payload(record))

    def delete_document(self, doc_id: str) -> int:
        """Remove a document's points and its record (pruning); returns points removed."""
        n = len(self._ids_where(doc_id))
        if n:
            self._delete_where(doc_id, set())
        self._reg_delete(record_point_id(doc_id))
        return n

    def point_ids(self, doc_id: str, committed: bool = False) -> set[str]:
        """Ids of ``doc_id``'s points (``committed``: searchable ones only, see module docstring)."""
        return self._ids_where(doc_id, committed)

    def payloads(self, doc_id: str) -> list[dict[str, Any]]:
        """Payloads (see :mod:`folioflow.indexing.payload`) of ``doc_id``'s committed (searchable) points, in chunk order."""
        found = self._payloads_where(doc_id)
        return sorted(found, key=lambda p: (p.get("metadata") or {}).get("chunk_index", 0))

    def count(self, flt: SearchFilter | None = None) -> int:
        """Committed (searchable) points in the chunk collection (matching ``flt``)."""
        return self._count(flt)

    def search(self, dense: np.ndarray | None = None, sparse: SparseVec | None = None, *, mode: StoreMode = "dense",
               k: int = 10, filter: SearchFilter | None = None, score_threshold: float | None = None,
               mmr_diversity: float | None = None, fetch_k: int | None = None, rrf_k: int = 60) -> list[SearchHit]:
        """Top ``k`` chunks for a query, best first.

        ``mode``: ``dense`` (needs ``dense``), ``sparse`` (needs ``sparse``) or ``hybrid`` (both,
        fused server-side with Reciprocal Rank Fusion, ``score = sum 1/(rrf_k + rank)``, over
        ``fetch_k`` candidates per vector) or ``sentences`` (needs ``dense``: cosine of the query
        with each chunk's best sentence, :data:`SENTENCES`; only chunks that have sentence vectors,
        none in a collection without them). ``mmr_diversity`` in [0, 1] re-ranks candidates by
        Maximal Marginal Relevance on the dense vector (0: relevance only). ``score_threshold``
        drops hits scoring below it. Pending points (a write not yet committed) are never returned.
        Raises :class:`TenancyError` when tenancy is on and ``filter.tenant`` is missing: the
        tenant condition is then always part of the query."""
        if self.tenancy and (filter is None or not filter.tenant):
            raise TenancyError("tenancy is on: a search must name its tenant")
        if mode in ("dense", "hybrid", "sentences") and dense is None or mode in ("sparse", "hybrid") and sparse is None:
            raise ValueError(f"mode {mode!r} needs {'a dense' if dense is None else 'a sparse'} query vector")
        if mmr_diversity is not None and dense is None:
            raise ValueError("MMR needs the dense query vector")
        if mode == "sentences" and mmr_diversity is not None:
            raise ValueError("MMR re-ranks on the chunk vector: not with mode 'sentences'")
        if mode == "sentences" and not self.sentence_vectors:
            return []
        fetch_k = max(fetch_k or 4 * k, k)
        return self._search(None if dense is None else np.asarray(dense, dtype=np.float32), sparse, mode, k, filter,
                            score_threshold, mmr_diversity, fetch_k, rrf_k)

    def optimize(self) -> None:  # noqa: B027 - an optional hook: a no-op unless the backend overrides it
        """Build indexes after bulk writes where the backend needs telling (Edge); no-op elsewhere."""

    def close(self) -> None:
        """Flush and release the store (idempotent)."""
        self._close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(settings: StoreSettings | None = None) -> ChunkStore:
    """Open the store ``settings`` describe (see module docstring for backend choice). Creates
    nothing: a missing data directory or collection opens empty (searches return ``[]``,
    :meth:`ChunkStore.require_collection` raises); :meth:`ChunkStore.ensure_collection` creates.
    Raises :class:`StoreError` (unreachable server, data dir held by another process) or
    :class:`ConfigurationError` (bad settings)."""
    settings = settings or StoreSettings()
    backend = settings.resolved_backend()
    if backend == "edge":
        from folioflow.indexing.edge_store import EdgeStore

        return EdgeStore(settings)
    if backend in ("local", "server"):
        if backend == "server" and not settings.url:
            raise ConfigurationError("backend 'server' needs a url (QDRANT_URL / --qdrant-url)")
        require("qdrant", f"store backend {backend!r}")
        from folioflow.indexing.qdrant_client_store import QdrantClientStore

        return QdrantClientStore(settings, local=backend == "local")
    raise ConfigurationError(f"unknown store backend {backend!r}")


def _sentence_rows(sentences: Sequence[np.ndarray | None] | None, i: int) -> np.ndarray | None:
    """Chunk ``i``'s sentence vectors as (n, dim) float32, or None when it has none."""
    rows = None if sentences is None else sentences[i]
    return None if rows is None or not len(rows) else np.asarray(rows, dtype=np.float32)
