"""The documents registry: one record per indexed document, kept in the vector store itself.

Each chunk collection ``C`` has a companion collection ``C__documents`` holding one point per
document (point id = the document's ``doc_id``; payload = the :class:`DocumentRecord`) and one
collection record (id :data:`COLLECTION_RECORD_ID`: embedding model, dimension, sparse encoder
settings, schema version). Because it lives in Qdrant, the registry survives restarts, is shared by
every process that talks to the same server, and works the same on the embedded backends. A
document that produced zero chunks still gets its record, so an unchanged empty document is
skipped like any other.

The incremental rule (see :meth:`folioflow.indexing.store.ChunkStore.is_current`): a source whose
``content_hash`` (sha256 of its bytes) equals its record's, indexed with the same embedding model,
needs no OCR, chunking or embedding.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from folioflow.ocr.ids import FOLIOFLOW_NAMESPACE

__all__ = [
    "COLLECTION_RECORD_ID",
    "REGISTRY_SCHEMA",
    "REGISTRY_SUFFIX",
    "DocumentRecord",
    "record_from_payload",
    "record_payload",
    "record_point_id",
    "registry_name",
]

#: Suffix of the registry collection next to a chunk collection.
REGISTRY_SUFFIX = "__documents"
#: Point id of the collection record in the registry.
COLLECTION_RECORD_ID = str(uuid.uuid5(FOLIOFLOW_NAMESPACE, "folioflow:collection-record"))
#: Version of the point payload layout (bumped when a payload key changes meaning).
REGISTRY_SCHEMA = "1"


def record_point_id(doc_id: str) -> str:
    """Registry point id of a document: its ``doc_id`` when that is a UUID (folioflow's are),
    else a uuid5 of it (Qdrant point ids are UUIDs or integers)."""
    try:
        return str(uuid.UUID(doc_id))
    except ValueError:
        return str(uuid.uuid5(FOLIOFLOW_NAMESPACE, f"doc:{doc_id}"))


def registry_name(collection: str) -> str:
    """Name of the registry collection for chunk collection ``collection``."""
    return f"{collection}{REGISTRY_SUFFIX}"


class DocumentRecord(BaseModel):
    """What the index knows about one source document.

    ``content_hash``: sha256 hex of the source bytes; ``pages``/``chunks``: counts in the index;
    ``engines``: OCR engine per page (1-based page order); ``status``: ``indexed`` or ``failed``
    (a failed document keeps its previous points untouched); ``indexed_at``: UTC time of the last
    write.
    """

    doc_id: str
    uri: str
    path: str
    source: str = "default"
    tenant: str | None = None
    content_hash: str
    pages: int = 0
    chunks: int = 0
    engines: list[str] = Field(default_factory=list)
    indexed_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    status: str = "indexed"
    errors: list[str] = Field(default_factory=list)
    mime_type: str | None = None
    size: int | None = None
    mtime: float | None = None
    embedding_model: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


def record_payload(record: DocumentRecord) -> dict[str, Any]:
    """Registry point payload of ``record`` (JSON types only)."""
    return {"kind": "document", **record.model_dump(mode="json")}


def record_from_payload(payload: dict[str, Any]) -> DocumentRecord:
    """Inverse of :func:`record_payload`."""
    return DocumentRecord.model_validate({k: v for k, v in payload.items() if k != "kind"})
