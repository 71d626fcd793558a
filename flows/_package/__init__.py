"""folioflow: document ingestion for legal and finance knowledge bases.

The distribution installs one import root, ``folioflow``, whose sub-packages live in the
repository's top-level folders (``pyproject.toml`` maps them with setuptools ``package-dir``):

* :mod:`folioflow.ocr` (``ocr/``): rendering and OCR, documents in, typed pages out;
* :mod:`folioflow.chunking` (``chunking/``): structure-aware chunking;
* :mod:`folioflow.indexing` (``indexing/``): embedding, the Qdrant store, the LangChain retriever;
* :mod:`folioflow.flows` (``flows/``): settings, Prefect flows, the CLI;
* :mod:`folioflow.infra` (``infra/``): deployment templates, shipped as package data.

This root module itself lives in ``flows/_package/``. It re-exports the public API (``__all__``)
lazily: ``import folioflow`` is cheap, and ``folioflow.DocumentConverter`` imports its module on
first use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

try:
    __version__ = version("folioflow")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

#: public name -> module defining it. Resolved on first attribute access (PEP 562), so that
#: ``import folioflow`` imports neither torch nor Prefect; each name's own module says what it costs.
_EXPORTS: dict[str, str] = {
    # documents in, typed pages out
    "DocumentConverter": "folioflow.ocr.converter",
    "ConvertOptions": "folioflow.ocr.converter",
    "DocumentInput": "folioflow.ocr.converter",
    "Document": "folioflow.ocr.schema",
    "DocumentStatus": "folioflow.ocr.schema",
    "Page": "folioflow.ocr.schema",
    "PageStatus": "folioflow.ocr.schema",
    "Block": "folioflow.ocr.schema",
    "BlockType": "folioflow.ocr.schema",
    "BBox": "folioflow.ocr.schema",
    "SourceRef": "folioflow.ocr.schema",
    # chunking
    "Chunk": "folioflow.chunking.schema",
    "ChunkKind": "folioflow.chunking.schema",
    "Chunker": "folioflow.chunking.chunker",
    "ChunkerOptions": "folioflow.chunking.chunker",
    # embedding, the store, retrieval
    "Embedder": "folioflow.indexing.embedder",
    "StoreSettings": "folioflow.indexing.store",
    "ChunkStore": "folioflow.indexing.store",
    "open_store": "folioflow.indexing.store",
    "FolioRetriever": "folioflow.indexing.retriever",
    "format_docs": "folioflow.indexing.retriever",
    # settings and the ingest flow
    "Settings": "folioflow.flows.settings",
    "load_settings": "folioflow.flows.settings",
    "run_ingest": "folioflow.flows.ingest",
    # errors (the whole tree is drawn in folioflow.ocr.errors)
    "FolioflowError": "folioflow.ocr.errors",
    "ConfigurationError": "folioflow.ocr.errors",
    "MissingExtraError": "folioflow.ocr.errors",
    "SourceError": "folioflow.ocr.errors",
    "OcrError": "folioflow.ocr.errors",
    "IndexingError": "folioflow.ocr.errors",
    "CollectionNotFoundError": "folioflow.ocr.errors",
}

# the same names as _EXPORTS, literal so that linters and type checkers read it (a test compares them)
__all__ = [
    "__version__", "DocumentConverter", "ConvertOptions", "DocumentInput", "Document", "DocumentStatus",
    "Page", "PageStatus", "Block", "BlockType", "BBox", "SourceRef", "Chunk", "ChunkKind", "Chunker",
    "ChunkerOptions", "Embedder", "StoreSettings", "ChunkStore", "open_store", "FolioRetriever",
    "format_docs", "Settings", "load_settings", "run_ingest", "FolioflowError", "ConfigurationError",
    "MissingExtraError", "SourceError", "OcrError", "IndexingError", "CollectionNotFoundError",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


if TYPE_CHECKING:  # static analysers and IDEs see the real names
    from folioflow.chunking.chunker import Chunker, ChunkerOptions
    from folioflow.chunking.schema import Chunk, ChunkKind
    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.settings import Settings, load_settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.retriever import FolioRetriever, format_docs
    from folioflow.indexing.store import ChunkStore, StoreSettings, open_store
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.errors import (
        CollectionNotFoundError,
        ConfigurationError,
        FolioflowError,
        IndexingError,
        MissingExtraError,
        OcrError,
        SourceError,
    )
    from folioflow.ocr.schema import (
        BBox,
        Block,
        BlockType,
        Document,
        DocumentStatus,
        Page,
        PageStatus,
        SourceRef,
    )
