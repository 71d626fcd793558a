"""Map boxes from the image a model saw back to page points.

The engine renders a page (display space, ``/Rotate`` applied) and may turn the image clockwise by
``rotate`` degrees (orientation correction) before sending it. Parsers return boxes normalised to
[0, 1] of the *sent* image; :func:`image_box_to_page` undoes the turn and scales to points, giving
boxes in :mod:`folioflow.ocr.schema`'s page space (points, top-left origin, y down).
"""

from __future__ import annotations

from folioflow.ocr.schema import BBox

__all__ = ["unrotate_point", "image_box_to_page"]


def unrotate_point(u: float, v: float, rotate: int) -> tuple[float, float]:
    """Normalised point ``(u, v)`` of an image turned ``rotate`` degrees clockwise -> the same point
    in the unturned image. ``rotate`` must be 0, 90, 180 or 270 (``ValueError`` otherwise)."""
    rotate %= 360
    if rotate == 0:
        return u, v
    if rotate == 90:  # a clockwise quarter turn sends (x, y) to (1 - y, x)
        return v, 1.0 - u
    if rotate == 180:
        return 1.0 - u, 1.0 - v
    if rotate == 270:  # sends (x, y) to (y, 1 - x)
        return 1.0 - v, u
    raise ValueError(f"rotation must be a multiple of 90 degrees, got {rotate}")


def image_box_to_page(box: BBox, rotate: int, page_width: float, page_height: float) -> BBox:
    """A box normalised to the sent image -> page points (see module docstring)."""
    ax, ay = unrotate_point(box.x0, box.y0, rotate)
    bx, by = unrotate_point(box.x1, box.y1, rotate)
    x0, x1 = sorted((ax, bx))
    y0, y1 = sorted((ay, by))
    return BBox(x0=x0 * page_width, y0=y0 * page_height, x1=x1 * page_width, y1=y1 * page_height)
