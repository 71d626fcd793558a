"""Reading the index: search, status and document lookups shared by the CLI (``folioflow query``,
``status``, ``show``) and the HTTP API (:mod:`folioflow.flows.service`).

Everything here works on an open :class:`~folioflow.indexing.store.ChunkStore` (and an
:class:`~folioflow.indexing.embedder.Embedder` for dense and hybrid search) and raises
:class:`~folioflow.ocr.errors.FolioflowError` subclasses with a one-line reason; the CLI turns them
into ``error: ...`` and exit 1, the API into a 4xx answer. The pydantic models are the JSON
contract of both: :class:`QueryHit` is one object of ``query --json`` and of ``POST /v1/query``,
:class:`IndexStatus` / :class:`DocumentRow` are ``status --json`` (``--documents``) and
``GET /v1/documents``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, Field

from folioflow.flows.settings import Settings
from folioflow.indexing.registry import DocumentRecord
from folioflow.ocr.errors import AmbiguousDocumentError, DocumentLookupError, TenancyError

__all__ = [
    "API_FILTER_NAMES",
    "CLI_FILTER_NAMES",
    "QUERY_KEYS",
    "ChunkRow",
    "DocumentRow",
    "IndexStatus",
    "QueryHit",
    "SourceCounts",
    "check_filters",
    "collection_profile",
    "document_chunks",
    "document_row",
    "index_status",
    "match_documents",
    "resolve_document",
    "search_index",
    "recorded_partial_pages",
    "stored_partial_pages",
]

Mode = Literal["dense", "sparse", "hybrid"]


class QueryHit(BaseModel):
    """One search result (``query --json`` / ``POST /v1/query``). ``score`` ranks the hits (best
    first, never increasing); ``search_score`` is the mode's own score (cosine, BM25 or RRF),
    different from ``score`` when title routing or page scoring re-ranked the hits. ``source`` is
    the configured source the document came from (what ``--source`` filters on) and ``uri`` the
    document's URI: the names of the retriever's metadata and the registry (docs/retrieval.md).
    ``page_repeat``: a further chunk of a page already listed, filling up to ``k`` (distinct
    pages). Pages are 1-based and inclusive."""

    text: str = Field(description="The chunk's Markdown")
    score: float = Field(description="Ranking score (best first)")
    search_score: float = Field(description="The search mode's own score of the chunk")
    doc_id: str | None = None
    source: str | None = Field(default=None, description="The configured source it came from")
    uri: str | None = Field(default=None, description="The document's URI")
    page_start: int = Field(default=0, description="First page (1-based)")
    page_end: int = Field(default=0, description="Last page (1-based, inclusive)")
    heading_path: list[str] = Field(default_factory=list)
    kind: str | None = Field(default=None, description="Chunk kind: text, table, ...")
    page_repeat: bool = Field(default=False, description="A further chunk of a page already listed (fills up to k)")
    path: str | None = Field(default=None, description="The document's path as recorded at ingest")
    chunk_index: int | None = None


#: Keys of every object printed by ``folioflow query --json`` (the documented contract).
QUERY_KEYS = ("text", "score", "search_score", "doc_id", "source", "uri", "page_start", "page_end",
              "heading_path", "kind", "page_repeat")


class DocumentRow(BaseModel):
    """One document of ``status --documents --json`` and ``GET /v1/documents``: counts in the index,
    ``status`` (``indexed`` or ``failed``), the pages that failed and every recorded error, and the
    pages indexed ``partial`` (the fidelity check measured part of their content missing or
    implausible, :mod:`folioflow.ocr.fidelity`) with the reason recorded for each."""

    doc_id: str
    source: str
    path: str
    uri: str
    pages: int
    chunks: int
    status: str
    tenant: str | None = None
    indexed_at: str = Field(description="UTC time of the last write, ISO 8601")
    failed_pages: list[int] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    partial_pages: list[int] = Field(default_factory=list, description="Pages indexed with part of their content "
                                                                     "missing or implausible (fidelity check)")
    partial_notes: list[str] = Field(default_factory=list, description="Why, one per partial page in page order: "
                                                                     "'page N: fidelity: ...'")


class SourceCounts(BaseModel):
    """Documents, pages, chunks and failed documents of one source."""

    documents: int = 0
    pages: int = 0
    chunks: int = 0
    failed: int = 0


class IndexStatus(BaseModel):
    """``status --json``: the collection, where it lives, its documents and chunks, per source;
    ``document_list`` only when documents were asked for."""

    collection: str
    location: str
    documents: int
    chunks: int
    sources: dict[str, SourceCounts]
    profile: str = Field(description="The retrieval profile `query` uses by default, inferred from the documents' "
                                     "titles, or their text where a title names no kind "
                                     "(folioflow.indexing.profiles.collection_profile)")
    document_list: list[DocumentRow] | None = None


class ChunkRow(BaseModel):
    """One indexed chunk of a document, as ``show --chunks --format json`` and
    ``GET /v1/documents/{doc_id}/chunks`` list it: its position (``index``, 0-based, in reading
    order), ``kind`` (``text``, ``table``, ``formula``, ...), ``role`` (a contract's ``parties``,
    ``definitions`` or ``signature`` block, :mod:`folioflow.chunking.roles`; None for other text),
    ``heading_path`` (outermost heading first; empty when no heading is above it), pages (1-based,
    inclusive), ``token_count`` (the embedding model's tokens of what was embedded: the heading
    path and the text, special tokens included) and the chunk's Markdown."""

    index: int
    kind: str | None = None
    role: str | None = None
    heading_path: list[str] = Field(default_factory=list)
    page_start: int
    page_end: int
    token_count: int = 0
    text: str = Field(description="The chunk's Markdown")


