"""Structure-aware chunking: typed documents in, chunks with heading paths and page spans out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

#: public name -> defining module, imported on first use (so importing this package stays cheap)
_EXPORTS: dict[str, str] = {
    "Chunk": "folioflow.chunking.schema",
    "ChunkKind": "folioflow.chunking.schema",
    "Chunker": "folioflow.chunking.chunker",
    "ChunkerOptions": "folioflow.chunking.chunker",
}

__all__ = [
    "Chunk", "ChunkKind", "Chunker", "ChunkerOptions",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    from folioflow.chunking.chunker import Chunker, ChunkerOptions
    from folioflow.chunking.schema import Chunk, ChunkKind
