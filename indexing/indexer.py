"""Indexing one document: embed its chunks (dense + BM25) and make its points exactly them.

The flow calls, per source document: :meth:`Indexer.is_current` (skip when the content hash and
embedding model match the registry: no OCR, chunking or embedding), then after conversion and
chunking :meth:`Indexer.index` (also for documents with zero chunks, so they are remembered), and
after a run :meth:`Indexer.prune` for documents gone from their source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from folioflow.chunking.headers import furniture_text
from folioflow.chunking.schema import Chunk, pack_token_ids
from folioflow.chunking.sentences import sentence_spans
from folioflow.indexing.profiles import document_profile, record_title
from folioflow.indexing.registry import DocumentRecord
from folioflow.indexing.sparse import BM25Encoder
from folioflow.indexing.store import ChunkStore

__all__ = ["SENTENCE_VECTORS", "IndexResult", "Indexer"]

#: Values of :class:`Indexer`'s ``sentence_vectors``.
SENTENCE_VECTORS = ("auto", "always", "never")

log = logging.getLogger(__name__)


@dataclass
class IndexResult:
    """Outcome of :meth:`Indexer.index`: points written and removed, seconds embedding and storing."""

    doc_id: str
    chunks: int
    upserted: int
    deleted: int
    embed_s: float
    store_s: float


class Indexer:
    """Embeds chunks and writes them to a :class:`~folioflow.indexing.store.ChunkStore`.

    ``embedder``: an :class:`~folioflow.indexing.embedder.Embedder` (or anything with ``model_name``,
    ``dimension`` and ``encode``). ``sparse``: the BM25 encoder; by default the one recorded with
    the collection, else :class:`~folioflow.indexing.sparse.BM25Encoder` defaults. The collection is created
    on first use (:meth:`ensure`); a collection built with another embedding model raises
    :class:`~folioflow.ocr.errors.ConfigurationError`. ``use_token_ids``: hand the chunks' ``token_ids`` to
    the embedder when every chunk has them; only for chunks counted with this embedder's own
    tokenizer (``Embedder.token_counter()``, as the pipeline builds its chunker).

    ``sentence_vectors``: which documents also get a vector per sentence of each chunk (the store's
    :data:`~folioflow.indexing.store.SENTENCES` multivector, searched by the ``legal`` retrieval
    profile): ``auto`` (default) those that read as a contract
    (:func:`~folioflow.indexing.profiles.document_profile` gives ``legal``: the title names a
    contract, or names no kind and the record's ``metadata["text_profile"]``, which the pipeline
    sets from the document's text, says ``legal``), ``always``, ``never``.
    A clause question is often answered by one sentence of a chunk that holds several clauses; the
    sentences cost about one more embedding of the document's text. Collections created before
    sentence vectors existed get none.
    """

    def __init__(self, embedder, store: ChunkStore, sparse: BM25Encoder | None = None, use_token_ids: bool = False,
                 sentence_vectors: str = "auto"):
        if sentence_vectors not in SENTENCE_VECTORS:
            raise ValueError(f"sentence_vectors must be one of {', '.join(SENTENCE_VECTORS)}, not {sentence_vectors!r}")
        self.embedder, self.store, self._sparse = embedder, store, sparse
        self.use_token_ids = use_token_ids
        self.sentence_vectors = sentence_vectors
        self._counter = None
        self._ready = False

    @property
    def sparse(self) -> BM25Encoder:
        """The BM25 encoder in use (the collection's settings once it exists)."""
        if self._sparse is None:
            info = self.store.collection_info()
            self._sparse = BM25Encoder.from_config(info["sparse"]) if info and info.get("sparse") else BM25Encoder()
        return self._sparse

    def ensure(self) -> None:
        """Create the collection if needed, checking the embedding model against it."""
        if not self._ready:
            self.store.ensure_collection(self.embedder.dimension, self.embedder.model_name, self.sparse.config())
            self._ready = True

    def is_current(self, doc_id: str, content_hash: str) -> bool:
        """True when the document is indexed from the same bytes with the same model (skip it)."""
        return self.store.is_current(doc_id, content_hash, self.embedder.model_name)

    def index(self, record: DocumentRecord, chunks: Sequence[Chunk]) -> IndexResult:
        """Embed ``chunks`` (their ``embed_text``) and replace the document's points and record
        (written ``indexed``, keeping ``record.errors``: the caller's page errors, if any). Raises :class:`~folioflow.ocr.errors.EmbeddingError`, :class:`~folioflow.ocr.errors.StoreError` or
        :class:`~folioflow.ocr.errors.TenancyError`; on error the document's previous points stay."""
        self.ensure()
        t0 = time.perf_counter()
        texts = [c.embed_text for c in chunks]
        if self.use_token_ids and chunks and all(c.token_ids is not None for c in chunks) and self._ids_match(chunks[0]):
            from folioflow.indexing.gpu_tokenize import TokenIds

            packed = [c.token_ids for c in chunks if c.token_ids is not None]  # all of them (checked above)
            ids = TokenIds(np.frombuffer(b"".join(packed), dtype=np.int32),
                           np.array([len(t) // 4 for t in packed], dtype=np.int64))
            dense = self.embedder.encode(texts, token_ids=ids)
        else:
            dense = self.embedder.encode(texts)
        # the sparse index also searches the chunk's page headers/footers (kept out of its text and
        # embedding): an invoice or matter number printed only in a running header is findable
        sparse = self.sparse.encode_documents([_sparse_text(c) for c in chunks])
        sentences = self._sentence_vectors(chunks) if chunks and self._wants_sentences(record) else None
        t1 = time.perf_counter()
        # ``record.errors`` stay: those of pages that failed while the rest of the document landed.
        record = record.model_copy(update={"embedding_model": self.embedder.model_name, "status": "indexed"})
        res = self.store.replace_document(record, chunks, dense, sparse, sentences)
        t2 = time.perf_counter()
        return IndexResult(record.doc_id, len(chunks), res.upserted, res.deleted, t1 - t0, t2 - t1)

    def _wants_sentences(self, record: DocumentRecord) -> bool:
        """Whether ``record``'s chunks get sentence vectors (class docstring, ``sentence_vectors``)."""
        if self.sentence_vectors == "never" or not self.store.sentence_vectors:
            return False
        if self.sentence_vectors == "always":
            return True
        return document_profile(record_title(record), record.metadata.get("text_profile")) == "legal"

    def _sentence_vectors(self, chunks: Sequence[Chunk]) -> list[np.ndarray | None]:
        """Per chunk, the (n, dim) vectors of the sentences of its text
        (:func:`~folioflow.chunking.sentences.sentence_spans`), or None when it has no text; one
        ``encode`` call for the document."""
        texts: list[str] = []
        owners: list[int] = []
        for i, chunk in enumerate(chunks):
            for start, end in sentence_spans(chunk.text):
                sentence = chunk.text[start:end].strip()
                if sentence:
                    texts.append(sentence)
                    owners.append(i)
        if not texts:
            return [None] * len(chunks)
        vectors = self.embedder.encode(texts)  # rows in chunk order: split by each chunk's sentence count
        counts = np.bincount(np.asarray(owners), minlength=len(chunks))
        return [rows if len(rows) else None for rows in np.split(vectors, np.cumsum(counts)[:-1])]

    def _ids_match(self, chunk: Chunk) -> bool:
        """Whether ``chunk.token_ids`` are this embedder's tokenizer's ids of its text (one text
        tokenized per document): chunks counted elsewhere, e.g. on a worker that loaded the tokenizer
        by name, are embedded from their texts when the tokenizers disagree."""
        counter = self._counter
        if counter is None:
            counter = self._counter = self.embedder.token_counter()
        if pack_token_ids(counter.ids_batch([chunk.embed_text])[0]) == chunk.token_ids:
            return True
        log.warning("chunk token ids do not match %s's tokenizer: embedding from texts", self.embedder.model_name)
        return False

    def prune(self, keep: set[str], source: str | None = None) -> list[str]:
        """Delete the documents (of ``source``, if given) whose ids are not in ``keep``; returns
        the removed doc ids."""
        gone = [r.doc_id for r in self.store.list_documents(source) if r.doc_id not in keep]
        for doc_id in gone:
            self.store.delete_document(doc_id)
        self.store.sweep_pending()  # points of writes interrupted long ago and never redone
        return gone


def _sparse_text(chunk: Chunk) -> str:
    """What the BM25 vector of ``chunk`` is made from: its embedded text and its page furniture."""
    extra = furniture_text(chunk.metadata)
    return f"{chunk.embed_text}\n{extra}" if extra else chunk.embed_text
