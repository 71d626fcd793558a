"""Reading order of page items (text lines, tables, figures) by recursive XY-cut.

The recursive XY-cut (Nagy & Seth 1984; Ha, Haralick & Phillips 1995) splits a set of boxes at
empty bands of their projections: a vertical cut at a white gap running the full height of the
region separates columns, a horizontal cut separates stacked parts. We prefer a column cut when
both sides look like text columns (several lines, lines wider than a quarter of the region), so
two columns whose paragraph breaks happen to align are still read column by column; otherwise the
widest horizontal gap is cut first, which keeps full-width titles and tables above or below the
columns they introduce.
"""

from __future__ import annotations

from folioflow.ocr.postprocess.lines import Box, median

__all__ = ["row_sort", "xy_cut"]


def _gaps(intervals: list[tuple[float, float]], min_gap: float) -> list[tuple[float, float]]:
    """Empty bands (start, end) at least ``min_gap`` wide between the union of ``intervals``."""
    gaps = []
    ordered = sorted(intervals)
    reach = ordered[0][1]
    for start, end in ordered[1:]:
        if start - reach >= min_gap:
            gaps.append((reach, start))
        reach = max(reach, end)
    return gaps


def xy_cut(boxes: list[Box], min_col_gap: float, min_row_gap: float, prose: list[bool] | None = None) -> list[list[int]]:
    """Group ``boxes`` (x0, y0, x1, y1) into reading-ordered leaves of indices.

    Leaves come in reading order; inside a leaf indices are sorted top-to-bottom (then left to
    right). ``min_col_gap``/``min_row_gap``: narrowest gaps (same units as the boxes) that count as
    a column gutter / a vertical separation. ``prose[i]``: box ``i`` is running text (a line of
    several words, a table, a figure); columns are read down only when most of their boxes are
    prose, so label/value forms read across. Default: all prose.
    """
    out: list[list[int]] = []
    flags = list(prose) if prose is not None else [True] * len(boxes)
    _cut(list(range(len(boxes))), boxes, min_col_gap, min_row_gap, out, 0, flags)
    return out


def _cut(idx: list[int], boxes: list[Box], col_gap: float, row_gap: float, out: list[list[int]], depth: int,
         prose: list[bool]) -> None:
    if len(idx) <= 1 or depth > 40:
        if idx:
            out.append(row_sort(idx, boxes))
        return
    x0 = min(boxes[i][0] for i in idx)
    x1 = max(boxes[i][2] for i in idx)
    width = max(x1 - x0, 1e-6)
    col_gaps = _gaps([(boxes[i][0], boxes[i][2]) for i in idx], col_gap)
    col_split = _column_split(idx, boxes, col_gaps, width, prose)
    if col_split is not None:
        for part in col_split:
            _cut(part, boxes, col_gap, row_gap, out, depth + 1, prose)
        return
    row_gaps = _gaps([(boxes[i][1], boxes[i][3]) for i in idx], row_gap)
    if row_gaps:
        start, end = max(row_gaps, key=lambda g: g[1] - g[0])
        mid = (start + end) / 2
        top = [i for i in idx if (boxes[i][1] + boxes[i][3]) / 2 < mid]
        bottom = [i for i in idx if (boxes[i][1] + boxes[i][3]) / 2 >= mid]
        if top and bottom:
            _cut(top, boxes, col_gap, row_gap, out, depth + 1, prose)
            _cut(bottom, boxes, col_gap, row_gap, out, depth + 1, prose)
            return
    if col_gaps:  # columns that do not look like text (e.g. a label column): still split them
        start, end = max(col_gaps, key=lambda g: g[1] - g[0])
        mid = (start + end) / 2
        left = [i for i in idx if (boxes[i][0] + boxes[i][2]) / 2 < mid]
        right = [i for i in idx if (boxes[i][0] + boxes[i][2]) / 2 >= mid]
        if left and right and _interleaved(left, right, boxes):
            out.append(row_sort(idx, boxes))
            return
        if left and right:
            _cut(left, boxes, col_gap, row_gap, out, depth + 1, prose)
            _cut(right, boxes, col_gap, row_gap, out, depth + 1, prose)
            return
    out.append(row_sort(idx, boxes))


def row_sort(idx: list[int], boxes: list[Box]) -> list[int]:
    """Indices sorted into rows (boxes whose vertical centres fall within half a box height of the
    row's first box) top to bottom, each row left to right."""
    rows: list[list[int]] = []
    for i in sorted(idx, key=lambda i: (boxes[i][1] + boxes[i][3]) / 2):
        cy = (boxes[i][1] + boxes[i][3]) / 2
        if rows:
            first = boxes[rows[-1][0]]
            if abs(cy - (first[1] + first[3]) / 2) < 0.5 * min(first[3] - first[1], boxes[i][3] - boxes[i][1]):
                rows[-1].append(i)
                continue
        rows.append([i])
    return [i for row in rows for i in sorted(row, key=lambda i: boxes[i][0])]


def _column_split(idx: list[int], boxes: list[Box], gaps: list[tuple[float, float]], width: float, prose: list[bool]):
    """Split at every gutter when each resulting column looks like running text."""
    if not gaps:
        return None
    parts: list[list[int]] = [[] for _ in range(len(gaps) + 1)]
    for i in idx:
        cx = (boxes[i][0] + boxes[i][2]) / 2
        k = sum(1 for g in gaps if cx >= (g[0] + g[1]) / 2)
        parts[k].append(i)
    for part in parts:
        if len(part) < 3 or median([boxes[i][2] - boxes[i][0] for i in part]) < 0.25 * width / len(parts):
            return None
        if sum(prose[i] for i in part) < 0.6 * len(part):
            return None
    return parts


def _interleaved(left: list[int], right: list[int], boxes: list[Box]) -> bool:
    """True when the two sides pair up row by row (a key/value layout read across, not down)."""
    paired = 0
    for i in left:
        cy = (boxes[i][1] + boxes[i][3]) / 2
        if any(boxes[j][1] <= cy <= boxes[j][3] for j in right):
            paired += 1
    return paired >= 0.6 * max(len(left), len(right))
