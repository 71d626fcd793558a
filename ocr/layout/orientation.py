"""Pages whose text runs sideways or upside down in display space.

A page drawn upright in user space but shown with ``/Rotate 90`` (or text set at 90/180/270
degrees) has its lines running down, left or up the display. Layout analysis works on upright
text, so :func:`upright_view` turns the page's content into a frame where the dominant reading
direction is left to right, and returns the map that brings boxes back to display space.

Vertical writing (Chinese and Japanese set in columns read top to bottom, columns right to left)
has upright glyphs that advance downwards: :func:`vertical_writing` finds it from the geometry of
consecutive characters, and it is read like text turned 90 degrees clockwise, whose following
lines also advance to the left (``upright_view(content, 90, upright_glyphs=True)``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise

from folioflow.ocr.layout.pdfpage import Char, PageContent, Rect

__all__ = ["dominant_angle", "upright_view", "vertical_writing"]

Box = tuple[float, float, float, float]

# reading direction (dx, dy) in display space (y down) for each angle
_DIRECTION = {0: (1.0, 0.0), 90: (0.0, 1.0), 180: (-1.0, 0.0), 270: (0.0, -1.0)}


def dominant_angle(chars: list[Char]) -> int:
    """The reading direction (0/90/180/270, clockwise degrees) of most visible characters."""
    if not any(c.angle for c in chars if c.angle and not c.invisible):  # all upright (or only hidden)
        return 0
    counts = Counter(c.angle for c in chars if not c.invisible and not c.text.isspace() and c.angle >= 0)
    return counts.most_common(1)[0][0] if counts else 0


def vertical_writing(chars: list[Char]) -> bool:
    """True when the page's visible upright characters are mostly (80%) CJK and, in content
    order, each one sits below the previous one in its column far more often (twice) than beside
    it: vertical writing (tategaki). Needs at least three such steps."""
    from folioflow.ocr.postprocess.lines import _is_cjk

    shown = [c for c in chars if c.upright and not c.invisible and not c.generated and not c.text.isspace()]
    if len(shown) < 4 or sum(_is_cjk(c.text[0]) for c in shown) < 0.8 * len(shown):
        return False
    down = across = 0
    for a, b in pairwise(shown):
        w, h = max(a.x1 - a.x0, 1e-6), max(a.y1 - a.y0, 1e-6)
        dx, dy = (b.x0 + b.x1 - a.x0 - a.x1) / 2, (b.y0 + b.y1 - a.y0 - a.y1) / 2
        if abs(dx) < 0.5 * w and 0.5 * h <= dy <= 2.0 * h:
            down += 1
        elif abs(dy) < 0.5 * h and 0.5 * w <= dx <= 2.0 * w:
            across += 1
    return down >= 3 and down > 2 * across


def upright_view(content: PageContent, angle: int,
                 upright_glyphs: bool = False) -> tuple[PageContent, Callable[[Box], Box]]:
    """``content`` re-expressed in a frame where text at ``angle`` reads left to right (size in
    that frame's points), and a function mapping boxes of that frame back to display space.
    ``upright_glyphs``: the page is vertical writing (see :func:`vertical_writing`; use with
    ``angle=90``): its upright characters are the ones that read along the new frame."""
    if angle == 0:
        return content, lambda box: box
    dx, dy = _DIRECTION[angle]
    nx, ny = -dy, dx  # the direction in which following lines advance
    corners = [(0.0, 0.0), (content.width, 0.0), (0.0, content.height), (content.width, content.height)]
    us = [x * dx + y * dy for x, y in corners]
    vs = [x * nx + y * ny for x, y in corners]
    u0, v0 = min(us), min(vs)

    def forward(x0: float, y0: float, x1: float, y1: float) -> Box:
        pts = [(x * dx + y * dy - u0, x * nx + y * ny - v0) for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))]
        return min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts)

    def back(box: Box) -> Box:
        u_0, v_0, u_1, v_1 = box
        pts = [((u + u0) * dx + (v + v0) * nx, (u + u0) * dy + (v + v0) * ny)
               for u, v in ((u_0, v_0), (u_1, v_0), (u_0, v_1), (u_1, v_1))]
        return min(p[0] for p in pts), min(p[1] for p in pts), max(p[0] for p in pts), max(p[1] for p in pts)

    chars = []
    for c in content.chars:
        box = forward(c.x0, c.y0, c.x1, c.y1)
        turned = -1 if c.angle < 0 else 0 if upright_glyphs and c.angle == 0 else (c.angle - angle) % 360
        chars.append(replace(c, x0=box[0], y0=box[1], x1=box[2], y1=box[3], angle=turned, upright=turned == 0))
    rects = [Rect(*forward(r.x0, r.y0, r.x1, r.y1), kind=r.kind, segments=r.segments)
             for r in content.paths + content.images]
    rotated = PageContent(width=max(us) - u0, height=max(vs) - v0, chars=chars,
                          paths=[r for r in rects if r.kind == "path"], images=[r for r in rects if r.kind == "image"])
    return rotated, back
