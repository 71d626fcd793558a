"""The typed document model every stage hands on (pydantic v2, JSON-serialisable).

Shapes and units
----------------
* Page numbers are **1-based** everywhere (``Page.number``, chunk page spans, query output).
* Page sizes and bounding boxes are in **PDF points** (1/72 inch) in the page's *display* space:
  origin at the top-left corner, x to the right, y downwards, after the page's ``/Rotate`` has been
  applied (what a viewer shows). Images become pages whose size in points is
  ``pixels * 72 / dpi`` with the image's own DPI, or 72 DPI (1 px = 1 pt) when it records none.
* ``Document.content_hash`` is the lowercase hex sha256 of the source bytes.
* ``Document.doc_id`` is a UUIDv5 of the source URI (see :mod:`folioflow.ocr.ids`): stable across runs and
  machines for the same source location, independent of the content.

Versioning: :data:`SCHEMA_VERSION` changes whenever a field changes meaning; readers refuse a
major version they do not know. The JSON Schema published with ``folioflow convert`` is generated
from :class:`Document` (``Document.model_json_schema()``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SCHEMA_VERSION",
    "BlockType",
    "BBox",
    "Block",
    "PageStatus",
    "PageFidelity",
    "Page",
    "SourceRef",
    "source_title",
    "DocumentStatus",
    "Document",
    "kept_document_path",
]

SCHEMA_VERSION = "1.1"


class BlockType(str, Enum):  # noqa: UP042 - StrEnum would change str()/f-strings of members ("BlockType.X" -> "x")
    """Layout label of a block. Engine-specific labels (chandra's ``Section-Header``, DeepSeek-OCR's
    ``title``/``sub_title``, ...) are mapped onto these by each engine's parser."""

    TITLE = "title"
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    TABLE = "table"
    FORMULA = "formula"
    CODE = "code"
    FIGURE = "figure"
    CAPTION = "caption"
    FOOTNOTE = "footnote"
    PAGE_HEADER = "page_header"
    PAGE_FOOTER = "page_footer"
    OTHER = "other"


class BBox(BaseModel):
    """Axis-aligned box in page points, top-left origin, y down (see module docstring)."""

    model_config = ConfigDict(frozen=True)

    x0: float
    y0: float
    x1: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    def scaled(self, sx: float, sy: float) -> BBox:
        """Return the box with x multiplied by ``sx`` and y by ``sy`` (e.g. pixels -> points)."""
        return BBox(x0=self.x0 * sx, y0=self.y0 * sy, x1=self.x1 * sx, y1=self.y1 * sy)


class Block(BaseModel):
    """One layout element of a page, in reading order.

    ``text`` is the block's Markdown as it appears in ``Page.markdown`` (a heading includes its
    ``#`` marks; a table is a pipe table or the engine's HTML ``<table>`` with spans; a display
    formula is ``$$...$$``).
    """

    type: BlockType
    text: str
    bbox: BBox | None = None
    level: int | None = Field(default=None, description="Heading level 1-6 for title/heading blocks")
    confidence: float | None = Field(default=None, description="Engine confidence in [0, 1] if known")
    attributes: dict[str, Any] = Field(default_factory=dict, description="Engine-specific extras")


class PageStatus(str, Enum):  # noqa: UP042 - StrEnum would change str()/f-strings of members ("PageStatus.X" -> "x")
    """Outcome of one page. ``fallback``: the configured engine failed and the embedded engine
    produced the content (reason in ``Page.fallback_reason``). ``partial``: the page's content is
    indexed but the fidelity check (:mod:`folioflow.ocr.fidelity`) measured that part of what the
    page shows is missing or implausible (reason in ``Page.errors`` and ``Page.fidelity``).
    ``failed``: no content; reason in ``Page.errors``. No page is ever dropped: a document always
    has ``page_count`` pages."""

    OK = "ok"
    FALLBACK = "fallback"
    PARTIAL = "partial"
    FAILED = "failed"


class PageFidelity(BaseModel):
    """What the fidelity check measured on a page and what it concluded (see
    :mod:`folioflow.ocr.fidelity` for every measure, its evidence and its threshold).

    ``verdict``: ``ok``, ``partial`` or ``failed`` (the page's status follows it, except that a
    ``fallback`` page stays ``fallback`` when its verdict is ``ok``). ``reason``: one line with the
    measured numbers for a verdict other than ``ok``. ``measures``: name -> value (shares in 0..1,
    counts as numbers), only those that apply to the page's route. ``rerouted``: the routes tried
    after the first one, in order (``"ocr:tesseract"``, ``"ocr:rapidocr"``, ``"image_regions:2"``);
    ``kept``: the route whose content the page holds. ``language``: the lexicon the text was judged
    with (ISO 639-1), when one applied.
    """

    verdict: Literal["ok", "partial", "failed"] = "ok"
    reason: str | None = None
    measures: dict[str, float] = Field(default_factory=dict)
    rerouted: list[str] = Field(default_factory=list)
    kept: str = ""
    language: str | None = None


