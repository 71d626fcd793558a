"""Persistent per-page OCR cache: a crashed or repeated run never repeats finished OCR.

Layout under the cache root: ``<content_hash[:2]>/<content_hash>/<key>/<page>.json`` where ``key``
is a short sha256 of the page schema version (:data:`folioflow.ocr.schema.SCHEMA_VERSION`) and the engine's
``cache_key`` (engine, model and prompt version), so a new model, prompt or page layout never
reuses old pages. Each file is a
:class:`folioflow.ocr.schema.Page` in JSON, written to a temporary name and renamed, so a process killed
mid-write leaves either the whole page or nothing. Only ``ok`` and ``fallback`` pages are cached:
failed pages are retried by the next run.

The root may be a local path or any fsspec URL (``s3://bucket/folioflow-cache``) so workers on
several machines share it.
"""

from __future__ import annotations

import uuid

import fsspec

from folioflow.ocr.ids import sha256_text
from folioflow.ocr.schema import SCHEMA_VERSION, Page, PageStatus

__all__ = ["PageCache"]


class PageCache:
    """File-per-page cache implementing the converter's ``page_cache`` protocol."""

    def __init__(self, root: str):
        self.fs, self.root = fsspec.core.url_to_fs(str(root))
        self.hits = 0
        self.misses = 0

    def _path(self, content_hash: str, page_number: int, cache_key: str) -> str:
        key = sha256_text(f"{SCHEMA_VERSION}|{cache_key}")[:16]
        return f"{self.root}/{content_hash[:2]}/{content_hash}/{key}/{page_number}.json"

    def get(self, content_hash: str, page_number: int, cache_key: str) -> Page | None:
        """The cached page, or ``None`` (a corrupt entry counts as a miss and is ignored)."""
        path = self._path(content_hash, page_number, cache_key)
        try:
            with self.fs.open(path, "rb") as fh:
                page = Page.model_validate_json(fh.read())
        except (FileNotFoundError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return page

    def put(self, content_hash: str, page_number: int, cache_key: str, page: Page) -> None:
        """Store ``page`` unless it failed. Atomic on local file systems (write, then rename)."""
        if page.status == PageStatus.FAILED:
            return
        path = self._path(content_hash, page_number, cache_key)
        parent = path.rsplit("/", 1)[0]
        self.fs.makedirs(parent, exist_ok=True)
        tmp = f"{parent}/.{page_number}.{uuid.uuid4().hex}.tmp"
        with self.fs.open(tmp, "wb") as fh:
            fh.write(page.model_dump_json().encode("utf-8"))
        self.fs.mv(tmp, path)
