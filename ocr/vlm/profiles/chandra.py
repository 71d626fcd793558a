"""chandra (datalab-to/chandra): HTML layout blocks with boxes, tables with spans, math in ``<math>``.

Facts from chandra's repository (``chandra/prompts.py``, ``settings.py``, ``model/util.py``,
``model/vllm.py``, ``scripts/vllm.py``): the layout prompt below (boxes on a 0-1024 grid,
``BBOX_SCALE``); pages rendered at 192 dpi with the shorter side at least 1024 px, then scaled down
to at most 3072x2048 pixels of area; ``MAX_OUTPUT_TOKENS`` 12384; first attempt at temperature 0 /
top_p 0.1, retries at 0.3 / 0.95; served with ``--max-num-seqs 32 --max-model-len 32768
--max-num-batched-tokens 65536``, bfloat16. chandra is a ~9B Qwen3-VL fine-tune.
"""

from __future__ import annotations

from folioflow.ocr.vlm.parsers.html_layout import make_html_layout_parser
from folioflow.ocr.vlm.profiles.base import ImageSizing, Profile, Sampling

__all__ = ["BBOX_SCALE", "LAYOUT_PROMPT", "chandra_profile"]

BBOX_SCALE = 1024

_TAGS = [
    "math",
    "br",
    "i",
    "b",
    "u",
    "del",
    "sup",
    "sub",
    "table",
    "tr",
    "td",
    "p",
    "th",
    "div",
    "pre",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "ul",
    "ol",
    "li",
    "input",
    "a",
    "span",
    "img",
    "hr",
    "tbody",
    "small",
    "caption",
    "strong",
    "thead",
    "big",
    "code",
]
_ATTRIBUTES = [
    "class",
    "colspan",
    "rowspan",
    "display",
    "checked",
    "type",
    "border",
    "value",
    "style",
    "href",
    "alt",
    "align",
]
_LABELS = [
    "Caption",
    "Footnote",
    "Equation-Block",
    "List-Group",
    "Page-Header",
    "Page-Footer",
    "Image",
    "Section-Header",
    "Table",
    "Text",
    "Complex-Block",
    "Code-Block",
    "Form",
    "Table-Of-Contents",
    "Figure",
]

# The prompt chandra was trained with (its wording is part of the model's interface).
LAYOUT_PROMPT = (
    "OCR this image to HTML, arranged as layout blocks.  "
    "Each layout block should be a div with the data-bbox "
    "attribute representing the bounding box of the block in [x0, y0, x1, y1] format.  Bboxes are normalized "
    f"0-{BBOX_SCALE}. The data-label attribute is the label for the block.\n\n"
    "Use the following labels:\n" + "\n".join(f"- {label}" for label in _LABELS) + "\n\n"
    f"Only use these tags {_TAGS}, and these attributes {_ATTRIBUTES}.\n\n"
    "Guidelines:\n"
    "* Inline math: Surround math with <math>...</math> tags. Math expressions should be rendered in "
    "KaTeX-compatible LaTeX. Use display for block math.\n"
    "* Tables: Use colspan and rowspan attributes to match table structure.\n"
    "* Formatting: Maintain consistent formatting with the image, including spacing, indentation, "
    "subscripts/superscripts, and special characters.\n"
    "* Images: Include a description of any images in the alt attribute of an <img> tag. Do not fill out "
    "the src property.\n"
    "* Forms: Mark checkboxes and radio buttons properly.\n"
    "* Text: join lines together properly into paragraphs using <p>...</p> tags.  Use <br> tags for line "
    "breaks within paragraphs, but only when absolutely necessary to maintain meaning.\n"
    "* Use the simplest possible HTML structure that accurately represents the content of the block.\n"
    "* Make sure the text is accurate and easy for a human to read and interpret.  Reading order should be "
    "correct and natural."
)


def chandra_profile(variant: str | None = None) -> Profile:
    """The chandra profile (no variants)."""
    return Profile(
        name="chandra",
        version="1",
        description="chandra (datalab-to/chandra): HTML layout blocks with boxes; tables keep spans",
        default_model="datalab-to/chandra",
        served_model_name="chandra",
        model_patterns=("chandra",),
        params_b=9.0,
        prompt=LAYOUT_PROMPT,
        image_first=True,
        sizing=ImageSizing(dpi=192, min_short_side=1024, max_pixels=3072 * 2048, fmt="png"),
        max_tokens=12384,
        max_model_len=32768,
        max_num_seqs=32,
        ladder=(
            Sampling(temperature=0.0, top_p=0.1),
            Sampling(temperature=0.3, top_p=0.95),
            Sampling(temperature=0.3, top_p=0.95),
            Sampling(temperature=0.6, top_p=0.95),
        ),
        serve_flags=(
            "--dtype",
            "bfloat16",
            "--max-num-batched-tokens",
            "65536",
            "--gpu-memory-utilization",
            "0.9",
            "--limit-mm-per-prompt",
            '{"video": 0}',
        ),
        parser=make_html_layout_parser(BBOX_SCALE),
    )
