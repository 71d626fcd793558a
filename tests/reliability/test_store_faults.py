"""A store that fails in the middle of a write never shows a half-written document version.

The stores are real (Qdrant Edge and qdrant-client's local mode under tmp folders); the fault is
injected at the backend boundary: after ``n`` points of an upsert, or on the delete step, the
backend raises :class:`StoreError` as a server that went away would (qdrant-client's own retries
have then given up). What the retriever sees is checked with the real embedder and
:class:`FolioRetriever` over many queries.
"""

from __future__ import annotations

import pytest

from folioflow.indexing.edge_store import EdgeStore
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.qdrant_client_store import QdrantClientStore
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import PENDING, StoreSettings
from folioflow.ocr.errors import StoreError
from tests.indexing.conftest import SAMPLE_DOCS, make_document

QUERIES = ["total revenue growth", "operating margin", "Sharpe ratio of the fund", "governing law Delaware",
           "termination for convenience", "late payment interest", "confidential information", "advisory fees"]
PATH = "northwind-annual-report-2025.pdf"


class FaultMixin:
    """Fails ``fail_on`` (``"upsert"`` after ``after_points`` points were written, ``"delete"``,
    ``"commit"``) once armed."""

    fail_on: str | None = None
    after_points = 0

    def _upsert(self, points):
        if self.fail_on == "upsert" and any(PENDING in p.payload for p in points):  # the new points' batch
            super()._upsert(points[: self.after_points])  # part of the batch landed, then the link died
            self.fail_on = None
            raise StoreError("Qdrant upload failed (injected): connection reset by peer")
        return super()._upsert(points)

    def _commit(self, doc_id):
        if self.fail_on == "commit":
            self.fail_on = None
            raise StoreError("Qdrant commit failed (injected): connection refused")
        return super()._commit(doc_id)

    def _delete_where(self, doc_id, keep):
        if self.fail_on == "delete":
            self.fail_on = None
            raise StoreError("Qdrant delete failed (injected): timed out")
        return super()._delete_where(doc_id, keep)


class FaultyEdge(FaultMixin, EdgeStore):
    pass


class FaultyLocal(FaultMixin, QdrantClientStore):
    def __init__(self, settings):
        super().__init__(settings, local=True)


@pytest.fixture(params=["edge", "local"])
def store(request, tmp_path):
    cls = FaultyEdge if request.param == "edge" else FaultyLocal
    st = cls(StoreSettings(data_dir=tmp_path / "data", backend=request.param))
    yield st
    st.close()


def versions():
    """v1 of the annual report, and v2 where every statement was reworded (all new chunk ids)
    except the table (same id: the 'same' path of the write)."""
    v1 = make_document(PATH, SAMPLE_DOCS[PATH], version="v1")
    reworded = [(h, k, t if k == "table" else t.replace("The ", "Restated: the ", 1) + " (restated)", p)
                for h, k, t, p in SAMPLE_DOCS[PATH]]
    v2 = make_document(PATH, reworded, version="v2")
    return v1, v2


def seen(store, embedder) -> set[str]:
    """Point ids the retriever returns over :data:`QUERIES` in every mode."""
    ids = set()
    for mode in ("dense", "sparse", "hybrid"):
        retriever = FolioRetriever(store=store, embedder=embedder, k=20, mode=mode)
        for q in QUERIES:
            ids |= {d.metadata["id"] for d in retriever.invoke(q)}
    return ids


@pytest.mark.parametrize("fail_on", ["upsert", "commit"])
def test_interrupted_change_keeps_the_old_version_whole(store, embedder, fail_on):
    (rec1, chunks1), (rec2, chunks2) = versions()
    indexer = Indexer(embedder, store)
    indexer.index(rec1, chunks1)
    old_ids = {c.id for c in chunks1}
    assert seen(store, embedder) == old_ids

    store.fail_on, store.after_points = fail_on, 2
    with pytest.raises(StoreError, match="injected"):
        indexer.index(rec2, chunks2)
    assert seen(store, embedder) == old_ids  # not one point of v2 is visible
    assert store.count() == len(chunks1)
    assert store.pending_count() > 0
    assert store.get_document(rec1.doc_id).content_hash == rec1.content_hash

    indexer.index(rec2, chunks2)  # the next run redoes the document
    assert seen(store, embedder) == {c.id for c in chunks2}
    assert store.point_ids(rec2.doc_id) == {c.id for c in chunks2}  # no orphan, no pending point left
    assert store.pending_count() == 0
    assert store.get_document(rec2.doc_id).content_hash == rec2.content_hash


def test_failure_after_commit_shows_whole_versions_then_converges(store, embedder):
    (rec1, chunks1), (rec2, chunks2) = versions()
    indexer = Indexer(embedder, store)
    indexer.index(rec1, chunks1)
    store.fail_on = "delete"
    with pytest.raises(StoreError, match="injected"):
        indexer.index(rec2, chunks2)
    both = {c.id for c in chunks1} | {c.id for c in chunks2}
    assert store.point_ids(rec1.doc_id, committed=True) == both  # two whole versions, never a part
    assert store.get_document(rec1.doc_id).content_hash == rec1.content_hash  # record still says v1
    indexer.index(rec2, chunks2)
    assert store.point_ids(rec2.doc_id) == {c.id for c in chunks2}


def test_first_write_interrupted_is_invisible_and_swept(store, embedder):
    rec, chunks = make_document("acme-services-agreement.pdf", SAMPLE_DOCS["acme-services-agreement.pdf"])
    indexer = Indexer(embedder, store)
    store.fail_on, store.after_points = "upsert", 3
    with pytest.raises(StoreError):
        indexer.index(rec, chunks)
    assert seen(store, embedder) == set() and store.count() == 0
    assert store.get_document(rec.doc_id) is None and store.pending_count() == 3
    assert store.sweep_pending(older_than_s=3600) == 0  # may still be a write in progress elsewhere
    assert store.sweep_pending(older_than_s=0) == 3
    assert store.pending_count() == 0 and store.point_ids(rec.doc_id) == set()
