"""Input discovery: turn command-line paths (files, folders, globs) into the documents to process.

:func:`discover` is shared by ``folioflow convert`` and ``folioflow ingest``. Rules:

* an **explicitly named file** is always taken, whatever its extension: the converter sniffs its
  bytes and rejects what it cannot read with a clear reason;
* a **folder** is walked recursively (hidden files and folders skipped, symlinked folders not
  followed, so link cycles cannot loop) and a **glob** (``*``, ``?``, ``[...]``, ``**``) is
  expanded; both keep only :data:`SUPPORTED_SUFFIXES` (case-insensitive);
* every result carries ``relative``: its path below the folder or the glob's fixed prefix (the
  bare file name for explicit files), used to mirror the input tree in output folders;
* order is stable: arguments in the order given, each argument's files sorted by relative path;
  a file reached twice (same resolved path) is kept once, at its first position;
* a path that does not exist, or a glob that matches nothing, becomes a :class:`SourceProblem`
  in :attr:`Discovery.errors` instead of raising: the batch reports it and goes on; so does a
  link to nothing found in a folder (``cannot read ...``), which is not skipped;
* **no escape**: a file found in a folder or by a glob must resolve (symlinks followed) inside that
  folder or the glob's fixed prefix; a symlink leading out is left out and reported
  (``escapes its root: ...``). An explicitly named file is taken wherever it lives.

Identity: ``uri`` is the canonical ``file://`` URI of the resolved path and ``doc_id`` the uuid5 of
it (:mod:`folioflow.ocr.ids`), so the same file keeps its id across runs whichever argument reached it.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from folioflow.ocr.errors import ResourceLimitError, SourceAccessError
from folioflow.ocr.ids import canonical_uri, doc_id_for

if TYPE_CHECKING:
    from folioflow.flows.source_config import SourceConfig

__all__ = ["SUPPORTED_SUFFIXES", "SourceFile", "DiscoveredFile", "SourceProblem", "Discovery", "discover"]

#: File name suffixes taken from folders and globs (explicit files are taken regardless).
SUPPORTED_SUFFIXES = frozenset({".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".heic", ".heif", ".avif"})

_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class SourceFile:
    """One input document, local or in an object store.

    ``local_path``: absolute path (symlinks resolved), ``None`` for object-store documents.
    ``path``: POSIX path below the folder or glob prefix it was found under, the bare name for an
    explicit file (what :class:`~folioflow.ocr.schema.SourceRef` calls ``path``; also used to mirror inputs
    into output folders). ``uri``: canonical URI (``file://``, ``s3://``, ``https://`` ...).
    ``argument``: the argument or source URL that produced it. ``size`` in bytes and ``mtime`` in
    POSIX seconds (``None`` where the store does not say), ``etag`` where the store gives one, all
    read at listing time. ``config``: the configured source it belongs to (name, tenant, metadata,
    passwords, storage options), ``None`` for command-line paths.
    """

    local_path: Path | None
    path: str
    uri: str
    argument: str
    size: int | None
    mtime: float | None
    display: str
    etag: str | None = None
    config: SourceConfig | None = field(default=None, compare=False, repr=False)

    @property
    def change_token(self) -> str:
        """What says the bytes may have changed without reading them: the etag when the store
        gives one, else ``size:mtime`` (an unchanged token lets the watch flow skip the read)."""
        return f"etag:{self.etag}" if self.etag else f"stat:{self.size}:{self.mtime}"

    @property
    def source_name(self) -> str | None:
        return self.config.name if self.config else None

    @property
    def tenant(self) -> str | None:
        return self.config.tenant if self.config else None

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self.config.metadata) if self.config else {}

    def password(self) -> str | None:
        """The configured source's password for this document, if any (``None`` otherwise)."""
        return self.config.password_for(self.path) if self.config else None

    @property
    def doc_id(self) -> str:
        """Stable document id: uuid5 of :attr:`uri` (see :func:`folioflow.ocr.ids.doc_id_for`)."""
        return doc_id_for(self.uri)

    def read_bytes(self) -> bytes:
        """The document's bytes. Raises ``OSError`` (vanished, unreadable, store unreachable:
        transient errors are ``OSError``/``TimeoutError``/``ConnectionError``, so callers may
        retry them) or :class:`ResourceLimitError` when the source's ``max_bytes`` is exceeded."""
        limit = self.config.max_bytes if self.config else None
        if limit is not None and self.size is not None and self.size > limit:
            raise ResourceLimitError(f"too large: {self.size} bytes > max_bytes {limit} of source {self.source_name}")
        if self.local_path is not None:
            return self.local_path.read_bytes()
        import fsspec

        if self.config is None:
            raise SourceAccessError(f"no source configuration to read {self.uri}")
        with fsspec.open(self.uri, "rb", **self.config.fs_options()) as fh:
            data = fh.read(limit + 1 if limit is not None else -1)
        if limit is not None and len(data) > limit:
            raise ResourceLimitError(f"too large: over max_bytes {limit} of source {self.source_name}")
        return data


#: The name the convert command and its brief use for a discovered file.
DiscoveredFile = SourceFile


@dataclass(frozen=True)
class SourceProblem:
    """An argument that yielded no document: ``error`` is a one-line reason."""

    argument: str
    error: str

    @property
    def display(self) -> str:
        return self.argument


@dataclass
class Discovery:
    """Result of :func:`discover`: ``files`` in stable order, ``errors`` for arguments that matched
    nothing, and ``roots``: the ``file://`` URIs of the folders walked (for pruning documents that
    disappeared from them). Iterating a discovery iterates its files."""

    files: list[SourceFile] = field(default_factory=list)
    errors: list[SourceProblem] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)

    def __iter__(self):
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def _supported(path: Path) -> bool:
    return path.suffix.lower() in SUPPORTED_SUFFIXES


