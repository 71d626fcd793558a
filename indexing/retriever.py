"""LangChain retriever over a folioflow collection (langchain-core only).

``FolioRetriever`` is a ``BaseRetriever``: use it alone (``retriever.invoke("question")``) or in an
LCEL chain (``retriever | format_docs | prompt | llm``). It returns LangChain ``Document``s whose
``page_content`` is the chunk's Markdown and whose metadata holds ``doc_id``, ``source``, ``uri``,
``path``, ``page_start``/``page_end`` (1-based, inclusive), ``heading_path``, ``kind``, ``score``
and ``search_score``, so answers can cite pages. ``score`` is the score the results are ranked by
(best first, never increasing down the list); ``search_score`` is the score of the mode (cosine,
BM25 or the hybrid fusion's) from the search that found the chunk. They are equal unless title routing
or hybrid page scoring re-ranked the results (below). One exception: with ``mmr=True`` the order is MMR's (relevance
traded against diversity, whose objective Qdrant does not return) and both scores are the chunk's
dense similarity to the question, which need not decrease. ``score_threshold`` applies to the
mode's score, inside Qdrant.

Modes: ``dense`` (cosine on the embedding), ``sparse`` (BM25 with Qdrant's IDF) and ``hybrid``
(both, fused by Reciprocal Rank Fusion, ``sum 1/(RRF_K + rank)``, or with ``fusion="convex"``
(profile ``legal``) by a weighted sum of each search's scores divided by its best score
(:func:`~folioflow.indexing.routing.fuse_scores`): the retriever runs the dense and the sparse
search and fuses them itself, ties broken by point id, so that the fusion is the same in every
process). A question the glossary expanded (below) has its sparse ranking weighted
``glossary_sparse_weight`` in that fusion (profile ``legal`` 1.5, else 1: ``sum w/(RRF_K + rank)``):
the expansion is the documents' own drafting words, which BM25 matches exactly (the dense query
keeps them too: without them it ranked worse). ``mmr=True`` re-ranks candidates for diversity (Maximal Marginal
Relevance on the dense vector, inside Qdrant). With ``query_adapter`` (profile ``legal``: the
bundled ``legal`` adapter, :mod:`folioflow.indexing.query_adapter`) every dense search (dense,
sentence, MMR, the routed and the party-block searches) uses the question's vector mapped by the
adapter, so dense scores are cosines with the mapped vector; the glossary still matches the
question by its own vector. With ``expansion_terms`` (profile ``legal``: 30) every hybrid search's
BM25 query also holds that many terms of the adapter's learned expansion
(:meth:`~folioflow.indexing.query_adapter.QueryAdapter.expand`, read from the question's vector
before the adapter maps it). Filters: doc ids, sources, kinds, page range,
tenant. With tenancy on (the store's setting), a retriever without a tenant raises
:class:`~folioflow.ocr.errors.TenancyError` and the tenant condition is part of every query Qdrant runs.
Per-call overrides: ``retriever.invoke(q, k=10, mode="dense", page_from=3)``.

``profile`` (default ``auto``): the ranking defaults for the kind of documents in the collection,
``finance``, ``legal`` or ``general``, inferred from the documents' titles (or their text where a
title names no kind) unless named
(:mod:`folioflow.indexing.profiles`). It sets ``glossary``, ``distinct_pages`` and ``page_decay``
(below) unless the caller gives them.

``glossary`` (``finance`` profile: :data:`folioflow.indexing.glossary.FINANCE`): a query naming a glossary term ("income
statement", "capex") is searched with the documents' wording appended, in both the dense and the
sparse query (:mod:`folioflow.indexing.glossary`; ``glossary=None`` searches the query as given).

``route_titles`` (default on): a question that names a document's title terms (company, year,
form: ``3M_2018_10K.pdf``) is searched a second time inside the best-matching documents, and the
two rankings are fused by Reciprocal Rank Fusion, the search inside weighted ``route_weight``
(profile ``finance`` 5, else 1; :mod:`folioflow.indexing.routing`; it boosts rather than
filters, see there for how a wrong route can still cost a page its place). With ``demote_roles``
(profiles ``legal`` and ``general``) and ``unnamed_inside`` (default on), the search inside the
routed documents leaves out the question's words that name them
(:meth:`~folioflow.indexing.routing.TitleRouter.without_names`): inside the named contract, its
name would only favour the chunks that repeat it. Results are then in the
fused order and their ``score`` is that fusion's score (``sum w/(60 + rank)`` over the two
rankings, ``w`` 1 for the unrestricted one and ``route_weight`` for the other), so scores decrease down the list; ``search_score`` keeps the mode's own score from the
search that found the chunk. It is skipped when the call already restricts ``doc_ids`` or uses
MMR. Titles are read from the store's registry and re-read at most every :data:`ROUTER_REFRESH_S`
seconds.

``distinct_pages`` (default on): at most one chunk per page, the best ranked, first; the ``k``
results are then ``k`` different pages (a chunk is keyed by its document and first page). Several
parts of one long table, or a table and the paragraph under it, often rank side by side:
collapsed, the results reach further down the ranking, which is what a citing answer needs. When
the candidates hold fewer than ``k`` pages (a two-page contract), the results are filled up with the
further chunks of the pages already returned, in chunk rank order, each marked
``page_repeat=True`` (the others ``False``) and scored at most the last distinct page's score: ``k``
results whenever the store has ``k`` matching chunks. ``distinct_pages=False`` returns the plain
chunk ranking.

``page_decay`` (default :data:`PAGE_DECAY`, hybrid mode with ``distinct_pages``): pages are ranked
by their chunks together, ``page score = best + page_decay x min(rest, best)``, ``best`` the page's
best chunk's RRF score and ``rest`` the sum of its other candidates' (a MaxP-plus-sum aggregation
of passage scores, as in Dai and Callan, SIGIR 2019, at page level, with the sum capped so that
the other chunks count at most as one more copy of the best: see :func:`aggregate_pages` for the
bound this gives). A statement split into three table chunks that all match a question then
outranks a page with one slightly better chunk, but no number of weak chunks outranks a strong
one. The candidates are the top :data:`PAGE_CANDIDATES` fused chunks whatever ``k`` is, so ``k=4``
and ``k=10`` agree on their common prefix. ``score`` is then the page score. Dense and sparse
modes keep the best chunk's rank; ``page_decay=0`` turns it off. The value 0.3 was chosen with
``tests/benchmarks/retrieval_fusion_variants.py`` on FinanceBench questions of the retrieval
benchmark (the uncapped sum then), the same questions it is scored on.

Agreement first (hybrid mode, no MMR): a chunk that both the dense and the sparse search rank first
is the first result, whatever page scoring, title routing or the glossary would do (its score is
raised to the former first result's when lower, so scores still never increase down the list).
When title routing fires, the same rule applies first to the search inside the routed documents:
agreement inside the documents the question names outranks agreement elsewhere (in a shared store
of contracts, every governing-law clause agrees with "which law governs the Pareteum agreement"),
and agreement over the whole store counts only for a chunk of the routed documents.
One rule comes before it, with ``demote_roles`` (the ``legal`` profile) and ``lead_roles`` (default
on): a question that asks for a contract's party block (who the parties are, when the agreement
was made or takes effect) gets the best party block of the documents searched first
(:mod:`folioflow.indexing.clause_ranking`). With ``date_weight`` (the ``legal`` profile), a date
question's block must hold a date (or, failing that, a blank one: "this __ day of ____, 20__"), a
take-effect question's must date itself or say it is effective, and for a take-effect question a
clause among the first :data:`EFFECT_CANDIDATES` fused chunks that dates the agreement's start
("the Term will begin on February 1, 1998") comes before the block.

Determinism: the same query on the same store gives the same ranking in every process. The query
is embedded alone, in fp32 (:meth:`~folioflow.indexing.embedder.Embedder.encode_query`: bf16
autocast and the fast path's batch composition would change its vector by process); hits with
equal scores are ordered by point id; hybrid fusion is done here, in that order; routing,
page scoring and the fill keep first-seen order on ties.

Stable prefixes: a smaller ``k`` gives the first results of a larger one. How deep each search
goes depends on ``k`` (the legal profile's searches fetch ``k`` candidates each, the others'
:data:`PAGE_CANDIDATES` or ``k`` x :data:`DISTINCT_PAGES_FETCH`), so each profile has a ``k``
(:data:`STABLE_K`: 5 legal, 10 finance and general) whose ranking every ``k`` keeps: a smaller
``k`` is its first ``k`` results, a larger one its results followed by those of the ranking for
``k`` that it does not hold (with distinct pages, not their pages again), each scored at most the
one before. A larger ``k`` costs a second ranking. With MMR or an explicit ``fetch_k`` the ranking is
computed for ``k`` alone.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from folioflow.indexing.clause_ranking import (
    asks_date,
    asks_effect,
    blank_dated,
    boilerplate_test,
    chunk_role,
    date_ranking,
    effect_clauses,
    effective_blocks,
    heading_ranking,
    leading_role,
    split_roles,
    wanted_roles,
)
from folioflow.indexing.glossary import FINANCE, LEGAL
from folioflow.indexing.payload import hit_metadata
from folioflow.indexing.profiles import collection_profile, profile_options
from folioflow.indexing.query_adapter import load_adapter
from folioflow.indexing.routing import TitleRouter, fuse_rankings, fuse_scores
from folioflow.indexing.sparse import BM25Encoder, SparseVec
from folioflow.indexing.store import SearchFilter
from folioflow.ocr.errors import ConfigurationError, FolioflowError, QueryError, TenancyError

__all__ = ["MAX_QUERY_CHARS", "FolioEmbeddings", "FolioRetriever", "aggregate_pages", "check_query_text", "format_docs"]

log = logging.getLogger(__name__)

_FILTER_KEYS = ("doc_ids", "sources", "tenant", "kinds", "page_from", "page_to")
_SEARCH_KEYS = ("k", "mode", "mmr", "mmr_diversity", "fetch_k", "score_threshold", "distinct_pages", "route_titles",
                "page_decay", "profile", "demote_roles", "heading_weight", "lead_roles", "demote_boilerplate",
                "unnamed_inside", "route_weight", "glossary_sparse_weight", "date_weight", "fusion", "sentence_weight",
                "query_adapter", "expansion_terms")
#: Options a profile sets unless the caller gives them (:mod:`folioflow.indexing.profiles`).
_PROFILE_KEYS = ("glossary", "distinct_pages", "page_decay", "demote_roles", "heading_weight",
                 "route_weight", "glossary_sparse_weight", "date_weight", "fusion", "sentence_weight", "query_adapter",
                 "expansion_terms")
#: Fused chunks (at least) that role demotion and the clause-title match re-rank, whatever ``k`` is.
RERANK_CANDIDATES = 20
#: Per retrieval profile, the ``k`` whose ranking every other ``k`` keeps as its prefix (module
#: docstring, stable prefixes): the legal profile's searches fetch ``k`` candidates each, chosen at
#: ``k`` 5 (its benchmark's); the other profiles' rankings are the same for every ``k`` up to 10
#: (:data:`PAGE_CANDIDATES` over :data:`DISTINCT_PAGES_FETCH`).
STABLE_K = {"legal": 5, "finance": 10, "general": 10}
#: For "when does it take effect?" (legal profile), the first fused chunks searched for a clause that
#: dates the agreement's start (:func:`~folioflow.indexing.clause_ranking.effect_clauses`); chosen on
#: the tuning half of the legal benchmark (3 and 5 alike per contract, 3 one question better in the
#: shared store; 10 lower).
EFFECT_CANDIDATES = 3
#: Candidates each of the dense and the sparse search fetch for the party block a question asks for.
LEAD_FETCH = 10
#: Candidates fetched per requested result when ``distinct_pages`` collapses chunks of one page.
DISTINCT_PAGES_FETCH = 4
#: Weight of a page's other candidate chunks in its hybrid page score (module docstring).
PAGE_DECAY = 0.3
#: Fused chunks (at least) that hybrid page scoring aggregates, whatever ``k`` is.
PAGE_CANDIDATES = 40
#: Reciprocal Rank Fusion constant of hybrid search (``1 / (RRF_K + rank)``, Cormack et al. 2009; Qdrant's default).
RRF_K = 60
#: Weight of the dense ranking in convex hybrid fusion (``fusion="convex"``; the sparse ranking
#: weighs 1, or ``glossary_sparse_weight``): chosen on the tuning half of the legal benchmark, where
#: 0.6 to 0.9 ranked alike (docs/benchmarks.md).
CONVEX_DENSE_WEIGHT = 0.7
#: Depth of each search whose scores convex hybrid fusion reads (at least ``fetch_k``): the
#: candidates are the chunks in some search's top ``fetch_k``, each scored with its score in every
#: search down to this depth, so a candidate just below another search's top ``fetch_k`` is not
#: scored 0 there. Chosen by cross-validation inside the tuning half of the legal benchmark (20 and
#: 50 tried; docs/benchmarks.md).
CONVEX_SCORE_DEPTH = 50
#: Seconds a title router is reused before the registry is read again (new documents get routed).
ROUTER_REFRESH_S = 60.0
#: Title routers kept at once (one per tenant and sources filter).
MAX_ROUTERS = 64


#: The longest query text a search takes, in characters (the HTTP API's ``QueryRequest.text`` has
#: the same limit). A question is a sentence or a paragraph; a whole page pasted as a query is cut
#: to the embedding model's token limit anyway, and its BM25 query grows with every word.
MAX_QUERY_CHARS = 4000


def check_query_text(text: str) -> str:
    """``text`` when a search can run on it. Raises :class:`~folioflow.ocr.errors.QueryError`
    when it is not a string, empty or only whitespace, or longer than :data:`MAX_QUERY_CHARS` characters."""
    if not isinstance(text, str):
        raise QueryError(f"the query must be text (a str), not {type(text).__name__}")
    if not text.strip():
        raise QueryError("empty query: give the question or search text")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"query too long: {len(text)} characters, at most {MAX_QUERY_CHARS}")
    return text


class FolioRetriever(BaseRetriever):
    """Retrieve chunks from a :class:`~folioflow.indexing.store.ChunkStore` (see module docstring).

    ``store`` and ``embedder`` (an :class:`~folioflow.indexing.embedder.Embedder` of the collection's model)
    are required; the store must hold the collection (else
    :class:`~folioflow.ocr.errors.CollectionNotFoundError`, at construction, naming the
    data directory or server and the collection looked for; an existing collection with no
    documents answers ``[]``); ``sparse`` defaults to the BM25 settings recorded with the collection;
    ``glossary``: an :class:`~folioflow.indexing.glossary.Glossary` for query expansion, or None;
    ``route_titles``: document routing by title (:mod:`folioflow.indexing.routing`); ``page_decay``: weight of a
    page's other chunks in hybrid page scoring (module docstring; 0 turns it off); ``profile``:
    ``auto`` (default: inferred from the collection's document titles, or their text where a title
    names no kind), ``finance``, ``legal`` or
    ``general`` (:mod:`folioflow.indexing.profiles`): it sets ``glossary``, ``distinct_pages`` and
    ``page_decay`` unless they are given explicitly (to the constructor or the call).

    ``api_url`` (and ``api_key``, its bearer key, default ``$FOLIOFLOW_API_KEY``): search through a running folioflow API server
    (``folioflow api``, ``POST /v1/query``) instead of a store opened in this process; ``store``
    and ``embedder`` are then not needed. The server ranks with this same code, so the documents
    and scores are the same; their metadata holds the keys of ``query --json`` (``doc_id``,
    ``source``, ``uri``, ``path``, ``page_start``, ``page_end``, ``heading_path``, ``kind``,
    ``chunk_index``, ``score``, ``search_score``, ``page_repeat``). The server takes ``k``,
    ``mode``, ``doc_ids``, one ``sources`` entry, ``tenant``, ``distinct_pages``, ``glossary``
    (the finance glossary or None), ``route_titles`` and ``profile``; any other option set raises
    :class:`~folioflow.ocr.errors.ConfigurationError` naming it, and a server error raises
    :class:`~folioflow.ocr.errors.ServerError` with the server's reason. :meth:`connect` picks
    the server or the store by the documented rule (docs/python.md).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any = None
    embedder: Any = None
    api_url: str | None = None
    api_key: SecretStr | None = None
    sparse: Any = None
    k: int = Field(default=4, ge=1)
    mode: Literal["dense", "sparse", "hybrid"] = "hybrid"
    mmr: bool = False
    mmr_diversity: float = 0.3
    fetch_k: int | None = None
    score_threshold: float | None = None
    distinct_pages: bool = True
    page_decay: float = PAGE_DECAY
    route_titles: bool = True
    glossary: Any = FINANCE
    demote_roles: bool = False
    heading_weight: float = 0.0
    #: With ``demote_roles``: the party block first for a question that asks for it (module docstring).
    lead_roles: bool = True
    #: With ``demote_roles``: general provisions (counterparts, entire agreement, notices, ...) after
    #: the substantive clauses unless their title matches the question (clause_ranking).
    demote_boilerplate: bool = True
    #: With ``demote_roles``: the search inside routed documents leaves out the words naming them.
    unnamed_inside: bool = True
    #: Weight of the ranking inside the routed documents in its fusion with the unrestricted one.
    route_weight: float = 1.0
    #: Weight of the sparse (BM25) ranking in the hybrid fusion of a question the glossary expanded
    #: (the dense ranking weighs 1; a question it leaves as asked is fused with weights 1 and 1).
    glossary_sparse_weight: float = 1.0
    #: How hybrid search fuses the dense and the sparse ranking: ``rrf`` (Reciprocal Rank Fusion, by
    #: rank) or ``convex`` (a weighted sum of each search's scores divided by its best score, the
    #: dense one weighted :data:`CONVEX_DENSE_WEIGHT`; by how far ahead a chunk is, not only its place).
    fusion: Literal["rrf", "convex"] = "rrf"
    #: Weight, in hybrid fusion, of a third search: the question's dense vector against each chunk's
    #: best sentence (the store's sentence vectors, :class:`~folioflow.indexing.indexer.Indexer`
    #: ``sentence_vectors``; chunks without them are not in it). 0: off, and off in a collection
    #: without sentence vectors.
    sentence_weight: float = 0.0
    #: With ``demote_roles``: weight of the ranking of the candidates that hold a calendar date, fused
    #: in for a question that asks for a date, such as when a contract was made or signed
    #: (clause_ranking ``asks_date``; 0: off); its party block leads then only when it holds a date.
    date_weight: float = 0.0
    #: A query adapter (:mod:`folioflow.indexing.query_adapter`: a bundled name such as ``legal`` or
    #: an ``.npz`` path) applied to the question's dense vector in every dense search (module
    #: docstring), when it was learned for the embedder's model; ``None``: the vector as embedded.
    query_adapter: str | None = None
    #: Terms of the query adapter's learned expansion added to the question's BM25 query
    #: (:meth:`~folioflow.indexing.query_adapter.QueryAdapter.expand`, read from the question's
    #: vector as embedded); 0, an adapter without an expansion, or ``mode="sparse"``: none.
    expansion_terms: int = 0
    profile: str = "auto"
    doc_ids: list[str] | None = None
    sources: list[str] | None = None
    tenant: str | None = None
    kinds: list[str] | None = None
    page_from: int | None = None
    page_to: int | None = None
    _routers: dict = PrivateAttr(default_factory=dict)
    _client: Any = PrivateAttr(default=None)

    @classmethod
    def connect(cls, data_dir: str | Path = ".folioflow", collection: str = "folioflow", *,
                api_url: str | None = None, api_key: str | None = None, qdrant_url: str | None = None,
                **options: Any) -> FolioRetriever:
        """A retriever over the collection ``collection`` of ``data_dir`` (or of the Qdrant server
        ``qdrant_url``), through an API server when there is one. The rule: ``api_url`` (else
        ``$FOLIOFLOW_API_URL``) when given; else, for an embedded store, the server that
        ``folioflow api`` announced in ``data_dir`` for ``collection`` while it runs
        (``<data_dir>/api.json``); else the store is opened here (and held: embedded stores admit
        one process) with the collection's embedding model loaded. ``api_key`` defaults to
        ``$FOLIOFLOW_API_KEY``; ``options``: the retriever's fields (``k``, ``mode``, filters).
        Raises :class:`~folioflow.ocr.errors.StoreLockedError` at once, naming the holding process,
        when the embedded store is held by another process and no server is announced;
        :class:`~folioflow.ocr.errors.CollectionNotFoundError` when there is no such collection."""
        from folioflow.indexing.remote import resolve_server

        url = resolve_server(api_url or os.environ.get("FOLIOFLOW_API_URL"), data_dir, collection, qdrant_url)
        if url:
            key = api_key or os.environ.get("FOLIOFLOW_API_KEY")
            return cls(api_url=url, api_key=SecretStr(key) if key else None, **options)
        from folioflow.indexing.embedder import Embedder
        from folioflow.indexing.store import StoreSettings, open_store

        store = open_store(StoreSettings(data_dir=Path(data_dir), url=qdrant_url, collection=collection))
        try:
            info = store.require_collection()
            embedder = Embedder(model=info.get("model")).warm_up() if options.get("mode") != "sparse" else None
            return cls(store=store, embedder=embedder, **options)
        except BaseException:
            store.close()
            raise

    def model_post_init(self, context: Any, /) -> None:
        """Refuse a store without the collection (a wrong data dir, a typo in the collection name):
        raises :class:`~folioflow.ocr.errors.CollectionNotFoundError` naming where it looked, instead of
        answering every question with nothing. Through a server (``api_url``) nothing is checked
        here; ``store`` is required otherwise (:class:`~folioflow.ocr.errors.ConfigurationError`)."""
        if self.api_url:
            return
        if self.store is None:
            raise ConfigurationError("FolioRetriever needs a store (and an embedder), or the api_url of a folioflow "
                                     "API server")
        self.store.require_collection()

    def _encoder(self) -> BM25Encoder:
        if self.sparse is None:
            info = self.store.require_collection()
            self.sparse = BM25Encoder.from_config(info["sparse"]) if info.get("sparse") else BM25Encoder()
        return self.sparse

    def _expansion(self, adapter: Any, top: int) -> Callable[[Any], tuple[list[int], list[float]]] | None:
        """The adapter's learned term expansion (``top`` terms) as a function of the question's
        dense vector, or None: no adapter, no expansion in it, ``top`` < 1, or a BM25 encoder of
        another language than its terms'."""
        if adapter is None or adapter.expansion is None or top < 1:
            return None
        if getattr(self._encoder(), "language", None) != adapter.sparse_language:
            return None
        return lambda vector: adapter.expand(vector, top)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        opts = {key: kwargs.get(key, getattr(self, key)) for key in _SEARCH_KEYS + _FILTER_KEYS}
        unknown = set(kwargs) - set(opts)
        if unknown:
            raise TypeError(f"unknown retriever options: {sorted(unknown)}")
        check_query_text(query)
        if isinstance(opts["k"], bool) or not isinstance(opts["k"], int) or opts["k"] < 1:
            raise QueryError(f"k must be a whole number of results, at least 1, not {opts['k']!r}")
        if self.api_url:
            return self._remote(query, opts, set(kwargs) | self.model_fields_set)
        if self.store.tenancy and not opts["tenant"]:
            raise TenancyError("tenancy is on: the retriever needs the caller's tenant")
        profile = self.resolve_profile(opts["tenant"], opts["sources"], opts["profile"])
        for key, value in profile_options(profile).items():
            if key not in kwargs and key not in self.model_fields_set:
                opts[key] = value
        k, base = opts["k"], STABLE_K.get(profile)
        if base is None or opts["mmr"] or opts["fetch_k"] is not None or k == base:
            return self._rank(query, opts)[0]
        # a smaller k cuts the ranking of k=base; a larger one extends it (module docstring: stable prefixes)
        first, settled = self._rank(query, {**opts, "k": base})
        if k < base:
            return first[:k]
        return _extend(first[:settled], self._rank(query, opts)[0], k, bool(opts["distinct_pages"]))

    def _rank(self, query: str, opts: dict[str, Any]) -> tuple[list[Document], int]:
        """The ranking of :meth:`_get_relevant_documents` for the resolved options ``opts`` (the
        profile's applied), computed for ``opts["k"]`` results, and how many of its first results
        stand whatever ``k`` is: those before the first role chunk put after the clauses (a deeper
        ranking finds more clauses to put before it) or page filled up again (more pages)."""
        glossary = opts.get("glossary", self.glossary)
        mode = opts["mode"]
        wants_dense = mode in ("dense", "hybrid") or opts["mmr"]
        own = None  # the question's own vector: the glossary matches its entries by meaning with it
        demote = bool(opts["demote_roles"]) and not opts["mmr"]
        wanted = wanted_roles(query) if demote else frozenset()
        reading = query  # the wording the role and date rules read (clause_ranking)
        semantic = bool(glossary is not None and glossary.semantic and self.embedder is not None)
        model = str(getattr(self.embedder, "model_name", ""))
        if semantic and demote and not wanted and glossary is not None and not glossary.matches(query):
            # worded unlike every rule ("When does this deal kick in?"), a question is read as the canonical
            # wording of the example questions closest to it in meaning when they share one, else asks for
            # the roles that all their canonical wordings ask for (the party block, for an agreement's
            # date of signing and its effective date alike)
            own = self._embed_query(query)
            near = glossary.near_examples(own, self.embedder.encode, model)
            canonical = {example.canonical for example in near}
            if len(canonical) == 1:
                reading = near[0].canonical
                wanted = wanted_roles(reading)
            elif canonical:
                wanted = frozenset.intersection(*(wanted_roles(c) for c in canonical))
        # a question that asks for a contract's parties, date or signatures has its own rules (clause_ranking):
        # matched by meaning, "What is the date of this contract?" drew the term clause's drafting words
        if reading != query and glossary is not None:  # searched with the canonical wording's expansions (what
            # expand would find again through the same near examples)
            searched = "\n".join([query, *glossary.matches(reading)])
        elif semantic and glossary is not None and not wanted:
            own = self._embed_query(query) if own is None else own
            searched = glossary.expand(query, own, self.embedder.encode, model)
        else:
            searched = glossary.expand(query) if glossary is not None else query
        if not wants_dense:
            dense = None
        else:
            dense = own if own is not None and searched == query else self._embed_query(searched)
        adapter = load_adapter(opts["query_adapter"], model) if dense is not None else None
        expand = self._expansion(adapter, int(opts["expansion_terms"] or 0)) if mode == "hybrid" else None
        sparse = self._encoder().encode_query(searched) if mode in ("sparse", "hybrid") else None
        if expand is not None and dense is not None and sparse is not None:  # the clause's drafting words
            sparse = _with_terms(sparse, *expand(dense))
        if adapter is not None and dense is not None:  # toward the clauses of the question's kind (query_adapter)
            dense = adapter.apply(dense)
        flt = SearchFilter(**{key: opts[key] for key in _FILTER_KEYS})
        k = opts["k"]
        distinct = bool(opts["distinct_pages"])
        aggregate = bool(distinct and mode == "hybrid" and not opts["mmr"] and opts["page_decay"])
        depth = k * DISTINCT_PAGES_FETCH if distinct else k
        if aggregate:
            depth = max(depth, PAGE_CANDIDATES)
        heading_weight = float(opts["heading_weight"] or 0.0) if not opts["mmr"] else 0.0
        fetch_k = max(opts["fetch_k"] or 0, depth)
        if demote or heading_weight:  # re-rank more of the same fusion (each search still fetches fetch_k)
            depth = max(depth, RERANK_CANDIDATES)
        search = dict(mode=mode, depth=depth, fetch_k=fetch_k, threshold=opts["score_threshold"],
                      mmr_diversity=opts["mmr_diversity"] if opts["mmr"] else None,
                      sparse_weight=float(opts["glossary_sparse_weight"]) if searched != query else 1.0,
                      fusion=opts["fusion"], sentence_weight=float(opts["sentence_weight"] or 0.0))
        ranked, unanimous = self._search(dense, sparse, flt, **search)
        router = self._router(opts["tenant"], opts["sources"]) if opts["route_titles"] else None
        routed = router.route(query) if router is not None and not opts["doc_ids"] and not opts["mmr"] else None
        if routed:
            dense_in, sparse_in = dense, sparse
            if opts["demote_roles"] and opts["unnamed_inside"] and router is not None:
                # inside the named documents, the name would only favour the chunks that repeat it
                inner = router.without_names(searched, routed)
                if inner != searched:
                    dense_in = self._embed_query(inner) if dense is not None else None
                    sparse_in = self._encoder().encode_query(inner) if sparse is not None else None
                    if expand is not None and dense_in is not None and sparse_in is not None:
                        sparse_in = _with_terms(sparse_in, *expand(dense_in))
                    if adapter is not None and dense_in is not None:
                        dense_in = adapter.apply(dense_in)
            inside, agreed_inside = self._search(dense_in, sparse_in, replace(flt, doc_ids=routed), **search)
            # agreement inside the documents the question names comes first; agreement over the whole
            # store counts only for a chunk of those documents (another contract's "Governing Law"
            # clause, first in both searches, is no answer to "In the Loyaltypoint agreement: ...")
            if agreed_inside is None and unanimous is not None \
                    and (unanimous.payload.get("metadata") or {}).get("doc_id") not in routed:
                unanimous = None
            unanimous = agreed_inside or unanimous
            ranked = fuse_rankings([[hit for hit, _ in ranked], [hit for hit, _ in inside]],
                                   weights=(1.0, float(opts["route_weight"])))
        if heading_weight:  # when the question names documents, only their clauses gain
            ranked = _match_headings(ranked, query, heading_weight, self._encoder(), set(routed or ()))
        date_weight = float(opts["date_weight"] or 0.0) if demote else 0.0
        dated = date_weight > 0 and asks_date(reading)
        if dated:  # a date question's answer holds a date, a word the question does not share
            ranked = _fuse_bonus(ranked, date_ranking([hit for hit, _ in ranked]), date_weight)
        demoted: list[tuple[Any, float]] = []
        lead = effect_lead = None
        if demote:  # role chunks the question does not ask for go after every substantive chunk
            # the glossary's drafting words count as asked: "third party beneficiaries" for "Can anyone
            # other than the parties enforce this agreement?"
            boilerplate = (boilerplate_test(searched, lambda text: self._encoder().encode_query(text).indices)
                           if opts["demote_boilerplate"] else None)
            if boilerplate is not None and unanimous is not None:  # agreement of both searches outweighs a title
                boilerplate = _sparing(boilerplate, unanimous.id)
            ranked, demoted = split_roles(ranked, wanted, boilerplate, asked=searched, question=reading)
            if unanimous is not None and chunk_role(unanimous.payload) not in (None, *wanted):
                unanimous = None
            role = leading_role(wanted) if opts["lead_roles"] else None
            if role is not None:  # the party block a question asks for comes first (of the named documents)
                effect = date_weight > 0 and not dated and asks_effect(reading)
                found, _ = self._search(dense, sparse, replace(flt, doc_ids=routed or flt.doc_ids, roles=[role]),
                                        mode=mode, depth=LEAD_FETCH if dated or effect else 1, fetch_k=LEAD_FETCH,
                                        threshold=None, mmr_diversity=None)
                blocks = [hit for hit, _ in found]
                if dated:  # the block that holds a date (an exhibit's template, "made effective on [date]",
                    # can outrank the agreement's own), else one whose date is left blank ("this __ day of , 20")
                    blocks = date_ranking(blocks) or blank_dated(blocks)
                elif effect:  # one that dates itself or says it is effective without deferring to a
                    # definition further on ("as of the Effective Date (as defined below)")
                    blocks = effective_blocks(blocks)
                lead = (blocks or [None])[0]
                if effect:  # a clause that dates the start ("the Term will begin on February 1, 1998")
                    # says when it takes effect more exactly than the date of signing: it leads, the block second
                    effect_lead = (effect_clauses([hit for hit, _ in ranked[:EFFECT_CANDIDATES]]) or [None])[0]
        order = aggregate_pages(ranked, opts["page_decay"]) if aggregate else list(ranked)
        if unanimous is not None:
            order = _put_first(order, unanimous, distinct)
        if lead is not None:
            order = _lead_first(order, lead, distinct)
        if effect_lead is not None:
            order = _lead_first(order, effect_lead, distinct)
        if demoted:
            order = _after(order, aggregate_pages(demoted, opts["page_decay"]) if aggregate else demoted)
            ranked = _after(ranked, demoted)
        picked: list[tuple[Any, float, bool]] = []  # (hit, score, page_repeat)
        pages: set[tuple[str, int]] = set()
        for hit, score in order:
            if len(picked) == k:
                break
            if distinct:
                page = _page_key(hit.payload.get("metadata") or {})
                if page in pages:
                    continue
                pages.add(page)
            picked.append((hit, score, False))
        if distinct and len(picked) < k:  # fewer distinct pages than k: fill up with their other chunks
            taken = {hit.id for hit, _, _ in picked}
            floor = picked[-1][1] if picked else float("inf")
            for hit, score in ranked:
                if len(picked) == k:
                    break
                if hit.id not in taken:
                    floor = min(floor, score)
                    picked.append((hit, floor, True))
        docs: list[Document] = []
        for hit, score, repeat in picked:
            meta = hit_metadata(hit.payload, score)
            meta["search_score"] = float(hit.score)
            meta["page_repeat"] = repeat
            if opts["tenant"] and meta.get("tenant") != opts["tenant"]:  # defence in depth; Qdrant filtered already
                raise TenancyError(f"store returned a chunk of another tenant for tenant {opts['tenant']!r}")
            meta["id"] = hit.id
            docs.append(Document(page_content=hit.payload.get("page_content", ""), metadata=meta, id=hit.id))
        put_after = {hit.id for hit, _ in demoted}
        settled = next((i for i, (hit, _, repeat) in enumerate(picked) if repeat or hit.id in put_after), len(picked))
        return docs, settled

    def _remote(self, query: str, opts: dict[str, Any], given: set[str]) -> list[Document]:
        """Search through the API server (``POST /v1/query``); ``given``: the options the caller
        set (the others are the server's profile defaults)."""
        from folioflow.indexing.remote import ApiClient

        refused = [key for key, default in (("mmr", False), ("fetch_k", None), ("score_threshold", None),
                                            ("kinds", None), ("page_from", None), ("page_to", None))
                   if opts[key] != default]
        refused += [key for key in ("page_decay", "sparse", "route_weight", "glossary_sparse_weight", "fusion",
                                    "sentence_weight", "query_adapter", "expansion_terms")
                    if key in given]
        if opts["sources"] and len(opts["sources"]) > 1:
            refused.append("sources (more than one)")
        glossary = None
        if "glossary" in given:  # the server knows the built-in glossaries by name
            named = {id(FINANCE): "finance", id(LEGAL): "legal"}
            if self.glossary is not None and id(self.glossary) not in named:
                refused.append("glossary (other than the built-in finance and legal glossaries)")
            glossary = named.get(id(self.glossary), "none")
        if refused:
            raise ConfigurationError(f"not available through the folioflow API at {self.api_url}: "
                                     f"{', '.join(refused)}; open the store in this process instead")
        body = {"text": query, "k": opts["k"], "mode": opts["mode"], "doc": opts["doc_ids"],
                "source": opts["sources"][0] if opts["sources"] else None, "tenant": opts["tenant"],
                "distinct_pages": opts["distinct_pages"] if "distinct_pages" in given else None,
                "glossary": glossary, "route_titles": opts["route_titles"], "profile": opts["profile"]}
        if self._client is None:
            key = self.api_key.get_secret_value() if self.api_key else os.environ.get("FOLIOFLOW_API_KEY")
            self._client = ApiClient(str(self.api_url), key)
        docs = []
        for hit in self._client.query(body):
            meta = {key: value for key, value in hit.items() if key != "text"}
            docs.append(Document(page_content=hit["text"], metadata=meta))
        return docs

    def _embed_query(self, text: str) -> Any:
        """The query's dense vector: the embedder's ``encode_query`` (one text, fp32, the same in
        every process) when it has one, else ``encode([text])[0]``."""
        encode_query = getattr(self.embedder, "encode_query", None)
        return encode_query(text) if callable(encode_query) else self.embedder.encode([text])[0]

    def _search(self, dense: Any, sparse: Any, flt: SearchFilter, *, mode: str, depth: int, fetch_k: int,
                threshold: float | None, mmr_diversity: float | None,
                sparse_weight: float = 1.0, fusion: str = "rrf",
                sentence_weight: float = 0.0) -> tuple[list[tuple[Any, float]], Any]:
        """``([(hit, score)] best first, the hit ranked first by both dense and sparse search or
        None)``. Hybrid without MMR runs the dense and the sparse search (``fetch_k`` each) and
        fuses them here, so that ties are broken the same way in every process (by score, then point
        id): ``fusion="rrf"`` by Reciprocal Rank Fusion, :data:`RRF_K`, the sparse ranking weighted
        ``sparse_weight`` (the dense one 1); ``"convex"`` by
        :func:`~folioflow.indexing.routing.fuse_scores`, the dense ranking weighted
        :data:`CONVEX_DENSE_WEIGHT` and the sparse one ``sparse_weight``, scaled by
        ``1 / (RRF_K + 1)`` so that a score is on the scale of the rank-fusion bonuses added after
        it; its candidates are each search's top ``fetch_k``, scored with every search's scores down
        to :data:`CONVEX_SCORE_DEPTH`. With ``sentence_weight`` and a store that has sentence vectors,
        a third ranking, the dense query against each chunk's best sentence (as deep as the other
        two), is fused with that weight.
        A chunk ranked first by both the dense and the sparse search is first either way.
        ``threshold`` then applies to the fused score. MMR and single-mode searches are Qdrant's,
        ties ordered by point id."""
        if mode != "hybrid" or mmr_diversity is not None:
            hits = self.store.search(dense, sparse, mode=mode, k=depth, filter=flt, score_threshold=threshold,
                                     mmr_diversity=mmr_diversity, fetch_k=fetch_k)
            if mmr_diversity is None:
                hits = _stable(hits)
            return [(hit, hit.score) for hit in hits], None
        # convex fusion reads each search's scores deeper than its candidates (CONVEX_SCORE_DEPTH)
        deep = max(fetch_k, CONVEX_SCORE_DEPTH) if fusion == "convex" else fetch_k
        by_dense = _stable(self.store.search(dense, None, mode="dense", k=deep, filter=flt))
        by_sparse = _stable(self.store.search(None, sparse, mode="sparse", k=deep, filter=flt))
        rankings, weights = [by_dense, by_sparse], [CONVEX_DENSE_WEIGHT if fusion == "convex" else 1.0, sparse_weight]
        if sentence_weight > 0:  # empty in a collection without sentence vectors (ChunkStore.search)
            rankings.append(_stable(self.store.search(dense, None, mode="sentences", k=deep, filter=flt)))
            weights.append(sentence_weight)
        if fusion == "convex":
            candidates = {hit.id for ranking in rankings for hit in ranking[:fetch_k]}
            fused = [(hit, score) for hit, score in fuse_scores(rankings, weights=weights, scale=1.0 / (RRF_K + 1))
                     if hit.id in candidates][:depth]
        else:
            fused = fuse_rankings(rankings, k=RRF_K, weights=weights)[:depth]
        scored = [(replace(hit, score=score), score) for hit, score in fused
                  if threshold is None or score >= threshold]
        agreed = by_dense[0].id if by_dense and by_sparse and by_dense[0].id == by_sparse[0].id else None
        both = next((hit for hit, _ in scored if hit.id == agreed), None)
        return scored, both

    def resolve_profile(self, tenant: str | None = None, sources: list[str] | None = None,
                        profile: str | None = None) -> str:
        """The profile in force (:mod:`folioflow.indexing.profiles`): ``profile`` (default: this
        retriever's) unless it is ``auto``, else the one inferred from the documents this caller may
        see (their titles, or what their text read as at ingest where a title names no kind:
        :func:`~folioflow.indexing.profiles.collection_profile`, on the title router's registry
        view). Raises ``ValueError`` for an unknown name."""
        name = profile or self.profile
        if name != "auto":
            profile_options(name)  # ValueError for an unknown name
            return name
        return self._router(tenant, sources).profile

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
            # the converted documents ingest writes beside an embedded store (<data_dir>/documents): the
            # tickers of documents indexed before ingest recorded them
            data_dir = getattr(getattr(self.store, "settings", None), "data_dir", None)
            documents = Path(data_dir) / "documents" if data_dir else None
            documents = documents if documents is not None and documents.is_dir() else None
            router = TitleRouter.from_records(records, documents_dir=documents)
            router.profile = collection_profile(records, documents)
            built = (time.monotonic(), router)
            self._routers[key] = built
        return built[1]


def _match_headings(ranked: list[tuple[Any, float]], query: str, weight: float, encoder: BM25Encoder,
                    routed: set[str]) -> list[tuple[Any, float]]:
    """``ranked`` re-scored by a weighted Reciprocal Rank Fusion with the clause-title ranking of
    :func:`~folioflow.indexing.clause_ranking.heading_ranking`: each chunk's score plus
    ``weight / (RRF_K + its rank there)`` (nothing when its heading path matches no question
    term); best first, ties in the given order. ``routed``: doc ids title routing chose (empty:
    none); when given, only their chunks take part."""
    hits = [hit for hit, _ in ranked
            if not routed or (hit.payload.get("metadata") or {}).get("doc_id") in routed]
    return _fuse_bonus(ranked, heading_ranking(hits, query, lambda text: encoder.encode_query(text).indices), weight)


def _with_terms(sparse: SparseVec, terms: list[int], weights: list[float]) -> SparseVec:
    """``sparse`` (a BM25 query: weight 1 per term) with ``weights`` added to ``terms`` (new
    terms appended in the given order; a term the query already has gets the sum)."""
    if not terms:
        return sparse
    values = dict(zip(sparse.indices, sparse.values, strict=True))
    for term, weight in zip(terms, weights, strict=True):
        values[term] = values.get(term, 0.0) + weight
    return SparseVec(list(values), list(values.values()))


def _fuse_bonus(ranked: list[tuple[Any, float]], favoured: list[Any], weight: float) -> list[tuple[Any, float]]:
    """``ranked`` re-scored by a weighted Reciprocal Rank Fusion with ``favoured`` (some of its hits,
    best first): each favoured hit's score plus ``weight / (RRF_K + its rank there)``; best first,
    ties in the given order."""
    if not favoured:
        return ranked
    bonus = {hit.id: weight / (RRF_K + rank) for rank, hit in enumerate(favoured, start=1)}
    rescored = [(replace(hit, score=score + bonus.get(hit.id, 0.0)), score + bonus.get(hit.id, 0.0))
                for hit, score in ranked]
    return sorted(rescored, key=lambda pair: -pair[1])


def _sparing(test: Any, kept: str) -> Any:
    """``test`` (hit -> bool) that is false for the hit with id ``kept``."""
    return lambda hit: hit.id != kept and test(hit)


def _after(first: list[tuple[Any, float]], then: list[tuple[Any, float]]) -> list[tuple[Any, float]]:
    """``first`` followed by ``then``, each of ``then``'s scores capped at the score before it, so
    scores never increase down the list."""
    out = list(first)
    floor = first[-1][1] if first else float("inf")
    for hit, score in then:
        floor = min(floor, score)
        out.append((hit, floor))
    return out


def _stable(hits: list[Any]) -> list[Any]:
    """Hits best first, equal scores ordered by point id (a store may return ties in any order)."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.id))


def _put_first(order: list[tuple[Any, float]], first: Any, distinct: bool) -> list[tuple[Any, float]]:
    """``order`` with the chunk ``first`` moved to the front, scored at least the former first
    entry's score; with ``distinct``, its page's entry moves and is represented by ``first``."""
    page = _page_key(first.payload.get("metadata") or {})
    pos = next((i for i, (hit, _) in enumerate(order) if hit.id == first.id), None)
    if pos is None and distinct:
        pos = next((i for i, (hit, _) in enumerate(order) if _page_key(hit.payload.get("metadata") or {}) == page), None)
    if pos is None:  # not among the candidates (a score threshold dropped it): nothing to move
        return order
    hit, score = order.pop(pos)
    top = order[0][1] if order else score
    return [(hit if hit.id == first.id else first, max(score, top)), *order]


def _lead_first(order: list[tuple[Any, float]], lead: Any, distinct: bool) -> list[tuple[Any, float]]:
    """``order`` with ``lead`` first (:func:`_put_first` when it, or with ``distinct`` its page, is
    among them; else put in front, scored as the former first entry)."""
    page = _page_key(lead.payload.get("metadata") or {})
    if any(hit.id == lead.id or (distinct and _page_key(hit.payload.get("metadata") or {}) == page)
           for hit, _ in order):
        return _put_first(order, lead, distinct)
    return [(lead, order[0][1] if order else float(lead.score)), *order]


def _extend(first: list[Document], deep: list[Document], k: int, distinct: bool) -> list[Document]:
    """``first`` (the results of the profile's :data:`STABLE_K` that stand whatever ``k`` is), then the
    documents of ``deep`` (the ranking computed for ``k``) that it does not hold, up to ``k`` in all; with ``distinct``, not a
    page ``first`` has already returned unless ``deep`` marks it ``page_repeat``. Each added
    document's ``score`` is at most the one before it, so scores never increase down the list."""
    out = list(first)
    taken = {doc.id for doc in first}
    pages = {_page_key(doc.metadata) for doc in first} if distinct else set()
    floor = first[-1].metadata.get("score", float("inf")) if first else float("inf")
    for doc in deep:
        if len(out) >= k:
            break
        if doc.id in taken or (distinct and not doc.metadata.get("page_repeat") and _page_key(doc.metadata) in pages):
            continue
        floor = min(floor, float(doc.metadata.get("score", floor)))
        doc.metadata["score"] = floor
        out.append(doc)
        taken.add(doc.id)
        pages.add(_page_key(doc.metadata))
    return out


def _page_key(meta: dict[str, Any]) -> tuple[str, int]:
    """The page a chunk is counted on: its document and first page."""
    return str(meta.get("doc_id")), int(meta.get("page_start") or 0)


def aggregate_pages(ranked: list[tuple[Any, float]], decay: float) -> list[tuple[Any, float]]:
    """One ``(best hit, page score)`` per page, best page first: ``ranked`` is ``(hit, score)``
    pairs of chunks, best first (payload ``metadata.doc_id`` and ``page_start`` name the page).

    ``page score = best + decay x min(rest, best)``: ``best`` is the page's first (best) chunk's
    score, ``rest`` the sum of its other chunks' scores. The other chunks together count at most
    as much as one more copy of the best chunk, so a page scores at most ``(1 + decay) x best``
    however many chunks it has: a page whose best chunk scores below ``a / (1 + decay)`` never
    outranks a page with a chunk scoring ``a``. Without the cap, enough weak chunks (each a
    partial match of common words) would outrank any single strong chunk. Ties keep the order of
    the pages' best chunks."""
    pages: dict[tuple[str, int], list] = {}
    for hit, score in ranked:
        entry = pages.setdefault(_page_key(hit.payload.get("metadata") or {}), [hit, score, 0.0])
        if entry[0] is not hit:
            entry[2] += score
    scored = [(hit, best + decay * min(rest, best)) for hit, best, rest in pages.values()]
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
        encode_query = getattr(self.embedder, "encode_query", None)
        return (encode_query(text) if callable(encode_query) else self.embedder.encode([text])[0]).tolist()


def format_docs(docs: list[Document]) -> str:
    """Chunks as a citation-friendly context block: ``[path p.N-M] text`` per chunk."""
    parts = []
    for d in docs:
        m = d.metadata
        pages = f"p.{m.get('page_start')}" + (f"-{m.get('page_end')}" if m.get("page_end") != m.get("page_start") else "")
        parts.append(f"[{m.get('path', m.get('doc_id'))} {pages}] {d.page_content}")
    return "\n\n".join(parts)
