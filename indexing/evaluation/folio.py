"""Searchers over a folioflow collection (:class:`~folioflow.indexing.retriever.FolioRetriever`, one per mode)."""

from __future__ import annotations

from collections.abc import Sequence

from folioflow.indexing.evaluation.metrics import RankedHit
from folioflow.indexing.evaluation.questions import doc_key
from folioflow.indexing.evaluation.runner import Searcher
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import Mode

__all__ = ["collection_docs", "folio_searchers"]


def collection_docs(store) -> dict[str, list[str]]:
    """``{doc key: [doc ids]}`` of the indexed documents (key: file stem, see
    :func:`~folioflow.indexing.evaluation.questions.doc_key`; the doc id itself is a key too)."""
    out: dict[str, list[str]] = {}
    for record in store.list_documents():
        if record.status != "indexed":
            continue
        out.setdefault(doc_key(record.path or record.uri), []).append(record.doc_id)
        out.setdefault(record.doc_id.lower(), []).append(record.doc_id)
    return out


def folio_searchers(store, embedder, modes: Sequence[Mode], tenant: str | None = None) -> dict[str, Searcher]:
    """One searcher per mode (``dense``, ``sparse``, ``hybrid``) over ``store``; the ``docs``
    restriction becomes a doc-id filter inside Qdrant."""
    docs = collection_docs(store)
    by_id = {doc_id: key for key, ids in docs.items() for doc_id in ids if key != doc_id.lower()}
    searchers: dict[str, Searcher] = {}
    for mode in modes:
        retriever = FolioRetriever(store=store, embedder=embedder if mode != "sparse" else None, mode=mode,
                                   tenant=tenant)

        def search(query: str, k: int, restrict: Sequence[str] | None, _r=retriever) -> list[RankedHit]:
            ids = None
            if restrict is not None:
                ids = sorted({i for key in restrict for i in docs.get(key, [])})
            found = _r.invoke(query, k=k, doc_ids=ids)
            return [RankedHit(doc=by_id.get(d.metadata.get("doc_id"), doc_key(d.metadata.get("path") or "")),
                              page_start=int(d.metadata.get("page_start", 0)),
                              page_end=int(d.metadata.get("page_end", 0)),
                              text=d.page_content, score=float(d.metadata.get("score", 0.0))) for d in found]

        searchers[mode] = search
    return searchers
