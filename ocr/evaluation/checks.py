"""olmOCR-bench test types: pass/fail facts about one page's OCR output.

Format and semantics follow allenai/olmocr ``olmocr/bench/tests.py`` (commit f7cfe4c); the JSONL
rows of olmOCR-bench (``{"pdf", "page", "id", "type", ...}``, page 1-based) load unchanged.
Every test string and the OCR output are normalised with :func:`~folioflow.ocr.evaluation.text.normalize_text`.

* ``present`` / ``absent`` (:class:`TextPresenceTest`): fuzzy substring search with rapidfuzz
  ``partial_ratio``; threshold ``1 - max_diffs / len(text)``; ``case_sensitive`` (default true);
  ``first_n``/``last_n`` restrict the search to the first/last characters of the normalised output
  (both: their concatenation). ``present`` passes at or above the threshold, ``absent`` below it.
* ``order`` (:class:`TextOrderTest`): both texts found with Levenshtein distance <= ``max_diffs``
  (fuzzysearch ``find_near_matches``) and some match of ``before`` starts before some match of
  ``after``. ``max_diffs`` above half of either text is invalid.
* ``table`` (:class:`TableTest`): a cell of some Markdown or HTML table matches ``cell`` (rapidfuzz
  ``ratio`` >= ``max(0.5, 1 - max_diffs / len(cell))``) and, for that same cell, each given relation
  (``up``, ``down``, ``left``, ``right``, ``top_heading``, ``left_heading``) has a related cell
  matching its text with the same threshold rule (see :mod:`folioflow.ocr.evaluation.tables`).
  ``ignore_markdown_tables`` restricts the search to HTML tables.
* ``math`` (:class:`MathTest`): see :mod:`folioflow.ocr.evaluation.math` (offline approximation of KaTeX
  rendering). ``ignore_dollar_delimited`` skips ``$``/``$$`` formulas.
* ``baseline`` (:class:`BaselineTest`): with ``max_length``, a blank-page check (at most that many
  alphanumeric characters; ``max_length_skips_image_alt_tags`` ignores ``![alt](src)``). Otherwise
  the output must hold an alphanumeric character, must not end with a character n-gram (n <= 5)
  repeated more than ``max_repeats`` (30) times back to back, and (``check_disallowed_characters``)
  must hold no CJK ideographs, kana or emoji: olmOCR-bench's English-only "plausible characters"
  rule, so use it on English documents. :func:`folioflow.ocr.evaluation.runner.evaluate_ocr` adds one
  baseline test per tested page that has none, as olmOCR-bench adds one per PDF.

Tests of types olmOCR-bench has but these rules do not cover (``format``, ``footnote``) are
rejected at load time with their id, like any other invalid row.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

from fuzzysearch import find_near_matches
from rapidfuzz import fuzz

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.evaluation.math import formula_matches
from folioflow.ocr.evaluation.tables import parse_tables
from folioflow.ocr.evaluation.text import ngram_repeats, normalize_text

__all__ = [
    "TEST_TYPES",
    "BaselineTest",
    "MathTest",
    "OcrTest",
    "TableTest",
    "TextOrderTest",
    "TextPresenceTest",
    "load_tests",
    "parse_test",
]


def _threshold(max_diffs: int, text: str) -> float:
    return 1.0 - max_diffs / (len(text) or 1)


@dataclass(kw_only=True)
class OcrTest:
    """Fields shared by every test: ``pdf`` (file name under the PDF folder), ``page`` (1-based),
    ``id`` (unique), ``type``, ``max_diffs`` (allowed character edits), ``checked``, ``url``."""

    pdf: str
    page: int
    id: str
    type: str
    max_diffs: int = 0
    checked: str | None = None
    url: str | None = None
    types: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        if not self.pdf or not self.id:
            raise ValueError("'pdf' and 'id' must be non-empty")
        if not isinstance(self.page, int) or self.page < 1:
            raise ValueError("'page' must be an integer >= 1")
        if not isinstance(self.max_diffs, int) or self.max_diffs < 0:
            raise ValueError("'max_diffs' must be an integer >= 0")
        if self.type not in self.types:
            raise ValueError(f"type {self.type!r} is not one of {self.types}")

    def run(self, content: str) -> tuple[bool, str]:
        """``(passed, explanation)`` for one page's Markdown ``content``."""
        raise NotImplementedError

    def describe(self) -> str:
        """Short human description of what is checked (for failure listings)."""
        return self.type


