"""LangChain retriever over a folioflow collection (langchain-core only).

``FolioRetriever`` is a ``BaseRetriever``: use it alone (``retriever.invoke("question")``) or in an
LCEL chain (``retriever | format_docs | prompt | llm``). It returns LangChain ``Document``s whose
``page_content`` is the chunk's Markdown and whose metadata holds ``doc_id``, ``source``, ``uri``,
``path``, ``page_start``/``page_end`` (1-based, inclusive), ``heading_path``, ``kind``, ``score``
and ``search_score``, so answers can cite pages. ``score`` is the score the results are ranked by
(best first, never increasing down the list); ``search_score`` is the score of the mode (cosine,
BM25 or Qdrant's RRF) from the search that found the chunk. They are equal unless title routing
or hybrid page scoring re-ranked the results (below). One exception: with ``mmr=True`` the order is MMR's (relevance
traded against diversity, whose objective Qdrant does not return) and both scores are the chunk's
dense similarity to the question, which need not decrease. ``score_threshold`` applies to the
mode's score, inside Qdrant.

Modes: ``dense`` (cosine on the embedding), ``sparse`` (BM25 with Qdrant's IDF) and ``hybrid``
(both, fused by Reciprocal Rank Fusion inside Qdrant: prefetch + fusion on every backend, so no
client-side fusion is needed). ``mmr=True`` re-ranks candidates for diversity (Maximal Marginal
Relevance on the dense vector, also inside Qdrant). Filters: doc ids, sources, kinds, page range,
tenant. With tenancy on (the store's setting), a retriever without a tenant raises
:class:`~folioflow.ocr.errors.TenancyError` and the tenant condition is part of every query Qdrant runs.
Per-call overrides: ``retriever.invoke(q, k=10, mode="dense", page_from=3)``.

``glossary`` (default :data:`folioflow.indexing.glossary.FINANCE`): a query naming a glossary term ("income
statement", "capex") is searched with the documents' wording appended, in both the dense and the
sparse query (:mod:`folioflow.indexing.glossary`; ``glossary=None`` searches the query as given).

``route_titles`` (default on): a question that names a document's title terms (company, year,
form: ``3M_2018_10K.pdf``) is searched a second time inside the best-matching documents, and the
two rankings are fused by Reciprocal Rank Fusion (:mod:`folioflow.indexing.routing`; it boosts rather than
filters, see there for how a wrong route can still cost a page its place). Results are then in the
fused order and their ``score`` is that fusion's score (``sum 1/(60 + rank)`` over the two
rankings), so scores decrease down the list; ``search_score`` keeps the mode's own score from the
search that found the chunk. It is skipped when the call already restricts ``doc_ids`` or uses
MMR. Titles are read from the store's registry and re-read at most every :data:`ROUTER_REFRESH_S`
seconds.

``distinct_pages`` (default on): at most one chunk per page, the best ranked; the ``k`` results
are then ``k`` different pages (a chunk is keyed by its document and first page). Several parts of
one long table, or a table and the paragraph under it, often rank side by side: collapsed, the
results reach further down the ranking, which is what a citing answer needs. Measured with
``tests/benchmarks/bench_retrieval.py`` (figures in the README); ``distinct_pages=False`` returns
the plain chunk ranking.

``page_decay`` (default :data:`PAGE_DECAY`, hybrid mode with ``distinct_pages``): pages are ranked
by their chunks together, ``page score = best chunk's RRF score + page_decay x the sum of the
page's other candidates' RRF scores`` (a MaxP-plus-sum aggregation of passage scores into a
document score, as in Dai and Callan, SIGIR 2019, at page level). A statement split into three
table chunks that all match a question then outranks a page with one slightly better chunk. The
candidates are the top :data:`PAGE_CANDIDATES` fused chunks whatever ``k`` is, so ``k=4`` and
``k=10`` agree on their common prefix. ``score`` is then the page score. Dense and sparse modes keep
the best chunk's rank (their cosine or BM25 scores are not on one scale with a sum of others);
``page_decay=0`` turns it off. The value was chosen with
``tests/benchmarks/retrieval_fusion_variants.py`` on the FinanceBench questions of the retrieval
benchmark, the same questions it is scored on (figures in the README).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from folioflow.indexing.glossary import FINANCE
from folioflow.indexing.payload import hit_metadata
from folioflow.indexing.routing import TitleRouter, fuse_rankings
from folioflow.indexing.sparse import BM25Encoder
from folioflow.indexing.store import SearchFilter
from folioflow.ocr.errors import FolioflowError, TenancyError

__all__ = ["FolioEmbeddings", "FolioRetriever", "aggregate_pages", "format_docs"]

log = logging.getLogger(__name__)

_FILTER_KEYS = ("doc_ids", "sources", "tenant", "kinds", "page_from", "page_to")
_SEARCH_KEYS = ("k", "mode", "mmr", "mmr_diversity", "fetch_k", "score_threshold", "distinct_pages", "route_titles",
                "page_decay")
#: Candidates fetched per requested result when ``distinct_pages`` collapses chunks of one page.
DISTINCT_PAGES_FETCH = 4
#: Weight of a page's other candidate chunks in its hybrid page score (module docstring).
PAGE_DECAY = 0.3
#: Fused chunks (at least) that hybrid page scoring aggregates, whatever ``k`` is.
PAGE_CANDIDATES = 40
#: Seconds a title router is reused before the registry is read again (new documents get routed).
ROUTER_REFRESH_S = 60.0
#: Title routers kept at once (one per tenant and sources filter).
MAX_ROUTERS = 64


class FolioRetriever(BaseRetriever):
    """Retrieve chunks from a :class:`~folioflow.indexing.store.ChunkStore` (see module docstring).

    ``store`` and ``embedder`` (an :class:`~folioflow.indexing.embedder.Embedder` of the collection's model)
    are required; the store must hold the collection (else
    :class:`~folioflow.ocr.errors.CollectionNotFoundError`, at construction, naming the
    data directory or server and the collection looked for; an existing collection with no
    documents answers ``[]``); ``sparse`` defaults to the BM25 settings recorded with the collection;
    ``glossary``: an :class:`~folioflow.indexing.glossary.Glossary` for query expansion, or None;
    ``route_titles``: document routing by title (:mod:`folioflow.indexing.routing`); ``page_decay``: weight of a
    page's other chunks in hybrid page scoring (module docstring; 0 turns it off).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    embedder: Any
    sparse: Any = None
    k: int = 4
    mode: Literal["dense", "sparse", "hybrid"] = "hybrid"
    mmr: bool = False
    mmr_diversity: float = 0.3
    fetch_k: int | None = None
    score_threshold: float | None = None
    distinct_pages: bool = True
    page_decay: float = PAGE_DECAY
    route_titles: bool = True
    glossary: Any = FINANCE
    doc_ids: list[str] | None = None
    sources: list[str] | None = None
    tenant: str | None = None
    kinds: list[str] | None = None
    page_from: int | None = None
    page_to: int | None = None
    _routers: dict = PrivateAttr(default_factory=dict)

    def model_post_init(self, context: Any, /) -> None:
        """Refuse a store without the collection (a wrong data dir, a typo in the collection name):
        raises :class:`~folioflow.ocr.errors.CollectionNotFoundError` naming where it looked, instead of
        answering every question with nothing."""
        self.store.require_collection()

    def _encoder(self) -> BM25Encoder:
        if self.sparse is None:
            info = self.store.require_collection()
            self.sparse = BM25Encoder.from_config(info["sparse"]) if info.get("sparse") else BM25Encoder()
        return self.sparse

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        opts = {key: kwargs.get(key, getattr(self, key)) for key in _SEARCH_KEYS + _FILTER_KEYS}
        unknown = set(kwargs) - set(opts)
        if unknown:
            raise TypeError(f"unknown retriever options: {sorted(unknown)}")
        if self.store.tenancy and not opts["tenant"]:
            raise TenancyError("tenancy is on: the retriever needs the caller's tenant")
        mode = opts["mode"]
        searched = self.glossary.expand(query) if self.glossary is not None else query
        dense = self.embedder.encode([searched])[0] if mode in ("dense", "hybrid") or opts["mmr"] else None
        sparse = self._encoder().encode_query(searched) if mode in ("sparse", "hybrid") else None
        flt = SearchFilter(**{key: opts[key] for key in _FILTER_KEYS})
        k = opts["k"]
        aggregate = bool(opts["distinct_pages"] and mode == "hybrid" and not opts["mmr"] and opts["page_decay"])
        depth = k * DISTINCT_PAGES_FETCH if opts["distinct_pages"] else k
        if aggregate:
            depth = max(depth, PAGE_CANDIDATES)
        fetch_k = max(opts["fetch_k"] or 0, depth) or None
        search = dict(mode=mode, k=depth, score_threshold=opts["score_threshold"],
                      mmr_diversity=opts["mmr_diversity"] if opts["mmr"] else None, fetch_k=fetch_k)
        hits = self.store.search(dense, sparse, filter=flt, **search)
        ranked = [(hit, hit.score) for hit in hits]
        routed = (self._router(opts["tenant"], opts["sources"]).route(query)
                  if opts["route_titles"] and not opts["doc_ids"] and not opts["mmr"] else None)
        if routed:
            inside = self.store.search(dense, sparse, filter=replace(flt, doc_ids=routed), **search)
            ranked = fuse_rankings([hits, inside])  # (hit, fused RRF score), best first
        if aggregate:
            ranked = aggregate_pages(ranked, opts["page_decay"])
        docs: list[Document] = []
        pages: set[tuple[str, int]] = set()
        for hit, score in ranked:
            if len(docs) == k:
                break
            meta = hit_metadata(hit.payload, score)
            meta["search_score"] = float(hit.score)
            if opts["distinct_pages"]:
                page = _page_key(meta)
                if page in pages:
                    continue
                pages.add(page)
            if opts["tenant"] and meta.get("tenant") != opts["tenant"]:  # defence in depth; Qdrant filtered already
                raise TenancyError(f"store returned a chunk of another tenant for tenant {opts['tenant']!r}")
            meta["id"] = hit.id
            docs.append(Document(page_content=hit.payload.get("page_content", ""), metadata=meta, id=hit.id))
        return docs


    def _router(self, tenant: str | None, sources: list[str] | None) -> TitleRouter:
        """The title router over the documents this caller may see (its tenant, its sources),
        rebuilt from the registry when older than :data:`ROUTER_REFRESH_S`."""
        key = (tenant, tuple(sources or ()))
        built = self._routers.get(key)
        if built is None or time.monotonic() - built[0] > ROUTER_REFRESH_S:
            try:
                records = [r for r in self.store.list_documents()
                           if (tenant is None or r.tenant == tenant) and (not sources or r.source in sources)]
            except FolioflowError as exc:  # the registry is unreadable now: search without routing
                log.warning("title routing skipped: cannot read the document registry: %s", exc)
                return TitleRouter({})
            if len(self._routers) >= MAX_ROUTERS:  # many tenants: forget the oldest view
                self._routers.pop(next(iter(self._routers)))
            built = (time.monotonic(), TitleRouter.from_records(records))
            self._routers[key] = built
        return built[1]


def _page_key(meta: dict[str, Any]) -> tuple[str, int]:
    """The page a chunk is counted on: its document and first page."""
    return str(meta.get("doc_id")), int(meta.get("page_start") or 0)


def aggregate_pages(ranked: list[tuple[Any, float]], decay: float) -> list[tuple[Any, float]]:
    """One ``(best hit, page score)`` per page, best page first: ``ranked`` is ``(hit, score)``
    pairs of chunks, best first (payload ``metadata.doc_id`` and ``page_start`` name the page); the
    page score is its first (best) chunk's score plus ``decay`` times the sum of the page's other
    chunks' scores. Ties keep the order of the pages' best chunks."""
    pages: dict[tuple[str, int], list] = {}
    for hit, score in ranked:
        entry = pages.setdefault(_page_key(hit.payload.get("metadata") or {}), [hit, score, 0.0])
        if entry[0] is not hit:
            entry[2] += score
    scored = [(hit, best + decay * rest) for hit, best, rest in pages.values()]
    scored.sort(key=lambda pair: -pair[1])
    return scored


class FolioEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over an :class:`~folioflow.indexing.embedder.Embedder` (e.g. to open a
    folioflow collection with langchain-qdrant's ``QdrantVectorStore``)."""

    def __init__(self, embedder: Any):
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.encode([text])[0].tolist()


def format_docs(docs: list[Document]) -> str:
    """Chunks as a citation-friendly context block: ``[path p.N-M] text`` per chunk."""
    parts = []
    for d in docs:
        m = d.metadata
        pages = f"p.{m.get('page_start')}" + (f"-{m.get('page_end')}" if m.get("page_end") != m.get("page_start") else "")
        parts.append(f"[{m.get('path', m.get('doc_id'))} {pages}] {d.page_content}")
    return "\n\n".join(parts)
