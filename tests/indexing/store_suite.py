"""A reusable behaviour suite for :class:`folioflow.indexing.store.ChunkStore` backends (after haystack's
document-store test mixins): subclass :class:`ChunkStoreSuite`, set ``backend`` (and ``url`` for a
server), and pytest runs every test below against that backend."""

from __future__ import annotations

import random
import uuid

import numpy as np
import pytest

from folioflow.indexing.indexer import Indexer
from folioflow.indexing.store import SearchFilter, StoreSettings, open_store
from folioflow.ocr.errors import ConfigurationError, StoreError, TenancyError

from .conftest import SAMPLE_DOCS, make_document, sample_documents


class ChunkStoreSuite:
    backend: str = ""
    url: str | None = None

    @pytest.fixture
    def settings_for(self, tmp_path):
        collection = f"t{uuid.uuid4().hex[:10]}"

        def make(**kw) -> StoreSettings:
            return StoreSettings(data_dir=tmp_path / "data", backend=self.backend, url=self.url,
                                 collection=collection, **kw)
        return make

    @pytest.fixture
    def store(self, settings_for):
        st = open_store(settings_for())
        yield st
        st.close()

    @pytest.fixture
    def indexer(self, store, embedder):
        return Indexer(embedder, store)

    # -- idempotency, change, removal --------------------------------------------------------
    def test_three_runs_give_identical_ids_and_counts(self, indexer, store):
        seen = []
        for _ in range(3):
            for record, chunks in sample_documents():
                indexer.index(record, chunks)
            seen.append((store.count(), sorted(i for r, _ in sample_documents() for i in store.point_ids(r.doc_id))))
        assert seen[0] == seen[1] == seen[2]
        assert seen[0][0] == sum(len(p) for p in SAMPLE_DOCS.values())
        assert len(store.list_documents()) == 2

    def test_payloads_of_one_document_in_chunk_order(self, indexer, store):
        docs = sample_documents()
        for record, chunks in docs:
            indexer.index(record, chunks)
        record, chunks = docs[0]
        payloads = store.payloads(record.doc_id)
        assert [p["page_content"] for p in payloads] == [c.text for c in chunks]
        assert {p["metadata"]["doc_id"] for p in payloads} == {record.doc_id}
        assert store.payloads("no-such-document") == []

    def test_changed_document_replaces_stale_points(self, indexer, store):
        path, parts = next(iter(SAMPLE_DOCS.items()))
        old_rec, old_chunks = make_document(path, parts)
        indexer.index(old_rec, old_chunks)
        new_parts = parts[:2] + [(["Outlook"], "text", "We expect revenue growth of 8% in fiscal 2026.", 3)]
        new_rec, new_chunks = make_document(path, new_parts, version="v2")
        res = indexer.index(new_rec, new_chunks)
        ids = store.point_ids(new_rec.doc_id)
        assert ids == {c.id for c in new_chunks}
        assert {c.id for c in old_chunks[:2]} <= ids  # unchanged chunks keep their ids
        assert res.deleted == len(old_chunks) - 2 and res.upserted == 3
        assert store.get_document(new_rec.doc_id).content_hash == new_rec.content_hash
        assert store.is_current(new_rec.doc_id, new_rec.content_hash)
        assert not store.is_current(new_rec.doc_id, old_rec.content_hash)

    def test_removed_document_is_pruned(self, indexer, store):
        docs = sample_documents()
        for record, chunks in docs:
            indexer.index(record, chunks)
        keep = docs[0][0].doc_id
        assert indexer.prune({keep}) == [docs[1][0].doc_id]
        assert store.get_document(docs[1][0].doc_id) is None
        assert store.point_ids(docs[1][0].doc_id) == set()
        assert store.count() == len(docs[0][1])

    def test_zero_chunk_document_is_remembered(self, indexer, store):
        record, _ = make_document("blank-scan.pdf", [])
        indexer.index(record, [])
        rec = store.get_document(record.doc_id)
        assert rec is not None and rec.chunks == 0 and store.count() == 0
        assert indexer.is_current(record.doc_id, record.content_hash)

    def test_registry_and_points_survive_reopen(self, settings_for, embedder):
        st = open_store(settings_for())
        for record, chunks in sample_documents():
            Indexer(embedder, st).index(record, chunks)
        count = st.count()
        st.close()
        st = open_store(settings_for())
        try:
            assert st.count() == count
            assert {r.path for r in st.list_documents()} == set(SAMPLE_DOCS)
            assert st.collection_info()["model"] == embedder.model_name
        finally:
            st.close()

    def test_payload_is_langchain_layout(self, indexer, store, embedder):
        record, chunks = sample_documents()[0]
        indexer.index(record, chunks)
        hit = store.search(embedder.encode(["operating margin"])[0], k=1)[0]
        assert set(hit.payload) == {"page_content", "metadata"}
        meta = hit.payload["metadata"]
        for key in ("doc_id", "source", "uri", "path", "tenant", "page_start", "page_end", "heading_path", "kind",
                    "chunk_index", "content_hash", "doc_hash"):
            assert key in meta
        assert meta["doc_hash"] == record.content_hash and "Operating margin" in hit.payload["page_content"]

    def test_other_model_is_refused(self, indexer, store):
        indexer.ensure()
        with pytest.raises(ConfigurationError, match="holds"):
            store.ensure_collection(8, "other-model")

    # -- search ------------------------------------------------------------------------------
    def test_filters_run_in_the_store(self, indexer, store, embedder):
        docs = sample_documents()
        for record, chunks in docs:
            indexer.index(record, chunks)
        q = embedder.encode(["governing law"])[0]
        only = store.search(q, k=10, filter=SearchFilter(doc_ids=[docs[1][0].doc_id]))
        assert only and {h.payload["metadata"]["doc_id"] for h in only} == {docs[1][0].doc_id}
        tables = store.search(q, k=10, filter=SearchFilter(kinds=["table"]))
        assert [h.payload["metadata"]["kind"] for h in tables] == ["table"]
        page2 = store.search(q, k=10, filter=SearchFilter(page_from=2, page_to=2))
        assert page2 and all(h.payload["metadata"]["page_start"] <= 2 <= h.payload["metadata"]["page_end"]
                             for h in page2)
        assert store.count(SearchFilter(page_from=3)) == 1

    def test_sparse_and_hybrid_rank_the_exact_passage_first(self, indexer, store, embedder):
        for record, chunks in sample_documents():
            indexer.index(record, chunks)
        question = "What was the Sharpe ratio of the flagship fund?"
        dense = embedder.encode([question])[0]
        sparse = indexer.sparse.encode_query(question)
        for mode in ("dense", "sparse", "hybrid"):
            top = store.search(dense, sparse, mode=mode, k=3)
            assert "Sharpe ratio of the flagship fund was 1.35" in top[0].payload["page_content"], mode
        sparse_hits = store.search(sparse=indexer.sparse.encode_query("Wilmington"), mode="sparse", k=5)
        assert len(sparse_hits) == 1 and "Wilmington" in sparse_hits[0].payload["page_content"]
        mmr = store.search(dense, sparse, mode="hybrid", k=3, mmr_diversity=0.5)
        assert len(mmr) == 3 and len({h.id for h in mmr}) == 3

    def test_score_threshold(self, indexer, store, embedder):
        for record, chunks in sample_documents():
            indexer.index(record, chunks)
        q = embedder.encode(["Sharpe ratio"])[0]
        scores = [h.score for h in store.search(q, k=9)]
        cut = (scores[0] + scores[1]) / 2
        assert [h.score for h in store.search(q, k=9, score_threshold=cut)] == scores[:1]

    # -- tenancy -----------------------------------------------------------------------------
    def test_tenancy_isolation_randomized(self, settings_for, embedder):
        st = open_store(settings_for(tenancy=True))
        try:
            indexer = Indexer(embedder, st)
            tenants = ["acme", "globex", "initech"]
            for t in tenants:
                for record, chunks in sample_documents(source=f"src-{t}", tenant=t):
                    indexer.index(record, chunks)
            with pytest.raises(TenancyError):
                st.search(embedder.encode(["fees"])[0], k=5)
            with pytest.raises(TenancyError):
                indexer.index(*make_document("x.pdf", [], tenant=None))
            rng = random.Random(7)
            words = " ".join(p[2] for parts in SAMPLE_DOCS.values() for p in parts).split()
            queries = [" ".join(rng.sample(words, rng.randint(1, 6))) for _ in range(60)]
            dense = embedder.encode(queries)
            for q, d in zip(queries, dense, strict=True):
                tenant = rng.choice(tenants)
                mode = rng.choice(["dense", "sparse", "hybrid"])
                flt = SearchFilter(tenant=tenant, page_from=rng.choice([None, 1, 2]),
                                   sources=rng.choice([None, [f"src-{rng.choice(tenants)}"]]))
                hits = st.search(d, indexer.sparse.encode_query(q), mode=mode, k=rng.randint(1, 20), filter=flt,
                                 mmr_diversity=rng.choice([None, 0.5]))
                assert all(h.payload["metadata"]["tenant"] == tenant for h in hits), (q, tenant, mode)
        finally:
            st.close()

    # -- embedded backends: one process per data dir -----------------------------------------
    def test_second_open_of_the_data_dir_is_refused(self, store, settings_for):
        if self.backend == "server":
            pytest.skip("a server is shared by design")
        data = settings_for().data_dir
        assert not data.exists()  # opening a data dir that does not exist creates (and holds) nothing
        store.ensure_collection(8, "test-model")  # creating the collection takes the folder
        with pytest.raises(StoreError, match="in use"):
            open_store(settings_for())

    def test_dense_vectors_round_trip_as_cosine(self, indexer, store, embedder):
        record, chunks = sample_documents()[0]
        indexer.index(record, chunks)
        vec = embedder.encode([chunks[3].embed_text])[0]
        top = store.search(vec, k=1)[0]
        assert top.id == chunks[3].id and np.isclose(top.score, 1.0, atol=1e-3)
