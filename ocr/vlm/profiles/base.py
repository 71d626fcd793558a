"""What folioflow needs to know about one document VLM: :class:`Profile`.

A profile is plain data plus an output parser: the prompt, how to size the page image, how many
tokens to allow, the sampling of each attempt (the retry *temperature ladder*), extra request fields
the model's vLLM integration expects, the ``vllm serve`` flags that suit it, and the parser that turns
its raw answer into Markdown and blocks (see :mod:`folioflow.ocr.vlm.parsers`).

Adding a model = writing one module in ``ocr/vlm/profiles/`` that builds a :class:`Profile` and calls
:func:`folioflow.ocr.vlm.profiles.register_profile` (see ``ocr/vlm/profiles/README.md``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from folioflow.ocr.vlm.parsers.base import ParsedOutput

__all__ = ["ImageSizing", "Sampling", "Profile"]


class ImageSizing(BaseModel):
    """How a page is rendered for the model.

    The render scale starts at ``dpi``; ``min_short_side`` raises it so the shorter side has at least
    that many pixels; then ``max_long_side`` and ``max_pixels`` lower it (longest side in pixels,
    width*height in pixels). ``fmt`` is the encoding sent in the data URL (``png`` is lossless;
    ``jpeg`` is 5-10x smaller and faster to encode, at ``jpeg_quality``).
    """

    model_config = ConfigDict(frozen=True)

    dpi: float = 150.0
    min_short_side: int | None = None
    max_long_side: int | None = None
    max_pixels: int | None = None
    fmt: Literal["png", "jpeg"] = "png"
    jpeg_quality: int = 90

    def scale_for(self, width_pt: float, height_pt: float) -> float:
        """Render scale (pixels per point) for a page of ``width_pt`` x ``height_pt`` points."""
        w, h = max(width_pt, 1e-6), max(height_pt, 1e-6)
        scale = self.dpi / 72.0
        if self.min_short_side:
            scale = max(scale, self.min_short_side / min(w, h))
        if self.max_long_side:
            scale = min(scale, self.max_long_side / max(w, h))
        if self.max_pixels:
            scale = min(scale, math.sqrt(self.max_pixels / (w * h)))
        return scale


class Sampling(BaseModel):
    """Sampling of one attempt: ``temperature`` and optional ``top_p``."""

    model_config = ConfigDict(frozen=True)

    temperature: float = 0.0
    top_p: float | None = None


class Profile(BaseModel):
    """A document VLM as folioflow drives it.

    ``name``: registry key (``chandra``, ``deepseek-ocr``, ``olmocr``, ``markdown``).
    ``version``: bump when the prompt, sizing or parsing changes meaning (part of the OCR cache key).
    ``default_model``: Hugging Face id that ``folioflow ocr serve --model NAME`` serves.
    ``served_model_name``: the name the server announces (``--served-model-name``).
    ``model_patterns``: lowercase substrings; a served model id must contain one of them to be
    accepted for this profile (empty = any model, the generic profile).
    ``params_b``: model size in billions of parameters (<= 9 -> one replica per GPU by default).
    ``prompt``: the user text sent with the image; ``image_first``: image part before the text.
    ``ladder``: sampling per attempt; attempt ``i`` uses ``ladder[min(i, len-1)]``.
    ``extra_body``: extra request fields (vLLM sampling extensions such as ``skip_special_tokens``).
    ``max_model_len``/``max_num_seqs``: served context and batch size (``vllm serve`` flags); the
    client keeps ``max_num_seqs`` requests in flight per endpoint unless told or shown otherwise.
    ``guided_regex``: optional regex for vLLM structured outputs (the answer format, e.g. olmOCR's
    front matter), sent when ``VlmOptions.guided_decoding`` is on.
    ``serve_flags``: recommended ``vllm serve`` flags (without model, host, port, parallelism,
    ``--max-model-len`` and ``--max-num-seqs``, which the launcher adds from the fields above).
    ``reports_rotation``: the parser reports a rotation correction (olmOCR).
    ``parser``: ``raw text -> ParsedOutput``; raises :class:`~folioflow.ocr.errors.OutputValidationError`.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    version: str = "1"
    description: str = ""
    default_model: str | None = None
    served_model_name: str | None = None
    model_patterns: tuple[str, ...] = ()
    params_b: float = 7.0
    prompt: str
    image_first: bool = True
    sizing: ImageSizing = Field(default_factory=ImageSizing)
    max_tokens: int = 8192
    max_model_len: int = 16384
    max_num_seqs: int = 64
    guided_regex: str | None = None
    ladder: tuple[Sampling, ...] = (Sampling(temperature=0.0),)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    serve_flags: tuple[str, ...] = ()
    reports_rotation: bool = False
    parser: Callable[[str], ParsedOutput]

    def sampling(self, attempt: int) -> Sampling:
        """Sampling of 0-based ``attempt`` (the last rung repeats)."""
        return self.ladder[min(attempt, len(self.ladder) - 1)]

    def matches_model(self, model_id: str) -> bool:
        """True when a served model id fits this profile (see ``model_patterns``)."""
        if not self.model_patterns:
            return True
        lowered = model_id.lower()
        return any(p in lowered for p in self.model_patterns)

    def fingerprint(self) -> str:
        """Short hash of everything that changes the output: prompt, sizing, tokens, ladder, extras."""
        payload = json.dumps(
            {
                "version": self.version,
                "prompt": self.prompt,
                "sizing": self.sizing.model_dump(),
                "max_tokens": self.max_tokens,
                "ladder": [s.model_dump() for s in self.ladder],
                "extra": self.extra_body,
                "image_first": self.image_first,
                "regex": self.guided_regex,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]
