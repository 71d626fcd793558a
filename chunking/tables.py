"""Tables as rows: parse pipe and HTML tables, split them between rows, merge continued tables.

A :class:`TableModel` keeps every row's exact source markup, which rows form the header, the atomic
row groups (rows tied together by a ``rowspan`` never go to different parts), the column count
(``colspan``/``rowspan`` resolved on a grid) and each row's cell texts per column (spanned cells
repeated into every column/row they cover) for the key:value fallback.

* Pipe tables (GFM): the header row and the delimiter row are the header; each further line is a
  row.
* HTML tables: rows inside ``<thead>`` are the header; without a ``<thead>``, the leading rows made
  only of ``<th>`` cells; without those, the first row (most engines emit the column titles first
  without marking them). The header is extended to close any ``rowspan`` that starts in it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from folioflow.chunking.parse import parse_markdown

__all__ = ["TableModel", "compact_cells", "compact_tables", "merge_continued", "parse_table", "row_as_key_values"]

_PIPE_SPLIT = re.compile(r"(?<!\\)\|")
_DELIM_CELL = re.compile(r"^\s*:?-+:?\s*$")


@dataclass
class TableModel:
    """A table as rows. ``head``/``rows``: exact markup of header and body rows; ``groups``:
    ``(start, end)`` ranges over ``rows`` that must stay in one part; ``cells``: per body row, the
    text of each of ``ncols`` columns; ``head_cells``: the header text per column; ``row_pages``:
    1-based page of each body row (tables merged across pages span several pages)."""

    fmt: str  # "pipe" | "html"
    source: str
    head: list[str]
    rows: list[str]
    groups: list[tuple[int, int]]
    ncols: int
    head_cells: list[str]
    cells: list[list[str]]
    row_pages: list[int] = field(default_factory=list)
    open_tag: str = "<table>"
    has_thead: bool = False
    has_tbody: bool = False

    def render(self, start: int = 0, end: int | None = None, with_head: bool = True) -> str:
        """Markdown of body rows ``[start, end)`` (all by default), the header first when
        ``with_head``. The whole table renders to its exact source."""
        end = len(self.rows) if end is None else end
        if start == 0 and end == len(self.rows) and with_head and self.source:
            return self.source
        body = self.rows[start:end]
        head = self.head if with_head else []
        if self.fmt == "pipe":
            return "\n".join(head + body)
        out = [self.open_tag]
        if head:
            out += (["<thead>"] + head + ["</thead>"]) if self.has_thead else head
        if body:
            out += (["<tbody>"] + body + ["</tbody>"]) if self.has_tbody else body
        out.append("</table>")
        return "\n".join(out)

    def compact(self, start: int = 0, end: int | None = None, with_head: bool = True) -> str:
        """The rows ``[start, end)`` (the header first when ``with_head``) as the embedding model
        sees them: one line per row, its non-empty cells joined by ``" | "`` (see
        :func:`compact_cells`); rows with no text are left out. No delimiter row, empty cells or HTML
        tags, which cost tokens and carry no meaning for the model."""
        end = len(self.rows) if end is None else end
        lines = [compact_cells(self.head_cells)] if with_head else []
        lines += [compact_cells(self.cells[r]) for r in range(start, end)]
        return "\n".join(line for line in lines if line)


_CURRENCY = frozenset("$€£¥")
_HTML_TABLE = re.compile(r"<table\b.*?</table\s*>", re.IGNORECASE | re.DOTALL)
_AFTER = frozenset({"%", ")", "%)"})


def compact_cells(cells: list[str]) -> str:
    """One row's cells as one line: empty cells dropped, whitespace collapsed, the rest joined by
    ``" | "``. A cell holding only a currency sign (EDGAR filings put ``$`` in a column of its own)
    is joined to the value after it, and a cell holding only ``%`` or ``)`` to the value before it:
    ``["Net sales", "$", "232,887", "", "12.5", "%"]`` -> ``"Net sales | $ 232,887 | 12.5%"``."""
    out: list[str] = []
    sign = ""
    for cell in cells:
        text = " ".join(cell.split())
        if not text:
            continue
        if text in _CURRENCY:
            sign = f"{sign}{text} "
        elif text in _AFTER and out and not sign:
            out[-1] += text
        else:
            out.append(sign + text)
            sign = ""
    if sign:
        out.append(sign.strip())
    return " | ".join(out)


def compact_tables(markdown: str) -> str:
    """``markdown`` with every top-level table (pipe or HTML) written in its compact form
    (:meth:`TableModel.compact`) and everything else unchanged; the form tables take in the embedded
    text when ``ChunkerOptions.table_embed`` is ``"rows"`` (the default).

    A table of financial figures costs fewer tokens this way: the investing rows of the cash-flow
    statement of ``3M_2018_10K.pdf`` (p.46; 8 rows x 7 columns, a ``$`` column and a spacer column
    per year) take 214 MiniLM tokens as Markdown and 142 in this form.
    Text without ``|`` or ``<table`` is returned as is, without parsing."""
    if "|" not in markdown and "<table" not in markdown.lower():
        return markdown
    out: list[str] = []
    pos = 0
    for block in parse_markdown(markdown).blocks:
        if block.kind != "table":
            continue
        if "<table" not in block.text.lower():
            spans = [(0, len(block.text))]
        else:  # an HTML block may hold several tables, and text around them: that text is kept
            spans = [m.span() for m in _HTML_TABLE.finditer(block.text)]
        for a, b in spans:
            model = parse_table(block.text[a:b])
            if model is not None:
                out += [markdown[pos:block.start + a], model.compact()]
                pos = block.start + b
    out.append(markdown[pos:])
    return "".join(out)


def parse_table(text: str, page: int = 1) -> TableModel | None:
    """Parse a pipe table or the first HTML ``<table>`` in ``text``; None when it has no rows."""
    if "<table" in text.lower():
        return _parse_html(text, page)
    return _parse_pipe(text, page)


def _pipe_cells(line: str) -> list[str]:
    s = line.strip()
    s = s.removeprefix("|")
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip() for c in _PIPE_SPLIT.split(s)]


def _parse_pipe(text: str, page: int) -> TableModel | None:
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if len(lines) < 2:
        return None
    head_cells = _pipe_cells(lines[0])
    ncols = max(len(head_cells), len(_pipe_cells(lines[1])))
    rows = lines[2:]
    cells = [_pad(_pipe_cells(r), ncols) for r in rows]
    return TableModel(fmt="pipe", source=text, head=lines[:2], rows=rows,
                      groups=[(i, i + 1) for i in range(len(rows))], ncols=ncols,
                      head_cells=_pad(head_cells, ncols), cells=cells, row_pages=[page] * len(rows))


def _pad(cells: list[str], n: int) -> list[str]:
    return (cells + [""] * n)[:n]


# Kept instead of BeautifulSoup because it measurably wins: on the corpus' 46 HTML tables (OmniDocBench
# ground truth, ICDAR 2013 tables with spans) the same row scan through bs4's html.parser builder (the
# only bs4 backend with source positions, which the exact row markup needs) gave identical rows and
# took 5.0x-14.4x as long over three runs on the 2-core reference machine, and bs4 with lxml took
# 1.1x-2.3x as long for the parse alone, without positions. Command:
# PYTHONPATH=.:$PYTHONPATH python tests/benchmarks/bench_swaps.py --only tables (docs/benchmarks.md).
class _RowScanner(HTMLParser):
    """Finds the rows of the outermost table: source offsets, cells (text, rowspan, colspan, th)
    and whether each row sits in a ``<thead>``."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.depth = 0
        self.tables = 0
        self.open_tag = "<table>"
        self.in_thead = self.has_thead = self.has_tbody = False
        self.rows: list[dict] = []
        self.row: dict | None = None
        self.cell: dict | None = None

    def _pos(self) -> int:
        line, col = self.getpos()
        return self.line_starts[line - 1] + col

    def _close_row(self, end: int) -> None:
        if self.row is not None:
            self._close_cell()
            self.row["end"] = end
            self.rows.append(self.row)
            self.row = None

    def _close_cell(self) -> None:
        if self.cell is not None and self.row is not None:
            self.cell["text"] = " ".join("".join(self.cell["text"]).split())
            self.row["cells"].append(self.cell)
        self.cell = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.depth += 1
            if self.depth == 1:
                self.tables += 1
                self.open_tag = self.get_starttag_text() or "<table>"
            return
        if self.depth != 1:
            if self.cell is not None and tag == "br":
                self.cell["text"].append(" ")
            return
        if tag == "thead":
            self.in_thead = self.has_thead = True
        elif tag == "tbody":
            self.has_tbody = True
            self.in_thead = False
        elif tag == "tr":
            self._close_row(self._pos())
            self.row = {"start": self._pos(), "cells": [], "thead": self.in_thead}
        elif tag in ("td", "th"):
            if self.row is None:
                self.row = {"start": self._pos(), "cells": [], "thead": self.in_thead}
            self._close_cell()
            a = dict(attrs)
            self.cell = {"text": [], "th": tag == "th", "rowspan": _int(a.get("rowspan")), "colspan": _int(a.get("colspan"))}
        elif tag == "br" and self.cell is not None:
            self.cell["text"].append(" ")

    def handle_endtag(self, tag):
        if tag == "table":
            if self.depth == 1:
                self._close_row(self._pos())
            self.depth -= 1
            return
        if self.depth != 1:
            return
        if tag == "tr" and self.row is not None:
            end = self.text.find(">", self._pos()) + 1
            self._close_row(end)
        elif tag in ("td", "th"):
            self._close_cell()
        elif tag == "thead":
            self._close_row(self._pos())
            self.in_thead = False

    def handle_data(self, data):
        if self.cell is not None and self.depth >= 1:
            self.cell["text"].append(data)


