"""Settings of the VLM OCR path (:class:`VlmOptions`)."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

__all__ = ["VlmOptions"]


class VlmOptions(BaseModel):
    """How :class:`~folioflow.ocr.vlm.engine.VlmEngine` reaches its servers and treats answers.

    Defaults suit one GPU server per endpoint; every figure is per endpoint unless said otherwise.
    """

    model_config = ConfigDict(extra="forbid")

    endpoints: list[str] = Field(
        min_length=1, description="OpenAI-compatible base URLs, e.g. http://gpu1:8000/v1"
    )
    profile: str = Field(
        default="auto",
        description="Profile name (chandra, deepseek-ocr[:mode], olmocr, markdown) "
        "or 'auto': chosen from the served model id",
    )
    model: str | None = Field(
        default=None,
        description="Served model id to request; default: the served id that matches the profile",
    )
    api_key: SecretStr | None = Field(
        default=None, description="Bearer token for the endpoints, if they need one"
    )
    max_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="Requests in flight per endpoint; default: "
        "the server's max-num-seqs when /metrics shows it, else the profile's",
    )
    request_timeout_s: float = Field(default=600.0, gt=0, description="Seconds one page request may take")
    connect_timeout_s: float = Field(default=10.0, gt=0)
    health_timeout_s: float = Field(default=5.0, gt=0, description="Timeout of /health, /v1/models, /metrics")
    probe_interval_s: float = Field(
        default=5.0, gt=0, description="Seconds between health probes of a down endpoint"
    )
    unavailable_timeout_s: float = Field(
        default=120.0,
        ge=0,
        description="How long pages wait for an endpoint to come back when all are down before they fail",
    )
    failovers: int | None = Field(
        default=None,
        ge=0,
        description="Times one request moves to another endpoint "
        "after endpoint failures; default: number of endpoints + 2",
    )
    max_attempts: int | None = Field(
        default=None,
        ge=1,
        description="Answers tried per page (temperature ladder, "
        "rotation re-renders); default: the profile's ladder length",
    )
    max_tokens: int | None = Field(default=None, ge=1, description="Override the profile's max tokens")
    max_image_width: int | None = Field(
        default=None,
        ge=64,
        description="Cap on the longer side of page images, in pixels (on top of the profile's sizing)",
    )
    image_format: Literal["png", "jpeg"] | None = Field(
        default=None, description="Override the profile's encoding"
    )
    guided_decoding: bool = Field(
        default=False,
        description="Constrain answers with the profile's regex (vLLM structured outputs), when it has one",
    )
    orientation_check: Literal["off", "auto", "always"] = Field(
        default="auto",
        description="CPU orientation check before the first request: 'auto' = pages without a "
        "text layer (scans, images) for profiles that do not report rotation themselves",
    )
    render_workers: int = Field(
        default_factory=lambda: max(1, min(4, (os.cpu_count() or 2) - 1)),
        ge=0,
        description="Rendering processes (0 = render in threads of this process)",
    )
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra request fields, merged last")

    @field_validator("endpoints")
    @classmethod
    def _no_blank(cls, value: list[str]) -> list[str]:
        cleaned = [v.strip() for v in value if v and v.strip()]
        if not cleaned:
            raise ValueError("at least one endpoint URL is required")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("endpoint URLs must be distinct")
        return cleaned
