"""Run and supervise the ``vllm serve`` processes of a plan (:mod:`folioflow.ocr.vlm.serve`).

:class:`Supervisor` starts every replica in its own process group (vLLM forks engine-core workers;
stopping the group stops them all), sends its output to ``<log_dir>/replica-<i>.log``, polls
``/health`` until each answers, restarts a replica whose process exits (up to ``max_restarts`` times,
with a growing pause), and stops everything with SIGTERM, then SIGKILL after ``grace_s``.

Events are reported through ``echo`` as single lines (``ready``, ``exited``, ``restarting``,
``stopped``...) so a terminal, a log collector or a test can follow them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from folioflow.ocr.vlm.serve import ReplicaSpec, format_command

__all__ = ["Replica", "Supervisor"]


@dataclass
class Replica:
    """A running (or restarting) server."""

    spec: ReplicaSpec
    process: subprocess.Popen | None = None
    healthy: bool = False
    restarts: int = 0
    started_at: float = 0.0
    next_start: float = 0.0
    gave_up: bool = False


class Supervisor:
    """Starts, watches and stops the servers of ``specs``."""

    def __init__(
        self,
        specs: list[ReplicaSpec],
        *,
        log_dir: str | Path,
        health_timeout_s: float = 1800.0,
        max_restarts: int = 5,
        grace_s: float = 30.0,
        poll_s: float = 1.0,
        echo: Callable[[str], None] = print,
    ):
        self.replicas = [Replica(spec) for spec in specs]
        self.log_dir = Path(log_dir)
        self.health_timeout_s = health_timeout_s
        self.max_restarts = max_restarts
        self.grace_s = grace_s
        self.poll_s = poll_s
        self.echo = echo
        self._stopping = False

    def _launch(self, replica: Replica) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **replica.spec.env}
        with open(self.log_dir / f"replica-{replica.spec.index}.log", "ab") as log:  # the child keeps its copy
            replica.process = subprocess.Popen(
                replica.spec.argv,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        replica.healthy = False
        replica.started_at = time.monotonic()
        self.echo(
            f"started replica {replica.spec.index}: pid {replica.process.pid} {replica.spec.url} "
            f"({format_command(replica.spec)})"
        )

    def start(self) -> None:
        """Launch every replica (does not wait for health)."""
        for replica in self.replicas:
            self._launch(replica)

    def _healthy(self, replica: Replica) -> bool:
        url = replica.spec.url.rsplit("/v1", 1)[0] + "/health"
        try:
            return httpx.get(url, timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def poll(self) -> None:
        """One supervision step: notice exits (restart or give up), health changes, start timeouts."""
        now = time.monotonic()
        for r in self.replicas:
            if r.gave_up or self._stopping:
                continue
            if r.process is None:
                if now >= r.next_start:
                    self._launch(r)
                continue
            code = r.process.poll()
            if code is not None:
                _kill_group(r.process.pid, signal.SIGKILL)  # engine-core children of the dead server
                r.process, r.healthy = None, False
                if r.restarts >= self.max_restarts:
                    r.gave_up = True
                    self.echo(
                        f"replica {r.spec.index} exited with code {code}; "
                        f"gave up after {r.restarts} restarts "
                        f"(see {self.log_dir}/replica-{r.spec.index}.log)"
                    )
                    continue
                r.restarts += 1
                pause = min(60.0, 2.0**r.restarts)
                r.next_start = now + pause
                self.echo(
                    f"replica {r.spec.index} exited with code {code}; restarting in {pause:g}s "
                    f"({r.restarts}/{self.max_restarts})"
                )
                continue
            if not r.healthy:
                if self._healthy(r):
                    r.healthy = True
                    self.echo(f"ready replica {r.spec.index}: {r.spec.url} after {now - r.started_at:.0f}s")
                elif now - r.started_at > self.health_timeout_s:
                    self.echo(
                        f"replica {r.spec.index} not healthy after {self.health_timeout_s:g}s; restarting"
                    )
                    self._terminate(r)

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Poll until every replica is healthy (True) or ``timeout_s`` passes / all gave up (False)."""
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self.health_timeout_s)
        while time.monotonic() < deadline:
            self.poll()
            if all(r.healthy for r in self.replicas):
                return True
            if all(r.gave_up for r in self.replicas):
                return False
            time.sleep(self.poll_s)
        return False

    def run(self) -> None:
        """Supervise until :meth:`stop` (e.g. from a signal handler) or every replica gave up."""
        while not self._stopping and not all(r.gave_up for r in self.replicas):
            self.poll()
            time.sleep(self.poll_s)

    def _terminate(self, replica: Replica, sig: int = signal.SIGTERM) -> None:
        if replica.process is not None:
            _kill_group(replica.process.pid, sig)

    def stop(self) -> None:
        """Stop every replica: SIGTERM to each process group, SIGKILL to what is left after
        ``grace_s``; returns when every group is gone (vLLM's engine-core children included). Idempotent."""
        self._stopping = True
        for r in self.replicas:
            self._terminate(r)
        deadline = time.monotonic() + self.grace_s
        for r in self.replicas:
            if r.process is None:
                continue
            pid = r.process.pid
            with contextlib.suppress(subprocess.TimeoutExpired):
                r.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            if not _wait_group_gone(pid, max(0.1, deadline - time.monotonic())):
                _kill_group(pid, signal.SIGKILL)
                r.process.wait(timeout=10)
                _wait_group_gone(pid, 10.0)
            self.echo(f"stopped replica {r.spec.index} (pid {pid})")
            r.process, r.healthy = None, False


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_group_gone(pgid: int, timeout: float) -> bool:
    """True once no process of group ``pgid`` exists (within ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
