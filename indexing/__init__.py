"""Embedding, the Qdrant store and the LangChain retriever."""

from __future__ import annotations

from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

#: public name -> defining module, imported on first use (so importing this package stays cheap)
_EXPORTS: dict[str, str] = {
    "Embedder": "folioflow.indexing.embedder",
    "StoreSettings": "folioflow.indexing.store",
    "ChunkStore": "folioflow.indexing.store",
    "open_store": "folioflow.indexing.store",
    "Indexer": "folioflow.indexing.indexer",
    "FolioRetriever": "folioflow.indexing.retriever",
    "format_docs": "folioflow.indexing.retriever",
}

__all__ = [
    "Embedder", "StoreSettings", "ChunkStore", "open_store", "Indexer", "FolioRetriever", "format_docs",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.indexer import Indexer
    from folioflow.indexing.retriever import FolioRetriever, format_docs
    from folioflow.indexing.store import ChunkStore, StoreSettings, open_store
