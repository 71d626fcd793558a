"""Page selection and the per-page OCR cache protocol.

* :func:`parse_page_range` turns ``"1-5,9"`` into sorted 1-based page numbers.
* :class:`PageCache` is what :class:`~folioflow.ocr.converter.DocumentConverter` calls to reuse finished
  pages (flows persist OCR per page through it); :class:`MemoryPageCache` is the in-process one.
"""

from __future__ import annotations

import re
from typing import Protocol, runtime_checkable

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.schema import Page

__all__ = ["validate_page_range", "parse_page_range", "PageCache", "MemoryPageCache"]

_PART = re.compile(r"^\s*(\d*)\s*(-\s*(\d*))?\s*$")


def validate_page_range(spec: str) -> str:
    """Check the syntax of a page range (``"1-5,9"``, ``"3-"``, ``"-2"``); return it unchanged.
    Raises :class:`ConfigurationError` with the offending part."""
    parts = [p for p in spec.split(",")]
    if not spec.strip() or any(not p.strip() for p in parts):
        raise ConfigurationError(f"bad page range {spec!r}: empty part")
    for part in parts:
        m = _PART.match(part)
        if not m or (not m.group(1) and not m.group(3)):
            raise ConfigurationError(f"bad page range {spec!r}: cannot read {part.strip()!r}")
        start = int(m.group(1)) if m.group(1) else 1
        end = int(m.group(3)) if m.group(3) else None
        if start < 1 or (end is not None and end < start):
            raise ConfigurationError(f"bad page range {spec!r}: {part.strip()!r} is empty or starts below 1")
    return spec


def parse_page_range(spec: str | None, page_count: int) -> list[int]:
    """1-based page numbers selected by ``spec`` in a document of ``page_count`` pages, sorted
    and unique. ``None`` selects every page; ``"3-"`` runs to the last page; numbers past the end
    are dropped (so the result may be empty). Raises :class:`ConfigurationError` for bad syntax."""
    if spec is None:
        return list(range(1, page_count + 1))
    validate_page_range(spec)
    selected: set[int] = set()
    for part in spec.split(","):
        m = _PART.match(part)
        assert m is not None
        start = int(m.group(1)) if m.group(1) else 1
        end = start
        if m.group(2):  # a range: "a-b", or "a-" to the last page
            end = int(m.group(3)) if m.group(3) else page_count
        selected.update(range(start, min(end, page_count) + 1))
    return sorted(selected)


@runtime_checkable
class PageCache(Protocol):
    """Finished pages by ``(content_hash, page_number, cache_key)``.

    ``content_hash``: sha256 hex of the document bytes; ``page_number``: 1-based;
    ``cache_key``: the engine's :attr:`~folioflow.ocr.engines.base.PageEngine.cache_key`. Implementations
    must return an equal :class:`~folioflow.ocr.schema.Page` for a key they stored, or ``None``.
    """

    def get(self, content_hash: str, page_number: int, cache_key: str) -> Page | None: ...

    def put(self, content_hash: str, page_number: int, cache_key: str, page: Page) -> None: ...


class MemoryPageCache:
    """A :class:`PageCache` in a dict (one process). Stores deep copies."""

    def __init__(self) -> None:
        self.pages: dict[tuple[str, int, str], Page] = {}

    def get(self, content_hash: str, page_number: int, cache_key: str) -> Page | None:
        page = self.pages.get((content_hash, page_number, cache_key))
        return page.model_copy(deep=True) if page is not None else None

    def put(self, content_hash: str, page_number: int, cache_key: str, page: Page) -> None:
        self.pages[(content_hash, page_number, cache_key)] = page.model_copy(deep=True)
