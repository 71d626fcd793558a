"""`folioflow ingest --ocr-endpoint ...` end to end on the real vLLM CPU engine (two servers).

The tiny model's text is random, so answers are constrained to short lowercase words (structured
outputs) for the "ok" run, and cut at 8 tokens for the fallback run: what is checked is routing,
the report, the fallback flags and that every document lands in the index.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from folioflow.ocr.samples import write_sample_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]


def _ingest(tmp_path: Path, fleet, vlm: dict, engine: str) -> list[dict]:
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    config = tmp_path / "folioflow.yaml"
    config.write_text(yaml.safe_dump({"vlm": {"max_in_flight": 4, "render_workers": 1, **vlm}}))
    endpoints = [arg for url in fleet.urls for arg in ("--ocr-endpoint", url)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    run = subprocess.run(
        [sys.executable, "-m", "folioflow.flows.cli", "ingest", str(pdf), *endpoints, "--engine", engine, "--config", str(config),
         "--data-dir", str(tmp_path / "data"), "--report", str(tmp_path / "report.json"), "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pages by vlm:markdown" in run.stdout or "fallback" in run.stdout
    return json.loads((tmp_path / "report.json").read_text())


def test_ingest_routes_rich_pages_to_the_vlm_fleet(vllm_fleet, tmp_path):
    vllm_fleet.ensure_ready()
    short = {"structured_outputs": {"regex": "[a-z ]{1,12}"}, "temperature": 0.0}
    [record] = _ingest(tmp_path, vllm_fleet, {"max_tokens": 64, "extra_body": short}, engine="auto")
    assert record["status"] == "indexed"
    assert record["engines"] == ["vlm:markdown", "vlm:markdown"]  # a table on page 1, a formula on page 2
    assert record["fallback_pages"] == [] and record["chunks"] >= 1


def test_ingest_flags_truncated_vlm_pages_as_fallback(vllm_fleet, tmp_path):
    vllm_fleet.ensure_ready()
    [record] = _ingest(tmp_path, vllm_fleet, {"max_tokens": 8, "extra_body": {"ignore_eos": True}}, engine="vlm")
    assert record["status"] == "indexed"
    assert record["fallback_pages"] == [1, 2]
    assert all("truncated: finish_reason=length" in note for note in record["page_errors"])
    assert record["engines"] == ["text", "text"]  # the embedded engine produced the content
    assert record["chunks"] >= 3  # the sample's text was indexed despite the VLM failures