def _int(value: str | None) -> int:
    try:
        return max(1, min(int(str(value).strip()), 1000))
    except (TypeError, ValueError):
        return 1


def _grid(rows: list[dict]) -> tuple[list[list[str]], list[int], int]:
    """Resolve spans: text per (row, column), the last row each row's rowspans reach, column count."""
    occupied: dict[tuple[int, int], str] = {}
    reach = []
    ncols = 0
    for r, row in enumerate(rows):
        c = 0
        last = r
        for cell in row["cells"]:
            while (r, c) in occupied:
                c += 1
            for dr in range(cell["rowspan"]):
                for dc in range(cell["colspan"]):
                    occupied[(r + dr, c + dc)] = cell["text"]
            last = max(last, min(r + cell["rowspan"] - 1, len(rows) - 1))
            c += cell["colspan"]
        reach.append(last)
        ncols = max(ncols, c, max((cc + 1 for (rr, cc) in occupied if rr == r), default=0))
    grid = [[occupied.get((r, c), "") for c in range(ncols)] for r in range(len(rows))]
    return grid, reach, ncols


def _parse_html(text: str, page: int) -> TableModel | None:
    scanner = _RowScanner(text)
    try:
        scanner.feed(text)
        scanner.close()
    except Exception:  # noqa: BLE001 - html.parser is lenient; any failure means "not a table we can split"
        return None
    scanner._close_row(len(text))
    rows = scanner.rows
    if not rows or scanner.tables > 1:  # several tables in one HTML block: no single header to repeat
        return None
    grid, reach, ncols = _grid(rows)
    n_head = sum(1 for r in rows if r["thead"]) if any(r["thead"] for r in rows) else 0
    if n_head == 0:
        while n_head < len(rows) - 1 and rows[n_head]["cells"] and all(c["th"] for c in rows[n_head]["cells"]):
            n_head += 1
    if n_head == 0 and len(rows) > 1:
        n_head = 1
    if n_head:  # a rowspan starting in the header keeps the rows it covers in the header
        n_head = max(n_head, max(reach[:n_head]) + 1)
        n_head = min(n_head, len(rows) - 1) if len(rows) > 1 else n_head
    markup = [text[r["start"]:r["end"]].strip() for r in rows]
    groups = _groups(reach[n_head:], n_head)
    head_cells = []
    for c in range(ncols):
        seen: list[str] = []
        for r in range(n_head):
            t = grid[r][c]
            if t and t not in seen:
                seen.append(t)
        head_cells.append(" / ".join(seen))
    return TableModel(fmt="html", source=text, head=markup[:n_head], rows=markup[n_head:], groups=groups,
                      ncols=ncols, head_cells=head_cells, cells=grid[n_head:], row_pages=[page] * (len(rows) - n_head),
                      open_tag=scanner.open_tag, has_thead=scanner.has_thead, has_tbody=scanner.has_tbody)