def document_chunks(payloads: list[dict[str, Any]], page: int | None = None) -> list[ChunkRow]:
    """The :class:`ChunkRow` of each point payload (:mod:`folioflow.indexing.payload`; what
    :meth:`~folioflow.indexing.store.ChunkStore.payloads` returns), in chunk order; with ``page``
    (1-based), only the chunks whose page span holds it."""
    rows = []
    for payload in payloads:
        meta = payload.get("metadata") or {}
        start, end = int(meta.get("page_start") or 1), int(meta.get("page_end") or meta.get("page_start") or 1)
        if page is not None and not start <= page <= end:
            continue
        rows.append(ChunkRow(index=int(meta.get("chunk_index") or 0), kind=meta.get("kind"),
                             role=(meta.get("extra") or {}).get("role"),
                             heading_path=[str(h) for h in meta.get("heading_path") or []], page_start=start,
                             page_end=end, token_count=int(meta.get("token_count") or 0),
                             text=str(payload.get("page_content") or "")))
    return sorted(rows, key=lambda r: r.index)


def document_row(record: DocumentRecord, documents_dir: Path | None = None) -> DocumentRow:
    """The :class:`DocumentRow` of a registry record. Its partial pages are the record's
    (``metadata["partial_pages"]`` and ``["partial_notes"]``, written by ingest); for a record
    written before ingest recorded them (no such key), they are read from its converted document in
    ``documents_dir`` when given (:func:`stored_partial_pages`), else none are shown."""
    meta = record.metadata or {}
    partial, notes = recorded_partial_pages(meta, documents_dir, record.doc_id, record.content_hash)
    return DocumentRow(doc_id=record.doc_id, source=record.source, path=record.path, uri=record.uri,
                       pages=record.pages, chunks=record.chunks, status=record.status, tenant=record.tenant,
                       indexed_at=record.indexed_at.isoformat(),
                       failed_pages=list(meta.get("failed_pages") or []),
                       errors=list(record.errors), partial_pages=partial, partial_notes=notes)


def recorded_partial_pages(metadata: Mapping[str, Any], documents_dir: Path | None, doc_id: str,
                           content_hash: str) -> tuple[list[int], list[str]]:
    """A document's partial pages (1-based) and their ``page N: reason`` notes as its registry
    record's ``metadata`` holds them (``partial_pages``, ``partial_notes``: written by ingest). A
    record written before ingest recorded them (no ``partial_pages`` key) has them read from its
    converted document in ``documents_dir`` (:func:`stored_partial_pages`), or none when that is None.
    ``status --documents``, the API's documents and the run reports of skipped documents all read
    them here."""
    if "partial_pages" in metadata or documents_dir is None:
        return list(metadata.get("partial_pages") or []), list(metadata.get("partial_notes") or [])
    return stored_partial_pages(documents_dir, doc_id, content_hash)


