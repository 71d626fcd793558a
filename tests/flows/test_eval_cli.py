"""``folioflow eval ocr|retrieval|chunks`` end to end on the generated sample report: ingested for
real (text layer, MiniLM, embedded Qdrant), then evaluated through the CLI (typer's runner, same
process); results checked in the JSON and the plots written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.settings import Settings
from folioflow.flows.sources import discover
from folioflow.ocr.samples import SAMPLE_FACTS, write_sample_pdf

OCR_TESTS = Path(__file__).resolve().parents[1] / "ocr" / "data" / "olmocr_sample_tests.jsonl"
runner = CliRunner()


@pytest.fixture(scope="module")
def ingested(tmp_path_factory) -> Path:
    """A data dir holding the sample report, ingested by the pipeline's stages (no Prefect needed)."""
    root = tmp_path_factory.mktemp("eval-cli")
    pdf = write_sample_pdf(root / "docs" / "northwind.pdf")
    pipeline = Pipeline(Settings(data_dir=root / "data"))
    pipeline.warm_up()
    try:
        [file] = discover([str(pdf)]).files
        document = pipeline.stages.convert(pipeline.stages.plan(file, pipeline.known(file)))
        pipeline.index(document, pipeline.stages.chunk(document))
    finally:
        pipeline.close()
    return root


def invoke(*args: str):
    result = runner.invoke(app, list(args))
    return result


def test_eval_retrieval(ingested, tmp_path):
    questions = tmp_path / "questions.jsonl"
    rows = [{"id": "margin", "question": "How much did the operating margin improve?",
             "evidence": [{"doc": "northwind.pdf", "page": 1}]},
            {"id": "law", "question": "Which state's laws govern the agreement?",
             "evidence": [{"doc": "northwind", "text": SAMPLE_FACTS["law"]}]},
            {"id": "sharpe", "question": "What was the Sharpe ratio of the flagship fund?",
             "evidence": [{"doc": "northwind.pdf", "page": 2}]},
            {"id": "absent", "question": "What was revenue?", "evidence": [{"doc": "other-report.pdf", "page": 3}]}]
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out, png = tmp_path / "retrieval.json", tmp_path / "retrieval.png"
    result = invoke("eval", "retrieval", "--questions", str(questions), "--data-dir", str(ingested / "data"),
                    "--k", "1,3", "--json", str(out), "--plot", str(png), "--per-question")
    assert result.exit_code == 0, result.output
    assert "1 skipped" in result.output and "other-report" in result.output
    data = json.loads(out.read_text())
    assert data["evaluated"] == 3 and data["skipped"] == ["absent"]
    for mode in ("dense", "sparse", "hybrid"):
        summary = data["summaries"]["shared"][mode]
        assert summary["page"]["hit@3"] == 1.0 and summary["document"]["hit@1"] == 1.0
    ranks = {(r["id"], r["mode"], r["scope"]): r["page_rank"] for r in data["results"]}
    assert ranks[("law", "hybrid", "shared")] == 1 and ranks[("law", "dense", "own")] == 1
    assert png.stat().st_size > 10_000


def test_eval_chunks(ingested, tmp_path):
    out, png = tmp_path / "chunks.json", tmp_path / "chunks.png"
    result = invoke("eval", "chunks", "--data-dir", str(ingested / "data"), "--json", str(out), "--plot", str(png))
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["summary"]["documents"] == 1 and data["summary"]["chunks"] >= 3
    assert data["summary"]["tables"] == 1 and data["summary"]["formulas"] == 1
    assert set(data["summary"]["failures"].values()) == {0}, data["documents"][0]["failures"]
    assert data["documents"][0]["note"] is None  # every embedded text was rebuilt exactly
    assert png.exists()


