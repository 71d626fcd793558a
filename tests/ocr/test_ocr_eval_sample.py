"""``evaluate_ocr`` end to end on the generated sample report and its olmOCR-format tests
(tests/ocr/data/olmocr_sample_tests.jsonl, written for ocr/samples.py; each pair of tests has one that
must fail), and on the olmOCR-bench samples of the corpus when present."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from folioflow.ocr.converter import ConvertOptions, DocumentConverter
from folioflow.ocr.evaluation import evaluate_ocr, load_tests
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

TESTS = Path(__file__).parent / "data" / "olmocr_sample_tests.jsonl"

#: Outcome of every sample test on the text-layer engine: the true facts pass, the planted wrong
#: ones (wrong figure, wrong case, swapped order, wrong column/row, wrong sign/script) fail.
EXPECTED_TEXT = {
    "revenue_present": True, "margin_present": True, "margin_wrong_figure": False,
    "margin_wrong_figure_one_diff": True, "law_case_insensitive": True, "law_case_sensitive": False,
    "footer_absent": True, "revenue_absent": False, "title_first": True, "table_title_not_first": False,
    "heading_before_table": True, "table_before_heading": False, "cell_neighbours": True,
    "cell_wrong_column": False, "cell_row_heading": True, "cell_wrong_row": False, "sharpe_formula": True,
    "sharpe_formula_wrong_sign": False, "sharpe_formula_wrong_script": False,
    "sample.pdf_pg1_baseline": True, "sample.pdf_pg2_baseline": True,
}


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("olmocr-sample")
    write_sample_pdf(folder / "sample.pdf")
    return folder


def test_text_engine_passes_the_true_facts_and_fails_the_wrong_ones(sample_dir):
    report = evaluate_ocr(load_tests(TESTS), sample_dir, DocumentConverter(ConvertOptions(engine="text")), "text")
    outcome = {o.id: o.passed for o in report.outcomes}
    assert outcome == EXPECTED_TEXT
    assert report.by_type["table"] == {"passed": 2, "total": 4, "rate": 0.5}
    assert report.overall == pytest.approx(sum(EXPECTED_TEXT.values()) / len(EXPECTED_TEXT))
    assert {p["engine"] for p in report.pages.values()} == {"text"}
    why = {o.id: o.explanation for o in report.outcomes}
    assert "FY2025" in why["cell_wrong_column"] and "19.4%" in why["margin_wrong_figure"]


def test_missing_pdf_and_page_fail_with_their_reason(sample_dir, tmp_path):
    tests = load_tests(TESTS)
    shutil.copy(sample_dir / "sample.pdf", tmp_path / "other.pdf")
    for t in tests[:2]:
        t.pdf = "missing.pdf"
    tests[2].pdf, tests[2].page = "other.pdf", 9
    report = evaluate_ocr(tests, tmp_path, DocumentConverter(ConvertOptions(engine="text")), "text")
    by_id = {o.id: o for o in report.outcomes}
    assert not by_id["revenue_present"].passed and "not found" in by_id["revenue_present"].explanation
    assert not by_id["margin_wrong_figure"].passed and "outside 1..2" in by_id["margin_wrong_figure"].explanation
    assert by_id["missing.pdf_pg1_baseline"].passed is False


@pytest.mark.slow
def test_tesseract_on_a_scan_of_the_sample(sample_dir, tmp_path):
    write_scanned_copy(sample_dir / "sample.pdf", tmp_path / "sample.pdf", dpi=200)
    tests = [t for t in load_tests(TESTS) if t.type in ("present", "order", "baseline")]
    report = evaluate_ocr(tests, tmp_path, DocumentConverter(ConvertOptions(engine="ocr")), "ocr")
    outcome = {o.id: o.passed for o in report.outcomes}
    assert {p["engine"] for p in report.pages.values()} == {"tesseract"}
    assert outcome["revenue_present"] and outcome["margin_present"] and outcome["heading_before_table"]
    assert not outcome["margin_wrong_figure"] and not outcome["table_before_heading"]


@pytest.mark.corpus
def test_olmocr_bench_samples_on_the_text_layer(corpus):
    bench = corpus / "D_layout_math_tables" / "olmocr_bench"
    tests = load_tests(bench / "dataset.jsonl") + load_tests(bench / "blanks.jsonl")
    report = evaluate_ocr(tests, bench / "pdfs", DocumentConverter(ConvertOptions(engine="text")), "text")
    by_id = {o.id: o for o in report.outcomes}
    assert set(report.by_type) == {"present", "absent", "order", "table", "math", "baseline"}
    assert len(report.outcomes) == len(tests) + len({(t.pdf, t.page) for t in tests if t.type != "baseline"} -
                                                    {(t.pdf, t.page) for t in tests if t.type == "baseline"})
    assert by_id["test1_blank"].passed  # the blank page stays blank
    # born-digital pages with a usable text layer pass their facts; scans have no text layer
    assert by_id["olmo2-pg4_table01"].passed
    assert not by_id["building_notes_00"].passed and "not converted" in by_id["building_notes_00"].explanation
