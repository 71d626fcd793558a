"""Table finding on born-digital pages.

Two detectors, both fed by PDFium's geometry (one parse of the page, see :mod:`folioflow.ocr.layout.pdfpage`):

* **Ruled tables**: pdfplumber's ``TableFinder`` with the ``lines`` strategy (Nurminen's algorithm,
  as in Tabula) runs on the page's rules and rectangles. We pass it an adapter carrying the edges
  we read with PDFium instead of letting pdfplumber parse the page again with pdfminer.six (many
  times slower). Chosen over camelot after measuring both on the ICDAR 2013 EU set in the corpus
  (``tests/benchmarks/bench_tables_icdar.py``; figures: ``docs/benchmarks.md``, "Table finding").
* **Aligned tables** (unruled, or ruled only by row shading as in EDGAR filings, where
  ``lines`` yields one table per shaded row): runs of rows holding several text lines whose
  column bands line up; accepted when they have at least three columns or mostly numeric cells
  (two-column prose is not a table). A run goes on across rows that hold only a label in the
  label column (a statement's captions, the first line of a wrapped label), a wrapped label is
  joined into one row, and a line holding only figures of neighbouring columns (the line builder
  keeps words joined by a real space across up to three em) is split into one cell per figure.

A ruled table whose every column boundary is a drawn rule (:attr:`TableResult.ruled_grid`) keeps
its grid as drawn: its empty columns and their headers stay, and it is not re-gridded by alignment
(which merged an empty ruled column into its neighbour). An aligned "table" whose cells are mostly
prose (two columns of running text) is no table: its lines stay body text, in reading order.

Cells come out as lists of strings; :func:`to_pipe_table` renders GitHub-flavoured pipe tables,
merging currency/percent columns into their numbers and multi-row headers into one header row.
"""

from __future__ import annotations

import bisect
import re
import statistics
from dataclasses import dataclass

import numpy as np
from pdfplumber.table import (
    Table,
    TableFinder,
    TableSettings,
    cells_to_tables,
    edges_to_intersections,
    intersections_to_cells,
)

from folioflow.ocr.layout.lines import Line, build_lines
from folioflow.ocr.layout.pdfpage import Char, PageContent

__all__ = ["TableResult", "find_tables", "to_pipe_table"]

_NUMERIC = re.compile(r"^[\(\-–—$€£¥]*\s*[\d.,]+\s*%?\)?%?$|^[—–-]+$")
_CURRENCY = ("$", "€", "£", "¥")
_UNIT_ONLY = {"$", "%", ")", "(", "€", "£", "¥", "%)", ")%"}


@dataclass
class TableResult:
    """A table: ``bbox`` (x0, y0, x1, y1) in display points, ``rows`` of cell strings (equal
    lengths), ``kind`` "ruled" or "aligned"."""

    bbox: tuple[float, float, float, float]
    rows: list[list[str]]
    kind: str
    #: a grid whose every column boundary is a drawn rule: its columns (empty ones too) are the table's
    ruled_grid: bool = False


class _EdgePage:
    """The two attributes pdfplumber's ``TableFinder`` reads for the ``lines`` strategy."""

    def __init__(self, edges: list[dict], width: float, height: float):
        self.edges = edges
        self.bbox = (0.0, 0.0, width, height)


def _edge(x0: float, top: float, x1: float, bottom: float, orientation: str) -> dict:
    return {"x0": x0, "x1": x1, "top": top, "bottom": bottom, "width": x1 - x0, "height": bottom - top,
            "orientation": orientation, "object_type": "rect_edge"}


def _edges(content: PageContent) -> list[dict]:
    edges = []
    for r in content.paths:
        if r.height <= 3 and r.width >= 3:
            y = (r.y0 + r.y1) / 2
            edges.append(_edge(r.x0, y, r.x1, y, "h"))
        elif r.width <= 3 and r.height >= 3:
            x = (r.x0 + r.x1) / 2
            edges.append(_edge(x, r.y0, x, r.y1, "v"))
        elif r.segments <= 6 and r.width >= 3 and r.height >= 3:
            edges += [_edge(r.x0, r.y0, r.x1, r.y0, "h"), _edge(r.x0, r.y1, r.x1, r.y1, "h"),
                      _edge(r.x0, r.y0, r.x0, r.y1, "v"), _edge(r.x1, r.y0, r.x1, r.y1, "v")]
    return edges


