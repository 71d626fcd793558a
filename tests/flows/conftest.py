"""Flow tests run offline (no hub lookups); the Prefect harness fixture lives in tests/conftest.py.
Real servers on loopback for the orchestration tests: a static HTTP server, moto's S3 API and a
Prefect API server (see tests/flows/servers.py)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def http_server(tmp_path_factory):
    """``python -m http.server`` serving a fresh folder: yields ``(root_folder, base_url)``."""
    from tests.flows.servers import free_port, python_module, serve_process

    root = tmp_path_factory.mktemp("http-root")
    port = free_port()
    log = tmp_path_factory.mktemp("logs") / "http.log"
    with serve_process(python_module("http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)),
                       f"http://127.0.0.1:{port}/", log):
        yield root, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """moto's S3 API server on loopback (a real S3 protocol endpoint): yields its URL; AWS
    credentials and region are set to dummy values for the session."""
    from tests.flows.servers import free_port, python_module, serve_process

    port = free_port()
    log = tmp_path_factory.mktemp("logs") / "moto.log"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")}
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
    try:
        with serve_process(python_module("moto.server", "-H", "127.0.0.1", "-p", str(port)),
                           f"http://127.0.0.1:{port}/moto-api/", log, timeout=90):
            yield f"http://127.0.0.1:{port}"
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real ``prefect server start`` on a free loopback port with its own PREFECT_HOME (SQLite),
    services on (scheduler, triggers). Yields ``(api_url, env)`` where ``env`` holds the variables
    a subprocess needs to talk to it. Always stopped at the end of the session."""
    from tests.flows.servers import free_port, python_module, serve_process

    home = tmp_path_factory.mktemp("prefect-server-home")
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_ENABLED": "false",
           "PREFECT_SERVER_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING"}
    log = home / "server.log"
    with serve_process(python_module("prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)),
                       f"{api}/health", log, timeout=240, env={**env, "PREFECT_API_URL": ""}):
        yield api, {**env, "PREFECT_API_URL": api}