@dataclass(kw_only=True)
class TextPresenceTest(OcrTest):
    text: str
    case_sensitive: bool = True
    first_n: int | None = None
    last_n: int | None = None
    types: ClassVar[tuple[str, ...]] = ("present", "absent")

    def __post_init__(self) -> None:
        super().__post_init__()
        self.text = normalize_text(self.text)
        if not self.text.strip():
            raise ValueError("'text' must be non-empty")

    def run(self, content: str) -> tuple[bool, str]:
        query, content = self.text, normalize_text(content)
        if not self.case_sensitive:
            query, content = query.lower(), content.lower()
        if self.first_n and self.last_n:
            content = content[: self.first_n] + content[-self.last_n:]
        elif self.first_n:
            content = content[: self.first_n]
        elif self.last_n:
            content = content[-self.last_n:]
        threshold = _threshold(self.max_diffs, query)
        ratio = fuzz.partial_ratio(query, content) / 100.0
        if self.type == "present":
            return (True, "") if ratio >= threshold else (
                False, f"expected {query[:50]!r}: best match {ratio:.3f} < {threshold:.3f}")
        return (True, "") if ratio < threshold else (
            False, f"expected absence of {query[:50]!r}: best match {ratio:.3f} >= {threshold:.3f}")

    def describe(self) -> str:
        return f"{self.type} {self.text[:60]!r}"


@dataclass(kw_only=True)
class TextOrderTest(OcrTest):
    before: str
    after: str
    types: ClassVar[tuple[str, ...]] = ("order",)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.before, self.after = normalize_text(self.before), normalize_text(self.after)
        if not self.before.strip() or not self.after.strip():
            raise ValueError("'before' and 'after' must be non-empty")
        if self.max_diffs > len(self.before) // 2 or self.max_diffs > len(self.after) // 2:
            raise ValueError("'max_diffs' exceeds half of 'before' or 'after'")

    def run(self, content: str) -> tuple[bool, str]:
        content = normalize_text(content)
        before = find_near_matches(self.before, content, max_l_dist=self.max_diffs)
        if not before:
            return False, f"'before' text {self.before[:40]!r} not found (max {self.max_diffs} edits)"
        after = find_near_matches(self.after, content, max_l_dist=self.max_diffs)
        if not after:
            return False, f"'after' text {self.after[:40]!r} not found (max {self.max_diffs} edits)"
        if min(m.start for m in before) < max(m.start for m in after):
            return True, ""
        return False, f"{self.before[:40]!r} never appears before {self.after[:40]!r}"

    def describe(self) -> str:
        return f"order {self.before[:30]!r} < {self.after[:30]!r}"


_RELATIONS = ("up", "down", "left", "right", "top_heading", "left_heading")


@dataclass(kw_only=True)
class TableTest(OcrTest):
    cell: str
    up: str = ""
    down: str = ""
    left: str = ""
    right: str = ""
    top_heading: str = ""
    left_heading: str = ""
    ignore_markdown_tables: bool = False
    types: ClassVar[tuple[str, ...]] = ("table",)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("cell",) + _RELATIONS:
            setattr(self, name, normalize_text(getattr(self, name)))

    def _passes(self, expected: str, text: str) -> float:
        return fuzz.ratio(expected, normalize_text(text)) / 100.0

    def run(self, content: str) -> tuple[bool, str]:
        tables = parse_tables(content, markdown=not self.ignore_markdown_tables)
        if not tables:
            return False, "no table in the output"
        threshold = max(0.5, _threshold(self.max_diffs, self.cell))
        reasons: list[str] = []
        for table in tables:
            for pos, text in table.cells.items():
                if self._passes(self.cell, text) < threshold:
                    continue
                failed = []
                for name in _RELATIONS:
                    expected = getattr(self, name)
                    if not expected:
                        continue
                    related = (getattr(table, name)(pos) if name.endswith("heading") else getattr(table, name)[pos])
                    need = max(0.5, _threshold(self.max_diffs, expected))
                    scores = [(self._passes(expected, table.cells[o]), table.cells[o]) for o in related]
                    best = max(scores, default=(0.0, None))
                    if best[0] < need:
                        failed.append(f"{name} of {text[:20]!r} is {best[1]!r}, expected {expected[:30]!r}")
                if not failed:
                    return True, ""
                reasons += failed
        if not reasons:
            return False, f"no table cell matches {self.cell[:40]!r} (threshold {threshold:.2f})"
        return False, "; ".join(reasons[:3])

    def describe(self) -> str:
        rel = ", ".join(f"{n}={getattr(self, n)[:20]!r}" for n in _RELATIONS if getattr(self, n))
        return f"table cell {self.cell[:30]!r}" + (f" ({rel})" if rel else "")