def _cells(intersections: dict) -> list[tuple[float, float, float, float]]:
    """pdfplumber's ``intersections_to_cells``, run on each group of intersections linked by
    shared edges instead of on the whole page: a cell's four corners always share edges, so
    the cells are the same, and sorting them by their top-left corner restores pdfplumber's
    order. Its search is quadratic in the points of a row or column, which matters on
    EDGAR pages that shade every other row (hundreds of small rectangles)."""
    parent = {p: p for p in intersections}

    def root(p):
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    owner: dict[tuple, tuple] = {}  # edge (compared by bbox, as pdfplumber does) -> a point on it
    for point, touching in intersections.items():
        for edge in touching["v"] + touching["h"]:
            other = owner.setdefault((edge["x0"], edge["top"], edge["x1"], edge["bottom"]), point)
            a, b = root(point), root(other)
            if a != b:
                parent[a] = b
    groups: dict[tuple, dict] = {}
    for point, touching in intersections.items():
        groups.setdefault(root(point), {})[point] = touching
    cells = [cell for group in groups.values() if len(group) >= 4 for cell in intersections_to_cells(group)]
    cells.sort(key=lambda c: (c[0], c[1]))
    return cells


class _TableFinder(TableFinder):
    """pdfplumber's ``TableFinder`` (same steps and settings) with :func:`_cells` for the cells."""

    def __init__(self, page: _EdgePage, settings: dict):
        # not super().__init__(): it would run the whole search once more
        self.page = page  # type: ignore[assignment]  # duck-typed: the finder reads only its edges and bbox
        self.settings = TableSettings.resolve(settings)
        self.edges = self.get_edges()
        self.intersections = edges_to_intersections(
            self.edges, self.settings.intersection_x_tolerance, self.settings.intersection_y_tolerance)
        self.cells = _cells(self.intersections)
        self.tables = [Table(self.page, group) for group in cells_to_tables(self.cells)]


def _cell_text(chars: list[Char]) -> str:
    lines = sorted(build_lines(chars), key=lambda ln: (round(ln.y0), ln.x0))
    return " ".join(ln.text for ln in lines).strip()


def _ruled_tables(content: PageContent) -> list[TableResult]:
    edges = _edges(content)
    if len(edges) < 4:
        return []
    finder = _TableFinder(_EdgePage(edges, content.width, content.height),
                         {"vertical_strategy": "lines", "horizontal_strategy": "lines"})
    if not finder.tables:
        return []
    # character centres, once per page: each table then looks only at the characters inside it
    # (EDGAR pages yield a ruled "table" per shaded row; most are dropped below)
    vertical = [e for e in edges if e["orientation"] == "v"]
    visible = [ch for ch in content.chars if not ch.invisible]
    cxs = (np.array([ch.x0 for ch in visible]) + np.array([ch.x1 for ch in visible])) / 2
    cys = (np.array([ch.y0 for ch in visible]) + np.array([ch.y1 for ch in visible])) / 2
    results = []
    for table in finder.tables:
        rows = table.rows
        tops = [r.bbox[1] for r in rows]
        grid: list[list[list[Char]]] = [[[] for _ in r.cells] for r in rows]
        x0, y0, x1, y1 = table.bbox
        inside = np.flatnonzero((x0 <= cxs) & (cxs < x1) & (y0 <= cys) & (cys < y1)).tolist()
        for k, cx, cy in zip(inside, cxs[inside].tolist(), cys[inside].tolist(), strict=True):
            i = bisect.bisect_right(tops, cy) - 1
            if i < 0 or cy >= rows[i].bbox[3]:
                continue
            for j, cell in enumerate(rows[i].cells):
                if cell is not None and cell[0] <= cx < cell[2] and cell[1] <= cy < cell[3]:
                    grid[i][j].append(visible[k])
                    break
        cells = [[_cell_text(c) if c else "" for c in row] for row in grid]
        full = _fully_ruled(table, vertical)
        cells = _drop_empty_rows(cells) if full else _drop_empty(cells)
        if len(cells) >= 2 and cells and len(cells[0]) >= 2:
            results.append(TableResult(bbox=table.bbox, rows=cells, kind="ruled", ruled_grid=full))
    return results


