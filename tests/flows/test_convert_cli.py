"""``folioflow convert`` end to end (typer's CliRunner, real engines, generated and corpus files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import typer
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.ocr.samples import write_sample_pdf


def invoke(*args: str):
    command = typer.main.get_command(app)  # a group once several commands are registered
    argv = ["convert", *args] if hasattr(command, "commands") else list(args)
    return CliRunner(env={"COLUMNS": "200"}).invoke(app, argv)


@pytest.fixture()
def inputs(tmp_path) -> Path:
    root = tmp_path / "in"
    write_sample_pdf(root / "reports" / "annual.pdf")
    (root / "reports" / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF trailing garbage")
    (root / "empty.pdf").write_bytes(b"")
    return root


def test_convert_folder_to_all_formats(inputs, tmp_path):
    out = tmp_path / "out"
    result = invoke(str(inputs), "--output", str(out), "--format", "markdown,html,json", "--engine", "text")
    assert result.exit_code == 0, result.output
    md = (out / "reports" / "annual.md").read_text()
    assert md.startswith("<!-- page 1 -->") and "<!-- page 2 -->" in md and "| Total revenue | 4,210 |" in md
    assert (out / "reports" / "annual.html").read_text().startswith("<!DOCTYPE html>")
    schema = json.loads((out / "document.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads((out / "reports" / "annual.json").read_text()))
    # the bad files are reported with their reasons, the good one was still converted
    assert "broken.pdf" in result.output and "empty.pdf" in result.output and "empty file" in result.output
    assert not (out / "empty.md").exists()
    assert "pages/s" in result.output


def test_page_range_headers_and_missing_paths(inputs, tmp_path):
    out = tmp_path / "out"
    result = invoke(str(inputs / "reports" / "annual.pdf"), str(tmp_path / "missing.pdf"), "-o", str(out),
                    "--page-range", "2", "--include-headers-footers")
    assert result.exit_code == 0, result.output
    md = (out / "annual.md").read_text()
    assert "<!-- page 1 -->" not in md and "<!-- page 2 -->" in md
    assert "Annual Report 2025 - Page 2" in md
    assert "not found" in result.output


def test_bad_options_exit_non_zero(inputs, tmp_path):
    assert invoke(str(inputs), "-o", str(tmp_path / "o"), "--format", "docx").exit_code != 0
    assert invoke(str(inputs), "-o", str(tmp_path / "o"), "--page-range", "x-").exit_code == 2
    result = invoke(str(inputs), "-o", str(tmp_path / "o"), "--ocr-endpoint", "http://localhost:9/v1")
    from folioflow.ocr.extras import installed

    if not installed("vlm"):
        assert result.exit_code == 1 and "pip install 'folioflow[vlm]'" in result.output


@pytest.mark.corpus
def test_malformed_corpus_files_do_not_stop_the_batch(corpus, tmp_path):
    folder = tmp_path / "batch"
    folder.mkdir()
    for rel in ("E_malformed/pdfplumber/empty.pdf", "E_malformed/ocrmypdf/invalid.pdf", "E_malformed/pdfjs/issue6010_1.pdf",
                "E_malformed/derived/zero_pages_from_pdfjs_empty.pdf", "B_legal/misc"):
        src = corpus / rel
        if src.is_file():
            shutil.copy(src, folder / src.name)
    contract = sorted((corpus / "B_legal/cuad/pdfs").rglob("*.pdf"))[0]
    shutil.copy(contract, folder / "zz_contract.pdf")
    out = tmp_path / "out"
    result = invoke(str(folder), "-o", str(out), "--engine", "text")
    assert result.exit_code == 0, result.output
    assert (out / "zz_contract.md").read_text().count("<!-- page ") >= 1
    for reason in ("empty file", "corrupt PDF", "encrypted: password required"):
        assert reason in result.output