class Page(BaseModel):
    """The converted content of one page."""

    number: int = Field(ge=1, description="1-based page number in the document")
    width: float = Field(ge=0, description="Page width in points (display space)")
    height: float = Field(ge=0, description="Page height in points (display space)")
    rotation: int = Field(default=0, description="Clockwise rotation in degrees applied before OCR")
    markdown: str = ""
    blocks: list[Block] = Field(default_factory=list)
    engine: str = Field(default="", description="Engine that produced the content, e.g. 'text', 'tesseract', 'vlm:chandra'")
    model: str | None = Field(default=None, description="Model name/version used by the engine")
    status: PageStatus = PageStatus.OK
    fallback_reason: str | None = None
    errors: list[str] = Field(default_factory=list)
    seconds: float | None = Field(default=None, description="Wall time spent on this page")
    fidelity: PageFidelity | None = Field(default=None, description="The fidelity check's measures and verdict (None: not checked)")
    attributes: dict[str, Any] = Field(default_factory=dict, description="Engine extras (language, text-layer quality, ...)")


class SourceRef(BaseModel):
    """Where a document comes from."""

    uri: str = Field(description="Canonical URI: file:///abs/path or s3://bucket/key, ...")
    path: str = Field(description="Path relative to the source root (or the file name)")
    source: str = Field(default="default", description="Name of the configured source")
    tenant: str | None = None
    size: int | None = Field(default=None, description="Bytes")
    mtime: float | None = Field(default=None, description="POSIX seconds")
    etag: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def title(self) -> str:
        """The document's title: see :func:`source_title`."""
        return source_title(self.path or self.uri, self.metadata.get("title"))


def source_title(name: str, title: object = None) -> str:
    """A document's title: ``title`` when it is a non-empty string (the source's ``title`` metadata,
    which a source config sets for every document of that source), else the file name of ``name``
    (a path or URI) without its extension, with ``_`` and ``-`` read as spaces
    (``3M_2018_10K.pdf`` -> ``3M 2018 10K``).
    Whitespace is collapsed to single spaces."""
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    stem = name.replace("\\", "/").rsplit("/", 1)[-1]
    stem = stem.rsplit(".", 1)[0] if "." in stem else stem
    return " ".join(stem.replace("_", " ").replace("-", " ").split())


class DocumentStatus(str, Enum):  # noqa: UP042 - StrEnum would change str()/f-strings of members ("DocumentStatus.X" -> "x")
    """Conversion status: ``partial`` when some pages failed, fell back or are partial."""

    SUCCESS = "success"
    PARTIAL = "partial"
    FAILED = "failed"


class Document(BaseModel):
    """A converted document: every page of the source, in order."""

    schema_version: str = SCHEMA_VERSION
    doc_id: str
    content_hash: str = Field(description="sha256 hex of the source bytes")
    source: SourceRef
    mime_type: str = Field(description="application/pdf, image/png, image/jpeg, image/tiff, image/heic, image/heif or image/avif")
    page_count: int = Field(ge=0)
    pages: list[Page] = Field(default_factory=list)
    status: DocumentStatus = DocumentStatus.SUCCESS
    errors: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict, description="PDF metadata (title, author, ...)")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def markdown(self, page_markers: bool = True) -> str:
        """The document's Markdown: pages in order, each preceded by ``<!-- page N -->`` when
        ``page_markers`` is true."""
        parts = []
        for page in self.pages:
            if page_markers:
                parts.append(f"<!-- page {page.number} -->")
            parts.append(page.markdown.strip())
        return "\n\n".join(p for p in parts if p) + "\n"

    def engines(self) -> list[str]:
        """Engine name per page, in page order."""
        return [p.engine for p in self.pages]

    def compute_status(self) -> DocumentStatus:
        """Derive the status from the pages: failed if no page has content, partial if any page
        failed, fell back or is partial, success otherwise."""
        if self.errors or not self.pages:
            return DocumentStatus.FAILED if not self.pages else DocumentStatus.PARTIAL
        bad = [p for p in self.pages if p.status != PageStatus.OK]
        if len([p for p in self.pages if p.status == PageStatus.FAILED]) == len(self.pages):
            return DocumentStatus.FAILED
        return DocumentStatus.PARTIAL if bad else DocumentStatus.SUCCESS


def kept_document_path(documents_dir: str | Path, doc_id: str) -> Path:
    """Where ingest keeps a converted :class:`Document` as JSON: ``documents_dir/<doc_id>.json``
    (``documents_dir`` is the data directory's ``documents`` folder). Only builds the path; the file
    may not exist (``keep_documents`` off, or not ingested)."""
    return Path(documents_dir) / f"{doc_id}.json"

