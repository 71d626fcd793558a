"""Real servers on loopback for the flows tests: a static HTTP server, moto's S3 API and a Prefect
API server. Each runs in its own subprocess on a free port and is always stopped (process group
killed) when its context exits. Also ``folioflow``: one CLI command in a fresh process, as a user
runs it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

__all__ = ["folioflow", "free_port", "serve_process", "wait_http", "wait_job"]

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    """Poll ``url`` until it answers (any status below 500). Raises ``RuntimeError`` with the
    server's log tail when it exits or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            break
        try:
            if httpx.get(url, timeout=2.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"server at {url} did not come up within {timeout:.0f}s:\n{tail}")


@contextlib.contextmanager
def serve_process(args: list[str], ready_url: str, log: Path, timeout: float = 60.0, env: dict | None = None,
                  cwd: Path | None = None) -> Iterator[subprocess.Popen]:
    """Start ``args`` in a new process group, wait for ``ready_url``, yield, then kill the group."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)
    try:
        wait_http(ready_url, timeout, proc, log)
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Terminate ``proc``'s process group (SIGTERM, then SIGKILL after ``grace`` seconds)."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def folioflow(*args: str, cwd: Path, timeout: float = 900.0,
              env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``folioflow ARGS`` (``python -m folioflow.flows.cli``) in a fresh process in ``cwd``, stdin
    closed, and return its ``CompletedProcess`` (stdout and stderr as text). Its environment is
    this one's with the repository root first on PYTHONPATH (the caller's after it: a worktree's
    package farm stays in force), PREFECT_HOME ``cwd/prefect-home``, COLUMNS 250 and no
    PREFECT_API_URL (Prefect's ephemeral mode, as on a fresh machine), then ``env`` over these.
    Raises ``subprocess.TimeoutExpired`` when it runs more than ``timeout`` seconds."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    full = {**os.environ, "PYTHONPATH": path, "PREFECT_HOME": str(cwd / "prefect-home"), "COLUMNS": "250"}
    full.pop("PREFECT_API_URL", None)
    return subprocess.run(python_module("folioflow.flows.cli", *args), cwd=cwd, env={**full, **(env or {})},
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def wait_job(client, job_id: str, timeout: float = 300.0, headers: dict | None = None, poll: float = 0.3) -> dict:
    """Poll ``GET /v1/jobs/{id}`` of the API server behind ``client`` (a ``TestClient`` or an
    ``httpx.Client``) every ``poll`` seconds until the job has finished; returns its last state.
    Raises ``AssertionError`` when it has not finished within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("succeeded", "failed"):
            return job
        time.sleep(poll)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s: {job}")