def _walk(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            path = Path(folder) / name
            # a link to nothing is listed too: discover() reports it ("cannot read"), not skipped silently
            if not name.startswith(".") and _supported(path) and (path.is_file() or not path.exists()):
                found.append(path)
    return found


def _glob_base(pattern: str) -> Path:
    fixed = []
    for part in Path(pattern).parts:
        if _GLOB_CHARS & set(part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(".")


def _expand(argument: str) -> tuple[list[tuple[Path, str]], Path | None, str | None]:
    """(matches as (path, relative), folder root or None, error or None)."""
    path = Path(argument).expanduser()
    if _GLOB_CHARS & set(argument) and not path.exists():
        base = _glob_base(str(path))
        matches: list[tuple[Path, str]] = []
        for hit in glob.glob(str(path), recursive=True):
            hit_path = Path(hit)
            if hit_path.is_dir():
                matches += [(f, f.relative_to(base).as_posix()) for f in _walk(hit_path)]
            elif hit_path.is_file() and _supported(hit_path):
                matches.append((hit_path, hit_path.relative_to(base).as_posix()))
        return matches, None, None if matches else f"no supported file matches {argument!r}"
    if path.is_dir():
        return [(f, f.relative_to(path).as_posix()) for f in _walk(path)], path, None
    if path.is_file():
        return [(path, path.name)], None, None
    if path.exists():
        return [], None, f"not a regular file or folder: {argument}"
    return [], None, f"not found: {argument}"


def _fence(argument: str, root: Path | None) -> Path | None:
    """The folder a folder's or glob's files must resolve into (``None`` for an explicit file)."""
    if root is not None:
        return root.resolve()
    if _GLOB_CHARS & set(argument) and not Path(argument).expanduser().exists():
        return _glob_base(str(Path(argument).expanduser())).resolve()
    return None


def discover(paths: list[str]) -> Discovery:
    """Expand ``paths`` (files, folders, globs) into documents, following the module's rules.

    Never raises for a bad argument: missing paths and empty globs are returned in
    :attr:`Discovery.errors`.
    """
    result = Discovery()
    seen: set[Path] = set()
    for argument in paths:
        matches, root, error = _expand(argument)
        if error is not None:
            result.errors.append(SourceProblem(argument=argument, error=error))
            continue
        if root is not None:
            result.roots.append(canonical_uri(root))
        fence = _fence(argument, root)
        for path, relative in sorted(matches, key=lambda m: m[1]):
            try:
                resolved = path.resolve()
            except (RuntimeError, OSError) as exc:  # a link to itself: "Symlink loop from ..." (RuntimeError)
                result.errors.append(SourceProblem(argument=str(path), error=f"cannot resolve {path}: {exc}; left out"))
                continue
            if fence is not None and not resolved.is_relative_to(fence):  # a symlink leading out
                result.errors.append(SourceProblem(argument=str(path), error=f"escapes its root: {path} resolves "
                                                   f"outside {fence} (symlink); left out"))
                continue
            if resolved in seen:
                continue
            seen.add(resolved)
            try:
                stat = resolved.stat()
            except OSError as exc:
                result.errors.append(SourceProblem(argument=str(path), error=f"cannot read {path}: {exc.strerror or exc}"))
                continue
            display = str(path) if root is None else (Path(argument) / relative).as_posix()
            result.files.append(SourceFile(local_path=resolved, path=relative, uri=resolved.as_uri(), argument=argument,
                                           size=stat.st_size, mtime=stat.st_mtime, display=display))
    return result