def _fully_ruled(table: Table, vertical: list[dict]) -> bool:
    """Whether every column boundary of ``table`` is a vertical rule spanning at least 80% of its
    height (a drawn grid: its empty columns are columns), not cells made of row shading."""
    x0, y0, x1, y1 = table.bbox
    height = y1 - y0
    if height <= 0 or len(table.rows) < 2:
        return False
    bounds = sorted({round(c[0], 1) for r in table.rows for c in r.cells if c is not None} | {round(x1, 1)})
    for x in bounds:
        spans = sorted((max(e["top"], y0), min(e["bottom"], y1)) for e in vertical if abs(e["x0"] - x) <= 1.5)
        covered, reach = 0.0, y0
        for top, bottom in spans:
            if bottom > reach:
                covered += bottom - max(top, reach)
                reach = bottom
        if covered < 0.8 * height:
            return False
    return True


def _drop_empty_rows(rows: list[list[str]]) -> list[list[str]]:
    return [r for r in rows if any(c.strip() for c in r)]


def _drop_empty(rows: list[list[str]]) -> list[list[str]]:
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        return []
    keep = [j for j in range(len(rows[0])) if any(r[j].strip() for r in rows)]
    return [[r[j] for j in keep] for r in rows]


def _split_numbers(line: Line) -> list[Line]:
    """Split a line made only of numbers ("(504) (1,606)", "$ 5,070 $ 6,046 $ 5,727") into one
    line per number: a currency sign starts a new number, and otherwise two numbers at least one
    em apart are split (a space inside a number, as in "1 234", is narrower).

    The line builder keeps words joined by a real space character across gaps up to three em
    (justified prose), which also joins neighbouring cells of a statement's number columns when
    the filing's generator wrote a space between them (EDGAR: NIKE_2023_10K p.62). A currency
    sign stays with the number after it. Lines holding any word are returned unchanged."""
    tokens = line.text.split()
    if len(tokens) < 2 or sum(map(len, tokens)) != len(line.chars):
        return [line]
    cells: list[list[int]] = []  # token indices per cell
    pending: list[int] = []
    for t, token in enumerate(tokens):
        if token in _CURRENCY:
            pending.append(t)
        elif token in ("%", ")", "%)") and cells and not pending:
            cells[-1].append(t)
        elif _NUMERIC.match(token) and (any(ch.isdigit() for ch in token) or not token.strip("—–-")):
            # a number, or a dash standing for zero
            cells.append(pending + [t])
            pending = []
        else:
            return [line]
    if pending or len(cells) < 2:
        return [line]
    spans, start = [], 0
    for token in tokens:
        spans.append((start, start + len(token)))
        start += len(token)
    em = max(line.size, 1.0)
    pieces: list[list[int]] = []  # token indices per output line
    for cell in cells:
        if pieces:
            left = line.chars[spans[pieces[-1][-1]][1] - 1].x1
            if tokens[cell[0]] not in _CURRENCY and line.chars[spans[cell[0]][0]].x0 - left < em:
                pieces[-1] += cell
                continue
        pieces.append(list(cell))
    if len(pieces) < 2:
        return [line]
    out = []
    for piece in pieces:
        chars = line.chars[spans[piece[0]][0]:spans[piece[-1]][1]]
        out.append(Line(x0=min(c.x0 for c in chars), y0=line.y0, x1=max(c.x1 for c in chars), y1=line.y1,
                        text=" ".join(tokens[t] for t in piece), size=line.size, bold=line.bold,
                        italic=line.italic, fonts=line.fonts, chars=chars))
    return out