def _groups(reach: list[int], offset: int) -> list[tuple[int, int]]:
    """Atomic row ranges: rows joined by a rowspan form one group."""
    groups: list[tuple[int, int]] = []
    start, last = 0, -1
    for i, r in enumerate(reach):
        if i > last and i > start:
            groups.append((start, i))
            start = i
        last = max(last, r - offset, i)
    if reach:
        groups.append((start, len(reach)))
    return groups


def merge_continued(first: TableModel, second: TableModel) -> TableModel | None:
    """One table from a table and its continuation on the next page, or None when they do not
    match (different format or column count). A repeated header on the continuation is dropped;
    an unrepeated one (an engine takes the first row of every table as header) becomes a row."""
    if first.fmt != second.fmt or first.ncols != second.ncols:
        return None

    def norm(cells: list[str]) -> list[str]:
        return [" ".join(c.lower().split()) for c in cells]

    same_head = norm(first.head_cells) == norm(second.head_cells)
    rows, cells, pages, groups = list(first.rows), list(first.cells), list(first.row_pages), list(first.groups)
    page2 = second.row_pages[0] if second.row_pages else (first.row_pages[-1] if first.row_pages else 1)
    if not same_head:
        extra = [h for h in second.head if not (second.fmt == "pipe" and _is_delim(h))]
        if extra:
            groups.append((len(rows), len(rows) + len(extra)))
            rows += extra
            cells += [list(second.head_cells)] + [[""] * first.ncols] * (len(extra) - 1)
            pages += [page2] * len(extra)
    base = len(rows)
    rows += second.rows
    cells += second.cells
    pages += second.row_pages
    groups += [(a + base, b + base) for a, b in second.groups]
    return TableModel(fmt=first.fmt, source="", head=first.head, rows=rows, groups=groups, ncols=first.ncols,
                      head_cells=first.head_cells, cells=cells, row_pages=pages, open_tag=first.open_tag,
                      has_thead=first.has_thead, has_tbody=first.has_tbody)


def _is_delim(line: str) -> bool:
    cells = _pipe_cells(line)
    return bool(cells) and all(_DELIM_CELL.match(c) for c in cells if c.strip() or True)


def row_as_key_values(table: TableModel, row: int) -> list[str]:
    """Body row ``row`` as ``"Header: value"`` lines, one per non-empty column (the header text
    alone is omitted when a column has none). The fallback for a row larger than the limit."""
    out = []
    for head, value in zip(table.head_cells, table.cells[row], strict=True):
        value = value.strip()
        if not value:
            continue
        out.append(f"{head}: {value}" if head else value)
    return out
