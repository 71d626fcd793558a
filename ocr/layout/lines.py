"""Characters -> text lines (horizontal runs of words without a column-sized gap).

Characters are grouped into *rows* by vertical overlap, rows are split into *lines* wherever the
horizontal gap exceeds :data:`SPLIT_EM` times the font size (column gutters, table cells, tab
stops), and words are separated wherever PDFium put a space between two characters that are neighbours
in the line or the gap exceeds :data:`WORD_EM` em. Right-to-left rows (Arabic, Hebrew) keep PDFium's content order, which is the
logical order in the PDFs we see; left-to-right rows are ordered by x.

The builder works on parallel lists of character attributes indexed by position (a page has
thousands of characters and is grouped several times); its hot loops compare floats inline
instead of calling ``min``/``max``, with the same results.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from operator import itemgetter

from folioflow.ocr.layout.pdfpage import Char

__all__ = ["Line", "build_lines", "SPLIT_EM", "WORD_EM"]

#: A horizontal gap above this many em splits a row into separate lines (column gutter, cell).
SPLIT_EM = 1.0
#: A gap above this many em separates words even without a space character.
WORD_EM = 0.2
#: Letters' bottoms this many median letter heights apart are on two lines (see ``_split_baselines``).
BASELINE_GAP = 0.6
#: Letters or digits each line must keep for a run to be split in two (a footnote mark stays).
MIN_LINE_LETTERS = 4


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


#: Strong direction per character: -1 right-to-left (bidi class R, AL), 1 left-to-right (L), 0 other.
_DIRECTION: dict[str, int] = {}


def _direction(text: str) -> int:
    known = _DIRECTION.get(text)
    if known is None:
        bidi = unicodedata.bidirectional(text)
        known = _DIRECTION[text] = -1 if bidi in ("R", "AL") else (1 if bidi == "L" else 0)
    return known


def _median(values: list[float] | tuple[float, ...]) -> float:
    """``statistics.median`` of a non-empty sequence (the same arithmetic, without its overhead)."""
    data = sorted(values)
    n = len(data)
    if n % 2:
        return data[n // 2]
    return (data[n // 2 - 1] + data[n // 2]) / 2


class _Columns:
    """Parallel lists of the character attributes the line builder reads, by index in ``chars``."""

    def __init__(self, chars: list[Char]):
        self.chars = chars
        self.text = text = [c.text for c in chars]
        self.x0 = [c.x0 for c in chars]
        self.y0 = [c.y0 for c in chars]
        self.x1 = [c.x1 for c in chars]
        self.y1 = [c.y1 for c in chars]
        self.size = [c.size for c in chars]
        self.alnum = [t.isalnum() for t in text]
        # bidi direction per char, only on pages that have right-to-left letters at all
        self.any_rtl = min(map(_direction, set(text)), default=0) < 0
        self.direction = list(map(_DIRECTION.__getitem__, text)) if self.any_rtl else []
        # 1 = preceded (in content order) by a space PDFium generated, 2 = by a real space character,
        # 3 = by a line break PDFium generated (kept as a "\n" blank by the reader);
        # after[i]: the character before that space in content order (the space separates the two)
        self.spaced = [0] * len(chars)
        self.after = [-1] * len(chars)
        self.blank = blank = [t.isspace() for t in text]
        last = -1
        for i, b in enumerate(blank):
            if b:
                if i + 1 < len(blank) and not blank[i + 1]:
                    self.spaced[i + 1] = (3 if chars[i].text == "\n" else 1) if chars[i].generated else 2
                    self.after[i + 1] = last
            else:
                last = i


def _values(pick: itemgetter, column: list) -> tuple:
    """``pick(column)`` as a tuple (itemgetter of one index returns the bare value)."""
    got = pick(column)
    return got if isinstance(got, tuple) else (got,)


def _make_line(run: list[int], rtl: bool, cols: _Columns, rotated: bool = False) -> Line | None:
    """A line from the non-space characters ``run`` (indices, in reading order); ``rotated``: the
    page's rotated characters in content order, whose x gaps say nothing (a chart's slanted axis
    labels overlap in x): every line break PDFium inferred separates words there."""
    text_of, size_of, spaced, after, x0, x1 = cols.text, cols.size, cols.spaced, cols.after, cols.x0, cols.x1
    parts: list[str] = [text_of[run[0]]]
    prev = run[0]
    for i in run[1:]:
        if parts[-1] != " ":
            gap = (x0[prev] - x1[i]) if rtl else (x0[i] - x1[prev])
            a, b = size_of[i], size_of[prev]
            em = a if a >= b else b  # noqa: FURB136 (max() costs more; same value)
            # a space in the content stream separates this character from the one drawn before it:
            # it counts only when that one is this line's previous character (a layer drawn in
            # scrambled order has spaces between characters that are not neighbours on the page).
            # A line break PDFium inferred between two neighbours of one line is no word gap: a
            # layer that draws each glyph as a text object of its own (J&J's and Kraft Heinz's
            # 10-K tables) gets one between every two letters; the gap alone decides there
            if (spaced[i] and (spaced[i] != 3 or rotated) and after[i] == prev) \
                    or gap > WORD_EM * (em if em >= 1.0 else 1.0):  # noqa: FURB136
                parts.append(" ")
        parts.append(text_of[i])
        prev = i
    text = "".join(parts).strip()
    if not text:
        return None
    pick = itemgetter(*run)
    chars = list(_values(pick, cols.chars))
    letters = [c for c in chars if c.text.isalnum()] or chars
    return Line(
        x0=min(_values(pick, x0)), y0=min(_values(pick, cols.y0)),
        x1=max(_values(pick, x1)), y1=max(_values(pick, cols.y1)),
        text=text,
        size=_median(_values(pick, size_of)),
        bold=sum([c.bold for c in letters]) >= 0.8 * len(letters),
        italic=sum([c.italic for c in letters]) >= 0.8 * len(letters),
        fonts=tuple(dict.fromkeys([c.font for c in chars])),
        chars=chars,
    )


def _rows(upright: list[int], cols: _Columns) -> list[list[int]]:
    """Group characters (indices) whose vertical centres fall within each other's band. The band
    is that of the row's letters and digits: a symbol (check box, bracket, bullet) joins a row
    without widening it, so a box drawn beside two tightly set lines does not merge them."""
    y0_of, y1_of, size_of = cols.y0, cols.y1, cols.size
    mids = [(a + b) / 2 for a, b in zip(y0_of, y1_of, strict=True)]
    rows: list[list[int]] = []
    members: list[int] = []
    top = bottom = lead = 0.0
    alnum = cols.alnum
    lettered = False  # whether the row's band comes from a letter or digit
    for i in sorted(upright, key=mids.__getitem__):
        y0, y1 = y0_of[i], y1_of[i]
        mid = mids[i]
        if rows and top <= mid <= bottom and (y1 - y0) < 2.5 * (bottom - top):
            members.append(i)
            if alnum[i] and not lettered:  # the row began with symbols: its text sets the band
                top, bottom, lead, lettered = y0, y1, 0.8 * size_of[i], True
            # keep the band of the row's main text: superscripts must not stretch it much, and
            # symbols not at all (a check box beside two tightly set lines spans both)
            elif size_of[i] >= lead and (alnum[i] or not lettered):
                if y0 < top:  # noqa: PLR1730
                    top = y0
                if y1 > bottom:  # noqa: PLR1730
                    bottom = y1
            continue
        members = [i]
        rows.append(members)
        top, bottom, lead, lettered = y0, y1, 0.8 * size_of[i], alnum[i]
    return rows


def _split_row(row: list[int], cols: _Columns) -> list[list[int]]:
    """Split one row (character indices) at large horizontal gaps; return runs left to right."""
    x0_of, x1_of, size_of, spaced = cols.x0, cols.x1, cols.size, cols.spaced
    runs: list[list[int]] = []
    run: list[int] = []
    right = 0.0
    for i in sorted(sorted(row), key=x0_of.__getitem__):  # by x, then content order
        if run:
            a, b = size_of[i], size_of[run[-1]]
            em = a if a >= b else b  # noqa: FURB136
            if em < 1.0:  # noqa: PLR1730
                em = 1.0
            gap = x0_of[i] - right
            if gap > SPLIT_EM * em and not (spaced[i] == 2 and gap < 3 * em):
                run = []
                runs.append(run)
            x1 = x1_of[i]
            if x1 > right:  # noqa: PLR1730
                right = x1
        else:
            run = []
            runs.append(run)
            right = x1_of[i]
        run.append(i)
    return runs


def _split_baselines(run: list[int], cols: _Columns) -> list[list[int]]:
    """Split a run (character indices) holding two lines set one above the other into one run per
    line, top first. A row's band can widen to take in the next line of a tightly leaded table cell
    (a taller glyph in another column stretches it), and sorted by x the two lines would interleave
    letter by letter ("ACurtrircelnest" for "Articles" over "Current"). Split where the sorted
    bottoms of the letters and digits jump by more than :data:`BASELINE_GAP` of their median
    height, when each side keeps :data:`MIN_LINE_LETTERS` of them (a superscript or a drop cap
    stays with its line)."""
    letters = [i for i in run if cols.alnum[i]]
    if len(letters) < 2 * MIN_LINE_LETTERS:
        return [run]
    heights = sorted(cols.y1[i] - cols.y0[i] for i in letters)
    limit = BASELINE_GAP * heights[len(heights) // 2]
    bottoms = sorted(cols.y1[i] for i in letters)
    best, at = 0.0, -1
    for k in range(MIN_LINE_LETTERS, len(bottoms) - MIN_LINE_LETTERS + 1):
        gap = bottoms[k] - bottoms[k - 1]
        if gap > best:
            best, at = gap, k
    if at < 0 or best <= limit:
        return [run]
    cut = (bottoms[at - 1] + bottoms[at]) / 2
    upper = [i for i in run if cols.y1[i] <= cut]
    lower = [i for i in run if cols.y1[i] > cut]
    return [*_split_baselines(upper, cols), *_split_baselines(lower, cols)]


def build_lines(chars: list[Char]) -> list[Line]:
    """Group upright, visible characters into :class:`Line` objects (unsorted across columns;
    see :mod:`folioflow.ocr.layout.order` for reading order). Rotated characters are returned as their own
    lines in content order."""
    cols = _Columns(chars)
    blank = cols.blank
    upright = [i for i, c in enumerate(chars) if c.upright and not c.invisible and not blank[i]]
    direction = cols.direction
    lines: list[Line] = []
    for row in _rows(upright, cols):
        for run in (part for whole in _split_row(row, cols) for part in _split_baselines(whole, cols)):
            rtl = cols.any_rtl and sum([direction[i] for i in run]) < 0
            if rtl:
                run = sorted(run)
            line = _make_line(run, rtl, cols)
            if line is not None:
                lines.append(line)
    rotated = [i for i, c in enumerate(chars) if not c.upright and not c.invisible and not blank[i]]
    if rotated:
        line = _make_line(rotated, False, cols, rotated=True)
        if line is not None:
            lines.append(line)
    return lines