def test_eval_chunks_prints_whole_rows_when_piped(ingested):
    """Piped (stdout not a terminal, no COLUMNS), the tables keep each row on one line: a user's
    trial found `eval chunks | grep` cut at 80 columns, the title and the header over several lines
    and each cell folded."""
    from folioflow.chunking.evaluation import CATEGORIES

    result = CliRunner(env={"COLUMNS": None}).invoke(app, ["eval", "chunks", "--data-dir", str(ingested / "data")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    title = next(line for line in lines if "Chunk invariants:" in line)
    assert title.rstrip().endswith("formulas in their Markdown)"), result.output
    header = next(line for line in lines if "┃ document" in line)
    assert all(c.replace("_", " ") in header for c in CATEGORIES), result.output
    row = next(line for line in lines if "northwind.pdf" in line)
    assert len(row.strip().strip("│").split("│")) == 2 + len(CATEGORIES) and len(row) > 80, result.output


def test_eval_ocr_compares_engines(tmp_path):
    write_sample_pdf(tmp_path / "pdfs" / "sample.pdf")
    out, png = tmp_path / "folioflow.ocr.json", tmp_path / "folioflow.ocr.png"
    result = invoke("eval", "ocr", "--tests", str(OCR_TESTS), "--pdfs", str(tmp_path / "pdfs"), "--engine", "text",
                    "--engine", "auto", "--json", str(out), "--plot", str(png), "--no-progress")
    assert result.exit_code == 0, result.output
    engines = {e["engine"]: e for e in json.loads(out.read_text())["engines"]}
    assert set(engines) == {"text", "auto"}
    assert engines["text"]["passed"] == engines["auto"]["passed"] == 12  # born-digital: auto routes to the text layer
    assert "text: 9 failing tests" in result.output  # failing tests are listed
    assert png.exists()


def test_eval_errors_are_one_line(tmp_path):
    result = invoke("eval", "ocr", "--tests", str(OCR_TESTS), "--pdfs", str(tmp_path), "--engine", "magic")
    assert result.exit_code == 1 and "--engine 'magic'" in result.output
    result = invoke("eval", "ocr", "--tests", str(OCR_TESTS), "--pdfs", str(tmp_path), "--engine", "vlm")
    assert result.exit_code == 1 and "--ocr-endpoint" in result.output
    result = invoke("eval", "ocr", "--tests", str(OCR_TESTS), "--pdfs", str(tmp_path), "--engine", "vlm",
                    "--ocr-endpoint", "http://127.0.0.1:9/v1")  # nothing listens on the discard port
    assert result.exit_code == 1 and "engine vlm: no VLM endpoint answered" in result.output
    result = invoke("eval", "ocr", "--tests", str(tmp_path / "none.jsonl"), "--pdfs", str(tmp_path))
    assert result.exit_code == 1 and "cannot read tests" in result.output
    result = invoke("eval", "retrieval", "--questions", str(OCR_TESTS), "--data-dir", str(tmp_path / "empty"))
    assert result.exit_code == 1 and "olmocr_sample_tests.jsonl: line 1: expected 'question'" in result.output
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "q", "evidence": [{"doc": "a.pdf", "page": 1}]}) + "\n")
    result = invoke("eval", "retrieval", "--questions", str(questions), "--data-dir", str(tmp_path / "empty"))
    assert result.exit_code == 1 and "no index under" in result.output
    result = invoke("eval", "retrieval", "--questions", str(questions), "--modes", "dense,fuzzy")
    assert result.exit_code == 1 and "fuzzy" in result.output


def test_plot_without_matplotlib_says_how_to_install(tmp_path, monkeypatch):
    import sys

    from folioflow.flows.cli.eval_plot import bar_chart
    from folioflow.ocr.errors import ConfigurationError

    bar_chart({"a": {"x": 0.5, "y": 1.0}, "b": {"x": 0.25}}, tmp_path / "ok.png", "t", "share")
    assert (tmp_path / "ok.png").stat().st_size > 5_000
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the 'plot' extra were not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'folioflow\[plot\]'"):
        bar_chart({"a": {"x": 0.5}}, tmp_path / "no.png", "t", "share")


def test_plot_without_matplotlib_fails_before_the_evaluation(tmp_path, monkeypatch):
    """``--plot`` with the `plot` extra missing: one line naming it, and no evaluation started (the
    missing index would otherwise be the error)."""
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the 'plot' extra were not installed
    result = invoke("eval", "chunks", "--data-dir", str(tmp_path / "empty"), "--plot", str(tmp_path / "p.png"))
    assert result.exit_code == 1
    assert "needs the `plot` extra" in result.output and "pip install 'folioflow[plot]'" in result.output
    assert "no index" not in result.output
    result = invoke("eval", "chunks", "--data-dir", str(tmp_path / "empty"))  # no --plot: the evaluation runs
    assert result.exit_code == 1 and "no index" in result.output


def test_watch_files_without_watchfiles_names_the_extra(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "watchfiles", None)  # as if the 'orchestration' extra were not installed
    result = invoke("watch-files")
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "`orchestration` extra" in lines[0] and "watchfiles" in lines[0], result.output
