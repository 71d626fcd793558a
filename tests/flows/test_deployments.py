"""Deployments against a real Prefect server on loopback: ``folioflow deploy`` creates the work
pool, the OCR concurrency limit and the deployments of infra/prefect.yaml with their schedules; a
process worker runs two ``ingest`` flow runs at once and the limit keeps their OCR task runs from
overlapping; ``folioflow serve`` runs the scheduled ``watch`` deployment on demand. Artifacts of a
run are checked too."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from folioflow.flows.deploy import ROOT
from folioflow.flows.tasks import OCR_TAG
from tests.flows.docs import write_memo
from tests.flows.servers import stop

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _env(server_env: dict) -> dict:
    return {**os.environ, **server_env, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _folioflow(server_env, *args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "folioflow.flows.cli", *args], cwd=ROOT, env=_env(server_env),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def api(prefect_server):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url, env = prefect_server
    with temporary_settings({PREFECT_API_URL: url}):
        yield url, env


@pytest.fixture(scope="module")
def deployed(api, tmp_path_factory):
    url, env = api
    work = tmp_path_factory.mktemp("deployed")
    config = work / "folioflow.yaml"
    config.write_text(f"data_dir: {work / 'data'}\nsources:\n  - name: memos\n    url: {work / 'memos'}\n")
    write_memo(work / "memos" / "memo.pdf", "Quarterly memo", ["Revenue grew nine percent in the quarter."])
    done = _folioflow(env, "deploy", "--config", str(config), "--ocr-slots", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    return work, config


def _wait_runs(client, ids, timeout=600.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [client.read_flow_run(i) for i in ids]
        if all(r.state and r.state.type.value in FINAL for r in runs):
            return runs
        time.sleep(3)
    raise AssertionError(f"flow runs not finished after {timeout}s: {[r.state for r in runs]}")


def test_deploy_creates_pool_limit_and_scheduled_deployments(deployed):
    from prefect import get_client

    with get_client(sync_client=True) as client:
        watch = client.read_deployment_by_name("watch/folioflow-watch")
        ingest = client.read_deployment_by_name("ingest/folioflow-ingest")
        assert watch.work_pool_name == ingest.work_pool_name == "folioflow"
        assert client.read_work_pool("folioflow").type == "process"
        [schedule] = watch.schedules
        assert schedule.active and schedule.schedule.interval == timedelta(minutes=15)
        assert ingest.schedules == []  # on demand only
        assert watch.parameters == {"config": str(deployed[1]), "prune": True}
        assert watch.global_concurrency_limit.limit == 1
        assert watch.concurrency_options.collision_strategy.value == "ENQUEUE"
        assert client.read_concurrency_limit_by_tag(OCR_TAG).concurrency_limit == 1


def _intervals(client, flow_run_ids) -> list[tuple[float, float, str]]:
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        TaskRunFilter,
        TaskRunFilterTags,
    )

    deadline = time.monotonic() + 60  # task run states reach the server as events: allow a short lag
    while True:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=flow_run_ids)),
                                     task_run_filter=TaskRunFilter(tags=TaskRunFilterTags(all_=[OCR_TAG])))
        if (len(runs) >= 4 and all(r.state and r.state.is_final() for r in runs)) or time.monotonic() > deadline:
            break
        time.sleep(2)
    out = []
    for run in runs:
        states = sorted(client.read_task_run_states(run.id), key=lambda s: s.timestamp)
        start = next(s.timestamp for s in states if s.type.value == "RUNNING")
        end = next(s.timestamp for s in states if s.type.value in FINAL)
        out.append((start.timestamp(), end.timestamp(), str(run.flow_run_id)))
    return out


def test_worker_runs_two_ingests_within_the_ocr_limit(deployed, tmp_path):
    from prefect import get_client
    from prefect.deployments import run_deployment

    work = deployed[0]
    runs = []
    for n in (1, 2):
        folder = tmp_path / f"batch{n}"
        for k in (1, 2):
            write_memo(folder / f"doc{k}.pdf", f"Batch {n} document {k}", [f"Paragraph of batch {n} doc {k}."], pages=3)
        params = {"paths": [str(folder)], "overrides": {"data_dir": str(tmp_path / f"data{n}"), "workers": 2,
                                                       "convert_processes": 2}}
        runs.append(run_deployment("ingest/folioflow-ingest", parameters=params, timeout=0))
    from prefect.settings import PREFECT_API_URL

    server_env = {"PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_HOME": str(work / "worker-home")}
    log = tmp_path / "worker.log"
    command = [sys.executable, "-m", "prefect", "worker", "start", "--pool", "folioflow", "--limit", "2"]
    with open(log, "wb") as out:  # the worker keeps its own copy of the file
        worker = subprocess.Popen(command, cwd=ROOT, env=_env(server_env), stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        with get_client(sync_client=True) as client:
            finished = _wait_runs(client, [r.id for r in runs])
            assert [r.state.type.value for r in finished] == ["COMPLETED", "COMPLETED"], log.read_text()[-3000:]
            intervals = _intervals(client, [r.id for r in runs])
            assert len(intervals) == 4 and len({i[2] for i in intervals}) == 2
            events = sorted([(s, 1) for s, _, _ in intervals] + [(e, -1) for _, e, _ in intervals])
            running = peak = 0
            for _, step in events:  # ends sort before starts at equal times
                running += step
                peak = max(peak, running)
            assert peak == 1, intervals
            artifacts = client.read_artifacts()
            keys = {a.key for a in artifacts if a.flow_run_id == runs[0].id}
            assert {"ingest-documents", "ingest-summary", "ingest-progress"} <= keys
            progress = [a for a in artifacts if a.key == "ingest-progress" and a.flow_run_id == runs[0].id]
            assert float(progress[0].data) == 100.0
    finally:
        stop(worker)


def test_serve_runs_the_watch_deployment(deployed, tmp_path):
    from prefect import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL

    work, config = deployed
    server_env = {"PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_HOME": str(tmp_path / "serve-home")}
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        served = subprocess.Popen([sys.executable, "-m", "folioflow.flows.cli", "serve", "--config", str(config), "--ocr-slots", "1"],
                                  cwd=ROOT, env=_env(server_env), stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        with get_client(sync_client=True) as client:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:  # serve re-registers the deployments without a work pool
                if client.read_deployment_by_name("watch/folioflow-watch").work_pool_name is None:
                    break
                assert served.poll() is None, log.read_text()[-3000:]
                time.sleep(2)
            run = run_deployment("watch/folioflow-watch", timeout=0)
            [finished] = _wait_runs(client, [run.id])
            assert finished.state.type.value == "COMPLETED", log.read_text()[-3000:]
            summary = [a for a in client.read_artifacts() if a.key == "watch-summary" and a.flow_run_id == run.id]
            assert "| indexed | 1 |" in summary[0].data

            # A file event for source "memos" fires the ingest deployment's trigger.
            from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

            ingest = client.read_deployment_by_name("ingest/folioflow-ingest")
            of_ingest = DeploymentFilter(id=DeploymentFilterId(any_=[ingest.id]))
            earlier = {r.id for r in client.read_flow_runs(deployment_filter=of_ingest)}
            emit = [sys.executable, "-c", "from folioflow.flows.events import emit_source_changed as e; e('memos', ['memo.pdf'])"]
            subprocess.run(emit, cwd=ROOT, env=_env(server_env), check=True, timeout=120, stdin=subprocess.DEVNULL)
            deadline, triggered = time.monotonic() + 180, []
            while not triggered and time.monotonic() < deadline:
                triggered = [r for r in client.read_flow_runs(deployment_filter=of_ingest) if r.id not in earlier]
                time.sleep(2)
            assert triggered, "the trigger started no ingest run"
            [ran] = _wait_runs(client, [triggered[0].id])
            assert ran.state.type.value == "COMPLETED", log.read_text()[-3000:]
            assert ran.parameters["sources"] == ["memos"] and ran.parameters["prune"] is True
    finally:
        stop(served)
