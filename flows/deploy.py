"""Deployments of the folioflow flows on a Prefect server: ``folioflow deploy`` and ``folioflow serve``.

* :func:`deploy` prepares a server for unattended runs: the work pool (``process`` type) the
  deployments use, the concurrency limit on :data:`~folioflow.flows.tasks.OCR_TAG` sized to the OCR fleet,
  then applies ``infra/prefect.yaml`` with Prefect's own ``prefect deploy --all`` (so the project
  file is the single source of the deployments: schedules, parameters, triggers, concurrency).
* :func:`serve_deployments` runs the same deployments from one long-lived process
  (:func:`prefect.serve`), without a work pool or worker: schedules and triggers included.

Both need a Prefect API (``PREFECT_API_URL``); ephemeral mode has no scheduler.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from folioflow.flows.tasks import OCR_TAG
from folioflow.ocr.errors import ConfigurationError

__all__ = ["ROOT", "PREFECT_FILE", "ensure_work_pool", "ensure_ocr_limit", "deploy", "load_project", "serve_deployments"]

#: The folder holding ``flows/`` and ``infra/``: the repository root in a checkout, the installed
#: ``folioflow`` package folder otherwise (infra/ is package data); deployments' entrypoints are
#: relative to it.
ROOT = Path(__file__).resolve().parents[1]
#: The Prefect project file with folioflow's deployments.
PREFECT_FILE = ROOT / "infra" / "prefect.yaml"


def _api_url() -> str:
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        raise ConfigurationError("no Prefect server: set PREFECT_API_URL (e.g. http://prefect:4200/api); `folioflow "
                                 "serve` and `deploy` run folioflow's Prefect deployments. For the HTTP API server "
                                 "and web UI, run `folioflow api`")
    return url


def ensure_work_pool(name: str, pool_type: str = "process", concurrency: int | None = None) -> bool:
    """Create work pool ``name`` unless it exists; returns ``True`` when created."""
    from prefect import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    with get_client(sync_client=True) as client:
        try:
            client.create_work_pool(WorkPoolCreate(name=name, type=pool_type, concurrency_limit=concurrency))
        except ObjectAlreadyExists:
            return False
    return True


def ensure_ocr_limit(slots: int, tag: str = OCR_TAG) -> int:
    """Create or resize the concurrency limit on ``tag`` to ``slots`` concurrent task runs (the
    OCR fleet's capacity: e.g. 2 per vLLM endpoint). Returns the limit now in force."""
    if slots < 1:
        raise ConfigurationError(f"OCR slots must be at least 1, not {slots}")
    from prefect import get_client

    with get_client(sync_client=True) as client:
        client.create_concurrency_limit(tag=tag, concurrency_limit=slots)  # upsert on Prefect 3.4+
        return client.read_concurrency_limit_by_tag(tag).concurrency_limit


def load_project(prefect_file: Path = PREFECT_FILE) -> dict[str, Any]:
    """The project file as a mapping. Raises :class:`ConfigurationError` when unreadable."""
    try:
        data = yaml.safe_load(Path(prefect_file).read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"cannot read {prefect_file}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("deployments"), list):
        raise ConfigurationError(f"{prefect_file}: no `deployments:` list")
    return data


def deploy(config: Path | None, prefect_file: Path = PREFECT_FILE, pool: str = "folioflow",
           ocr_slots: int | None = None, names: list[str] | None = None) -> subprocess.CompletedProcess:
    """Work pool, OCR limit, then ``prefect deploy`` of ``prefect_file`` (all deployments, or
    ``names``) from the repository root. ``config``: settings file path recorded as the
    deployments' ``config`` parameter (workers must see the same path). Returns the finished
    ``prefect deploy`` process; raises :class:`ConfigurationError` when it fails."""
    from folioflow.flows.settings import load_settings

    _api_url()
    settings = load_settings(config)
    ensure_work_pool(pool)
    ensure_ocr_limit(ocr_slots or settings.resolved_ocr_slots)
    env = {**os.environ, "FOLIOFLOW_ROOT": str(ROOT), "FOLIOFLOW_CONFIG": str(Path(config).resolve()) if config else "",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    selection = ["--all"] if not names else [arg for name in names for arg in ("--name", name)]
    args = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", *selection, "--prefect-file", str(prefect_file)]
    done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise ConfigurationError(f"prefect deploy failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")
    return done


def _schedule_kwargs(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    from prefect.schedules import Cron, Interval

    schedules = []
    for item in items or []:
        common = {k: item[k] for k in ("timezone", "parameters", "slug", "active") if k in item}
        if "cron" in item:
            schedules.append(Cron(item["cron"], **common))
        elif "interval" in item:
            schedules.append(Interval(timedelta(seconds=float(item["interval"])), **common))
    return {"schedules": schedules} if schedules else {}


def serve_deployments(config: Path | None, prefect_file: Path = PREFECT_FILE, limit: int | None = None,
                      ocr_slots: int | None = None) -> None:
    """Serve every deployment of ``prefect_file`` from this process until interrupted (flow runs
    are subprocesses; at most ``limit`` at once). Creates the OCR limit like :func:`deploy`."""
    import importlib

    from prefect import serve
    from prefect.deployments.runner import EntrypointType
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger

    from folioflow.flows.settings import load_settings

    _api_url()
    settings = load_settings(config)
    ensure_ocr_limit(ocr_slots or settings.resolved_ocr_slots)
    config_path = str(Path(config).resolve()) if config else None
    runners = []
    for spec in load_project(prefect_file)["deployments"]:
        # Served flow runs import the installed package by module path ("folioflow.flows.watch.watch_flow"),
        # so they need no code storage or pull step.
        file, _, attr = spec["entrypoint"].partition(":")
        flow = getattr(importlib.import_module(file.removesuffix(".py").replace("/", ".")), attr)
        parameters = {k: v for k, v in (spec.get("parameters") or {}).items() if k != "config"}
        if config_path:
            parameters["config"] = config_path
        triggers = [DeploymentEventTrigger(**{k: v for k, v in t.items() if k != "type"}) for t in spec.get("triggers") or []]
        limit_spec = spec.get("concurrency_limit")
        runners.append(flow.to_deployment(
            name=spec["name"], description=spec.get("description"), tags=spec.get("tags"), parameters=parameters,
            triggers=triggers or None, concurrency_limit=(limit_spec or {}).get("limit") if isinstance(limit_spec, dict)
            else limit_spec, entrypoint_type=EntrypointType.MODULE_PATH, **_schedule_kwargs(spec.get("schedules"))))
    serve(*runners, limit=limit)
