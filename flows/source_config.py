"""Configured sources: where the ``ingest`` and ``watch`` flows find documents.

A source is one root (a local folder, a local glob, or an fsspec URL: ``s3://bucket/prefix``,
``gs://``, ``az://``, ``http(s)://``, ``memory://``) plus what applies to every document under it:
its name (recorded on every chunk as ``source``), tenant, metadata, include/exclude patterns and PDF
passwords. In the config file (see ``infra/ORCHESTRATION.md``)::

    sources:
      - name: contracts
        url: s3://legal-kb/contracts/
        tenant: acme
        include: ["**/*.pdf"]
        exclude: ["**/drafts/**"]
        passwords: {"nda-*.pdf": "${NDA_PASSWORD}"}
        storage_options: {endpoint_url: "http://minio:9000"}

Patterns are fnmatch-style globs matched against the path relative to the root (``**/`` also
matches zero folders, so ``**/*.pdf`` matches ``a.pdf``). Passwords and storage options are
secrets: they are held as :class:`~pydantic.SecretStr` or kept out of ``repr`` and never logged.
``${NAME}`` in a password or storage option value is read from the environment when the source is
opened, so config files need not hold secrets.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_serializer, field_validator

from folioflow.ocr.errors import ConfigurationError

__all__ = ["DEFAULT_INCLUDE", "SourceConfig", "expand_env", "matches"]

#: Documents taken from a source when it names no ``include`` patterns (case-insensitive suffixes).
DEFAULT_INCLUDE = ["**/*.pdf", "**/*.png", "**/*.jpg", "**/*.jpeg", "**/*.tif", "**/*.tiff", "**/*.heic", "**/*.heif",
                   "**/*.avif"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: Any) -> Any:
    """Replace ``${NAME}`` in strings with ``os.environ[NAME]``. Raises :class:`ConfigurationError`
    naming the variable when it is unset (the value itself is never part of the message)."""
    if not isinstance(value, str):
        return value

    def repl(match: re.Match) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise ConfigurationError(f"environment variable {name} is not set (referenced by a source)")
        return os.environ[name]

    return _ENV.sub(repl, value)


def _pattern_variants(pattern: str) -> list[str]:
    # fnmatch's "*" crosses "/", so "**/x" means "x at any depth >= 1"; add the depth-0 form.
    variants = [pattern]
    while pattern.startswith("**/"):
        pattern = pattern[3:]
        variants.append(pattern)
    return variants


def matches(path: str, patterns: list[str]) -> bool:
    """True when the relative POSIX ``path`` matches one of ``patterns`` (case-insensitive)."""
    lowered = path.lower()
    return any(fnmatch.fnmatchcase(lowered, variant.lower()) for p in patterns for variant in _pattern_variants(p))


class SourceConfig(BaseModel):
    """One configured source (see the module docstring).

    ``url``: local folder, local glob, or fsspec URL (``file://`` URLs are local folders).
    ``storage_options``: keyword arguments for the fsspec file system (endpoint, region, anon,
    credentials; values may use ``${ENV}``); kept out of ``repr`` and logs. ``recursive``: walk
    sub-folders. ``max_bytes``: documents larger than this are reported as failed, not read.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Source name recorded on each document and chunk (letters, digits, _.-)")
    url: str = Field(description="Folder, glob or fsspec URL of the source root")
    tenant: str | None = Field(default=None, description="Tenant recorded on every chunk of this source")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Extra metadata copied onto every document")
    include: list[str] = Field(default_factory=lambda: list(DEFAULT_INCLUDE), description="Globs of relative paths to take")
    exclude: list[str] = Field(default_factory=list, description="Globs of relative paths to leave out (beat include)")
    passwords: dict[str, SecretStr] = Field(default_factory=dict, description="PDF passwords by relative path or name glob")
    storage_options: dict[str, Any] = Field(default_factory=dict, repr=False, description="fsspec options (secret)")
    recursive: bool = True
    max_bytes: int = Field(default=2 << 30, ge=1, description="Largest document read, bytes")

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"source name {value!r} must be 1-64 letters, digits, '_', '.' or '-'")
        return value

    @field_validator("include", "exclude")
    @classmethod
    def _check_patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if pattern.startswith("/") or ".." in PurePosixPath(pattern).parts:
                raise ValueError(f"pattern {pattern!r} must be relative to the source root (no leading '/' or '..')")
        return value

    @field_serializer("storage_options")
    def _mask_options(self, value: dict[str, Any]) -> dict[str, str]:
        # Dumps (logs, Prefect parameters, reports) never show storage options' values.
        return {key: "**********" for key in value}

    @property
    def scheme(self) -> str:
        """``file`` for local sources, else the URL scheme (``s3``, ``gs``, ``az``, ``https`` ...)."""
        if "://" not in self.url:
            return "file"
        return self.url.split("://", 1)[0].lower()

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    def wanted(self, relative: str) -> bool:
        """Whether the document at ``relative`` (POSIX path below the root) belongs to the source."""
        return matches(relative, self.include) and not matches(relative, self.exclude)

    def password_for(self, relative: str) -> str | None:
        """The password whose glob matches ``relative`` or its file name (first match), with
        ``${ENV}`` expanded; ``None`` when none matches."""
        name = PurePosixPath(relative).name
        for pattern, secret in self.passwords.items():
            if matches(relative, [pattern]) or fnmatch.fnmatchcase(name.lower(), pattern.lower()):
                return expand_env(secret.get_secret_value())
        return None

    def fs_options(self) -> dict[str, Any]:
        """``storage_options`` with ``${ENV}`` expanded (for fsspec only; never log the result)."""
        return {key: expand_env(value) for key, value in self.storage_options.items()}
