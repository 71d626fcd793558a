"""Point payloads: what each chunk stores in Qdrant, in the layout langchain-qdrant reads.

Payload of a chunk point::

    {"page_content": <chunk Markdown>,
     "metadata": {"doc_id", "source", "uri", "path", "tenant", "page_start", "page_end",
                  "heading_path", "kind", "chunk_index", "content_hash", "doc_hash",
                  "token_count", "part", "bboxes", "extra"}}

``page_content``/``metadata`` are langchain-qdrant's default ``content_payload_key`` and
``metadata_payload_key``, so ``QdrantVectorStore.from_existing_collection(..., vector_name="dense")``
returns these chunks as LangChain Documents. Pages are 1-based and inclusive; ``content_hash`` is
the chunk's (sha256 of ``embed_text``), ``doc_hash`` the source document's (sha256 of its bytes);
``bboxes`` is ``[[page, x0, y0, x1, y1], ...]`` in page points, top-left origin.

Payload indexes (created before the first upload): ``metadata.doc_id``, ``metadata.source``,
``metadata.kind`` (keyword), ``metadata.tenant`` (keyword, ``is_tenant``), ``metadata.page_start``
and ``metadata.page_end`` (integer, range).
"""

from __future__ import annotations

from typing import Any

from folioflow.chunking.schema import Chunk
from folioflow.indexing.registry import DocumentRecord

__all__ = ["INTEGER_FIELDS", "KEYWORD_FIELDS", "TENANT_FIELD", "chunk_payload", "hit_metadata"]

KEYWORD_FIELDS = ("metadata.doc_id", "metadata.source", "metadata.kind")
TENANT_FIELD = "metadata.tenant"
INTEGER_FIELDS = ("metadata.page_start", "metadata.page_end")


def chunk_payload(chunk: Chunk, record: DocumentRecord) -> dict[str, Any]:
    """Payload of ``chunk`` of document ``record`` (see module docstring)."""
    return {
        "page_content": chunk.text,
        "metadata": {
            "doc_id": chunk.doc_id,
            "source": record.source,
            "uri": record.uri,
            "path": record.path,
            "tenant": record.tenant,
            "page_start": chunk.page_start,
            "page_end": chunk.page_end,
            "heading_path": list(chunk.heading_path),
            "kind": chunk.kind.value,
            "chunk_index": chunk.index,
            "content_hash": chunk.content_hash,
            "doc_hash": record.content_hash,
            "token_count": chunk.token_count,
            "part": list(chunk.part) if chunk.part else None,
            "bboxes": [[b.page, round(b.bbox.x0, 2), round(b.bbox.y0, 2), round(b.bbox.x1, 2), round(b.bbox.y1, 2)]
                       for b in chunk.bboxes],
            "extra": chunk.metadata,
        },
    }


def hit_metadata(payload: dict[str, Any], score: float) -> dict[str, Any]:
    """LangChain Document metadata of a search hit: the stored metadata plus ``score``."""
    meta = dict(payload.get("metadata") or {})
    meta["score"] = float(score)
    return meta
