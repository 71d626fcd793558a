"""Is a model answer usable? Truncation and degenerate repetition.

An answer is rejected (and the page retried along the profile's temperature ladder) when:

* ``finish_reason`` is not ``"stop"``: it hit ``max_tokens`` (``"length"``) or was cut otherwise;
  olmOCR's pipeline rejects these too, chandra's keeps them (and so keeps half pages);
* it ends in a **repetition loop**: the tail of the text is one
  unit of 1-:data:`MAX_UNIT` characters repeated at least ``repeats_needed(len)`` times and spanning
  at least :data:`MIN_SPAN` characters. Shorter units need more repeats (a 1-character unit 64 times,
  a 40-character line 5 times), the same idea as chandra's ``detect_repeat_token`` (more repeats for
  short sequences), with our own thresholds;
* the same non-trivial line (>= 8 characters) appears :data:`MAX_SAME_LINE` times in a row anywhere.

Before both checks, complete tables (``<table>...</table>`` and Markdown pipe rows), HTML tags, dot
leaders and rules are removed: a table of "N/A" cells or a table of contents is not a loop. A loop
inside an unfinished table is always cut by ``max_tokens``, which the first rule catches.

:func:`check_answer` raises :class:`~folioflow.ocr.errors.OutputValidationError` with the reason.
"""

from __future__ import annotations

import math
import re

from folioflow.ocr.errors import OutputValidationError

__all__ = [
    "MAX_UNIT",
    "MIN_SPAN",
    "MAX_SAME_LINE",
    "repeats_needed",
    "find_tail_loop",
    "find_line_loop",
    "check_answer",
]

MAX_UNIT = 200
MIN_SPAN = 120
MAX_SAME_LINE = 12

_TABLES = re.compile(r"<table\b.*?</table>", re.DOTALL | re.IGNORECASE)
_PIPE_ROWS = re.compile(r"^\s*\|.*$", re.MULTILINE)
_TAGS = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")
_FILLERS = re.compile(r"[|.\-_=·…]{2,}")


def repeats_needed(unit_length: int) -> int:
    """Consecutive repeats of a unit of ``unit_length`` characters that count as a loop."""
    return max(4, math.ceil(64 / unit_length))


def _normalise(text: str) -> str:
    text = _PIPE_ROWS.sub(" ", _TABLES.sub(" ", text))  # complete tables legitimately repeat cells
    text = _TAGS.sub(" ", text)
    text = _FILLERS.sub(" ", text)  # dot leaders, table rules: legitimate long runs
    return _SPACE.sub(" ", text).strip()


def find_tail_loop(text: str) -> tuple[str, int] | None:
    """``(unit, repeats)`` when the normalised text ends in a repetition loop, else ``None``."""
    s = _normalise(text)
    n = len(s)
    for length in range(1, min(MAX_UNIT, n // 4) + 1):
        unit = s[n - length :]
        if not unit.strip():
            continue
        count, pos = 1, n - 2 * length
        while pos >= 0 and s[pos : pos + length] == unit:
            count += 1
            pos -= length
        if count >= repeats_needed(length) and count * length >= MIN_SPAN:
            return unit, count
    return None


def find_line_loop(text: str) -> tuple[str, int] | None:
    """``(line, repeats)`` for the first non-trivial line repeated :data:`MAX_SAME_LINE` times in a row."""
    previous, count = None, 0
    for raw in text.splitlines():
        line = _normalise(raw)
        if not line:
            continue
        count = count + 1 if line == previous else 1
        previous = line
        if count >= MAX_SAME_LINE and len(line) >= 8:
            return line, count
    return None


def _excerpt(unit: str) -> str:
    unit = unit.strip()
    return unit if len(unit) <= 40 else unit[:37] + "..."


def check_answer(text: str, finish_reason: str | None, completion_tokens: int | None = None) -> None:
    """Raise :class:`OutputValidationError` if the answer is truncated or loops (see module doc)."""
    if finish_reason != "stop":
        tokens = f" after {completion_tokens} tokens" if completion_tokens is not None else ""
        raise OutputValidationError(f"truncated: finish_reason={finish_reason}{tokens}")
    loop = find_tail_loop(text)
    if loop:
        raise OutputValidationError(f"repetition: the answer ends in {_excerpt(loop[0])!r} x{loop[1]}")
    line = find_line_loop(text)
    if line:
        raise OutputValidationError(f"repetition: line {_excerpt(line[0])!r} repeated {line[1]} times")
