"""Qdrant unreachable: bounded retries, then one clear error; the API key never printed.

"Unreachable" is real: a loopback port nobody listens on (connection refused), reached through
qdrant-client exactly as a server URL would be.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from folioflow.indexing.store import StoreSettings, open_store
from folioflow.ocr.errors import StoreError
from folioflow.ocr.samples import write_sample_pdf

ROOT = Path(__file__).resolve().parents[2]
SECRET = "qk-7f3a9c-unreachable-secret"


@pytest.fixture
def dead_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now: connections are refused
    return f"http://127.0.0.1:{port}"


def test_store_retries_then_raises_a_clear_error(dead_url):
    store = open_store(StoreSettings(url=dead_url, api_key=SECRET, retries=3, timeout=2))
    started = time.perf_counter()
    with pytest.raises(StoreError) as info:
        store.ensure_collection(384, "all-MiniLM-L6-v2")
    # qdrant-client's "Failed to obtain server version" would only precede the error: its filter is
    # in place (what a fresh process prints is the CLI test's below; a test recording every warning
    # would depend on which test imported the store module first)
    assert any(action == "ignore" and message is not None and message.match("Failed to obtain server version")
               for action, message, *_ in warnings.filters)
    elapsed = time.perf_counter() - started
    message = str(info.value)
    assert message.startswith(f"Qdrant collection lookup failed ({dead_url}): ") and "refused" in message
    assert "\n" not in message and SECRET not in message
    assert 1.4 <= elapsed < 20  # 3 attempts: backoff 0.5 s + 1 s between them, then give up
    store.close()


@pytest.mark.slow
def test_ingest_cli_stops_with_the_reason_and_exit_code_1(dead_url, tmp_path):
    sample = write_sample_pdf(tmp_path / "report.pdf")
    env = {**os.environ, "QDRANT_API_KEY": SECRET, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300", "PREFECT_HOME": str(tmp_path / "prefect")}
    proc = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(sample), "--data-dir", str(tmp_path / "d"),
                           "--qdrant-url", dead_url, "--no-progress"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"error: ingest cannot proceed: Qdrant collection lookup failed ({dead_url})" in proc.stderr, proc.stderr[-8000:]
    assert SECRET not in proc.stdout + proc.stderr
    assert "server version" not in proc.stderr, proc.stderr[-8000:]
