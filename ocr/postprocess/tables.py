"""Table structure from a page image and OCR words: ruled grids and borderless column alignment.

* :func:`find_ruled_tables` finds tables drawn with lines: horizontal and vertical rules are
  isolated by morphological opening with long thin kernels (the usual OpenCV recipe, e.g. the
  OpenCV tutorial "Extract horizontal and vertical lines by using morphological operations"),
  rule positions give the grid, and a missing rule segment between two neighbouring cells merges
  them (row/column spans).
* :func:`borderless_table` builds a grid for a table region without rules (from the layout model):
  rows are clusters of words by vertical position, columns are the gaps in the horizontal
  projection of word groups ("cell chunks") that recur across rows.
* :func:`fill_cells` puts each OCR word into the cell holding its centre; :func:`table_markdown`
  renders a pipe table, or an HTML ``<table>`` when cells span rows or columns (GitHub-flavoured
  Markdown pipe tables cannot express spans).

All coordinates are image pixels (x0, y0, x1, y1), top-left origin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

import cv2
import numpy as np

from folioflow.ocr.postprocess.lines import Box, OcrWord, join_words, median
from folioflow.ocr.postprocess.reading_order import row_sort

__all__ = ["Cell", "TableGrid", "borderless_table", "fill_cells", "find_ruled_tables", "table_markdown"]


@dataclass
class Cell:
    """A table cell: grid position, spans, box and text."""

    row: int
    col: int
    box: Box
    rowspan: int = 1
    colspan: int = 1
    text: str = ""


@dataclass
class TableGrid:
    """A table: its box, row/column counts and cells (each grid slot covered by exactly one cell)."""

    box: Box
    n_rows: int
    n_cols: int
    cells: list[Cell] = field(default_factory=list)
    ruled: bool = True

    @property
    def has_spans(self) -> bool:
        return any(c.rowspan > 1 or c.colspan > 1 for c in self.cells)


def _positions(profile: np.ndarray, threshold: float) -> list[float]:
    """Centres of runs where ``profile`` >= threshold."""
    above = profile >= threshold
    out, start = [], None
    for i, flag in enumerate(list(above) + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            out.append((start + i - 1) / 2)
            start = None
    return out


def find_ruled_tables(gray: np.ndarray, min_rows: int = 2, min_cols: int = 2) -> list[TableGrid]:
    """Tables drawn with horizontal and vertical rules in a grayscale page image (H, W uint8).

    A table needs at least ``min_rows`` x ``min_cols`` cells; single framed boxes are ignored.
    """
    h, w = gray.shape[:2]
    ink = cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV, 25, 15)
    hor = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (max(30, w // 35), 1)))
    ver = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, (1, max(20, h // 70))))
    hor = cv2.dilate(hor, np.ones((3, 3), np.uint8))
    ver = cv2.dilate(ver, np.ones((3, 3), np.uint8))
    frame = cv2.dilate(cv2.bitwise_or(hor, ver), np.ones((5, 5), np.uint8))
    contours, _ = cv2.findContours(frame, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    tables = []
    for contour in contours:
        x, y, cw, ch = cv2.boundingRect(contour)
        if cw < w * 0.1 or ch < 15:
            continue
        grid = _grid_in(hor[y:y + ch, x:x + cw] > 0, ver[y:y + ch, x:x + cw] > 0, x, y)
        if grid and grid.n_rows >= min_rows and grid.n_cols >= min_cols:
            tables.append(grid)
    return sorted(tables, key=lambda t: (t.box[1], t.box[0]))


def _grid_in(hor: np.ndarray, ver: np.ndarray, ox: int, oy: int) -> TableGrid | None:
    ys = _positions(hor.mean(axis=1), 0.3)
    xs = _positions(ver.mean(axis=0), 0.3)
    if len(ys) < 2 or len(xs) < 2:
        return None
    n_rows, n_cols = len(ys) - 1, len(xs) - 1
    parent = list(range(n_rows * n_cols))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def present(mask: np.ndarray, fixed: float, a: float, b: float, vertical: bool) -> bool:
        lo, hi = int(a + 0.2 * (b - a)), int(b - 0.2 * (b - a))
        f0, f1 = max(0, int(fixed) - 3), int(fixed) + 4
        band = mask[lo:hi, f0:f1] if vertical else mask[f0:f1, lo:hi]
        if band.size == 0:
            return True
        return float(band.any(axis=1 if vertical else 0).mean()) > 0.5

    for r in range(n_rows):
        for c in range(n_cols):
            if c + 1 < n_cols and not present(ver, xs[c + 1], ys[r], ys[r + 1], vertical=True):
                parent[find(r * n_cols + c + 1)] = find(r * n_cols + c)
            if r + 1 < n_rows and not present(hor, ys[r + 1], xs[c], xs[c + 1], vertical=False):
                parent[find((r + 1) * n_cols + c)] = find(r * n_cols + c)
    groups: dict[int, list[tuple[int, int]]] = {}
    for r in range(n_rows):
        for c in range(n_cols):
            groups.setdefault(find(r * n_cols + c), []).append((r, c))
    cells = []
    for members in groups.values():
        r0, r1 = min(m[0] for m in members), max(m[0] for m in members)
        c0, c1 = min(m[1] for m in members), max(m[1] for m in members)
        if len(members) != (r1 - r0 + 1) * (c1 - c0 + 1):  # not a rectangle: keep the slots apart
            cells += [Cell(r, c, (ox + xs[c], oy + ys[r], ox + xs[c + 1], oy + ys[r + 1])) for r, c in members]
            continue
        cells.append(Cell(r0, c0, (ox + xs[c0], oy + ys[r0], ox + xs[c1 + 1], oy + ys[r1 + 1]),
                          rowspan=r1 - r0 + 1, colspan=c1 - c0 + 1))
    cells.sort(key=lambda cell: (cell.row, cell.col))
    return TableGrid(box=(ox + xs[0], oy + ys[0], ox + xs[-1], oy + ys[-1]), n_rows=n_rows, n_cols=n_cols, cells=cells)


def borderless_table(words: list[OcrWord], box: Box, min_rows: int = 2, min_cols: int = 2) -> TableGrid | None:
    """Grid for the words inside ``box`` (a table region without rules), or ``None`` when the
    words do not line up into at least ``min_rows`` x ``min_cols``."""
    inside = [wd for wd in words if _centre_in(wd.box, box)]
    if len(inside) < min_rows * min_cols:
        return None
    height = median([wd.box[3] - wd.box[1] for wd in inside], 10.0)
    rows: list[list[OcrWord]] = []
    for word in sorted(inside, key=lambda wd: (wd.box[1] + wd.box[3]) / 2):
        cy = (word.box[1] + word.box[3]) / 2
        if rows and abs(cy - median([(x.box[1] + x.box[3]) / 2 for x in rows[-1]])) < 0.6 * height:
            rows[-1].append(word)
        else:
            rows.append([word])
    chunks_per_row = []
    for row in rows:
        row.sort(key=lambda wd: wd.box[0])
        chunks: list[list[float]] = []
        for word in row:
            if chunks and word.box[0] - chunks[-1][1] < 1.2 * height:
                chunks[-1][1] = max(chunks[-1][1], word.box[2])
            else:
                chunks.append([word.box[0], word.box[2]])
        chunks_per_row.append(chunks)
    multi = [c for c in chunks_per_row if len(c) >= 2]
    if len(multi) < min_rows:
        return None
    spans = sorted(tuple(c) for row in multi for c in row)
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    columns = _merge_exclusive_columns(columns, multi)
    if len(columns) < min_cols:
        return None
    xs = [box[0]] + [(columns[i][1] + columns[i + 1][0]) / 2 for i in range(len(columns) - 1)] + [box[2]]
    ys = [box[1]]
    for i in range(len(rows) - 1):
        ys.append((max(wd.box[3] for wd in rows[i]) + min(wd.box[1] for wd in rows[i + 1])) / 2)
    ys.append(box[3])
    cells = [Cell(r, c, (xs[c], ys[r], xs[c + 1], ys[r + 1])) for r in range(len(rows)) for c in range(len(columns))]
    return TableGrid(box=box, n_rows=len(rows), n_cols=len(columns), cells=cells, ruled=False)


def _merge_exclusive_columns(columns: list[list[float]], rows: list[list[list[float]]]) -> list[list[float]]:
    """Merge neighbouring columns that no row uses both of (a left-aligned header over
    right-aligned numbers projects as two columns)."""
    merged = True
    while merged and len(columns) > 1:
        merged = False
        for i in range(len(columns) - 1):
            left, right = columns[i], columns[i + 1]
            both = any(
                any(c[0] < left[1] and c[1] > left[0] for c in row) and any(c[0] < right[1] and c[1] > right[0] for c in row)
                for row in rows
            )
            if not both:
                columns[i:i + 2] = [[left[0], right[1]]]
                merged = True
                break
    return columns


def _centre_in(b: Box, region: Box) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] <= cx <= region[2] and region[1] <= cy <= region[3]


def fill_cells(table: TableGrid, words: list[OcrWord]) -> list[OcrWord]:
    """Write each word whose centre lies in a cell into that cell's text (top-to-bottom, then
    left-to-right) and return the words that fell into no cell."""
    buckets: dict[int, list[OcrWord]] = {i: [] for i in range(len(table.cells))}
    rest = []
    for word in words:
        for index, cell in enumerate(table.cells):
            if _centre_in(word.box, cell.box):
                buckets[index].append(word)
                break
        else:
            rest.append(word)
    for index, cell in enumerate(table.cells):
        members = buckets[index]
        if not members:
            continue
        order = row_sort(list(range(len(members))), [w.box for w in members])
        cell.text = join_words([members[i].text for i in order])
    return rest


def table_markdown(table: TableGrid) -> str:
    """Pipe table (first row as header) without spans; HTML ``<table>`` with rowspan/colspan otherwise."""
    if table.has_spans:
        rows: dict[int, list[Cell]] = {}
        for cell in table.cells:
            rows.setdefault(cell.row, []).append(cell)
        html = ["<table>"]
        for r in range(table.n_rows):
            tds = []
            for cell in sorted(rows.get(r, []), key=lambda c: c.col):
                attrs = (f' rowspan="{cell.rowspan}"' if cell.rowspan > 1 else "") + (
                    f' colspan="{cell.colspan}"' if cell.colspan > 1 else "")
                tds.append(f"<td{attrs}>{escape(cell.text)}</td>")
            html.append("<tr>" + "".join(tds) + "</tr>")
        html.append("</table>")
        return "\n".join(html)
    grid = [["" for _ in range(table.n_cols)] for _ in range(table.n_rows)]
    for cell in table.cells:
        grid[cell.row][cell.col] = cell.text.replace("|", "\\|")
    lines = ["| " + " | ".join(grid[0]) + " |", "|" + "|".join(["---"] * table.n_cols) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in grid[1:]]
    return "\n".join(lines)
