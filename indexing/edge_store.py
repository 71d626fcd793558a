"""Qdrant Edge backend: the Qdrant engine (segments, HNSW, payload indexes, WAL) in-process.

Layout: ``<data_dir>/edge/<collection>/`` is the chunk shard and
``<data_dir>/edge/<collection>__documents/`` the registry shard (one sparse vector slot ``none``
that records never use: Edge needs at least one vector in a shard's config). qdrant-edge-py is in
beta (0.9): its API is wrapped here and nowhere else. Search, RRF fusion (prefetch + ``Fusion.Rrf``)
and MMR run inside the engine, as on a server. :meth:`EdgeStore.optimize` builds the HNSW index
after bulk writes (Edge has no background optimizer thread); until then search is exact.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from qdrant_edge import EdgeShard

__all__ = ["EdgeStore"]


def _filter(qe, flt: SearchFilter | None, doc_id: str | None = None, keep: set[str] | None = None,
            committed: bool = False, pending: bool = False):
    """Edge filter: ``flt``'s conditions, one document, ids to keep out, and visibility
    (``committed``: pending points excluded; ``pending``: only pending points)."""
    must = []
    must_not = []
    marked = qe.FieldCondition(PENDING, match=qe.MatchValue(PENDING_VALUE))
    if pending:
        must.append(marked)
    elif committed:
        must_not.append(marked)
    if doc_id is not None:
        must.append(qe.FieldCondition("metadata.doc_id", match=qe.MatchValue(doc_id)))
    if flt is not None:
        for key, values in (("metadata.doc_id", flt.doc_ids), ("metadata.source", flt.sources),
                            ("metadata.kind", flt.kinds),
                            ("metadata.extra.role", flt.roles)):
            if values:
                must.append(qe.FieldCondition(key, match=qe.MatchAny(list(values))))
        if flt.tenant:
            must.append(qe.FieldCondition(TENANT_FIELD, match=qe.MatchValue(flt.tenant)))
        if flt.page_from is not None:
            must.append(qe.FieldCondition("metadata.page_end", range=qe.RangeFloat(gte=flt.page_from)))
        if flt.page_to is not None:
            must.append(qe.FieldCondition("metadata.page_start", range=qe.RangeFloat(lte=flt.page_to)))
    if keep:
        must_not.append(qe.HasIdCondition({uuid.UUID(i) for i in keep}))
    return qe.Filter(must=must or None, must_not=must_not or None) if (must or must_not) else None


class EdgeStore(ChunkStore):
    """:class:`ChunkStore` on qdrant-edge-py (see module docstring). Raises :class:`StoreError`
    when the data dir is held by another process (at open when ``<data_dir>/edge`` exists, else
    when the collection is created) or a shard cannot be opened."""

    backend = "edge"

    def __init__(self, settings: StoreSettings):
        super().__init__(settings)
        import qdrant_edge as qe

        self.qe = qe
        self.root = Path(settings.data_dir) / "edge"
        self.chunks: EdgeShard | None = None
        self.registry: EdgeShard | None = None
        # A folder that does not exist is not created (nor locked) until a collection is: opening
        # a wrong data dir to search it must leave nothing behind (see indexing.store).
        self._lock: DataDirLock | None = DataDirLock(self.root) if self.root.is_dir() else None
        if self._lock is not None:
            self._load_shards()

    def _load_shards(self) -> None:
        """Load the chunk and registry shards found on disk (the lock is held)."""
        try:
            reg_dir = self.root / registry_name(self.collection)
            if self.registry is None and _has_shard(reg_dir):
                self.registry = self.qe.EdgeShard.load(str(reg_dir))
            chunk_dir = self.root / self.collection
            if self.chunks is None and _has_shard(chunk_dir):
                self.chunks = self.qe.EdgeShard.load(str(chunk_dir))
        except Exception as exc:
            if self._lock is not None:
                self._lock.release()
            raise StoreError(f"cannot open Qdrant Edge shards in {self.root}: {exc}") from exc

    def _wrap(self, what: str, fn, *args):
        try:
            return fn(*args)
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"Qdrant Edge {what} failed: {exc}".splitlines()[0]) from exc

    def _create_collections(self, dim: int) -> None:
        qe = self.qe
        if self._lock is None:  # opened on a missing folder: create and hold it now
            self._lock = DataDirLock(self.root)
            self._load_shards()  # another process may have created them since we opened

        def create() -> None:
            if self.chunks is None:
                maxsim = qe.MultiVectorConfig(qe.MultiVectorComparator.MaxSim)
                cfg = qe.EdgeConfig(vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
                                             SENTENCES: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine,
                                                                            multivector_config=maxsim)},
                                    sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)})
                shard = qe.EdgeShard.create(str(self.root / self.collection), cfg)
                for key in KEYWORD_FIELDS:
                    shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
                shard.update(qe.UpdateOperation.create_field_index(TENANT_FIELD, qe.KeywordIndexParams(is_tenant=True)))
                for key in INTEGER_FIELDS:
                    shard.update(qe.UpdateOperation.create_field_index(key, qe.IntegerIndexParams(lookup=True, range=True)))
                shard.update(qe.UpdateOperation.create_field_index(PENDING, qe.PayloadSchemaType.Keyword))
                self.chunks = shard
            if self.registry is None:
                cfg = qe.EdgeConfig(sparse_vectors={"none": qe.EdgeSparseVectorParams()})
                reg = qe.EdgeShard.create(str(self.root / registry_name(self.collection)), cfg)
                reg.update(qe.UpdateOperation.create_field_index("source", qe.PayloadSchemaType.Keyword))
                self.registry = reg

        self._wrap("collection creation", create)

    def _need(self):
        if self.chunks is None:
            raise StoreError(f"collection {self.collection!r} does not exist yet (nothing indexed in {self.root})")
        return self.chunks

    def _upsert(self, points: list[PointData]) -> None:
        qe = self.qe
        shard = self._need()
        out = []
        for p in points:
            vec: dict[str, Any] = {DENSE: p.dense.tolist()}
            if p.sparse is not None and len(p.sparse):
                vec[SPARSE] = qe.SparseVector(p.sparse.indices, p.sparse.values)
            if p.sentences is not None:
                vec[SENTENCES] = p.sentences.tolist()
            out.append(qe.Point(p.id, vec, p.payload))
        for i in range(0, len(out), self.settings.batch_size):
            self._wrap("upsert", shard.update, qe.UpdateOperation.upsert_points(out[i:i + self.settings.batch_size]))

    def _delete_where(self, doc_id: str, keep: set[str]) -> None:
        flt = _filter(self.qe, None, doc_id=doc_id, keep=keep)
        self._wrap("delete", self._need().update, self.qe.UpdateOperation.delete_points_by_filter(flt))

    def _scroll(self, shard, flt, with_payload: bool) -> list:
        qe, out, offset = self.qe, [], None
        while True:
            recs, offset = self._wrap("scroll", shard.scroll,
                                      qe.ScrollRequest(offset=offset, limit=1024, filter=flt, with_payload=with_payload))
            out.extend(recs)
            if offset is None:
                return out

    def _ids_where(self, doc_id: str, committed: bool = False) -> set[str]:
        if self.chunks is None:
            return set()
        flt = _filter(self.qe, None, doc_id=doc_id, committed=committed)
        return {str(r.id) for r in self._scroll(self.chunks, flt, False)}

    def _commit(self, doc_id: str) -> None:
        flt = _filter(self.qe, None, doc_id=doc_id, pending=True)
        self._wrap("commit", self._need().update,
                   self.qe.UpdateOperation.delete_payload_by_filter(flt, [PENDING, PENDING_SINCE]))

    def _pending(self) -> list[tuple[str, str, float]]:
        if self.chunks is None:
            return []
        recs = self._scroll(self.chunks, _filter(self.qe, None, pending=True), True)
        return [(str(r.id), str((r.payload or {}).get("metadata", {}).get("doc_id")),
                 float((r.payload or {}).get(PENDING_SINCE) or 0.0)) for r in recs]

    def _delete_ids(self, ids: set[str]) -> None:
        self._wrap("delete", self._need().update, self.qe.UpdateOperation.delete_points(sorted(ids)))

    def _payloads_where(self, doc_id: str) -> list[dict[str, Any]]:
        if self.chunks is None:
            return []
        flt = _filter(self.qe, None, doc_id=doc_id, committed=True)
        return [dict(r.payload or {}) for r in self._scroll(self.chunks, flt, True)]

    def _count(self, flt: SearchFilter | None, pending: bool = False) -> int:
        if self.chunks is None:
            return 0
        f = _filter(self.qe, flt, committed=not pending, pending=pending)
        return self._wrap("count", self.chunks.count, self.qe.CountRequest(exact=True, filter=f))

    def _search(self, dense, sparse, mode, k, flt, score_threshold, mmr_diversity, fetch_k, rrf_k) -> list[SearchHit]:
        qe = self.qe
        if self.chunks is None:
            return []
        f = _filter(qe, flt, committed=True)
        dq = qe.Query.Nearest(dense.tolist(), using=DENSE) if dense is not None else None
        sq = qe.Query.Nearest(qe.SparseVector(sparse.indices, sparse.values), using=SPARSE) if sparse is not None else None
        prefetches = None
        if mode == "hybrid":
            prefetches = [qe.Prefetch(limit=fetch_k, query=dq, filter=f), qe.Prefetch(limit=fetch_k, query=sq, filter=f)]
            query = qe.Fusion.Rrf(k=rrf_k)
            if mmr_diversity is not None:
                prefetches = [qe.Prefetch(limit=fetch_k, prefetches=prefetches, query=query, filter=f)]
                query = qe.Mmr(dense.tolist(), 1.0 - mmr_diversity, fetch_k, using=DENSE)
        elif mmr_diversity is not None:
            query = qe.Mmr(dense.tolist(), 1.0 - mmr_diversity, fetch_k, using=DENSE)
        elif mode == "sentences":
            query = qe.Query.Nearest([dense.tolist()], using=SENTENCES)
        else:
            query = dq if mode == "dense" else sq
        req = qe.QueryRequest(limit=k, query=query, prefetches=prefetches, filter=f, with_payload=True,
                              score_threshold=score_threshold)
        return [SearchHit(str(p.id), float(p.score), p.payload or {}) for p in self._wrap("query", self.chunks.query, req)]

    def _reg_put(self, point_id: str, payload: dict[str, Any]) -> None:
        assert self.registry is not None  # written only after ensure_collection() made it
        self._wrap("registry write", self.registry.update,
                   self.qe.UpdateOperation.upsert_points([self.qe.Point(point_id, {}, payload)]))

    def _reg_get(self, point_id: str) -> dict[str, Any] | None:
        if self.registry is None:
            return None
        recs = self._wrap("registry read", self.registry.retrieve, [point_id], True, False)
        return recs[0].payload if recs else None

    def _reg_scroll(self, source: str | None) -> list[dict[str, Any]]:
        if self.registry is None:
            return []
        qe = self.qe
        flt = qe.Filter(must=[qe.FieldCondition("source", match=qe.MatchValue(source))]) if source else None
        return [r.payload for r in self._scroll(self.registry, flt, True)]

    def _reg_delete(self, point_id: str) -> None:
        if self.registry is not None:
            self._wrap("registry delete", self.registry.update,
                       self.qe.UpdateOperation.delete_points([point_id]))

    def _collection_names(self) -> list[str]:
        return [p.name for p in self.root.iterdir() if _has_shard(p)] if self.root.is_dir() else []

    def optimize(self) -> None:
        """Run Edge's segment optimizers (HNSW build, merges) now; blocks until done."""
        if self.chunks is not None:
            self._wrap("optimize", self.chunks.optimize)

    def _close(self) -> None:
        for shard in (self.chunks, self.registry):
            if shard is not None:
                try:
                    shard.flush()
                finally:
                    shard.close()
        self.chunks = self.registry = None
        if self._lock is not None:
            self._lock.release()


def _has_shard(folder: Path) -> bool:
    return folder.is_dir() and any(p.name != ".folioflow.lock" for p in folder.iterdir())
