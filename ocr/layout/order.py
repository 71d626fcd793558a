"""Reading order by recursive XY-cut (Nagy & Seth, 1984) over line boxes.

At each level the region is first cut at horizontal whitespace bands (taller than half a line)
that span the whole region, top to bottom; a region without one is cut at vertical gutters
(at least one em wide and crossed by no line), left to right (right to left on right-to-left
pages), unless what lies left of the gutter is only the labels of a hanging-indent list, each level
with a line on its right (then each label is read just before its line). A region with neither is a
leaf: its lines row by row, top to bottom, each row left to right. Full-width
titles above two columns therefore come first, then the left column, then the right one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Protocol, TypeVar

__all__ = ["Boxed", "reading_order"]


class Boxed(Protocol):
    x0: float
    y0: float
    x1: float
    y1: float


T = TypeVar("T", bound=Boxed)


def _gaps(intervals: list[tuple[float, float]], min_gap: float) -> list[float]:
    """Cut positions (gap midpoints) between merged intervals where the gap >= ``min_gap``."""
    cuts = []
    intervals = sorted(intervals)
    reach = intervals[0][1]
    for a, b in intervals[1:]:
        if a - reach >= min_gap:
            cuts.append((a + reach) / 2)
        reach = max(reach, b)
    return cuts


def _split(items: list[T], cuts: list[float], axis: int) -> list[list[T]]:
    groups: list[list[T]] = [[] for _ in range(len(cuts) + 1)]
    for it in items:
        centre = (it.y0 + it.y1) / 2 if axis == 1 else (it.x0 + it.x1) / 2
        k = sum(1 for c in cuts if centre > c)
        groups[k].append(it)
    return [g for g in groups if g]


def _order(items: list[T], line_height: float, em: float, rtl: bool, depth: int) -> list[T]:
    if len(items) <= 1 or depth > 40:
        return sorted(items, key=lambda it: (round(it.y0, 1), it.x0))
    ycuts = _gaps([(it.y0, it.y1) for it in items], 0.5 * line_height)
    if ycuts:
        return [x for g in _split(items, ycuts, 1) for x in _order(g, line_height, em, rtl, depth + 1)]
    xcuts = _gaps([(it.x0, it.x1) for it in items], max(em, 6.0))
    if xcuts:
        groups = _split(items, xcuts, 0)
        if _hanging_labels(groups, line_height, em):
            return _before_their_lines(groups[0], _order([x for g in groups[1:] for x in g], line_height, em, rtl,
                                                         depth + 1))
        if rtl:
            groups.reverse()
        return [x for g in groups for x in _order(g, line_height, em, rtl, depth + 1)]
    return _by_rows(items, line_height)


def _centre(it: Boxed) -> float:
    """The vertical centre of ``it``, in points."""
    return (it.y0 + it.y1) / 2


def _by_rows(items: list[T], line_height: float) -> list[T]:
    """``items`` row by row, top to bottom, each row left to right: a row takes the items whose
    vertical centres lie within half a line of its first (topmost) item's. (Rounding centres down
    to half-line bands split a row whenever a band edge fell between a label's centre and its
    text's, 0.1 pt apart: "Governing Law. This ..." then read before its "B.".)"""
    rows: list[list[T]] = []
    anchor = 0.0
    for it in sorted(items, key=_centre):
        centre = _centre(it)
        if rows and centre - anchor < 0.5 * line_height:
            rows[-1].append(it)
            continue
        rows.append([it])
        anchor = centre
    return [it for row in rows for it in sorted(row, key=lambda it: it.x0)]


#: Widest a hanging list label ("3.", "A.", "(iv)") may be, in ems.
LABEL_EMS = 2.5


def _hanging_labels(groups: list[list[T]], line_height: float, em: float) -> bool:
    """Whether a vertical cut's left group is no column but the labels of a hanging-indent list:
    every item in it at most :data:`LABEL_EMS` ems wide and level with an item of the next group
    (their vertical centres less than half a line apart). Each label then reads before the text of
    its row ("3." | "Indemnification. Gridiron shall ..."), not as a column of numbers first."""
    if len(groups) < 2:
        return False
    labels, text = groups[0], groups[1]
    return all(it.x1 - it.x0 <= LABEL_EMS * em and any(
        abs(_centre(it) - _centre(other)) < 0.5 * line_height for other in text) for it in labels)


def _before_their_lines(labels: list[T], ordered: list[T]) -> list[T]:
    """``ordered`` with each of ``labels`` put just before the item whose vertical centre is
    nearest its own: the line it labels (labels of one line keep their top-to-bottom order)."""
    before: dict[int, list[T]] = {}
    for label in sorted(labels, key=_centre):
        k = min(range(len(ordered)), key=lambda k: abs(_centre(ordered[k]) - _centre(label)))
        before.setdefault(k, []).append(label)
    return [x for k, it in enumerate(ordered) for x in (*before.get(k, ()), it)]


def reading_order(items: Sequence[T], line_height: float | None = None, em: float | None = None,
                  rtl: bool = False) -> list[T]:
    """Return ``items`` (anything with ``x0, y0, x1, y1`` in display points) in reading order.

    ``line_height``: typical line height in points (default: median item height);
    ``em``: body font size in points (default: the same); ``rtl``: columns right to left.
    """
    items = list(items)
    if not items:
        return []
    heights = [it.y1 - it.y0 for it in items if it.y1 > it.y0]
    lh = line_height or (statistics.median(heights) if heights else 10.0)
    return _order(items, lh, em or lh, rtl, 0)
