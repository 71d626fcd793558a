"""``folioflow api`` as a real uvicorn server on a free loopback port, and ``folioflow query``
going through it: by the discovery file the server writes in the data directory, and by
``--api-url``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from folioflow.flows.service.client import DISCOVERY_FILE, announce, discover_server  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import free_port, python_module, serve_process  # noqa: E402


def test_discovery_ignores_a_dead_server(tmp_path):
    assert discover_server(tmp_path) is None
    announce(tmp_path, "http://127.0.0.1:1")
    assert discover_server(tmp_path) == "http://127.0.0.1:1"  # this (live) process announced it
    assert discover_server(tmp_path, "other") is None  # a server of another collection
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / DISCOVERY_FILE).write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": int(dead.stdout)}))
    assert discover_server(tmp_path) is None
    (tmp_path / DISCOVERY_FILE).write_text("{not json")
    assert discover_server(tmp_path) is None


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(python_module("folioflow.flows.cli", *args), capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


@pytest.mark.slow
def test_api_command_serves_and_query_goes_through_it(tmp_path):
    data, port = tmp_path / "data", free_port()
    url = f"http://127.0.0.1:{port}"
    sample = write_sample_pdf(tmp_path / "report.pdf")
    with serve_process(python_module("folioflow.flows.cli", "api", "--host", "127.0.0.1", "--port", str(port),
                                     "--data-dir", str(data), "--log-level", "warning"),
                       f"{url}/healthz", tmp_path / "api.log", timeout=400,
                       env={"PREFECT_HOME": str(tmp_path / "prefect"),  # its own ephemeral Prefect API
                            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}):
        assert json.loads((data / DISCOVERY_FILE).read_text())["url"] == url
        job = httpx.post(f"{url}/v1/documents", files=[("files", ("report.pdf", sample.read_bytes()))], timeout=60).json()
        deadline = time.monotonic() + 300
        while (state := httpx.get(f"{url}/v1/jobs/{job['id']}", timeout=30).json())["state"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
        assert [d["status"] for d in state["documents"]] == ["indexed"], state["error"]

        # The server holds the embedded store: a CLI query on the data dir works only through it.
        found = cli("query", "How much did total revenue grow?", "--json", "-k", "2", "--data-dir", str(data))
        assert found.returncode == 0, found.stderr
        hits = json.loads(found.stdout)
        assert any("4,210" in hit["text"] for hit in hits) and hits[0]["source"] == "upload"

        missing = cli("query", "revenue", "--doc", "nope.pdf", "--api-url", url, "--data-dir", str(tmp_path / "none"))
        assert missing.returncode == 1 and "answered 404" in missing.stderr and "no such document" in missing.stderr
    assert not (data / DISCOVERY_FILE).exists()  # SIGTERM: uvicorn shut down and the lifespan removed it
    down = cli("query", "revenue", "--api-url", url)
    assert down.returncode == 1 and "cannot reach the folioflow API" in down.stderr
