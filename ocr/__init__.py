"""Rendering and OCR: documents in, typed pages of structured Markdown out (see :mod:`folioflow.ocr.schema`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

#: public name -> defining module, imported on first use (so importing this package stays cheap)
_EXPORTS: dict[str, str] = {
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
    "FolioflowError": "folioflow.ocr.errors",
    "ConfigurationError": "folioflow.ocr.errors",
    "MissingExtraError": "folioflow.ocr.errors",
    "EXTRAS": "folioflow.ocr.extras",
    "require": "folioflow.ocr.extras",
}

__all__ = [
    "DocumentConverter", "ConvertOptions", "DocumentInput", "Document", "DocumentStatus", "Page",
    "PageStatus", "Block", "BlockType", "BBox", "SourceRef", "FolioflowError", "ConfigurationError",
    "MissingExtraError", "EXTRAS", "require",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.errors import ConfigurationError, FolioflowError, MissingExtraError
    from folioflow.ocr.extras import EXTRAS, require
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