def stored_partial_pages(documents_dir: Path, doc_id: str, content_hash: str) -> tuple[list[int], list[str]]:
    """The partial pages of the converted document ``<documents_dir>/<doc_id>.json`` and their
    ``page N: reason`` notes (as ingest records them, :func:`folioflow.flows.pipeline.page_partials`),
    for records written before ingest recorded them. Empty when the file is missing, unreadable, or
    holds other bytes' conversion than ``content_hash``. The last 4,096 answers are cached per
    ``(documents_dir, doc_id, content_hash)``."""
    pages, notes = _stored_partials(Path(documents_dir), doc_id, content_hash)
    return list(pages), list(notes)


@lru_cache(maxsize=4096)
def _stored_partials(documents_dir: Path, doc_id: str, content_hash: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    import json

    from folioflow.flows.pipeline import page_note
    from folioflow.ocr.export import partial_reason
    from folioflow.ocr.schema import Page, PageStatus, kept_document_path

    try:
        with open(kept_document_path(documents_dir, doc_id), encoding="utf-8") as fh:
            stored = json.load(fh)
        if not isinstance(stored, dict) or stored.get("content_hash") != content_hash:
            return (), ()
        partial = [Page.model_validate(p) for p in stored.get("pages") or []
                   if isinstance(p, dict) and p.get("status") == PageStatus.PARTIAL.value]
    except (OSError, ValueError):  # missing or unreadable (pydantic's ValidationError is a ValueError)
        return (), ()
    return tuple(p.number for p in partial), tuple(page_note(p.number, partial_reason(p)) for p in partial)


def index_status(settings: Settings, records: list[DocumentRecord], points: int, documents: bool = False) -> IndexStatus:
    """Counts per source of ``records`` (``points``: the collection's chunk count); with
    ``documents``, one :class:`DocumentRow` per record (:func:`document_row`, partial pages of
    records written before ingest recorded them read from ``settings.documents_dir``), sorted by
    source and path."""
    per_source: dict[str, SourceCounts] = defaultdict(SourceCounts)
    for record in records:
        row = per_source[record.source]
        row.documents += 1
        row.pages += record.pages
        row.chunks += record.chunks
        row.failed += record.status != "indexed"
    rows = ([document_row(r, settings.documents_dir) for r in sorted(records, key=lambda r: (r.source, r.path))]
            if documents else None)
    return IndexStatus(collection=settings.collection, location=settings.qdrant_url or str(settings.data_dir),
                       documents=len(records), chunks=points, sources=dict(per_source),
                       profile=collection_profile(records, settings.documents_dir), document_list=rows)


def collection_profile(records: list[DocumentRecord], documents_dir: Path | None = None) -> str:
    """The retrieval profile of a collection, inferred from its documents' titles and, for a title
    that names no kind, from what the document's text reads as
    (:func:`folioflow.indexing.profiles.collection_profile`; ``documents_dir``: the converted
    documents, read for records indexed before ingest recorded the reading)."""
    from folioflow.indexing.profiles import collection_profile as infer

    return infer(records, documents_dir)


def match_documents(records, key: str) -> list:
    """The registry records ``key`` names, the way ``query --doc`` and ``show`` read it: a full
    doc id, else a doc id prefix, else the path the document was ingested from (as given:
    relative to the working directory, absolute, or its URI), its recorded path or its bare file
    name. Several records back mean ``key`` is ambiguous; none, that nothing matches."""
    from folioflow.ocr.ids import canonical_uri

    try:  # a path as given (relative to the working directory, absolute, or a URI)
        uri = canonical_uri(key)
    except (OSError, ValueError, RuntimeError):  # RuntimeError: "~name" of no such user (Path.expanduser)
        uri = None
    return ([r for r in records if r.doc_id == key] or [r for r in records if r.doc_id.startswith(key)]
            or [r for r in records if key in (r.path, Path(r.path).name, r.uri) or r.uri == uri])


def resolve_document(records, key: str, option: str = "--doc", listing: str = "`folioflow status --documents`"):
    """The one record ``key`` names (see :func:`match_documents`). Raises
    :class:`DocumentLookupError` naming ``option`` when nothing matches (``listing``: where the
    documents are listed), or :class:`AmbiguousDocumentError` listing the candidates (id and where
    each came from) when several do."""
    found = {r.doc_id: r for r in match_documents(records, key)} if key else {}
    if not found:
        raise DocumentLookupError(f"{option} {key!r}: no such document in the index (see {listing})")
    if len(found) > 1:
        shown = sorted(found.values(), key=lambda r: (r.source, r.uri))
        listed = "; ".join(f"{r.doc_id} ({r.source}: {r.uri})" for r in shown[:10])
        more = f"; and {len(shown) - 10} more" if len(shown) > 10 else ""
        raise AmbiguousDocumentError(f"{option} {key!r} matches {len(found)} documents: {listed}{more}; give the doc "
                                     "id (or a unique prefix of it) or the full path")
    return next(iter(found.values()))


def _searchable(record) -> bool:
    """Whether ``record``'s document has points to search: indexed, or failed on its last run
    while an earlier version's points stay in the index."""
    return record.status == "indexed" or record.chunks > 0


#: How the CLI names the filters and where it lists documents (:func:`check_filters`); the API
#: passes its own (:data:`API_FILTER_NAMES`).
CLI_FILTER_NAMES = {"doc": "--doc", "source": "--source", "tenant": "--tenant",
                    "documents": "`folioflow status --documents`", "sources": "`folioflow status`"}
#: The same for ``POST /v1/query``: its body's fields ``doc``, ``source`` and ``tenant``.
API_FILTER_NAMES = {"doc": "doc", "source": "source", "tenant": "tenant", "documents": "GET /v1/documents",
                    "sources": "GET /v1/documents"}


def check_filters(records, keys: list[str] | None, source: str | None,
                  names: dict[str, str] | None = None, tenant: str | None = None) -> list[str] | None:
    """Document ids for the ``--doc`` values (:func:`resolve_document`). Raises
    :class:`DocumentLookupError` with the specific reason when the ``--tenant`` / ``--doc`` /
    ``--source`` filters leave no indexed document to search: a ``tenant`` that no indexed
    document of ``records`` carries (given only to be checked so: pass the records already
    narrowed to it, or all of them), a named document that was never indexed (its last run
    failed), a source no indexed document has, or named documents that are not from that source.
    ``names``: how the reasons name the filters (:data:`CLI_FILTER_NAMES`, the default, or
    :data:`API_FILTER_NAMES`)."""
    names = names or CLI_FILTER_NAMES
    doc, by_source = names["doc"], names["source"]
    if tenant is not None and not any(r.tenant == tenant for r in records if _searchable(r)):
        raise DocumentLookupError(f"{names.get('tenant', '--tenant')} {tenant!r}: no indexed document has this tenant "
                                  f"(see {names['documents']})")
    chosen = [resolve_document(records, key, option=doc, listing=names["documents"]) for key in keys] if keys else None
    for record in chosen or ():
        if not _searchable(record):
            reason = "; ".join(record.errors[:3]) or "no reason recorded"
            raise DocumentLookupError(f"{doc} {record.path!r}: document {record.doc_id} is not indexed (its last run "
                                      f"failed: {reason})")
    if source is not None:
        if not any(r.source == source for r in records if _searchable(r)):
            raise DocumentLookupError(f"{by_source} {source!r}: no indexed document has source {source!r} (see "
                                      f"{names['sources']} for the sources in the index)")
        if chosen is not None and not any(r.source == source for r in chosen):
            raise DocumentLookupError(f"{by_source} {source!r} with {doc}: none of the documents given has source "
                                      f"{source!r} (theirs: {', '.join(sorted({r.source for r in chosen}))})")
    return [r.doc_id for r in chosen] if chosen is not None else None


def search_index(store, embedder, text: str, k: int = 5, mode: str = "hybrid", doc_ids: list[str] | None = None,
                 source: str | None = None, tenant: str | None = None, distinct_pages: bool | None = None,
                 glossary: Any = None, route_titles: bool = True, profile: str = "auto",
                 filter_names: dict[str, str] | None = None, known_tenant: bool = False) -> list[QueryHit]:
    """Search ``store`` with :class:`folioflow.indexing.retriever.FolioRetriever`; ``embedder``: the
    collection's :class:`~folioflow.indexing.embedder.Embedder` (``None`` allowed for ``sparse``);
    ``doc_ids``: ``--doc`` keys (see :func:`resolve_document`); ``profile``: ``auto`` (the
    collection's, inferred from its documents' titles, or their text where a title names no kind), ``finance``, ``legal`` or ``general`` (see
    :mod:`folioflow.indexing.profiles`); ``distinct_pages`` and ``glossary`` override the profile's
    when not ``None`` (``glossary``: ``finance``, ``none`` (no expansion), a glossary file for
    :func:`~folioflow.indexing.glossary.load_glossary`, or a loaded
    :class:`~folioflow.indexing.glossary.Glossary`; a bad file raises its ``FolioflowError``).
    Returns the hits in rank order. Raises :class:`~folioflow.ocr.errors.CollectionNotFoundError`
    (no collection), :class:`TenancyError` (tenancy on, no tenant), :class:`DocumentLookupError`
    (filters that match no indexed document of ``tenant``; ``filter_names``: how its reason names
    the filters, :func:`check_filters`), ``ValueError`` for an unknown ``mode`` or ``profile``.

    ``known_tenant``: a ``tenant`` that no indexed document carries is an error too
    (:class:`DocumentLookupError`, "no indexed document has this tenant"), as an unknown source
    is, rather than no hits. The CLI sets it (``folioflow query --tenant``: a tenant the user
    typed, an unknown one most likely mistyped). The API leaves it off (``POST /v1/query``): there
    the tenant is mostly the one a tenant-bound API key carries, and a tenant with no documents
    yet searches an empty index, answered ``[]``; this function cannot tell that tenant from one
    an operator key named in the body, so the API answers ``[]`` for both. Tenancy rules come
    first: with tenancy on, no tenant is a :class:`TenancyError` whatever ``known_tenant`` says."""
    from folioflow.indexing.glossary import load_glossary
    from folioflow.indexing.profiles import PROFILE_NAMES
    from folioflow.indexing.retriever import FolioRetriever

    if mode not in ("dense", "sparse", "hybrid"):
        raise ValueError(f"mode must be dense, sparse or hybrid, not {mode!r}")
    if profile not in PROFILE_NAMES:
        raise ValueError(f"profile must be one of {', '.join(PROFILE_NAMES)}, not {profile!r}")
    store.require_collection()  # CollectionNotFoundError: where it looked, what is there
    if store.tenancy and not tenant:
        raise TenancyError("tenancy is on: the query needs the caller's tenant (--tenant)")
    records = store.list_documents()
    if tenant is not None:  # another tenant's documents are not there for this caller
        records = [r for r in records if r.tenant == tenant]
    ids = check_filters(records, doc_ids, source, filter_names, tenant=tenant if known_tenant else None)
    chosen: dict[str, Any] = {}
    if distinct_pages is not None:
        chosen["distinct_pages"] = distinct_pages
    if glossary is not None:  # a spec ("none" turns expansion off) or a loaded Glossary
        chosen["glossary"] = load_glossary(glossary) if isinstance(glossary, str | Path) else glossary
    retriever = FolioRetriever(store=store, embedder=embedder if mode != "sparse" else None, k=k,
                               mode=cast("Mode", mode), doc_ids=ids, sources=[source] if source else None,
                               tenant=tenant, route_titles=route_titles, profile=profile, **chosen)
    hits = []
    for doc in retriever.invoke(text):
        meta = doc.metadata
        hits.append(QueryHit(
            text=doc.page_content,
            score=float(meta.get("score", 0.0)),
            search_score=float(meta.get("search_score", meta.get("score", 0.0))),
            doc_id=meta.get("doc_id"),
            source=meta.get("source"),
            uri=meta.get("uri"),
            page_start=int(meta.get("page_start", 0)),
            page_end=int(meta.get("page_end", 0)),
            heading_path=list(meta.get("heading_path") or []),
            kind=meta.get("kind"),
            page_repeat=bool(meta.get("page_repeat")),
            path=meta.get("path"),
            chunk_index=meta.get("chunk_index"),
        ))
    return hits
