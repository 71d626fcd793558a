"""The chat-completion body for one page attempt (OpenAI-compatible, with vLLM's extensions)."""

from __future__ import annotations

from typing import Any

from folioflow.ocr.vlm.profiles.base import Profile

__all__ = ["build_body"]


def build_body(
    profile: Profile,
    data_url: str,
    attempt: int,
    *,
    max_tokens: int | None = None,
    guided: bool = False,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Request body (without ``model``, which the router sets) for ``attempt`` (0-based) on one image.

    One user message holds the image (``image_url`` part with a base64 data URL) and the profile's
    prompt, in the profile's order. Sampling comes from the profile's ladder; ``guided`` adds the
    profile's regex as vLLM structured outputs; ``extra`` fields are merged last (they win).
    """
    image = {"type": "image_url", "image_url": {"url": data_url}}
    text = {"type": "text", "text": profile.prompt}
    sampling = profile.sampling(attempt)
    body: dict[str, Any] = {
        "messages": [{"role": "user", "content": [image, text] if profile.image_first else [text, image]}],
        "max_tokens": max_tokens or profile.max_tokens,
        "temperature": sampling.temperature,
    }
    if sampling.top_p is not None:
        body["top_p"] = sampling.top_p
    for key, value in profile.extra_body.items():
        body[key] = dict(value) if isinstance(value, dict) else value
    if guided and profile.guided_regex:
        body["structured_outputs"] = {"regex": profile.guided_regex}
    body.update(extra or {})
    return body
