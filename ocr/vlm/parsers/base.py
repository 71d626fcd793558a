"""What every output parser returns, and the helpers they share.

A parser turns one raw model answer into :class:`ParsedOutput`: the page's Markdown, its blocks in
reading order and what the model said about the page (language, rotation...). Bounding boxes in
``ParsedOutput.blocks`` are **normalised to [0, 1] of the image as it was sent** (x right, y down);
the engine maps them to page points (undoing any rotation it applied), see
:func:`folioflow.ocr.vlm.geometry.image_box_to_page`.

Parsers raise :class:`~folioflow.ocr.errors.OutputValidationError` with a one-line reason when the answer
cannot be used (no recognisable structure, broken front matter, ...); they never return a page that
silently lost content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from folioflow.ocr.schema import BBox, Block

__all__ = ["ParsedOutput", "normalised_box", "join_blocks", "heading_level", "normalise_math"]


@dataclass
class ParsedOutput:
    """One parsed answer.

    ``markdown``: the page's Markdown (blocks joined by blank lines).
    ``blocks``: reading order; ``bbox`` normalised to [0, 1] of the sent image, or ``None``.
    ``rotation_correction``: clockwise degrees (0/90/180/270) the *sent image* must turn to read
    upright, when the model reports it (olmOCR); ``None`` when it does not say.
    ``attributes``: what the model reported about the page (``primary_language``, ``is_table``...).
    """

    markdown: str
    blocks: list[Block] = field(default_factory=list)
    rotation_correction: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


def normalised_box(coords: list[float] | tuple[float, ...], scale: float) -> BBox | None:
    """A box from ``[x0, y0, x1, y1]`` on a ``0..scale`` grid, normalised to [0, 1] and clamped.

    Returns ``None`` for anything that is not four numbers or has no area after clamping (models
    sometimes emit ``[0, 0, 0, 0]`` or swapped corners; swapped corners are reordered).
    """
    if len(coords) != 4:
        return None
    try:
        x0, y0, x1, y1 = (min(max(float(c) / scale, 0.0), 1.0) for c in coords)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    if x1 - x0 <= 0 or y1 - y0 <= 0:
        return None
    return BBox(x0=x0, y0=y0, x1=x1, y1=y1)


def join_blocks(blocks: list[Block]) -> str:
    """Page Markdown: the non-empty block texts joined by one blank line."""
    return "\n\n".join(b.text.strip() for b in blocks if b.text.strip())


def heading_level(text: str) -> int | None:
    """Level (1-6) of an ATX heading line such as ``## Title``; ``None`` if ``text`` is not one."""
    stripped = text.lstrip()
    hashes = len(stripped) - len(stripped.lstrip("#"))
    if 1 <= hashes <= 6 and stripped[hashes : hashes + 1] in (" ", ""):
        return hashes
    return None


_DISPLAY_MATH = re.compile(r"\\\[(.+?)\\\]", re.DOTALL)
_INLINE_MATH = re.compile(r"\\\((.+?)\\\)", re.DOTALL)


def normalise_math(text: str) -> str:
    r"""Rewrite LaTeX delimiters to the Markdown ones folioflow uses: ``\[ x \]`` -> ``$$ x $$`` (own
    lines) and ``\( x \)`` -> ``$x$`` (olmOCR and DeepSeek-OCR write the former, chunkers and
    renderers read the latter)."""
    text = _DISPLAY_MATH.sub(lambda m: "$$\n" + m.group(1).strip() + "\n$$", text)
    return _INLINE_MATH.sub(lambda m: "$" + m.group(1).strip() + "$", text)
