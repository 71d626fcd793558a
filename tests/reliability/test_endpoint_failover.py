"""An OCR endpoint killed in the middle of ``folioflow ingest`` (real vLLM CPU engines).

Two vLLM CPU servers (the session's fleet, ``tests/conftest.py``) serve the tiny Qwen2-VL; the
ingest runs as its own process with ``--engine vlm`` on a 40-page document and an endpoint token.
When four pages are finished (the per-page OCR cache shows them), one server's whole process
group gets SIGKILL. The run must complete with every page converted by the VLM exactly once (its
in-flight pages re-routed to the surviving server: none falls back, none fails), the document
indexed, and the endpoint token nowhere in the output, the report or the data directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from folioflow.ocr.ids import sha256_file
from folioflow.ocr.vlm.bench_doc import write_bench_pdf

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "vlm-token-6c0ffee-never-log-me"
SHORT = {"structured_outputs": {"regex": "[a-z ]{1,12}"}, "temperature": 0.0}


def test_ingest_completes_when_an_endpoint_dies_mid_run(vllm_fleet, tmp_path):
    vllm_fleet.ensure_ready()
    pdf = write_bench_pdf(tmp_path / "docs" / "segments.pdf", 40)
    config = tmp_path / "folioflow.yaml"
    config.write_text(yaml.safe_dump({"vlm": {"max_in_flight": 4, "render_workers": 1, "max_tokens": 64,
                                              "extra_body": SHORT, "probe_interval_s": 1.0}}))
    endpoints = [arg for url in vllm_fleet.urls for arg in ("--ocr-endpoint", url)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "prefect"), "HF_HUB_OFFLINE": "1",
           "FOLIOFLOW_OCR_API_KEY": TOKEN}
    env.pop("PREFECT_API_URL", None)
    data, report = tmp_path / "data", tmp_path / "report.json"
    cache = data / "ocr-cache" / sha256_file(pdf)[:2] / sha256_file(pdf)
    mark = len(vllm_fleet.lines)
    with open(tmp_path / "out.txt", "w") as out, open(tmp_path / "err.txt", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(pdf.parent), *endpoints, "--engine", "vlm",
                                 "--config", str(config), "--data-dir", str(data), "--report", str(report),
                                 "--no-progress", "--verbose"], cwd=tmp_path, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 600
            while len(list(cache.rglob("*.json"))) < 4 if cache.exists() else True:
                assert proc.poll() is None, (tmp_path / "err.txt").read_text()[-3000:]
                assert time.monotonic() < deadline, "no page finished"
                time.sleep(0.1)
            vllm_fleet.kill_replica(1)
            assert proc.wait(900) == 0, (tmp_path / "err.txt").read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
    [record] = json.loads(report.read_text())
    assert record["status"] == "indexed" and record["pages"] == 40
    assert record["engines"] == ["vlm:markdown"] * 40  # every page by the VLM: re-routed, not fallen back
    assert record["fallback_pages"] == [] and record["failed_pages"] == []
    document = json.loads((data / "documents" / f"{record['doc_id']}.json").read_text())
    assert [p["number"] for p in document["pages"]] == list(range(1, 41))  # each page once, in order
    dead = vllm_fleet.urls[1].removesuffix("/v1")
    alive = vllm_fleet.urls[0].removesuffix("/v1")
    served = [p["attributes"].get("endpoint") for p in document["pages"]]
    assert set(served) == {alive, dead} and served.count(alive) > served.count(dead)  # the survivor took over

    outputs = [(tmp_path / "out.txt").read_text(), (tmp_path / "err.txt").read_text(), report.read_text()]
    assert not any(TOKEN in text for text in outputs)
    assert not [p for p in [*data.rglob("*"), *(tmp_path / "prefect").rglob("*")]
                if p.is_file() and TOKEN.encode() in p.read_bytes()]
    vllm_fleet.wait_for(r"ready replica 1", timeout=300, after=mark)  # restarted for the next tests
