"""Sentence vectors: a contract's chunks also get one vector per sentence (Qdrant multivector,
MaxSim), searched by the legal profile as a third hybrid ranking; filings and old collections do not."""

from __future__ import annotations

import numpy as np
import pytest

from folioflow.chunking.sentences import sentence_spans
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.registry import COLLECTION_RECORD_ID
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import StoreSettings, open_store

from .conftest import make_document

CONTRACT = "PareteumCorp_20191004_8-K_EX-10.1_11843221_EX-10.1_Maintenance Agreement.pdf"
FILING = "3M_2018_10K.pdf"
# one chunk that holds several clauses: the no-hire sentence is one of six
MIXED = ("Supplier shall deliver the Products to the delivery point named in each purchase order. Title and risk "
         "of loss pass to Buyer on delivery. Buyer shall pay each invoice within thirty days of its date. "
         "During the term and for one year after it, neither party shall solicit or hire any employee of the "
         "other party. All prices are stated in United States dollars. Supplier shall keep the Products "
         "insured until delivery.")
PARTS = [(["1. Delivery"], "text", MIXED, 1),
         (["2. Warranty"], "text", "Supplier warrants that the Products will be free of defects for twelve months.", 1),
         (["3. Governing Law"], "text", "This Agreement is governed by the laws of the State of New York.", 2)]
QUESTION = "May a party recruit the other party's staff?"


@pytest.mark.parametrize("backend", ["edge", "local"])
def test_a_contract_gets_a_vector_per_sentence_and_search_scores_its_best_sentence(tmp_path, embedder, backend):
    store = open_store(StoreSettings(data_dir=tmp_path, backend=backend))
    try:
        indexer = Indexer(embedder, store)
        contract, chunks = make_document(CONTRACT, PARTS, source="contracts")
        indexer.index(contract, chunks)
        indexer.index(*make_document(FILING, PARTS, source="filings"))
        assert store.sentence_vectors
        q = embedder.encode_query(QUESTION)
        by_sentence = store.search(q, mode="sentences", k=10)
        # the filing's chunks (title: a 10-K) have no sentence vectors: only the contract's are found
        assert {h.payload["metadata"]["doc_id"] for h in by_sentence} == {contract.doc_id}
        assert len(by_sentence) == len(PARTS)
        top = by_sentence[0]
        assert top.payload["page_content"] == MIXED
        sentences = [MIXED[a:b].strip() for a, b in sentence_spans(MIXED)]
        assert len(sentences) == 6
        best = float(np.max(embedder.encode(sentences) @ q))  # MaxSim: the best sentence's cosine
        assert top.score == pytest.approx(best, abs=1e-4)
        by_chunk = {h.id: h.score for h in store.search(q, mode="dense", k=10, filter=None)}
        assert top.score > by_chunk[top.id] + 0.05  # the chunk's own vector is about all six clauses
        with pytest.raises(ValueError, match="MMR"):
            store.search(q, mode="sentences", mmr_diversity=0.5)
    finally:
        store.close()


def test_sentence_vectors_are_chosen_per_document_and_can_be_turned_off(tmp_path, embedder):
    with pytest.raises(ValueError, match="sentence_vectors"):
        Indexer(embedder, None, sentence_vectors="sometimes")  # type: ignore[arg-type]
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        never = Indexer(embedder, store, sentence_vectors="never")
        never.index(*make_document(CONTRACT, PARTS, source="contracts"))
        q = embedder.encode_query(QUESTION)
        assert store.search(q, mode="sentences", k=10) == []
        Indexer(embedder, store, sentence_vectors="always").index(*make_document(FILING, PARTS, source="filings"))
        assert len(store.search(q, mode="sentences", k=10)) == len(PARTS)
    finally:
        store.close()


def test_a_collection_made_before_sentence_vectors_is_indexed_and_searched_without_them(tmp_path, embedder):
    """An existing collection's record has no ``sentence_vectors``: new documents get none, the
    sentence search finds nothing, and the legal profile ranks as with ``sentence_weight=0``."""
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        indexer = Indexer(embedder, store)
        indexer.ensure()
        info = {key: value for key, value in store.collection_info().items() if key != "sentence_vectors"}
        store._reg_put(COLLECTION_RECORD_ID, info)  # what a collection written by an earlier version holds
    finally:
        store.close()
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        assert not store.sentence_vectors
        Indexer(embedder, store).index(*make_document(CONTRACT, PARTS, source="contracts"))
        q = embedder.encode_query(QUESTION)
        assert store.search(q, mode="sentences", k=10) == []
        legal = FolioRetriever(store=store, embedder=embedder, k=3)
        assert legal.resolve_profile() == "legal"
        off = FolioRetriever(store=store, embedder=embedder, k=3, sentence_weight=0.0)
        assert [d.id for d in legal.invoke(QUESTION)] == [d.id for d in off.invoke(QUESTION)]
    finally:
        store.close()


def test_the_legal_profile_fuses_the_sentence_search(tmp_path, embedder):
    """With sentence vectors, the legal profile's fused scores include the sentence ranking: the
    chunk whose one sentence answers gains over the run without it."""
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        Indexer(embedder, store).index(*make_document(CONTRACT, PARTS, source="contracts"))
        with_sentences = FolioRetriever(store=store, embedder=embedder, k=3).invoke(QUESTION)
        without = FolioRetriever(store=store, embedder=embedder, k=3, sentence_weight=0.0).invoke(QUESTION)
        assert with_sentences[0].page_content == MIXED
        score = {d.id: d.metadata["search_score"] for d in without}
        gained = with_sentences[0].metadata["search_score"] - score[with_sentences[0].id]
        assert gained > 0
    finally:
        store.close()
