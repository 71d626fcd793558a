"""Prefect's ephemeral API server, tied to the folioflow process that needs it.

With no ``PREFECT_API_URL``, Prefect runs flows against a temporary API server: a ``uvicorn``
subprocess (``prefect.server.api.server.SubprocessASGIServer``, started on the first client call)
that Prefect stops from an ``atexit`` hook. Two ways out skip that hook and leave the server
running, orphaned, on its port and its SQLite database under ``PREFECT_HOME``:

* **SIGTERM** with its default action (``kill PID``, ``systemctl stop``, ``docker stop``, a
  batch-system timeout). The CLI turns SIGTERM into the Ctrl-C path instead
  (:func:`folioflow.flows.cli.terminate_like_interrupt`), so atexit hooks run and the server is stopped.
* **SIGKILL** (the out-of-memory killer, ``kill -9``, a second SIGTERM): nothing runs in the
  dying process. Prefect starts the server with a plain ``subprocess.Popen`` and exposes no hook
  to tie the child to its parent (no ``preexec_fn`` for Linux's ``PR_SET_PDEATHSIG``), and the
  server does not watch its parent. :func:`start_tied_server` therefore starts Prefect's server
  itself (the same singleton Prefect's client then reuses) and a small *watchdog* process that
  holds the read end of a pipe from this process: the kernel closes the pipe however this process
  ends, the watchdog reads end-of-file and stops the server (SIGTERM, then SIGKILL after
  :data:`STOP_GRACE_S`) if it is still the same process (pid and start time from ``/proc``, so a
  reused pid is never signalled). After an orderly exit the server is already stopped and the
  watchdog just exits. Linux only (``/proc``); elsewhere the server is started untied.

A third way in: **Ctrl-C in a terminal** sends SIGINT to the whole foreground process group, which
held the server too; it died at once, and the interrupted run then spent minutes retrying it. The
server is therefore started in a session of its own (:func:`_own_session`): this process stops it
at exit, the watchdog if this process dies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["STOP_GRACE_S", "start_tied_server"]

#: Seconds the watchdog gives the orphaned server to stop on SIGTERM before SIGKILL (Prefect's own
#: ``SubprocessASGIServer.stop`` waits as long).
STOP_GRACE_S = 5.0

#: Watchdogs started by this process: their stdin pipes must stay open for as long as it lives.
_WATCHDOGS: list[subprocess.Popen] = []


def start_tied_server() -> str | None:
    """Start Prefect's ephemeral API server now, from the calling (main) thread, with a watchdog
    that stops it if this process dies without running its exit hooks (see module docstring).

    Returns the server's API URL, or None when ``PREFECT_API_URL`` names a server (nothing is
    started). Prefect's client later finds this same server (``SubprocessASGIServer`` is a
    singleton per port) and starts no other. Raises ``RuntimeError`` as
    ``SubprocessASGIServer.start`` does ("Timed out while attempting to connect to ephemeral
    Prefect API server ...") when the server does not come up within
    ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``."""
    from prefect.settings import PREFECT_API_URL

    if PREFECT_API_URL.value():
        return None
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    with _own_session():
        server.start()
    process = server.server_process
    if process is not None:
        _start_watchdog(process.pid)
    return server.api_url


@contextmanager
def _own_session() -> Iterator[None]:
    """While Prefect starts its server (``SubprocessASGIServer._run_uvicorn_command``, a plain
    ``subprocess.Popen``), start it in a session of its own: Ctrl-C in a terminal sends SIGINT to
    the whole foreground process group, and a server in that group died at once, so the run then
    spent minutes retrying it ("Unable to connect to ws://127.0.0.1:...") and ended with a
    traceback instead of stopping. In its own session it gets no terminal signal; this process
    stops it at exit, and the watchdog if this process dies."""
    import prefect.server.api.server as prefect_server

    module = prefect_server.subprocess

    class _Detached:
        def __getattr__(self, name: str) -> Any:
            return getattr(module, name)

        @staticmethod
        def Popen(*args: Any, **kwargs: Any) -> subprocess.Popen:  # noqa: N802 - subprocess's name
            return module.Popen(*args, **{"start_new_session": True, **kwargs})

    prefect_server.subprocess = _Detached()  # type: ignore[assignment]
    try:
        yield
    finally:
        prefect_server.subprocess = module


def _start_watchdog(pid: int) -> subprocess.Popen | None:
    """The watchdog for process ``pid`` (None without ``/proc``)."""
    started = _start_time(pid)
    if started is None:
        return None
    watchdog = subprocess.Popen([sys.executable, "-m", "folioflow.flows.ephemeral", str(pid), started],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                cwd=Path(__file__).resolve().parents[1])
    _WATCHDOGS.append(watchdog)
    return watchdog


def _start_time(pid: int) -> str | None:
    """Start time of live process ``pid`` (clock ticks since boot, ``/proc/PID/stat`` field 22),
    or None when it is gone, a zombie, or there is no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state is field 3
    return None if fields[0] in ("Z", "X") else fields[19]


def _watch(pid: int, started: str) -> None:
    """Block until stdin reaches end-of-file (the parent ended), then stop ``pid`` if it is still
    the process that started at ``started``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent, which then exits in order
    while sys.stdin.buffer.read(65536):
        pass
    if _start_time(pid) != started:
        return  # stopped by the parent's exit hooks (or gone): nothing to do
    try:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        while _start_time(pid) == started:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.1)
    except ProcessLookupError:  # it ended meanwhile
        pass


if __name__ == "__main__":
    _watch(int(sys.argv[1]), sys.argv[2])
