"""Listing a configured source: which documents it holds now, with their change tokens.

:func:`list_source` turns a :class:`~folioflow.flows.source_config.SourceConfig` into :class:`SourceFile`
entries (local folders and globs through the file system, everything else through fsspec:
``s3://``, ``gs://``, ``az://``, ``http(s)://``, ``memory://``), applying the source's include and
exclude patterns. Rules:

* **No escape.** A document must lie inside the source root: a symlink (file or folder) resolving
  outside it, or an object-store key or link whose relative path climbs out (``..``, another host
  in an HTML listing) is left out and reported as a problem (``escapes its root``). Symlinked
  folders are not followed, so link cycles cannot loop.
* Hidden files and folders (a path part starting with ``.``) are skipped.
* Change tokens: the store's etag when it gives one (S3, GCS, Azure, HTTP servers that send
  ``ETag``), else size and modification time (local files, ``memory://``, HTTP ``Last-Modified``;
  fetched with one ``info``/HEAD request when the listing lacks them).
* :attr:`Listing.complete` is ``False`` when the root itself could not be listed (missing folder,
  store unreachable, access denied): the watch flow then prunes nothing for that source.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path, PurePosixPath
from typing import Any

from folioflow.flows.source_config import SourceConfig
from folioflow.flows.sources import SourceFile, SourceProblem, _glob_base

__all__ = ["Listing", "list_source"]

_GLOB_CHARS = set("*?[")


@dataclass
class Listing:
    """Documents of one source (sorted by relative path), problems, and whether the listing is
    complete (safe to prune documents missing from it)."""

    source: SourceConfig
    files: list[SourceFile] = field(default_factory=list)
    errors: list[SourceProblem] = field(default_factory=list)
    complete: bool = True

    def __iter__(self):
        return iter(self.files)


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in PurePosixPath(relative).parts)


def _bad_relative(relative: str) -> bool:
    parts = PurePosixPath(relative).parts
    return not relative or relative.startswith("/") or ".." in parts or "." in parts or "" in parts


def _escape(config: SourceConfig, shown: str) -> SourceProblem:
    return SourceProblem(argument=shown, error=f"escapes its root: {shown} is outside source {config.name!r}")


# -- local ----------------------------------------------------------------------------------------
def _local_candidates(config: SourceConfig) -> tuple[Path, list[Path]] | str:
    text = config.url[len("file://"):] if config.url.startswith("file://") else config.url
    path = Path(text).expanduser()
    if _GLOB_CHARS & set(text) and not path.exists():
        base = _glob_base(str(path))
        if not base.is_dir():
            return f"source {config.name!r}: folder {base} not found"
        return base, [Path(hit) for hit in glob.glob(str(path), recursive=True) if not Path(hit).is_dir()]
    if not path.is_dir():
        return f"source {config.name!r}: folder {path} not found" if not path.exists() else \
            f"source {config.name!r}: {path} is not a folder"
    found = []
    for folder, dirs, files in os.walk(path, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if config.recursive else []
        found += [Path(folder) / name for name in files]
    return path, found


def _list_local(config: SourceConfig, listing: Listing) -> None:
    candidates = _local_candidates(config)
    if isinstance(candidates, str):
        listing.complete = False
        listing.errors.append(SourceProblem(argument=config.url, error=candidates))
        return
    base, paths = candidates
    root = base.resolve()
    for path in paths:
        relative = os.path.relpath(path, base).replace(os.sep, "/")
        if _bad_relative(relative):
            listing.errors.append(_escape(config, str(path)))
            continue
        if _hidden(relative) or not config.wanted(relative):
            continue
        try:
            resolved = path.resolve()
        except (RuntimeError, OSError) as exc:  # a link to itself: "Symlink loop from ..." (RuntimeError)
            listing.errors.append(SourceProblem(argument=relative, error=f"cannot resolve {relative}: {exc}; left out"))
            continue
        if not resolved.is_relative_to(root):
            listing.errors.append(_escape(config, relative))
            continue
        try:
            stat = resolved.stat()
        except OSError as exc:
            listing.errors.append(SourceProblem(argument=relative, error=f"cannot read {relative}: {exc.strerror or exc}"))
            continue
        if not resolved.is_file():
            continue
        listing.files.append(SourceFile(local_path=resolved, path=relative, uri=resolved.as_uri(), argument=config.url,
                                        size=stat.st_size, mtime=stat.st_mtime, display=f"{config.name}:{relative}",
                                        config=config))


# -- object stores (fsspec) ---------------------------------------------------------------------------
def _mtime(info: dict[str, Any]) -> float | None:
    for key in ("LastModified", "last_modified", "mtime", "updated", "Last-Modified", "created", "creation_time"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parsedate_to_datetime(str(value)).timestamp()
        except (TypeError, ValueError):
            try:
                return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return None


def _etag(info: dict[str, Any]) -> str | None:
    for key in ("ETag", "etag", "md5Hash", "content_md5"):
        value = info.get(key)
        if value:
            return str(value.hex() if isinstance(value, (bytes, bytearray)) else value).strip('"')
    return None


def _list_remote(config: SourceConfig, listing: Listing) -> None:
    import fsspec

    try:
        fs, root = fsspec.core.url_to_fs(config.url, **config.fs_options())
        if _GLOB_CHARS & set(root):
            parts = root.split("/")
            fixed = next(i for i, part in enumerate(parts) if _GLOB_CHARS & set(part))
            base = "/".join(parts[:fixed])
            entries = fs.glob(root, detail=True)
        else:
            base = root
            entries = fs.find(root, detail=True, withdirs=False, maxdepth=None if config.recursive else 1)
    except Exception as exc:  # noqa: BLE001 - any store failure: report, and do not prune
        listing.complete = False
        listing.errors.append(SourceProblem(argument=config.url, error=f"source {config.name!r}: cannot list: "
                                            f"{type(exc).__name__}: {exc}"))
        return
    base = base.rstrip("/")
    for name, info in sorted(entries.items()):
        if info.get("type", "file") != "file":
            continue
        if not name.startswith(base + "/"):
            listing.errors.append(_escape(config, name))
            continue
        relative = name[len(base) + 1:]
        if _bad_relative(relative):
            listing.errors.append(_escape(config, name))
            continue
        if _hidden(relative) or not config.wanted(relative):
            continue
        if info.get("size") is None or (_etag(info) is None and _mtime(info) is None):
            try:
                info = {**info, **fs.info(name)}
            except Exception as exc:  # noqa: BLE001
                listing.errors.append(SourceProblem(argument=relative, error=f"cannot stat {relative}: {exc}"))
                continue
        uri = name if "://" in name else fs.unstrip_protocol(name)
        listing.files.append(SourceFile(local_path=None, path=relative, uri=uri, argument=config.url,
                                        size=info.get("size"), mtime=_mtime(info), etag=_etag(info),
                                        display=f"{config.name}:{relative}", config=config))


def list_source(config: SourceConfig) -> Listing:
    """List ``config``'s documents now (see module docstring). Never raises for an unreachable or
    missing root: the listing is then incomplete and carries the reason."""
    listing = Listing(source=config)
    if config.is_local:
        _list_local(config, listing)
    else:
        _list_remote(config, listing)
    listing.files.sort(key=lambda f: f.path)
    return listing
