"""Characters -> text lines (horizontal runs of words without a column-sized gap).

Characters are grouped into *rows* by vertical overlap, rows are split into *lines* wherever the
horizontal gap exceeds :data:`SPLIT_EM` times the font size (column gutters, table cells, tab
stops), and words are separated wherever PDFium put a space or the gap exceeds
:data:`WORD_EM` em. Right-to-left rows (Arabic, Hebrew) keep PDFium's content order, which is the
logical order in the PDFs we see; left-to-right rows are ordered by x.
"""

from __future__ import annotations

import statistics
import unicodedata
from dataclasses import dataclass, field

from ocr.layout.pdfpage import Char

__all__ = ["Line", "build_lines", "SPLIT_EM", "WORD_EM"]

#: A horizontal gap above this many em splits a row into separate lines (column gutter, cell).
SPLIT_EM = 1.0
#: A gap above this many em separates words even without a space character.
WORD_EM = 0.2


@dataclass
class Line:
    """A run of characters on one baseline. Box in display points; ``size`` is the median font
    size (points); ``bold``/``italic`` when at least 80% of its letters are."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float
    bold: bool
    italic: bool
    fonts: tuple[str, ...]
    chars: list[Char] = field(repr=False, default_factory=list)

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    @property
    def width(self) -> float:
        return self.x1 - self.x0


def _is_rtl(chars: list[Char]) -> bool:
    strong = [unicodedata.bidirectional(c.text) for c in chars if c.text.strip()]
    rtl = sum(1 for b in strong if b in ("R", "AL"))
    ltr = sum(1 for b in strong if b == "L")
    return rtl > ltr


def _make_line(chars: list[Char], rtl: bool, spaced: dict[int, int]) -> Line | None:
    parts: list[str] = []
    prev: Char | None = None
    for ch in chars:
        if prev is not None and parts and parts[-1] != " ":
            gap = (prev.x0 - ch.x1) if rtl else (ch.x0 - prev.x1)
            if spaced.get(id(ch)) or gap > WORD_EM * max(ch.size, prev.size, 1.0):
                parts.append(" ")
        parts.append(ch.text)
        prev = ch
    text = "".join(parts).strip()
    visible = [c for c in chars if not c.text.isspace()]
    if not text or not visible:
        return None
    letters = [c for c in visible if c.text.isalnum()] or visible
    return Line(
        x0=min(c.x0 for c in visible), y0=min(c.y0 for c in visible),
        x1=max(c.x1 for c in visible), y1=max(c.y1 for c in visible),
        text=text,
        size=statistics.median(c.size for c in visible),
        bold=sum(c.bold for c in letters) >= 0.8 * len(letters),
        italic=sum(c.italic for c in letters) >= 0.8 * len(letters),
        fonts=tuple(dict.fromkeys(c.font for c in visible)),
        chars=visible,
    )


def _rows(chars: list[Char]) -> list[list[Char]]:
    """Group characters whose vertical centres fall within each other's band."""
    rows: list[tuple[float, float, list[Char]]] = []
    for ch in sorted(chars, key=lambda c: (c.y0 + c.y1) / 2):
        mid = (ch.y0 + ch.y1) / 2
        if rows:
            top, bottom, members = rows[-1]
            if top <= mid <= bottom and (ch.y1 - ch.y0) < 2.5 * (bottom - top):
                members.append(ch)
                # keep the band of the row's main text (superscripts must not stretch it much)
                rows[-1] = (min(top, ch.y0) if ch.size >= 0.8 * members[0].size else top,
                            max(bottom, ch.y1) if ch.size >= 0.8 * members[0].size else bottom, members)
                continue
        rows.append((ch.y0, ch.y1, [ch]))
    return [members for _, _, members in rows]


def _split_row(row: list[Char], order: dict[int, int], spaced: dict[int, int]) -> list[list[Char]]:
    """Split one row at large horizontal gaps; return runs in left-to-right order."""
    row = sorted(row, key=lambda c: (c.x0, order[id(c)]))
    runs: list[list[Char]] = [[]]
    right = None
    for ch in row:
        if right is not None and runs[-1]:
            em = max(ch.size, runs[-1][-1].size, 1.0)
            bridged = spaced.get(id(ch)) == 2
            gap = ch.x0 - right
            if gap > SPLIT_EM * em and not (bridged and gap < 3 * em):
                runs.append([])
        runs[-1].append(ch)
        right = ch.x1 if right is None else max(right, ch.x1)
    return [r for r in runs if any(not c.text.isspace() for c in r)]


def build_lines(chars: list[Char]) -> list[Line]:
    """Group upright, visible characters into :class:`Line` objects (unsorted across columns;
    see :mod:`ocr.layout.order` for reading order). Rotated characters are returned as their own
    lines in content order."""
    order = {id(c): i for i, c in enumerate(chars)}
    # 1 = preceded (in content order) by a space PDFium generated, 2 = by a real space character
    spaced: dict[int, int] = {}
    for prev, ch in zip(chars, chars[1:]):
        if prev.text.isspace() and not ch.text.isspace():
            spaced[id(ch)] = 1 if prev.generated else 2
    upright = [c for c in chars if c.upright and not c.invisible and not c.text.isspace()]
    lines: list[Line] = []
    for row in _rows(upright):
        for run in _split_row(row, order, spaced):
            rtl = _is_rtl(run)
            if rtl:
                run = sorted(run, key=lambda c: order[id(c)])
            line = _make_line(run, rtl, spaced)
            if line is not None:
                lines.append(line)
    rotated = [c for c in chars if not c.upright and not c.invisible and not c.text.isspace()]
    if rotated:
        line = _make_line(rotated, False, spaced)
        if line is not None:
            lines.append(line)
    return lines
