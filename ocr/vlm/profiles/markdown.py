"""Generic profile: any chat VLM served by vLLM (Qwen2.5-VL, Qwen3-VL, InternVL, ...) asked for
Markdown. No boxes (plain Markdown has none); blocks come from the Markdown structure."""

from __future__ import annotations

from folioflow.ocr.vlm.parsers.markdown import parse_markdown
from folioflow.ocr.vlm.profiles.base import ImageSizing, Profile, Sampling

__all__ = ["PROMPT", "markdown_profile"]

PROMPT = (
    "Convert this document page to Markdown in natural reading order. "
    "Write headings with #, lists with -, tables as HTML <table> with colspan and rowspan where cells span, "
    "inline math as $...$ and display math as $$...$$, and each figure as ![short description](). "
    "Keep every number, date and name exactly as printed. "
    "Output only the page content, without comments or code fences."
)


def markdown_profile(variant: str | None = None) -> Profile:
    """The generic Markdown profile (no variants)."""
    return Profile(
        name="markdown",
        version="1",
        description="Any chat VLM asked for Markdown (no boxes)",
        default_model=None,
        served_model_name=None,
        model_patterns=(),
        params_b=7.0,
        prompt=PROMPT,
        image_first=True,
        sizing=ImageSizing(dpi=150, max_long_side=1600, fmt="png"),
        max_tokens=4096,
        max_model_len=16384,
        max_num_seqs=64,
        ladder=(
            Sampling(temperature=0.0),
            Sampling(temperature=0.2, top_p=0.95),
            Sampling(temperature=0.5, top_p=0.95),
        ),
        serve_flags=("--gpu-memory-utilization", "0.9"),
        parser=parse_markdown,
    )
