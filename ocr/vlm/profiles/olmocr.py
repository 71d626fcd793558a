"""olmOCR (allenai/olmocr): Markdown with a YAML front matter that reports language, rotation,
table and diagram flags.

Facts from olmOCR's repository (``olmocr/prompts/prompts.py`` ``build_no_anchoring_v4_yaml_prompt``,
``olmocr/pipeline.py``): the prompt below, sent *before* the image; pages rendered so the longest side
is 1288 px (``--target_longest_image_dim``); ``max_tokens`` 8000; the retry ladder
``TEMPERATURE_BY_ATTEMPT = [0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0]``; answers with
``finish_reason != "stop"`` are invalid; a page reported as wrongly rotated is re-rendered with the
reported correction and retried; optional guided decoding with the front-matter regex below; served
with ``--max-model-len 16384 --limit-mm-per-prompt '{"video": 0}'``. Default checkpoint
``allenai/olmOCR-2-7B-1025-FP8`` (Qwen2.5-VL-7B).
"""

from __future__ import annotations

from folioflow.ocr.vlm.parsers.front_matter import parse_front_matter
from folioflow.ocr.vlm.profiles.base import ImageSizing, Profile, Sampling

__all__ = ["PROMPT", "FRONT_MATTER_REGEX", "LADDER", "olmocr_profile"]

# The prompt olmOCR 2 was trained with (its wording is part of the model's interface).
PROMPT = (
    "Attached is one page of a document that you must process. "
    "Just return the plain text representation of this document as if you were reading it naturally. "
    "Convert equations to LateX and tables to HTML.\n"
    "If there are any figures or charts, label them with the following markdown syntax "
    "![Alt text describing the contents of the figure](page_startx_starty_width_height.png)\n"
    "Return your output as markdown, with a front matter section on top specifying values for the "
    "primary_language, is_rotation_valid, rotation_correction, is_table, and is_diagram parameters."
)

#: Structured-output regex for the front matter (olmOCR's ``--guided_decoding``).
FRONT_MATTER_REGEX = (
    r"---\nprimary_language: (?:[a-z]{2}|null)\nis_rotation_valid: (?:True|False|true|false)\n"
    r"rotation_correction: (?:0|90|180|270)\nis_table: (?:True|False|true|false)\n"
    r"is_diagram: (?:True|False|true|false)\n(?:---|---\n[\s\S]+)"
)

LADDER = tuple(Sampling(temperature=t) for t in (0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0))


def olmocr_profile(variant: str | None = None) -> Profile:
    """The olmOCR profile (no variants)."""
    return Profile(
        name="olmocr",
        version="1",
        description="olmOCR 2 (allenai/olmocr): Markdown with YAML front matter "
        "(language, rotation, table/diagram)",
        default_model="allenai/olmOCR-2-7B-1025-FP8",
        served_model_name="olmocr",
        model_patterns=("olmocr",),
        params_b=8.3,
        prompt=PROMPT,
        image_first=False,
        sizing=ImageSizing(dpi=1000, max_long_side=1288, fmt="png"),
        max_tokens=8000,
        max_model_len=16384,
        max_num_seqs=128,
        ladder=LADDER,
        guided_regex=FRONT_MATTER_REGEX,
        reports_rotation=True,
        serve_flags=("--gpu-memory-utilization", "0.9", "--limit-mm-per-prompt", '{"video": 0}'),
        parser=parse_front_matter,
    )