def _merge_wrapped_labels(cells: list[list[str]]) -> list[list[str]]:
    """Join a row label wrapped over two lines: a row with only its first cell filled, followed by
    a row whose label starts in lower case, becomes one row ("(Increase) decrease in prepaid
    expenses, operating" + "other current and non-current assets | (644) | ...")."""
    out: list[list[str]] = []
    for row in cells:
        prev = out[-1] if out else None
        if (prev is not None and prev[0] and not any(prev[1:]) and not prev[0].endswith(":")
                and row[0][:1].islower()):
            out[-1] = [prev[0] + " " + row[0]] + row[1:]
            continue
        out.append(list(row))
    return out


def _row_groups(lines: list[Line]) -> list[list[Line]]:
    rows: list[list[Line]] = []
    for line in sorted(lines, key=lambda ln: (ln.y0 + ln.y1) / 2):
        mid = (line.y0 + line.y1) / 2
        if rows:
            top = min(ln.y0 for ln in rows[-1])
            bottom = max(ln.y1 for ln in rows[-1])
            if top <= mid <= bottom:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(r, key=lambda ln: ln.x0) for r in rows]


def _bands(rows: list[list[Line]]) -> list[tuple[float, float]]:
    numeric_rows = [r for r in rows if len(r) >= 2 and any(_NUMERIC.match(ln.text) for ln in r)]
    source = numeric_rows if len(numeric_rows) >= 2 else [r for r in rows if len(r) >= 2]
    intervals = sorted((ln.x0, ln.x1) for r in source for ln in r)
    bands: list[list[float]] = []
    for a, b in intervals:
        if bands and a <= bands[-1][1]:
            bands[-1][1] = max(bands[-1][1], b)
        else:
            bands.append([a, b])
    return [(a, b) for a, b in bands]


def _grid(rows: list[list[Line]], bands: list[tuple[float, float]]) -> list[list[str]]:
    out = []
    for row in rows:
        cells = [""] * len(bands)
        for line in row:
            overlaps = [min(line.x1, b) - max(line.x0, a) for a, b in bands]
            j = max(range(len(bands)), key=lambda k: overlaps[k]) if max(overlaps) > 0 else \
                min(range(len(bands)), key=lambda k: abs((bands[k][0] + bands[k][1]) / 2 - (line.x0 + line.x1) / 2))
            cells[j] = (cells[j] + " " + line.text).strip()
        out.append(cells)
    return out


def _accept(cells: list[list[str]]) -> bool:
    if len(cells) < 2 or not cells or len(cells[0]) < 2:
        return False
    body = [c for r in cells for c in r[1:] if c]
    numeric = sum(1 for c in body if _NUMERIC.match(c) or c in _UNIT_ONLY)
    filled = [c for r in cells for c in r if c]
    prose = sum(1 for c in filled if len(c.split()) >= 5)
    if filled and prose > 0.5 * len(filled) and numeric < 0.2 * max(1, len(body)):
        return False  # columns of running text, not a table: its lines stay in reading order
    return len(cells[0]) >= 3 or (bool(body) and numeric >= 0.5 * len(body))


def _label_row(line: Line, run: list[list[Line]]) -> bool:
    """``line`` (alone on its row) sits in the label column of the table rows in ``run``: it
    starts near their labels and ends left of every value column. Statements carry such rows
    between their figures: section captions ("Cash provided (used) by investing activities:")
    and the first line of a wrapped label, often wider than half the table."""
    rows = [r for r in run if len(r) >= 2]
    if not rows:
        return False
    em = max(line.size, 1.0)
    labels = min(r[0].x0 for r in rows)
    values = min(r[1].x0 for r in rows)
    return labels - em <= line.x0 <= labels + 3 * em and line.x1 < values - em


