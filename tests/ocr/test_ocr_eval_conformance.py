"""folioflow's olmOCR-bench rules agree with allenai/olmocr's own test code on real page outputs.

Golden: ``tests/ocr/golden/olmocr_bench_upstream.json`` holds folioflow's text-layer Markdown of the
olmOCR-bench sample pages and the outcome of every non-math test of the corpus' dataset (plus the
default baseline test) as computed by the original code (regenerate with
``tests/ocr/golden/regenerate_olmocr_upstream.py``, which says how)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from folioflow.ocr.evaluation.checks import BaselineTest, parse_test

GOLDEN = json.loads((Path(__file__).parent / "golden" / "olmocr_bench_upstream.json").read_text())


@pytest.mark.corpus
def test_every_rule_agrees_with_the_original(corpus):
    bench = corpus / "D_layout_math_tables" / "olmocr_bench"
    rows = {r["id"]: r for name in ("dataset.jsonl", "blanks.jsonl")
            for r in map(json.loads, filter(str.strip, (bench / name).read_text().splitlines()))}
    disagree, checked = [], 0
    for key, expected in GOLDEN["expected"].items():
        markdown = GOLDEN["pages"][key]
        pdf, page = key.rsplit("#", 1)
        for test_id, passed in expected.items():
            test = (BaselineTest(pdf=pdf, page=int(page), id=test_id, type="baseline") if test_id == "__baseline__"
                    else parse_test(rows[test_id]))
            checked += 1
            if test.run(markdown)[0] != passed:
                disagree.append((test_id, passed))
    assert checked == 111 and not disagree
    passes = sum(v for e in GOLDEN["expected"].values() for v in e.values())
    assert 0 < passes < checked  # the golden exercises both outcomes


def test_golden_records_its_source():
    assert GOLDEN["source"].startswith("allenai/olmocr olmocr/bench/tests.py at ")
