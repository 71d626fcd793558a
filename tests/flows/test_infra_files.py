"""The deployment files agree with the code: infra/prefect.yaml parses with Prefect's own project
model and names real flows and parameters; the compose file is well-formed and consistent (settings
variables exist, commands exist, the worker pool is the deployments' pool, services referenced
exist); the example settings file validates."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from folioflow.flows.cli import app
from folioflow.flows.deploy import PREFECT_FILE, ROOT, load_project
from folioflow.flows.service.config import ApiSettings, load_api_settings
from folioflow.flows.settings import Settings, load_settings

COMPOSE = ROOT / "infra" / "compose" / "docker-compose.yml"


def test_prefect_yaml_names_real_flows_and_parameters():
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.flows import load_flow_from_entrypoint

    project = load_project(PREFECT_FILE)
    model = PrefectYamlModel.model_validate(project)
    by_name = {d.name: d for d in model.deployments}
    assert set(by_name) == {"folioflow-watch", "folioflow-ingest"}
    assert by_name["folioflow-watch"].schedules and not by_name["folioflow-ingest"].schedules
    for deployment in model.deployments:
        flow = load_flow_from_entrypoint(str(ROOT / deployment.entrypoint))
        params = set(inspect.signature(flow.fn).parameters)
        assert set(deployment.parameters) <= params, deployment.name
        for trigger in deployment.triggers or []:
            assert set(trigger.get("parameters", {})) <= params
        assert deployment.work_pool.name == "folioflow"
    assert {load_flow_from_entrypoint(str(ROOT / d.entrypoint)).name for d in model.deployments} == {"watch", "ingest"}


def _compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_is_consistent_with_the_code():
    compose = _compose()
    services = compose["services"]
    commands = {c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands}
    fields = set(Settings.model_fields)
    for name, service in services.items():
        for dep in service.get("depends_on", []):
            assert dep in services, (name, dep)
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/", "$")):
                assert source in compose["volumes"], (name, source)
        command = service.get("command", [])
        if command and command[0] == "folioflow":
            assert command[1] in commands, (name, command)
        env = service.get("environment", {})
        for key in env if isinstance(env, dict) else []:
            if key.startswith("FOLIOFLOW_API_"):
                assert key[len("FOLIOFLOW_API_"):].lower() in ApiSettings.model_fields, (name, key)
            elif key.startswith("FOLIOFLOW_") and key != "FOLIOFLOW_CONFIG":
                assert key[len("FOLIOFLOW_"):].lower() in fields, (name, key)
    worker = services["folioflow-worker"]["command"]
    pool = worker[worker.index("--pool") + 1]
    assert all(d["work_pool"]["name"] == pool for d in load_project()["deployments"])
    env = services["folioflow-worker"]["environment"]
    assert urlparse(env["QDRANT_URL"]).hostname in services
    assert all(urlparse(u).hostname in services for u in env["FOLIOFLOW_OCR_ENDPOINTS"].split(","))
    assert urlparse(env["PREFECT_API_URL"]).hostname in services
    qdrant = [s for s in services if s.startswith("qdrant-")]
    assert len(qdrant) >= 3 and all(services[s]["environment"]["QDRANT__CLUSTER__ENABLED"] == "true" for s in qdrant)
    assert all("--bootstrap" in services[s]["command"] for s in qdrant[1:])


def test_example_settings_validate(monkeypatch):
    monkeypatch.setenv("NDA_PDF_PASSWORD", "pw")
    monkeypatch.setenv("S3_ENDPOINT_URL", "http://minio:9000")
    settings = load_settings(ROOT / "infra" / "folioflow.example.yaml")
    assert [s.name for s in settings.sources] == ["contracts", "filings"]
    assert settings.resolved_ocr_slots == 4 and settings.qdrant_url.startswith("http://qdrant-1")
    assert settings.source("contracts").password_for("deals/nda-1.pdf") == "pw"
    mounted = _compose()["x-folioflow"]["volumes"][0].split(":")
    assert (COMPOSE.parent / mounted[0]).resolve() == (ROOT / "infra" / "folioflow.example.yaml").resolve()


#: The services docs/service.md ("Scale-out") promises in the compose file.
API_SERVICES = ("folioflow-api", "api-proxy", "prefect-server", "folioflow-worker", "qdrant-1", "qdrant-2", "qdrant-3")


def _defaults(value: str) -> str:
    """``value`` with compose's ``${NAME:-default}`` references replaced by their defaults."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", value)


def test_compose_has_the_api_services_the_docs_promise(monkeypatch):
    services = _compose()["services"]
    docs = (ROOT / "docs" / "service.md").read_text()
    for name in API_SERVICES:
        assert name in services, name
        assert f"`{name}`" in docs, f"docs/service.md does not name {name}"
    api = services["folioflow-api"]
    assert api["deploy"]["replicas"] >= 2 and "ports" not in api  # replicas are reached through the proxy only
    command = api["command"]
    assert command[:2] == ["folioflow", "api"] and command[command.index("--host") + 1] == "0.0.0.0"
    port = command[command.index("--port") + 1]
    env = api["environment"]
    assert urlparse(env["QDRANT_URL"]).hostname in services  # no embedded store: the replicas share Qdrant
    assert urlparse(env["PREFECT_API_URL"]).hostname in services
    for key in list(os.environ):
        if key.startswith("FOLIOFLOW_API_"):
            monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith("FOLIOFLOW_API_"):
            monkeypatch.setenv(key, _defaults(str(value)))
    settings = load_api_settings()  # the replicas' settings validate
    assert settings.ingest == "prefect"
    flow, deployment = settings.prefect_deployment.split("/")
    assert any(d["name"] == deployment and d["entrypoint"].endswith(":ingest_flow") for d in load_project()["deployments"])
    assert flow == "ingest"
    proxy = services["api-proxy"]
    conf_path = proxy["volumes"][0].split(":")[0]
    conf = (COMPOSE.parent / conf_path).read_text()
    assert f"server folioflow-api:{port}" in conf and "proxy_pass http://folioflow_api" in conf
    assert proxy["depends_on"] == ["folioflow-api"]


@pytest.mark.parametrize("path", [PREFECT_FILE, COMPOSE, ROOT / "infra" / "folioflow.example.yaml"])
def test_files_are_plain_yaml(path: Path):
    assert isinstance(yaml.safe_load(path.read_text()), dict)


@pytest.mark.parametrize("venv", ["{tmp}/engine", "{tmp}/not/made/yet/engine"])
def test_the_vllm_engine_setup_stops_on_too_little_disk_before_installing(tmp_path, venv):
    """setup_cpu_engine.sh checks the free space where the environment goes (the nearest existing
    folder when its parents are still to be made) and stops with a message naming the disk, before
    pip creates anything."""
    import subprocess

    target = venv.format(tmp=tmp_path)
    env = {**os.environ, "FOLIOFLOW_VLLM_MIN_FREE_MB": str(10**12), "TMPDIR": str(tmp_path),
           "PYTHON": "false"}  # should the check let it through, no environment is made
    done = subprocess.run(["bash", str(ROOT / "infra" / "vllm" / "setup_cpu_engine.sh"), target], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"MB free in {tmp_path}, the vLLM CPU engine needs about {10**12} MB" in done.stderr
    assert not Path(target).exists()
