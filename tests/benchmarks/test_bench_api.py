"""Smoke run of ``tests/benchmarks/bench_api.py``: its load phase on a one-document store, for a
few seconds with four clients and one document ingested through the server. Checks what the
script reports (no failed request, the new document searchable when its job ended, the store
without duplicate, orphan or pending points), not any timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


def test_load_phase_on_a_tiny_store(tmp_path):
    pytest.importorskip("fastapi", reason="the api extra is not installed")
    out = tmp_path / "out.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "benchmarks" / "bench_api.py"), "--work", str(tmp_path), "--generate", "1",
         "--skip", "a", "--clients", "4", "--duration", "3", "--new-docs", "1", "--new-pages", "1", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "(c) OCR failover: not run" in run.stdout
    load = json.loads(out.read_text())["load"]
    assert load["requests"] > 0 and load["errors"] == {}
    assert load["searchable"] == 1, load["docs"]
    assert load["integrity_ok"], (load["integrity_api"], load["integrity_store"])
    assert load["integrity_store"]["documents"] == 2  # the generated store's document and the uploaded one
