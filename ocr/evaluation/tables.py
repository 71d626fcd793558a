"""Tables in OCR output (Markdown pipe tables and HTML ``<table>``) as cell graphs.

Semantics of allenai/olmocr ``olmocr/bench/table_parsing.py`` (commit f7cfe4c), re-implemented:

* cells are placed on a grid honouring ``rowspan``/``colspan`` (HTML only; ``rowspan="0"`` spans
  to the end of the table); a spanning cell is stored once, at its top-left ``(row, col)``;
* ``up``/``down``/``left``/``right`` of a cell: for each grid row (column) it covers, the nearest
  other cell in that direction, so a spanning cell can have several neighbours per direction;
* heading cells: HTML ``<th>`` or any cell of a ``<thead>`` row; in Markdown tables the first row
  and the first column. ``top_heading``/``left_heading`` walk up/left from a cell and return the
  heading cells met, or when none, the cells at the edge of the walk;
* Markdown tables: runs of consecutive lines containing ``|`` (at least two lines); the first row
  made only of ``-``, ``:`` and spaces (pipes aside) is the delimiter row and dropped; leading and
  trailing empty cells from outer pipes are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from bs4 import BeautifulSoup

__all__ = ["TableGraph", "parse_html_tables", "parse_markdown_tables", "parse_tables"]

Cell = tuple[int, int]


@dataclass(frozen=True)
class TableGraph:
    """One table: ``cells`` maps (row, col) -> text (0-based, top-left of spanning cells);
    ``headings`` holds the heading cells; the four dicts map each cell to its neighbours."""

    cells: dict[Cell, str]
    headings: frozenset[Cell]
    up: dict[Cell, set[Cell]]
    down: dict[Cell, set[Cell]]
    left: dict[Cell, set[Cell]]
    right: dict[Cell, set[Cell]]

    def _walk(self, start: Cell, relation: dict[Cell, set[Cell]]) -> set[Cell]:
        headings, ends, seen, todo = set(), set(), set(), {start}
        while todo:
            cur = todo.pop()
            seen.add(cur)
            if cur in self.headings:
                headings.add(cur)
            nxt = relation.get(cur) or set()
            if not nxt:
                ends.add(cur)
            todo |= nxt - seen
        headings.discard(start)
        ends.discard(start)
        return headings or ends

    def top_heading(self, cell: Cell) -> set[Cell]:
        """Heading cells above ``cell`` (or the top cells of its columns when none is a heading)."""
        return self._walk(cell, self.up)

    def left_heading(self, cell: Cell) -> set[Cell]:
        """Heading cells left of ``cell`` (or the first cells of its rows when none is a heading)."""
        return self._walk(cell, self.left)


def _build(rows: list[list[dict]]) -> TableGraph | None:
    """Grid placement and neighbour relations from row specs ``{text, rowspan, colspan, heading}``."""
    cells: dict[Cell, str] = {}
    headings: set[Cell] = set()
    spans: dict[Cell, tuple[int, int]] = {}
    grid: list[list[Cell | None]] = []
    carry: list[tuple[Cell, int] | None] = []  # per column: (cell, rows still to cover)
    for r, specs in enumerate(rows):
        line: list[Cell | None] = []
        col = i = 0
        while i < len(specs) or col < len(carry):
            if col < len(carry) and (carried := carry[col]) is not None:
                cell, left = carried
                line.append(cell)
                carry[col] = (cell, left - 1) if left > 1 else None
                col += 1
                continue
            if i >= len(specs):
                line.append(None)
                col += 1
                continue
            spec = specs[i]
            i += 1
            rs, cs = max(1, spec["rowspan"]), max(1, spec["colspan"])
            cell = (r, col)
            cells[cell] = spec["text"]
            spans[cell] = (rs, cs)
            if spec["heading"]:
                headings.add(cell)
            if len(carry) < col + cs:
                carry.extend([None] * (col + cs - len(carry)))
            for c in range(col, col + cs):
                line.append(cell)
                carry[c] = (cell, rs - 1) if rs > 1 else None
            col += cs
        grid.append(line)
    while any(x is not None for x in carry):  # rowspans reaching past the last row
        line = []
        for c, entry in enumerate(carry):
            if entry is None:
                line.append(None)
                continue
            cell, left = entry
            line.append(cell)
            carry[c] = (cell, left - 1) if left > 1 else None
        grid.append(line)
    if not cells:
        return None
    width = max((c for line in grid for c, v in enumerate(line) if v is not None), default=-1) + 1
    if width == 0:
        return None
    for line in grid:
        line.extend([None] * (width - len(line)))
        del line[width:]
    height = len(grid)
    rel: dict[str, dict[Cell, set[Cell]]] = {d: {c: set() for c in cells} for d in ("up", "down", "left", "right")}
    for cell, (rs, cs) in spans.items():
        r0, c0 = cell
        r1, c1 = r0 + rs - 1, c0 + cs - 1
        scans = (("right", [(r, range(c1 + 1, width)) for r in range(r0, min(r1, height - 1) + 1)], True),
                 ("left", [(r, range(c0 - 1, -1, -1)) for r in range(r0, min(r1, height - 1) + 1)], True),
                 ("down", [(c, range(r1 + 1, height)) for c in range(c0, c1 + 1)], False),
                 ("up", [(c, range(r0 - 1, -1, -1)) for c in range(c0, c1 + 1)], False))
        for direction, lanes, by_row in scans:
            for fixed, steps in lanes:
                for step in steps:
                    other = grid[fixed][step] if by_row else grid[step][fixed]
                    if other is None or other == cell:
                        continue
                    rel[direction][cell].add(other)
                    break
    return TableGraph(cells, frozenset(headings), rel["up"], rel["down"], rel["left"], rel["right"])


def _markdown_rows(lines: list[str]) -> list[list[str]]:
    delimiter = None
    for i, line in enumerate(lines):
        body = line.replace("|", "").strip()
        if body and all(ch in "- :" for ch in body):
            delimiter = i
            break
    rows = []
    for i, line in enumerate(lines):
        if i == delimiter or (line.strip() and all(ch in "- :|" for ch in line)):
            continue
        cells = [c.strip() for c in line.split("|")]
        if cells and cells[0] == "":
            cells = cells[1:]
        if cells and cells[-1] == "":
            cells = cells[:-1]
        if cells:
            rows.append(cells)
    return rows


def parse_markdown_tables(text: str) -> list[TableGraph]:
    """Every Markdown pipe table of ``text`` (see module docstring for what counts as one)."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in text.strip().split("\n"):
        if "|" in line:
            current.append(line)
        else:
            if len(current) >= 2:
                blocks.append(current)
            current = []
    if len(current) >= 2:
        blocks.append(current)
    out = []
    for block in blocks:
        rows = _markdown_rows(block)
        specs = [[{"text": cell, "rowspan": 1, "colspan": 1, "heading": r == 0 or c == 0} for c, cell in enumerate(row)]
                 for r, row in enumerate(rows)]
        table = _build(specs) if specs else None
        if table:
            out.append(table)
    return out


