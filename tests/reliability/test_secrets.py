"""Secrets never appear in logs, reports or artifacts.

A real ``folioflow ingest`` run (subprocess, Prefect in ephemeral mode with its own PREFECT_HOME,
verbose logs on) is given a Qdrant API key, an OCR endpoint token and PDF passwords, each a unique
string; then every byte the run produced is searched for them: stdout, stderr, the JSON report,
every file under the data directory (embedded Qdrant shards and WAL, OCR cache, converted
documents) and under PREFECT_HOME (the flow-run database: parameters, logs, artifacts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from folioflow.ocr.samples import write_encrypted_pdf, write_sample_pdf

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SECRETS = {
    "qdrant_api_key": "qk-4d1f0c7e-never-log-me",
    "ocr_api_key": "ocr-tok-93b2a6e1-never-log-me",
    "pdf_password": "pdfpw-5e77c2d9-never-log-me",
    "wrong_password": "pdfpw-0a1b2c3d-wrong-guess",
}


def encrypted_pdf(path: Path, password: str) -> Path:
    """A one-page side letter encrypted with ``password``."""
    return write_encrypted_pdf(path, password, title="Confidential Side Letter", lines=(
        "The side letter grants the investor a fee rebate of 25 basis points per year.",
        "It is governed by the laws of the State of New York."))


def grep_tree(root: Path, needles: list[str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {n}" for n in needles if n.encode() in data]
    return found


def test_no_secret_in_any_output_of_a_run(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    write_sample_pdf(docs / "report.pdf")
    encrypted_pdf(docs / "side-letter.pdf", SECRETS["pdf_password"])
    encrypted_pdf(docs / "other-letter.pdf", "a-password-nobody-gave")
    config = tmp_path / "folioflow.yaml"
    config.write_text(json.dumps({"passwords": {"side-letter.pdf": SECRETS["pdf_password"],
                                                "other-letter.pdf": SECRETS["wrong_password"]}}))
    prefect_home = tmp_path / "prefect"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PREFECT_HOME": str(prefect_home),
           "PREFECT_LOGGING_LEVEL": "DEBUG", "FOLIOFLOW_QDRANT_API_KEY": SECRETS["qdrant_api_key"],
           "FOLIOFLOW_OCR_API_KEY": SECRETS["ocr_api_key"], "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(docs), "--config", str(config),
                           "--data-dir", str(tmp_path / "data"), "--report", str(report), "--no-progress", "--verbose"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = {Path(r["source"]).name: r for r in json.loads(report.read_text())}
    assert records["side-letter.pdf"]["status"] == "indexed"  # the password was used ...
    assert records["other-letter.pdf"]["error"] == "encrypted: wrong password"
    assert "Prefect" in proc.stdout + proc.stderr or prefect_home.exists()  # logs were on

    needles = list(SECRETS.values())
    leaks = [f"stdout: {n}" for n in needles if n in proc.stdout] + [f"stderr: {n}" for n in needles if n in proc.stderr]
    leaks += grep_tree(tmp_path / "data", needles) + grep_tree(prefect_home, needles)
    leaks += [f"report: {n}" for n in needles if n in report.read_text()]
    assert leaks == []  # ... and appears nowhere
    assert grep_tree(prefect_home, ["side-letter.pdf"]), "the Prefect database was not where the test looked"
