"""The API server's own settings (environment prefix ``FOLIOFLOW_API_``), beside the run
:class:`~folioflow.flows.settings.Settings` that the server passes to searches and ingest runs."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from folioflow.ocr.errors import ConfigurationError

__all__ = ["ApiKey", "ApiSettings", "load_api_settings"]


class ApiKey(BaseModel):
    """One bearer API key. ``tenant``: the only tenant the key may search and ingest for (None: any
    tenant, named per request when tenancy is on); ``name``: a label for logs (never the key)."""

    key: SecretStr = Field(min_length=16, description="The bearer token (at least 16 characters)")
    tenant: str | None = None
    name: str | None = None


class ApiSettings(BaseSettings):
    """Settings of ``folioflow api`` (field descriptions document each). Environment:
    ``FOLIOFLOW_API_KEYS`` (a JSON list of ``{"key", "tenant", "name"}`` objects),
    ``FOLIOFLOW_API_MAX_UPLOAD_BYTES``, ``FOLIOFLOW_API_ALLOWED_ROOTS`` (JSON list of folders)..."""

    model_config = SettingsConfigDict(env_prefix="FOLIOFLOW_API_", extra="forbid")

    keys: list[ApiKey] = Field(default_factory=list, description="Bearer API keys; when any is set, every /v1 route requires one")
    max_upload_bytes: int = Field(default=100 * 1024 * 1024, ge=1, description="Largest request body accepted, bytes (413 above): any route's declared Content-Length, uploads and fetched URLs however they arrive")
    max_files: int = Field(default=20, ge=1, description="Files per upload request")
    max_ocr_pages: int = Field(default=50, ge=1, description="Pages that one POST /v1/ocr converts at most (413 above; narrow it with page_range)")
    allowed_roots: list[Path] = Field(default_factory=list, description="Server-side folders that POST /v1/documents may ingest by path (none by default)")
    upload_dir: Path | None = Field(default=None, description="Where uploaded documents are kept (default data_dir/uploads)")
    max_jobs: int = Field(default=1000, ge=1, description="Jobs remembered (finished jobs beyond this are forgotten, oldest first)")
    jobs_db: Path | None = Field(default=None, description="SQLite file of the jobs (default data_dir/api-jobs.sqlite); jobs unfinished when the server stopped are marked failed at its next start")
    ocr_job_pages: int = Field(default=10, ge=1, description="POST /v1/ocr converts documents of more selected pages than this as a job (202 and GET /v1/jobs/{id})")
    ocr_url_hosts: list[str] = Field(default_factory=list, description="Hosts POST /v1/ocr may fetch image_url from (exact names, or '*.example.com'); none by default")
    ocr_url_timeout: float = Field(default=30.0, gt=0, le=600, description="Timeout of fetching an image_url, seconds (connect, and between bytes)")
    ingest: Literal["local", "prefect"] = Field(default="local", description="Where ingest jobs run: local (the server's worker thread) or prefect (flow runs of prefect_deployment, run by the work pool's workers)")
    prefect_deployment: str = Field(default="ingest/folioflow-ingest", description="The deployment ingest jobs go to when ingest is prefect ('<flow>/<deployment>', as infra/prefect.yaml names it)")

    @field_validator("keys")
    @classmethod
    def _unique_keys(cls, value: list[ApiKey]) -> list[ApiKey]:
        secrets = [k.key.get_secret_value() for k in value]
        if len(set(secrets)) != len(secrets):
            raise ValueError("API keys must be unique")
        return value


    @field_validator("ocr_url_hosts")
    @classmethod
    def _hosts(cls, value: list[str]) -> list[str]:
        for host in value:
            if not _HOST.match(host):
                raise ValueError(f"not a host name: {host!r} (give names like 'docs.example.com' or '*.example.com')")
        return [h.lower() for h in value]

    @model_validator(mode="after")
    def _prefect(self) -> ApiSettings:
        if self.ingest == "prefect" and not _DEPLOYMENT.match(self.prefect_deployment):
            raise ValueError(f"prefect_deployment: {self.prefect_deployment!r} is not '<flow>/<deployment>' "
                             "(e.g. ingest/folioflow-ingest)")
        return self

    def host_allowed(self, host: str | None) -> bool:
        """Whether ``image_url`` may be fetched from ``host`` (:attr:`ocr_url_hosts`)."""
        if not host:
            return False
        host = host.lower().rstrip(".")
        return any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.ocr_url_hosts)


_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$|^\[[0-9a-fA-F:]+\]$")
_DEPLOYMENT = re.compile(r"^[^/\s]+/[^/\s]+$")


def load_api_settings(path: str | Path | None = None, **overrides: Any) -> ApiSettings:
    """:class:`ApiSettings` from a YAML file (``path``; its top level or its ``api`` section), the
    environment and ``overrides`` (``None`` values ignored); the environment beats the file.
    Raises :class:`ConfigurationError` naming the field on an invalid value (never the key)."""
    values: dict[str, Any] = {}
    if path:
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigurationError(f"cannot read API config {path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigurationError(f"API config {path}: expected a mapping at the top level")
        values.update(loaded.get("api", loaded))
    for name in ApiSettings.model_fields:
        if f"FOLIOFLOW_API_{name.upper()}" in os.environ:
            values.pop(name, None)
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ApiSettings(**values)
    except ValidationError as exc:  # one line per problem, without the input values (keys are secrets)
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigurationError(f"invalid API settings: {detail}") from None