def _span(value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return 1
    return n if n > 0 else 1


def parse_html_tables(text: str) -> list[TableGraph]:
    """Every HTML ``<table>`` of ``text`` (parsed with BeautifulSoup's ``html.parser``)."""
    out = []
    for table in BeautifulSoup(text, "html.parser").find_all("table"):
        rows = table.find_all("tr")
        specs = []
        for r, row in enumerate(rows):
            in_head = row.find_parent("thead") is not None
            line = []
            for cell in row.find_all(["th", "td"], recursive=False):
                for br in cell.find_all("br"):
                    br.replace_with("\n")
                raw = cell.get("rowspan")
                rowspan = max(1, len(rows) - r) if isinstance(raw, str) and raw.strip() == "0" else _span(raw)
                line.append({"text": cell.get_text(separator="").strip(), "rowspan": rowspan,
                             "colspan": _span(cell.get("colspan")), "heading": cell.name == "th" or in_head})
            specs.append(line)
        graph = _build(specs) if specs else None
        if graph:
            out.append(graph)
    return out


def parse_tables(text: str, markdown: bool = True) -> list[TableGraph]:
    """Markdown tables (unless ``markdown`` is false) followed by HTML tables."""
    return (parse_markdown_tables(text) if markdown else []) + parse_html_tables(text)
