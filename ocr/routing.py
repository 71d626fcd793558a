"""Which engine converts a page: the routing rule of :class:`~folioflow.ocr.converter.DocumentConverter`.

=========  =====================================================================================
mode       route
=========  =====================================================================================
``auto``   without a VLM: ``text`` when the text layer is usable, else ``ocr`` (CPU OCR).
           with a VLM: ``text`` only when the text layer is usable and the page has no table,
           display formula or image; every other page goes to ``vlm``.
``text``   ``text`` always (pages with an unusable text layer fail with the reason).
``ocr``    ``ocr`` always.
``vlm``    ``vlm`` always.
=========  =====================================================================================

A VLM page that fails falls back to the *embedded* route: ``text`` when usable, else ``ocr``.
"""

from __future__ import annotations

from typing import Literal

from folioflow.ocr.engines.text_layer import TextLayerAssessment

__all__ = ["Route", "choose_route", "embedded_route"]

Route = Literal["text", "ocr", "vlm"]


def embedded_route(assessment: TextLayerAssessment | None) -> Route:
    """The route without a VLM: the text layer when usable, else CPU OCR."""
    return "text" if assessment is not None and assessment.usable else "ocr"


def choose_route(mode: str, assessment: TextLayerAssessment | None, has_vlm: bool) -> tuple[Route, str]:
    """Return ``(route, why)`` for one page. ``assessment`` is ``None`` when it was not computed
    (modes ``ocr``/``vlm``). ``why`` is a short reason recorded on the page."""
    if mode in ("text", "ocr", "vlm"):
        return mode, f"engine={mode}"  # type: ignore[return-value]
    if assessment is None or not assessment.usable:
        why = f"text layer unusable: {assessment.reason if assessment else 'not a PDF'}"
        return ("vlm" if has_vlm else "ocr"), why
    if not has_vlm:
        return "text", "text layer usable"
    rich = [name for name, flag in (("table", assessment.has_table), ("formula", assessment.has_formula),
                                    ("image", assessment.has_image)) if flag]
    if rich:
        return "vlm", "page has " + ", ".join(rich)
    return "text", "text layer usable, plain text page"
