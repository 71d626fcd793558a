"""qdrant-client backends: a Qdrant server or cluster by URL, and qdrant-client's local mode.

Server: ``QdrantClient(url, api_key, https when the URL says so, timeout)``; collections are
created with the settings' ``shard_number``, ``replication_factor`` and
``write_consistency_factor``; with tenancy on, HNSW is built per tenant (``payload_m=16, m=0``,
Qdrant's multitenancy recipe: https://qdrant.tech/documentation/guides/multiple-partitions/).
Uploads go through ``upload_points`` in batches of ``batch_size`` (``parallel`` processes for
large documents, its own bounded retries). Every other request is retried by tenacity (exponential
backoff, ``retries`` attempts) on connection errors, timeouts and 429/5xx answers, then raises
:class:`StoreError`.

Local mode (``QdrantClient(path=<data_dir>/qdrant)``): the same API in pure Python, exact
(brute-force) search, payload indexes accepted and ignored; one process per folder.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from folioflow.indexing.payload import INTEGER_FIELDS, KEYWORD_FIELDS, TENANT_FIELD
from folioflow.indexing.registry import registry_name
from folioflow.indexing.store import (
    DENSE,
    PENDING,
    PENDING_SINCE,
    PENDING_VALUE,
    SENTENCES,
    SPARSE,
    ChunkStore,
    DataDirLock,
    PointData,
    SearchFilter,
    SearchHit,
    StoreSettings,
)
from folioflow.ocr.errors import StoreError


def _quiet_version_warning() -> None:
    """qdrant-client checks the server's version in a background thread when a client opens, and
    warns when it cannot read it. A server it cannot reach then fails the first call with the reason
    (StoreError, naming the URL), so that warning would only precede the error, at a random point of
    the output. Installed each time a server client opens (code that resets the warning filters,
    pytest's per-test capture for one, would drop a filter set once at import). A version mismatch,
    and an API key sent over http, still warn."""
    warnings.filterwarnings("ignore", message="Failed to obtain server version", category=UserWarning)

__all__ = ["QdrantClientStore"]


def _transient(exc: BaseException) -> bool:
    """Errors worth retrying: transport failures, timeouts, 429 and 5xx answers."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    if isinstance(exc, UnexpectedResponse):
        status = exc.status_code  # None when qdrant-client got no HTTP answer to read one from
        return status is not None and (status == 429 or status >= 500)
    if isinstance(exc, (ResponseHandlingException, httpx.TransportError, ConnectionError, TimeoutError)):
        return True
    try:
        import grpc

        return isinstance(exc, grpc.RpcError) and exc.code() in (grpc.StatusCode.UNAVAILABLE,
                                                                   grpc.StatusCode.DEADLINE_EXCEEDED)
    except ImportError:  # pragma: no cover
        return False


class QdrantClientStore(ChunkStore):
    """:class:`ChunkStore` over qdrant-client (``local=True``: local mode under the data dir)."""

    def __init__(self, settings: StoreSettings, local: bool = False):
        super().__init__(settings)
        from qdrant_client import QdrantClient, models

        self.m = models
        self.local = local
        self.backend = "local" if local else "server"
        self.registry = registry_name(self.collection)
        self._lock: DataDirLock | None = None
        self._client = None
        self.folder: Path | None = None
        if local:
            self.folder = Path(settings.data_dir) / "qdrant"
            # A folder that does not exist is not created (nor locked) until a collection is: opening
            # a wrong data dir to search it must leave nothing behind (see indexing.store).
            if self.folder.is_dir():
                self._open_local()
        else:
            key = settings.api_key.get_secret_value() if settings.api_key else None
            _quiet_version_warning()
            self._client = QdrantClient(url=settings.url, api_key=key, timeout=int(settings.timeout),
                                        prefer_grpc=settings.prefer_grpc)
        self._exists: dict[str, bool] = {}

    def _open_local(self) -> None:
        """Lock the local-mode folder (creating it) and open qdrant-client on it."""
        from qdrant_client import QdrantClient

        assert self.folder is not None  # local mode
        self._lock = DataDirLock(self.folder)
        try:
            self._client = QdrantClient(path=str(self.folder))
        except RuntimeError as exc:  # qdrant-client's own folder lock
            self._lock.release()
            raise StoreError(f"data dir {self.folder} is in use by another process: {exc}") from exc

    @property
    def client(self):
        """The ``QdrantClient``. Raises :class:`StoreError` in local mode before the folder exists
        (writes need :meth:`ensure_collection` first)."""
        if self._client is None:
            raise StoreError(f"collection {self.collection!r} does not exist yet (nothing indexed in {self.folder})")
        return self._client

    def _call(self, what: str, fn, *args, **kwargs):
        attempts = 1 if self.local else max(1, self.settings.retries)
        try:
            for attempt in Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.5, max=8),
                                    retry=retry_if_exception(_transient), reraise=True):
                with attempt:
                    return fn(*args, **kwargs)
        except Exception as exc:
            where = "local mode" if self.local else self.settings.url
            raise StoreError(f"Qdrant {what} failed ({where}): {exc}".splitlines()[0]) from exc

    def _has(self, name: str) -> bool:
        if self._client is None:  # local mode, folder not created yet
            return False
        if not self._exists.get(name):
            self._exists[name] = bool(self._call("collection lookup", self.client.collection_exists, name))
        return self._exists[name]

    def _create_collections(self, dim: int) -> None:
        m, s = self.m, self.settings
        if self._client is None:
            self._open_local()
        if not self._has(self.collection):
            hnsw = m.HnswConfigDiff(payload_m=16, m=0) if s.tenancy and not self.local else None
            self._call("collection creation", self.client.create_collection, self.collection,
                       vectors_config={DENSE: m.VectorParams(size=dim, distance=m.Distance.COSINE),
                                       SENTENCES: m.VectorParams(size=dim, distance=m.Distance.COSINE,
                                                                 multivector_config=m.MultiVectorConfig(
                                                                     comparator=m.MultiVectorComparator.MAX_SIM))},
                       sparse_vectors_config={SPARSE: m.SparseVectorParams(modifier=m.Modifier.IDF)},
                       shard_number=s.shard_number, replication_factor=s.replication_factor,
                       write_consistency_factor=s.write_consistency_factor, hnsw_config=hnsw)
            for key in KEYWORD_FIELDS:
                self._call("payload index", self.client.create_payload_index, self.collection, key,
                           m.PayloadSchemaType.KEYWORD, wait=True)
            self._call("payload index", self.client.create_payload_index, self.collection, TENANT_FIELD,
                       m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True), wait=True)
            for key in INTEGER_FIELDS:
                self._call("payload index", self.client.create_payload_index, self.collection, key,
                           m.IntegerIndexParams(type=m.IntegerIndexType.INTEGER, lookup=True, range=True), wait=True)
            self._call("payload index", self.client.create_payload_index, self.collection, PENDING,
                       m.PayloadSchemaType.KEYWORD, wait=True)
            self._exists[self.collection] = True
        if not self._has(self.registry):
            self._call("collection creation", self.client.create_collection, self.registry, vectors_config={},
                       shard_number=s.shard_number, replication_factor=s.replication_factor)
            self._call("payload index", self.client.create_payload_index, self.registry, "source",
                       m.PayloadSchemaType.KEYWORD, wait=True)
            self._exists[self.registry] = True

    def _filter(self, flt: SearchFilter | None, doc_id: str | None = None, keep: set[str] | None = None,
                committed: bool = False, pending: bool = False):
        """Qdrant filter: ``flt``'s conditions, one document, ids to keep out, and visibility
        (``committed``: pending points excluded; ``pending``: only pending points)."""
        m = self.m
        must: list[Any] = []
        must_not: list[Any] = []
        marked = m.FieldCondition(key=PENDING, match=m.MatchValue(value=PENDING_VALUE))
        if pending:
            must.append(marked)
        elif committed:
            must_not.append(marked)
        if doc_id is not None:
            must.append(m.FieldCondition(key="metadata.doc_id", match=m.MatchValue(value=doc_id)))
        if flt is not None:
            for key, values in (("metadata.doc_id", flt.doc_ids), ("metadata.source", flt.sources),
                                ("metadata.kind", flt.kinds),
                                ("metadata.extra.role", flt.roles)):
                if values:
                    must.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(values))))
            if flt.tenant:
                must.append(m.FieldCondition(key=TENANT_FIELD, match=m.MatchValue(value=flt.tenant)))
            if flt.page_from is not None:
                must.append(m.FieldCondition(key="metadata.page_end", range=m.Range(gte=flt.page_from)))
            if flt.page_to is not None:
                must.append(m.FieldCondition(key="metadata.page_start", range=m.Range(lte=flt.page_to)))
        if keep:
            must_not.append(m.HasIdCondition(has_id=sorted(keep)))
        return m.Filter(must=must or None, must_not=must_not or None) if (must or must_not) else None

    def _upsert(self, points: list[PointData]) -> None:
        m, s = self.m, self.settings
        structs = []
        for p in points:
            vec: dict[str, Any] = {DENSE: p.dense.tolist()}
            if p.sparse is not None and len(p.sparse):
                vec[SPARSE] = m.SparseVector(indices=p.sparse.indices, values=p.sparse.values)
            if p.sentences is not None:
                vec[SENTENCES] = p.sentences.tolist()
            structs.append(m.PointStruct(id=p.id, vector=vec, payload=p.payload))
        parallel = s.parallel if not self.local and len(structs) > 4 * s.batch_size else 1
        self._call("upload", self.client.upload_points, self.collection, structs, batch_size=s.batch_size,
                   parallel=parallel, max_retries=s.retries, wait=True)

    def _delete_where(self, doc_id: str, keep: set[str]) -> None:
        selector = self.m.FilterSelector(filter=self._filter(None, doc_id=doc_id, keep=keep))
        self._call("delete", self.client.delete, self.collection, selector, wait=True)

    def _scroll(self, name: str, flt, with_payload: bool) -> list:
        out, offset = [], None
        while True:
            recs, offset = self._call("scroll", self.client.scroll, name, scroll_filter=flt, limit=1024,
                                      offset=offset, with_payload=with_payload, with_vectors=False)
            out.extend(recs)
            if offset is None:
                return out

    def _ids_where(self, doc_id: str, committed: bool = False) -> set[str]:
        if not self._has(self.collection):
            return set()
        flt = self._filter(None, doc_id=doc_id, committed=committed)
        return {str(r.id) for r in self._scroll(self.collection, flt, False)}

    def _commit(self, doc_id: str) -> None:
        selector = self.m.FilterSelector(filter=self._filter(None, doc_id=doc_id, pending=True))
        self._call("commit", self.client.delete_payload, self.collection, keys=[PENDING, PENDING_SINCE],
                   points=selector, wait=True)

    def _pending(self) -> list[tuple[str, str, float]]:
        if not self._has(self.collection):
            return []
        recs = self._scroll(self.collection, self._filter(None, pending=True), True)
        return [(str(r.id), str((r.payload or {}).get("metadata", {}).get("doc_id")),
                 float((r.payload or {}).get(PENDING_SINCE) or 0.0)) for r in recs]

    def _delete_ids(self, ids: set[str]) -> None:
        self._call("delete", self.client.delete, self.collection, self.m.PointIdsList(points=sorted(ids)), wait=True)

    def _payloads_where(self, doc_id: str) -> list[dict[str, Any]]:
        if not self._has(self.collection):
            return []
        flt = self._filter(None, doc_id=doc_id, committed=True)
        return [dict(r.payload or {}) for r in self._scroll(self.collection, flt, True)]

    def _count(self, flt: SearchFilter | None, pending: bool = False) -> int:
        if not self._has(self.collection):
            return 0
        f = self._filter(flt, committed=not pending, pending=pending)
        return int(self._call("count", self.client.count, self.collection, count_filter=f, exact=True).count)

    def _search(self, dense, sparse, mode, k, flt, score_threshold, mmr_diversity, fetch_k, rrf_k) -> list[SearchHit]:
        m = self.m
        if not self._has(self.collection):
            return []
        f = self._filter(flt, committed=True)
        dvec = dense.tolist() if dense is not None else None
        svec = m.SparseVector(indices=sparse.indices, values=sparse.values) if sparse is not None else None
        mmr = m.Mmr(diversity=mmr_diversity, candidates_limit=fetch_k) if mmr_diversity is not None else None
        prefetch, using = None, None
        if mode == "hybrid":
            prefetch = [m.Prefetch(query=dvec, using=DENSE, limit=fetch_k, filter=f),
                        m.Prefetch(query=svec, using=SPARSE, limit=fetch_k, filter=f)]
            query: Any = m.RrfQuery(rrf=m.Rrf(k=rrf_k))
            if mmr is not None:
                prefetch = [m.Prefetch(prefetch=prefetch, query=query, limit=fetch_k, filter=f)]
                query, using = m.NearestQuery(nearest=dvec, mmr=mmr), DENSE
        elif mode == "dense":
            query, using = (m.NearestQuery(nearest=dvec, mmr=mmr) if mmr else dvec), DENSE
        elif mode == "sentences":
            query, using = [dvec], SENTENCES
        else:
            query, using = svec, SPARSE
        res = self._call("query", self.client.query_points, self.collection, query=query, using=using,
                         prefetch=prefetch, query_filter=f, limit=k, with_payload=True,
                         score_threshold=score_threshold)
        return [SearchHit(str(p.id), float(p.score), p.payload or {}) for p in res.points]

    def _reg_put(self, point_id: str, payload: dict[str, Any]) -> None:
        self._call("registry write", self.client.upsert, self.registry,
                   [self.m.PointStruct(id=point_id, vector={}, payload=payload)], wait=True)

    def _reg_get(self, point_id: str) -> dict[str, Any] | None:
        if not self._has(self.registry):
            return None
        recs = self._call("registry read", self.client.retrieve, self.registry, [point_id], with_payload=True)
        return recs[0].payload if recs else None

    def _reg_scroll(self, source: str | None) -> list[dict[str, Any]]:
        if not self._has(self.registry):
            return []
        m = self.m
        flt = m.Filter(must=[m.FieldCondition(key="source", match=m.MatchValue(value=source))]) if source else None
        return [r.payload for r in self._scroll(self.registry, flt, True)]

    def _reg_delete(self, point_id: str) -> None:
        if self._has(self.registry):
            self._call("registry delete", self.client.delete, self.registry,
                       self.m.PointIdsList(points=[point_id]), wait=True)

    def _collection_names(self) -> list[str]:
        if self._client is None:
            return []
        return [c.name for c in self._call("collection listing", self._client.get_collections).collections]

    def _close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()
        if self._lock is not None:
            self._lock.release()
