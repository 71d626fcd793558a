"""Chunk model: what gets embedded and stored as one Qdrant point.

A chunk is a contiguous run of blocks under one heading path. ``text`` is the chunk's exact
Markdown; ``embed_text`` is what the embedding model sees (heading path + text, see
:func:`folioflow.chunking.chunker.contextualize`, tables written one line per row by default, see
:func:`folioflow.chunking.tables.compact_tables`) and its token count, measured with the embedding model's own
tokenizer, never exceeds the chunker's limit. Page numbers are 1-based and inclusive.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from folioflow.ocr.ids import FOLIOFLOW_NAMESPACE
from folioflow.ocr.schema import BBox

__all__ = ["Chunk", "ChunkKind", "PageBBox", "pack_token_ids", "point_id"]


class ChunkKind(str, Enum):  # noqa: UP042 - StrEnum would change str()/f-strings of members ("ChunkKind.X" -> "x")
    """``text``: prose, lists, code; ``table``: one table (or one part of a row-split table);
    ``formula``: one display formula; ``mixed``: text together with a table or formula."""

    TEXT = "text"
    TABLE = "table"
    FORMULA = "formula"
    MIXED = "mixed"


class PageBBox(BaseModel):
    """A bounding box on a given page (1-based), in page points (see :mod:`folioflow.ocr.schema`)."""

    page: int = Field(ge=1)
    bbox: BBox


def point_id(doc_id: str, index: int, content_hash: str) -> str:
    """Deterministic Qdrant point id: ``uuid5(namespace, f"{doc_id}:{index}:{content_hash}")``."""
    return str(uuid.uuid5(FOLIOFLOW_NAMESPACE, f"{doc_id}:{index}:{content_hash}"))


def pack_token_ids(ids: Sequence[int]) -> bytes:
    """Token ids in the form ``Chunk.token_ids`` keeps them: int32, native byte order, 4 bytes per id."""
    return np.asarray(ids, dtype=np.int32).tobytes()


class Chunk(BaseModel):
    """One retrievable unit of a document.

    ``metadata["role"]``, when present, says the chunk is one of a contract's blocks that hold the
    words of many questions and answer few (:mod:`folioflow.chunking.roles`): ``"parties"`` (the
    preamble naming the parties), ``"definitions"`` (defined terms), ``"signature"`` ("IN WITNESS
    WHEREOF", "By: / Name: / Title:") or ``"contents"`` (a table of contents). Such a chunk holds
    nothing else; a ranker may demote it.
    Decision: a metadata value rather than a :class:`ChunkKind` member, because the kind says what
    the text *is made of* (prose, table, formula) and a signature block may be a table: the two are
    independent, and the payload already carries ``metadata`` to the store and the retriever.
    """

    doc_id: str
    index: int = Field(ge=0, description="0-based position of the chunk in its document")
    kind: ChunkKind
    text: str = Field(description="The chunk's exact Markdown")
    embed_text: str = Field(description="Heading path + text (tables as compact rows by default): the string that is embedded")
    heading_path: list[str] = Field(default_factory=list)
    page_start: int = Field(ge=1)
    page_end: int = Field(ge=1)
    bboxes: list[PageBBox] = Field(default_factory=list)
    token_count: int = Field(ge=0, description="Tokens of embed_text as the embedding model sees it (special tokens included); never above the chunker limit")
    content_hash: str = Field(description="sha256 hex of embed_text")
    part: tuple[int, int] | None = Field(default=None, description="(i, n) when a table was split between rows")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Page headers/footers and other extras")
    token_ids: bytes | None = Field(default=None, exclude=True, repr=False,
                                    description="The embedding tokenizer's ids of embed_text (int32, native byte order; "
                                                "token_count of them), kept from the chunker's own count so the "
                                                "embedder need not tokenize again; None when the counter gives no ids. "
                                                "Never serialized")

    @property
    def id(self) -> str:
        """The chunk's Qdrant point id (see :func:`point_id`)."""
        return point_id(self.doc_id, self.index, self.content_hash)
