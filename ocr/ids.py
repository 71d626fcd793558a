"""Stable identifiers and content hashes.

* ``doc_id = uuid5(FOLIOFLOW_NAMESPACE, canonical source URI)``: the same source location always gets
  the same id, on any machine and in any run, whatever its content.
* ``content_hash = sha256(bytes)`` (lowercase hex) decides whether a document changed.
* Point ids (see :func:`folioflow.chunking.schema.point_id`) are uuid5 of ``doc_id``, the chunk index and the
  chunk's content hash, so re-ingesting unchanged content rewrites exactly the same points.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

__all__ = ["FOLIOFLOW_NAMESPACE", "canonical_uri", "doc_id_for", "sha256_bytes", "sha256_file", "sha256_text"]

#: Namespace for every folioflow uuid5 (fixed forever: changing it changes every id).
FOLIOFLOW_NAMESPACE = uuid.UUID("6f1b3a52-5d0e-4c1e-9b7a-f0110f10f10f")


def canonical_uri(location: str | Path) -> str:
    """Canonical URI of a source location.

    Local paths become ``file://`` URIs of the absolute, symlink-resolved path (``Path.as_uri``:
    spaces and non-ASCII characters percent-encoded); a ``file://`` URI is decoded back to its path
    first, so a path and its URI give the same result (``/a/b c.pdf`` and ``file:///a/b%20c.pdf``
    -> ``file:///a/b%20c.pdf``); strings that carry another scheme (``s3://``, ``gs://``,
    ``https://``) are returned with trailing slashes removed.
    """
    text = str(location)
    if "://" in text and not text.startswith("file://"):
        return text.rstrip("/")
    if text.startswith("file://"):
        text = unquote(text[len("file://"):])
    return Path(text).expanduser().resolve().as_uri()


def doc_id_for(location: str | Path) -> str:
    """Stable document id (UUID string) for a source location; see :func:`canonical_uri`."""
    return str(uuid.uuid5(FOLIOFLOW_NAMESPACE, canonical_uri(location)))


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Lowercase hex sha256 of the UTF-8 encoding of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path | BinaryIO, chunk_size: int = 1 << 20) -> str:
    """Lowercase hex sha256 of a file's bytes, read in ``chunk_size`` pieces (constant memory)."""
    digest = hashlib.sha256()
    if isinstance(path, (str, Path)):
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(chunk_size), b""):
                digest.update(block)
    else:
        for block in iter(lambda: path.read(chunk_size), b""):
            digest.update(block)
    return digest.hexdigest()
