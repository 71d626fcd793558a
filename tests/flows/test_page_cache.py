"""The per-page OCR cache round-trips pages, ignores failed ones and survives corrupt entries."""

from __future__ import annotations

from folioflow.flows.cache import PageCache
from folioflow.ocr.schema import Block, BlockType, Page, PageStatus


def _page(status=PageStatus.OK) -> Page:
    return Page(number=3, width=612, height=792, engine="tesseract", status=status,
                markdown="# Title\n\nBody", blocks=[Block(type=BlockType.HEADING, text="# Title", level=1)])


def test_round_trip_and_keys(tmp_path):
    cache = PageCache(str(tmp_path))
    cache.put("ab" * 32, 3, "tesseract|eng", _page())
    assert cache.get("ab" * 32, 3, "tesseract|eng") == _page()
    assert cache.get("ab" * 32, 3, "vlm:chandra|v1") is None  # another engine: miss
    assert cache.get("cd" * 32, 3, "tesseract|eng") is None  # other content: miss
    assert (cache.hits, cache.misses) == (1, 2)


def test_failed_pages_are_not_cached(tmp_path):
    cache = PageCache(str(tmp_path))
    cache.put("ab" * 32, 3, "k", _page(PageStatus.FAILED))
    assert cache.get("ab" * 32, 3, "k") is None


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = PageCache(str(tmp_path))
    cache.put("ab" * 32, 3, "k", _page())
    path = next(tmp_path.rglob("3.json"))
    path.write_text("{truncated")
    assert cache.get("ab" * 32, 3, "k") is None
    assert not list(tmp_path.rglob("*.tmp"))
