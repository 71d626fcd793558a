"""olmOCR-bench test types on realistic page outputs: each rule passes the right output and fails a
wrong one (semantics of allenai/olmocr olmocr/bench/tests.py; see ocr.evaluation.checks)."""

from __future__ import annotations

import json

import pytest

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.evaluation.checks import load_tests, parse_test
from folioflow.ocr.evaluation.math import extract_formulas, linearize
from folioflow.ocr.evaluation.tables import parse_html_tables, parse_markdown_tables
from folioflow.ocr.evaluation.text import ngram_repeats, normalize_text

PAGE = """# Quarterly Report

**Revenue** rose to “$4.2 billion” — up 12% on the year.

Net income was $310 million.

| Segment | Q1 | Q2 |
|---|---|---|
| Advisory | 1.2 | 1.4 |
| Trading | 0.8 | 0.9 |

Page 7 of 12
"""


def run(row: dict, content: str = PAGE) -> bool:
    return parse_test({"pdf": "x.pdf", "page": 1, "id": "t", **row}).run(content)[0]


def test_normalisation_folds_markup_quotes_and_dashes():
    assert normalize_text("**Revenue**  rose\nto “$4.2”—up") == 'Revenue rose to "$4.2"-up'
    assert normalize_text("caf\u0065\u0301 5 \u00b5m") == "café 5 μm"


def test_present_and_absent_fuzzy_threshold():
    assert run({"type": "present", "text": 'Revenue rose to "$4.2 billion" - up 12% on the year.'})
    assert not run({"type": "present", "text": "Net income was $410 million."})
    assert run({"type": "present", "text": "Net income was $410 million.", "max_diffs": 1})
    assert not run({"type": "present", "text": "NET INCOME"})
    assert run({"type": "present", "text": "NET INCOME", "case_sensitive": False})
    assert run({"type": "absent", "text": "Page 8 of 12"})  # not there exactly
    assert not run({"type": "absent", "text": "Page 8 of 12", "max_diffs": 2})  # within the allowed edits: there
    assert run({"type": "absent", "text": "Page 7 of 12", "first_n": 40})  # not in the first 40 characters
    assert not run({"type": "absent", "text": "Page 7 of 12", "last_n": 40})


def test_order_needs_before_to_start_first():
    assert run({"type": "order", "before": "Quarterly Report", "after": "Net income was"})
    assert not run({"type": "order", "before": "Net income was", "after": "Quarterly Report"})
    assert not run({"type": "order", "before": "Quarterly Report", "after": "Operating income"})
    assert run({"type": "order", "before": "Quarterly Reprt", "after": "Net income", "max_diffs": 1})


def test_table_neighbours_on_markdown():
    assert run({"type": "table", "cell": "1.4", "up": "Q2", "down": "0.9", "left": "1.2", "top_heading": "Q2",
                "left_heading": "Advisory"})
    assert not run({"type": "table", "cell": "1.4", "top_heading": "Q1"})
    assert not run({"type": "table", "cell": "1.4", "left": "0.8"})
    assert not run({"type": "table", "cell": "1.4"}, "no table here")
    assert not run({"type": "table", "cell": "1.4", "ignore_markdown_tables": True})


def test_html_table_spans_give_several_neighbours():
    html = ("<table><thead><tr><th rowspan='2'>Item</th><th colspan='2'>2025</th></tr>"
            "<tr><th>H1</th><th>H2</th></tr></thead>"
            "<tbody><tr><td>Fees</td><td>10</td><td>12</td></tr></tbody></table>")
    [table] = parse_html_tables(html)
    assert table.cells[(0, 1)] == "2025" and (0, 2) not in table.cells  # a spanning cell is stored once
    assert {table.cells[c] for c in table.down[(0, 1)]} == {"H1", "H2"}
    assert {table.cells[c] for c in table.top_heading((2, 2))} == {"H2", "2025"}
    assert run({"type": "table", "cell": "12", "top_heading": "2025", "left_heading": "Fees", "up": "H2"}, html)
    assert not run({"type": "table", "cell": "12", "up": "H1"}, html)


def test_markdown_table_block_needs_two_pipe_lines():
    assert parse_markdown_tables("a | b") == []
    [t] = parse_markdown_tables("| a | b |\n|---|---|\n| 1 | 2 |")
    assert t.cells == {(0, 0): "a", (0, 1): "b", (1, 0): "1", (1, 1): "2"}
    assert (0, 0) in t.headings and (1, 0) in t.headings and (1, 1) not in t.headings


def test_math_compares_structure_not_spelling():
    page = "The identity $$ e^{i\\pi} + 1 = 0 $$ and \\( \\mathbf{F} = m a \\) hold."
    assert extract_formulas(page) == ["\\mathbf{F} = m a", "e^{i\\pi} + 1 = 0"]  # \\( first, as olmOCR-bench
    assert run({"type": "math", "math": "e^{i \\pi}+1=0"}, page)
    assert run({"type": "math", "math": "F=ma"}, page)  # bold and spacing fold away, as in rendered glyphs
    assert not run({"type": "math", "math": "e^{i}\\pi+1=0"}, page)  # pi moved out of the exponent
    assert not run({"type": "math", "math": "F=ma"}, page.replace("\\(", "").replace("\\)", ""))
    assert not run({"type": "math", "math": "F=ma", "ignore_dollar_delimited": True}, "$F = m a$")
    assert linearize("x_1^2") == linearize("x^{2}_{1}") != linearize("x_2^1")
    assert linearize("\\frac{a}{b}") != linearize("\\frac{b}{a}")


def test_baseline_blank_repetition_and_characters():
    assert run({"type": "baseline"})
    assert not run({"type": "baseline"}, "   \n ")
    assert not run({"type": "baseline"}, "Intro text. " + "ab " * 40)
    assert not run({"type": "baseline"}, "Revenue 収益 rose")
    assert run({"type": "baseline", "check_disallowed_characters": False}, "Revenue 収益 rose")
    assert run({"type": "baseline", "max_length": 10}, "p. 3")
    assert not run({"type": "baseline", "max_length": 10}, PAGE)
    assert run({"type": "baseline", "max_length": 10, "max_length_skips_image_alt_tags": True},
               "![a long picture description](img.png)")


def test_repeat_counts_match_the_reference_detector():
    # expected values from olmocr/repeatdetect.py's own unit tests
    assert ngram_repeats("abab", 3) == [1, 2, 1]
    assert ngram_repeats("aabaabaa", 3) == [2, 1, 2]
    assert ngram_repeats("abcabcabcabc", 5) == [1, 1, 4, 1, 1]
    assert ngram_repeats("", 3) == [0, 0, 0]


def test_loader_names_the_bad_line(tmp_path):
    good = {"pdf": "a.pdf", "page": 1, "id": "a", "type": "present", "text": "x"}
    path = tmp_path / "tests.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "id": "b", "type": "format"}) + "\n")
    with pytest.raises(ConfigurationError, match="line 3: unsupported test type 'format'"):
        load_tests(path)
    path.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(ConfigurationError, match="duplicate test id 'a'"):
        load_tests(path)
    path.write_text(json.dumps({**good, "max_diffs": 1, "type": "order", "before": "ab", "after": "cd"}) + "\n")
    with pytest.raises(ConfigurationError, match="unknown fields"):
        load_tests(path)
    path.write_text(json.dumps({"pdf": "a.pdf", "page": 1, "id": "o", "type": "order", "before": "ab", "after": "cd",
                                "max_diffs": 2}) + "\n")
    with pytest.raises(ConfigurationError, match="half"):
        load_tests(path)
