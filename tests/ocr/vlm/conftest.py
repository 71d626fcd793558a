"""The vLLM CPU engine fleet for integration tests.

``vllm_fleet`` (session scope, defined in ``tests/conftest.py`` so that every suite shares the one
fleet) starts **two** CPU servers with the tiny random Qwen2-VL through the
real launcher (``folioflow ocr serve``, as a subprocess) and stops them at the end. It skips with the
setup command when the engine or the model is missing (``bash infra/vllm/setup_cpu_engine.sh``).
Each server needs ~40 s to start, ~4 GiB of memory and one core; never more than two run at once.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.serve import resolve_vllm

ROOT = Path(__file__).resolve().parents[3]
TINY_VLM = Path(
    os.environ.get(
        "FOLIOFLOW_TINY_VLM",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "folioflow" / "tiny-qwen2-vl",
    )
)
SERVED = ["tiny-vlm", "olmocr-tiny", "chandra-tiny", "deepseek-ocr-tiny"]
MAX_NUM_SEQS = 8
SETUP = "bash infra/vllm/setup_cpu_engine.sh (about 2 minutes, 2.5 GB)"


def _free_base_port(count: int) -> int:
    for base in range(18100, 18900, 10):
        try:
            for port in range(base, base + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError("no free ports")


class Fleet:
    """``folioflow ocr serve`` running two CPU replicas; follows its output lines."""

    def __init__(self, vllm: str, log_dir: Path, replicas: int = 2):
        self.base = _free_base_port(replicas)
        self.urls = [f"http://127.0.0.1:{self.base + i}/v1" for i in range(replicas)]
        names = [arg for name in SERVED for arg in ("--served-model-name", name)]
        self.argv = [
            sys.executable,
            "-c",
            # The launcher starts with SIGINT ignored, as a shell starts a background job (`cmd &`):
            # Ctrl-C must still stop it (test_ctrl_c_stops_every_server), so it has to install its
            # own handler. SIG_IGN survives exec.
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "os.execv(sys.executable, [sys.executable, '-c', 'from folioflow.flows.cli import main; main()', *sys.argv[1:]])",
            "ocr",
            "serve",
            "--model",
            str(TINY_VLM),
            "--replicas",
            str(replicas),
            "--port",
            str(self.base),
            *names,
            "--vllm",
            vllm,
            "--log-dir",
            str(log_dir),
            "--max-restarts",
            "3",
            "--",
            "--max-model-len",
            "4096",
            "--max-num-seqs",
            str(MAX_NUM_SEQS),
            "--enforce-eager",
            "--dtype",
            "bfloat16",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "VLLM_CACHE_ROOT": str(log_dir / "vllm-cache")}
        self.process = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float, after: int = 0) -> re.Match:
        """The first output line (from index ``after``) matching ``pattern``; fails after ``timeout``."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines[after:]:
                if match := regex.search(line):
                    return match
            if self.process.poll() is not None:
                break
            time.sleep(0.5)
        raise AssertionError(
            f"no line matching {pattern!r} within {timeout}s; output:\n" + "\n".join(self.lines[-40:])
        )

    def pids(self) -> dict[int, int]:
        """Latest pid of each replica, from the launcher's 'started replica i: pid N' lines."""
        found = {}
        for line in self.lines:
            if m := re.match(r"started replica (\d+): pid (\d+)", line):
                found[int(m.group(1))] = int(m.group(2))
        return found

    def ensure_ready(self, timeout: float = 240.0) -> None:
        """Wait until every server answers /health (a test may have killed one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(_healthy(u) for u in self.urls):
                return
            if self.process.poll() is not None:
                break
            time.sleep(1.0)
        raise AssertionError("fleet not healthy; output:\n" + "\n".join(self.lines[-40:]))

    def kill_replica(self, index: int) -> int:
        """SIGKILL one server's whole process group (a crash); returns its pid."""
        pid = self.pids()[index]
        os.killpg(pid, signal.SIGKILL)
        return pid

    def stop(self, timeout: float = 150.0) -> int | None:
        """Ctrl-C the launcher; returns its exit code (None if it had to be killed)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                code = self.process.wait(timeout)
                self._reader.join(10)  # the launcher's last lines are read before anyone looks
                return code
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                # Each server runs in its own process group: kill those too, or they outlive the
                # test and load the machine for the rest of the suite.
                for pid in self.pids().values():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
                self.process.wait(10)
                return None
        return self.process.returncode


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url.removesuffix("/v1") + "/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(fleet: Fleet) -> None:
    fleet.stop()
    for pid in fleet.pids().values():  # whatever happened, leave no server behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


class FleetManager:
    """One fleet for the whole session, started on first use and again if a test stopped it."""

    def __init__(self, vllm: str, tmp_path_factory):
        self.vllm = vllm
        self.tmp_path_factory = tmp_path_factory
        self.fleet: Fleet | None = None

    def current(self) -> Fleet:
        if self.fleet is not None and self.fleet.process.poll() is not None:
            _stop(self.fleet)
            self.fleet = None
        if self.fleet is None:
            self.fleet = Fleet(self.vllm, self.tmp_path_factory.mktemp("vllm-fleet"))
            self.fleet.wait_for(r"^endpoints: ", timeout=300)
        return self.fleet

    def close(self) -> None:
        if self.fleet is not None:
            _stop(self.fleet)
            self.fleet = None


def start_manager(tmp_path_factory) -> FleetManager:
    """A :class:`FleetManager`, or a skip with the setup command when the engine or model is absent."""
    try:
        vllm = resolve_vllm(None)
    except ConfigurationError as exc:
        pytest.skip(f"vLLM CPU engine absent ({exc}); install it with {SETUP}")
    if not Path(vllm).is_file():
        pytest.skip(
            f"vLLM CPU engine absent (no vllm executable in .venv-vllm, $FOLIOFLOW_VLLM_VENV or PATH); "
            f"install it with {SETUP}"
        )
    if not (TINY_VLM / "config.json").is_file():
        pytest.skip(f"tiny test VLM absent at {TINY_VLM}; build it with {SETUP}")
    return FleetManager(vllm, tmp_path_factory)