def _aligned_tables(lines: list[Line], taken: list[tuple[float, float, float, float]]) -> list[TableResult]:
    free = [ln for ln in lines if not any(_inside(ln, b) for b in taken)]
    rows = _row_groups([piece for line in free for piece in _split_numbers(line)])
    results: list[TableResult] = []
    run: list[list[Line]] = []
    singles = 0

    def flush() -> None:
        nonlocal run
        while run and len(run[-1]) < 2:
            run.pop()
        if sum(1 for r in run if len(r) >= 2) >= 3:
            bands = _bands(run)
            cells = _merge_wrapped_labels(_drop_empty(_grid(run, bands)))
            if _accept(cells):
                results.append(TableResult(bbox=_lines_bbox(run), rows=cells, kind="aligned"))
        run = []

    for row in rows:
        height = statistics.median(ln.height for ln in row)
        if run:
            gap = min(ln.y0 for ln in row) - max(ln.y1 for ln in run[-1])
            if gap > 2.5 * height:
                flush()
                singles = 0
        if len(row) >= 2:
            run.append(row)
            singles = 0
        elif run and singles < 3 and (_label_row(row[0], run) or (singles < 2 and row[0].width < 0.5 * (
                max(ln.x1 for r in run for ln in r) - min(ln.x0 for r in run for ln in r)))):
            run.append(row)
            singles += 1
        else:
            flush()
            singles = 0
    flush()
    return results


def _union(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    return (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))


def _lines_bbox(rows: list[list[Line]]) -> tuple[float, float, float, float]:
    members = [ln for row in rows for ln in row]
    return (min(m.x0 for m in members), min(m.y0 for m in members),
            max(m.x1 for m in members), max(m.y1 for m in members))


def _inside(line: Line, bbox: tuple[float, float, float, float]) -> bool:
    cx, cy = (line.x0 + line.x1) / 2, (line.y0 + line.y1) / 2
    return bbox[0] - 1 <= cx <= bbox[2] + 1 and bbox[1] - 1 <= cy <= bbox[3] + 1


def _fill(rows: list[list[str]]) -> float:
    cells = [c for r in rows for c in r]
    return sum(1 for c in cells if c) / max(1, len(cells))


def _regrid(lines: list[Line], bbox: tuple[float, float, float, float]) -> TableResult | None:
    rows = _row_groups([piece for ln in lines if _inside(ln, bbox) for piece in _split_numbers(ln)])
    if sum(1 for r in rows if len(r) >= 2) < 2:
        return None
    cells = _merge_wrapped_labels(_drop_empty(_grid(rows, _bands(rows))))
    if not _accept(cells):
        return None
    return TableResult(bbox=_lines_bbox(rows), rows=cells, kind="aligned")


def _adjacent(a: TableResult, b: TableResult, gap_limit: float) -> bool:
    overlap = min(a.bbox[2], b.bbox[2]) - max(a.bbox[0], b.bbox[0])
    narrower = min(a.bbox[2] - a.bbox[0], b.bbox[2] - b.bbox[0])
    return 0 <= b.bbox[1] - a.bbox[3] <= gap_limit and overlap >= 0.7 * narrower


def _same_rows(a: TableResult, b: TableResult, gap_limit: float) -> bool:
    """``b`` spans (most of) ``a``'s rows and sits beside or inside it: vertical overlap at least
    70% of the shorter table, horizontal gap at most ``gap_limit``."""
    overlap = min(a.bbox[3], b.bbox[3]) - max(a.bbox[1], b.bbox[1])
    shorter = min(a.bbox[3] - a.bbox[1], b.bbox[3] - b.bbox[1])
    gap = max(a.bbox[0], b.bbox[0]) - min(a.bbox[2], b.bbox[2])
    return shorter > 0 and overlap >= 0.7 * shorter and gap <= gap_limit


def _absorb_shaded_columns(tables: list[TableResult], lines: list[Line], gap_limit: float) -> list[TableResult]:
    """Merge each ruled table that holds the same rows as an aligned table into it (re-gridded
    from the text lines of both boxes). A column shaded with filled rectangles is a "ruled" table
    of its own to pdfplumber, and its lines are then missing from the aligned table that holds
    the row labels: a balance sheet would lose its current-year figures to a table of bare
    numbers. Kept apart when the union does not re-grid into a table."""
    out = list(tables)
    for ruled in [t for t in tables if t.kind == "ruled"]:
        host = next((t for t in out if t.kind == "aligned" and _same_rows(t, ruled, gap_limit)), None)
        if host is None:
            continue
        regrid = _regrid(lines, _union(host.bbox, ruled.bbox))
        if regrid is None or len(regrid.rows) < len(host.rows):
            continue
        out[out.index(host)] = regrid
        out.remove(ruled)
    return out


