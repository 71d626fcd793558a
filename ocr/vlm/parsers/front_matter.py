"""olmOCR answers (YAML front matter + Markdown) -> Markdown + blocks + page facts.

Format (allenai/olmocr, ``build_no_anchoring_v4_yaml_prompt`` and ``train/front_matter.py``)::

    ---
    primary_language: en
    is_rotation_valid: True
    rotation_correction: 0
    is_table: False
    is_diagram: False
    ---
    Markdown text (tables as HTML, math as \\( \\) and \\[ \\])

All five keys are required; ``rotation_correction`` is one of 0/90/180/270. The YAML is read with
PyYAML (``safe_load``). olmOCR applies ``rotation_correction`` with PIL's ``Image.transpose(ROTATE_n)``
(counter-clockwise), and trains with the same convention, so the *clockwise* turn that makes the sent
image upright is ``(360 - rotation_correction) % 360`` (what :attr:`ParsedOutput.rotation_correction`
holds). YAML 1.1 reads the language code ``no`` (Norwegian) as ``False``: it is mapped back to "no".
"""

from __future__ import annotations

import yaml

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.vlm.parsers.base import ParsedOutput, join_blocks, normalise_math
from folioflow.ocr.vlm.parsers.markdown import split_markdown

__all__ = ["REQUIRED_KEYS", "parse_front_matter"]

REQUIRED_KEYS = ("primary_language", "is_rotation_valid", "rotation_correction", "is_table", "is_diagram")


def _flag(meta: dict, key: str) -> bool:
    value = meta[key]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise OutputValidationError(f"unparsable: olmOCR front matter {key}={value!r} is not a boolean")


def _split(text: str) -> tuple[str, str]:
    stripped = text.lstrip()
    if not stripped.startswith("---"):
        raise OutputValidationError("unparsable: olmOCR answer has no YAML front matter")
    end = stripped.find("\n---", 3)
    if end == -1:
        raise OutputValidationError("unparsable: olmOCR front matter is not closed by '---'")
    return stripped[3:end], stripped[end + 4 :]


def parse_front_matter(text: str) -> ParsedOutput:
    """Parse an olmOCR answer. Raises :class:`OutputValidationError` for a missing, unclosed or
    invalid front matter (missing key, non-boolean flag, rotation not in 0/90/180/270)."""
    head, body = _split(text)
    try:
        meta = yaml.safe_load(head) or {}
    except yaml.YAMLError as exc:
        raise OutputValidationError(
            f"unparsable: olmOCR front matter is not YAML ({str(exc).splitlines()[0]})"
        ) from exc
    if not isinstance(meta, dict):
        raise OutputValidationError("unparsable: olmOCR front matter is not a mapping")
    missing = [k for k in REQUIRED_KEYS if k not in meta]
    if missing:
        raise OutputValidationError(f"unparsable: olmOCR front matter lacks {', '.join(missing)}")
    try:
        correction = int(meta["rotation_correction"])
    except (TypeError, ValueError):
        correction = -1
    if correction not in (0, 90, 180, 270):
        raise OutputValidationError(
            f"unparsable: olmOCR rotation_correction={meta['rotation_correction']!r} is not 0, 90, 180 or 270"
        )
    language = meta["primary_language"]
    if language is False:
        language = "no"
    elif not isinstance(language, str) or not language.strip():
        language = None
    rotation_valid = _flag(meta, "is_rotation_valid")
    blocks = split_markdown(normalise_math(body.strip()))
    return ParsedOutput(
        markdown=join_blocks(blocks),
        blocks=blocks,
        rotation_correction=0 if rotation_valid else (360 - correction) % 360,
        attributes={
            "primary_language": language,
            "is_rotation_valid": rotation_valid,
            "rotation_correction": correction,
            "is_table": _flag(meta, "is_table"),
            "is_diagram": _flag(meta, "is_diagram"),
        },
    )
