"""``folioflow eval chunks``: the chunk invariants over an ingested collection.

Chunks are rebuilt from the points' payloads (:mod:`folioflow.indexing.payload`): the embedded text is
``contextualize(rendered heading path, compact_tables(text))`` as the chunker builds it (for a
chunk flagged ``embed_truncated``, the longest prefix that fits, found the same way), and checked
against the stored ``content_hash`` (sha256 of the embedded text), so the recount of tokens is of
the text that was really embedded. A chunk of a collection chunked with
``table_embed="markdown"`` matches with its tables as written. The converted documents come from ``<data_dir>/documents/<doc_id>.json``
(written by ingest unless ``keep_documents`` is off).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from folioflow.chunking.evaluation import CATEGORIES, DocumentChunkReport, evaluate_document_chunks
from folioflow.chunking.schema import Chunk, ChunkKind, PageBBox
from folioflow.chunking.sections import contextualize
from folioflow.chunking.tables import compact_tables
from folioflow.ocr.ids import sha256_text
from folioflow.ocr.schema import BBox, Document, kept_document_path

__all__ = ["chunk_from_payload", "evaluate_collection_chunks", "summarize_chunks"]


def _embedded(text: str, rendered: list[str], truncated: bool, counter, limit: int) -> str:
    full = contextualize(rendered, text)
    if not truncated or counter.count(full) <= limit:
        return full
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if counter.count(contextualize(rendered, text[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return contextualize(rendered, text[:lo])


def chunk_from_payload(payload: dict[str, Any], counter, limit: int) -> tuple[Chunk, bool]:
    """The :class:`Chunk` a point stores, and whether its rebuilt embedded text matches the stored
    ``content_hash``."""
    meta = payload.get("metadata") or {}
    extra = dict(meta.get("extra") or {})
    text = payload.get("page_content") or ""
    path = list(meta.get("heading_path") or [])
    rendered, truncated = list(extra.get("heading_path_rendered") or path), bool(extra.get("embed_truncated"))
    compact = compact_tables(text)
    embed = _embedded(compact, rendered, truncated, counter, limit)
    stored = meta.get("content_hash")
    if stored and sha256_text(embed) != stored and compact != text:
        markdown = _embedded(text, rendered, truncated, counter, limit)  # chunked with table_embed="markdown"
        embed = markdown if sha256_text(markdown) == stored else embed
    boxes = [PageBBox(page=b[0], bbox=BBox(x0=b[1], y0=b[2], x1=b[3], y1=b[4])) for b in meta.get("bboxes") or []]
    chunk = Chunk(doc_id=meta["doc_id"], index=int(meta.get("chunk_index", 0)), kind=ChunkKind(meta.get("kind", "text")),
                  text=text, embed_text=embed, heading_path=path, page_start=int(meta.get("page_start", 1)),
                  page_end=int(meta.get("page_end", 1)), bboxes=boxes, token_count=int(meta.get("token_count") or 0),
                  content_hash=meta.get("content_hash") or sha256_text(embed),
                  part=tuple(meta["part"]) if meta.get("part") else None, metadata=extra)
    return chunk, sha256_text(embed) == chunk.content_hash


def _limit(record, counter) -> int:
    """The chunk limit of ``record``: from a ``model|limit`` fingerprint when it has one, else the
    model's own limit (the one truncation happens at)."""
    fingerprint = str((record.metadata or {}).get("fingerprint") or "")
    tail = fingerprint.rsplit("|", 1)[-1]
    return int(tail) if tail.isdigit() else counter.max_tokens


def evaluate_collection_chunks(store, documents_dir: Path, counter, doc_filter: Callable[[Any], bool] | None = None,
                               on_document: Callable[[], None] | None = None,
                               max_tokens: int | None = None) -> list[DocumentChunkReport]:
    """One :class:`DocumentChunkReport` per indexed document of ``store`` (those ``doc_filter``
    keeps), checked against ``max_tokens`` (default: see :func:`_limit`). Chunks whose embedded
    text cannot be rebuilt exactly are named in the report's ``note``, never silently skipped."""
    reports = []
    for record in store.list_documents():
        if record.status != "indexed" or (doc_filter and not doc_filter(record)):
            continue
        limit = max_tokens or _limit(record, counter)
        rebuilt = [chunk_from_payload(p, counter, limit) for p in store.payloads(record.doc_id)]
        chunks = [c for c, _ in rebuilt]
        file = kept_document_path(documents_dir, record.doc_id)
        document = Document.model_validate_json(file.read_text()) if file.is_file() else None
        report = evaluate_document_chunks(document, chunks, counter, limit, path=record.path or record.uri)
        mismatched = [c.index for c, ok in rebuilt if not ok]
        if mismatched:
            extra = f"embedded text of {len(mismatched)} chunks not rebuilt exactly (e.g. {mismatched[:5]})"
            report.note = f"{report.note}; {extra}" if report.note else extra
        reports.append(report)
        if on_document:
            on_document()
    return reports


def summarize_chunks(reports: list[DocumentChunkReport]) -> dict:
    """Totals over documents: documents, chunks, tables, formulas, and failures per category."""
    return {"documents": len(reports), "chunks": sum(r.chunks for r in reports),
            "tables": sum(r.tables for r in reports), "formulas": sum(r.formulas for r in reports),
            "failures": {c: sum(r.counts[c] for r in reports) for c in CATEGORIES},
            "documents_without_source": sum(1 for r in reports if r.note and "not found" in r.note)}