def find_tables(content: PageContent, lines: list[Line]) -> list[TableResult]:
    """Find the tables of a page, top to bottom. ``lines`` are the page's lines
    (:func:`~folioflow.ocr.layout.lines.build_lines`).

    Ruled tables whose text aligns better than their rules (row shading drawn as rectangles)
    are re-gridded by alignment; a ruled table beside or inside an aligned table over the same
    rows (one shaded column, as EDGAR filings shade the current year: NIKE_2019_10K p.54) is
    re-gridded with it as one table; a table directly above another one with the same width (a
    header block separated by a rule) is merged into it.
    """
    tables = []
    for table in _ruled_tables(content):
        aligned = None if table.ruled_grid else _regrid(lines, table.bbox)  # a drawn grid is the table's grid
        tables.append(aligned if aligned and _fill(aligned.rows) > _fill(table.rows) + 0.05 else table)
    tables += _aligned_tables(lines, [t.bbox for t in tables])
    line_height = statistics.median([ln.height for ln in lines]) if lines else 10.0
    tables = _absorb_shaded_columns(tables, lines, 3 * line_height)
    tables.sort(key=lambda t: (t.bbox[1], t.bbox[0]))
    merged: list[TableResult] = []
    for table in tables:
        if merged and "aligned" in (merged[-1].kind, table.kind) and _adjacent(merged[-1], table, 1.5 * line_height):
            regrid = _regrid(lines, _union(merged[-1].bbox, table.bbox))
            if regrid is not None:
                merged[-1] = regrid
                continue
        merged.append(table)
    return merged


def _merge_units(rows: list[list[str]]) -> list[list[str]]:
    """Fold columns holding only '$', '%', ')' into their neighbouring number column."""
    if not rows:
        return rows
    ncols = len(rows[0])
    j = 0
    while j < ncols:
        column = [r[j].strip() for r in rows]
        filled = [c for c in column if c]
        if filled and all(c in _UNIT_ONLY for c in filled):
            leading = all(c in ("$", "€", "£", "¥", "(") for c in filled)
            k = j + 1 if leading and j + 1 < ncols else j - 1
            if 0 <= k < ncols:
                for r in rows:
                    if r[j].strip():
                        r[k] = (r[j].strip() + r[k].strip()) if k > j else (r[k].strip() + r[j].strip())
                for r in rows:
                    del r[j]
                ncols -= 1
                continue
        j += 1
    return rows


def to_pipe_table(rows: list[list[str]], keep_columns: bool = False) -> str:
    """Render rows as a GitHub-flavoured pipe table (first row = header; leading rows without any
    number are merged into the header, column by column). Pipes in cells are escaped.
    ``keep_columns``: keep empty columns (a drawn grid's, :attr:`TableResult.ruled_grid`) and
    leave unit-only columns unmerged."""
    rows = _drop_empty_rows([list(r) for r in rows]) if keep_columns else _drop_empty(_merge_units([list(r) for r in rows]))
    if not rows:
        return ""
    header_rows = 1
    while header_rows < min(3, len(rows) - 1) and not any(_NUMERIC.match(c) for c in rows[header_rows] if c) \
            and not any(_NUMERIC.match(c) for c in rows[0][1:] if c) and rows[header_rows][0] == "":
        header_rows += 1
    header = [" ".join(r[j] for r in rows[:header_rows] if r[j]).strip() for j in range(len(rows[0]))]
    body = rows[header_rows:]

    def fmt(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ").strip() for c in cells) + " |"

    lines = [fmt(header), "|" + "|".join("---" for _ in header) + "|"]
    lines += [fmt(r) for r in body]
    return "\n".join(lines)
