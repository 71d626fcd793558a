"""DeepSeek-OCR (deepseek-ai/DeepSeek-OCR): Markdown with grounding tags (label + box per block).

Facts from DeepSeek-OCR's repository (``DeepSeek-OCR-vllm/config.py``, ``run_dpsk_ocr_pdf.py``) and
vLLM's DeepSeek-OCR recipe: prompt ``<image>\\n<|grounding|>Convert the document to markdown.`` (the
chat template supplies the image placeholder); temperature 0, ``max_tokens`` 8192, context 8192;
``skip_special_tokens=False`` so the grounding tags survive; the n-gram repetition guard
(``NGramPerReqLogitsProcessor``, loaded with ``--logits_processors``) configured per request through
``vllm_xargs``: ``ngram_size=30``, ``window_size=90``, ``whitelist_token_ids=[128821, 128822]``
(``<td>``, ``</td>``); served with ``--no-enable-prefix-caching --mm-processor-cache-gb 0``.
Resolution modes (``config.py``): tiny 512, small 640, base 1024, large 1280 (one view of that size)
and gundam (1024 global view + 640 tiles, cropped by the server's processor; the default). PDF pages
are rendered at 144 dpi in DeepSeek's PDF script. The script drops pages that loop without an end
token; folioflow retries them and, failing that, hands them to the fallback engine.
"""

from __future__ import annotations

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.parsers.grounding import parse_grounding
from folioflow.ocr.vlm.profiles.base import ImageSizing, Profile, Sampling

__all__ = ["PROMPT", "MODES", "NGRAM_GUARD", "deepseek_ocr_profile"]

PROMPT = "<|grounding|>Convert the document to markdown."

#: Resolution mode -> longest image side in pixels sent to the server (None: gundam, 144 dpi).
MODES: dict[str, int | None] = {"tiny": 512, "small": 640, "base": 1024, "large": 1280, "gundam": None}

NGRAM_GUARD = {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [128821, 128822]}


def deepseek_ocr_profile(variant: str | None = None) -> Profile:
    """The DeepSeek-OCR profile in resolution mode ``variant`` (default ``gundam``).
    Raises :class:`ConfigurationError` for an unknown mode."""
    mode = (variant or "gundam").lower()
    if mode not in MODES:
        raise ConfigurationError(
            f"unknown DeepSeek-OCR resolution mode {variant!r}; choose from {sorted(MODES)}"
        )
    side = MODES[mode]
    sizing = (
        ImageSizing(dpi=144, fmt="png")
        if side is None
        else ImageSizing(dpi=1000, max_long_side=side, fmt="png")
    )
    return Profile(
        name="deepseek-ocr" if mode == "gundam" else f"deepseek-ocr:{mode}",
        version="1",
        description=f"DeepSeek-OCR ({mode} mode): Markdown with <|ref|>/<|det|> grounding boxes",
        default_model="deepseek-ai/DeepSeek-OCR",
        served_model_name="deepseek-ocr",
        model_patterns=("deepseek-ocr", "deepseek_ocr"),
        params_b=3.0,
        prompt=PROMPT,
        image_first=True,
        sizing=sizing,
        max_tokens=8192,
        max_model_len=8192,
        max_num_seqs=100,
        ladder=(Sampling(temperature=0.0), Sampling(temperature=0.2), Sampling(temperature=0.4)),
        extra_body={"skip_special_tokens": False, "vllm_xargs": dict(NGRAM_GUARD)},
        serve_flags=(
            "--logits_processors",
            "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor",
            "--no-enable-prefix-caching",
            "--mm-processor-cache-gb",
            "0",
            "--gpu-memory-utilization",
            "0.9",
        ),
        parser=parse_grounding,
    )