@dataclass(kw_only=True)
class MathTest(OcrTest):
    math: str
    ignore_dollar_delimited: bool = False
    types: ClassVar[tuple[str, ...]] = ("math",)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.math.strip():
            raise ValueError("'math' must be non-empty")

    def run(self, content: str) -> tuple[bool, str]:
        return formula_matches(self.math, content, dollars=not self.ignore_dollar_delimited)

    def describe(self) -> str:
        return f"math {self.math[:50]!r}"


_DISALLOWED = re.compile("[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff\U0001F600-\U0001F64F\U0001F300-\U0001F5FF"
                         "\U0001F680-\U0001F6FF\U0001F1E0-\U0001F1FF]")
_IMAGE = re.compile(r"!\[.*?\]\(.*?\)")


@dataclass(kw_only=True)
class BaselineTest(OcrTest):
    max_length: int | None = None
    max_length_skips_image_alt_tags: bool = False
    max_repeats: int = 30
    check_disallowed_characters: bool = True
    types: ClassVar[tuple[str, ...]] = ("baseline",)

    def run(self, content: str) -> tuple[bool, str]:
        alnum = sum(1 for ch in content if ch.isalnum())
        if self.max_length is not None:
            if self.max_length_skips_image_alt_tags:
                alnum = sum(1 for ch in _IMAGE.sub("", content) if ch.isalnum())
            return (True, "") if alnum <= self.max_length else (
                False, f"{alnum} alphanumeric characters on a page expected blank (max {self.max_length})")
        if alnum == 0:
            return False, "no alphanumeric character in the output"
        for n, count in enumerate(ngram_repeats(content), 1):
            if count > self.max_repeats:
                return False, f"output ends with a {n}-gram repeated {count} times"
        if self.check_disallowed_characters:
            bad = _DISALLOWED.findall(content)
            if bad:
                return False, f"disallowed characters {''.join(sorted(set(bad)))[:20]!r}"
        return True, ""

    def describe(self) -> str:
        return "baseline (blank page)" if self.max_length is not None else "baseline (text, repetition, characters)"


TEST_TYPES: dict[str, type[OcrTest]] = {t: cls for cls in (TextPresenceTest, TextOrderTest, TableTest, MathTest,
                                                           BaselineTest) for t in cls.types}


def parse_test(row: dict[str, Any]) -> OcrTest:
    """A test from one olmOCR-bench JSONL object. Raises ``ValueError`` naming the problem."""
    cls = TEST_TYPES.get(row.get("type", ""))
    if cls is None:
        raise ValueError(f"unsupported test type {row.get('type')!r} (supported: {sorted(TEST_TYPES)})")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(row) - known)
    if unknown:
        raise ValueError(f"unknown fields {unknown} for a {row['type']!r} test")
    try:
        return cls(**row)
    except TypeError as exc:  # missing required field
        raise ValueError(str(exc).replace("__init__() ", "")) from None


def load_tests(path: str | Path) -> list[OcrTest]:
    """Every test of an olmOCR-bench JSONL file (blank lines skipped). Raises
    :class:`ConfigurationError` naming the file, line and reason for an unreadable file, a bad row or
    a duplicate id."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigurationError(f"cannot read tests {path}: {exc.strerror or exc}") from exc
    tests: list[OcrTest] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            test = parse_test(json.loads(line))
        except (json.JSONDecodeError, ValueError) as exc:
            raise ConfigurationError(f"{path}: line {number}: {exc}") from exc
        if test.id in seen:
            raise ConfigurationError(f"{path}: line {number}: duplicate test id {test.id!r}")
        seen.add(test.id)
        tests.append(test)
    return tests

