"""``folioflow ingest`` stopped mid-run by SIGTERM or SIGKILL leaves no Prefect server behind.

A tester's case: ``kill PID`` of a running ingest left Prefect's ephemeral API server (a ``uvicorn``
subprocess) running, orphaned. Real processes here (pattern of ``test_kill_and_resume.py``):
``folioflow ingest`` in Prefect's ephemeral mode over a born-digital report and an image-only scan
(CPU OCR, about a second a page), signalled once a page of the scan is in the OCR cache.

* SIGTERM: the CLI leaves as on Ctrl-C (exit status 143; Ctrl-C's is 130), saying which; Prefect's
  server is stopped by then, and a second run indexes every document.
* SIGKILL of the ingest process alone (as the out-of-memory killer does): the watchdog of
  :mod:`folioflow.flows.ephemeral` stops the server within seconds, and ends itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from folioflow.flows.ephemeral import _start_time
from folioflow.flows.reliability.hostile import long_pdf
from folioflow.ocr.ids import sha256_file
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy
from tests.reliability.test_kill_and_resume import cached_pages, env, ingest_cmd

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")]


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("terminate-docs")
    scratch = tmp_path_factory.mktemp("terminate-src")
    write_sample_pdf(folder / "b-report.pdf")
    write_scanned_copy(long_pdf(scratch / "text.pdf", 4), folder / "a-scan.pdf", dpi=150)
    return folder


def children(pid: int) -> dict[int, str]:
    """``{pid: command line}`` of the live children of ``pid``."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            fields = text[text.rindex(")") + 2:].split()
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                out[int(stat.parent.name)] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
    return out


def start_and_wait_mid_run(docs: Path, tmp_path: Path,
                           scan: str = "a-scan.pdf") -> tuple[subprocess.Popen, int, dict[int, str]]:
    """The ingest process, once a page of ``docs/scan`` is OCRed; (process, server pid, its children then)."""
    data = tmp_path / "data"
    # SIGINT as in a terminal: a shell without job control starts background jobs (`cmd &`) with
    # SIGINT ignored, pytest inherits that, and so would the ingest, which Ctrl-C could then not
    # stop (both clean-clone CI runs of 2026-12-07, started in the background, failed so)
    proc = subprocess.Popen(ingest_cmd(docs, data, tmp_path / "r1.json"), env=env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    scan_hash = sha256_file(docs / scan)
    deadline = time.monotonic() + 400
    while not cached_pages(data / "ocr-cache", scan_hash):
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "OCR never started"
        time.sleep(0.05)
    kids = children(proc.pid)
    servers = [pid for pid, cmd in kids.items() if "prefect.server.api.server:create_app" in cmd]
    assert len(servers) == 1, kids
    return proc, servers[0], kids


def wait_gone(pid: int, started: str | None, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _start_time(pid) == started:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize(("signum", "said"), [(signal.SIGTERM, "folioflow: stopped by SIGTERM"),
                                               (signal.SIGINT, "folioflow: interrupted (Ctrl-C)")])
def test_sigterm_stops_the_run_in_order_and_its_prefect_server(docs, tmp_path, signum, said):
    """SIGINT (Ctrl-C) alike, exit status 130; each says why it stopped (a trial found Ctrl-C
    silent)."""
    proc, server, _ = start_and_wait_mid_run(docs, tmp_path)
    started = _start_time(server)
    # the signals the ingest ignores and catches (hex masks), for a failure's message
    masks = [line for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines() if line.startswith(("SigIgn", "SigCgt"))]
    try:
        os.kill(proc.pid, signum)  # the ingest process only, as `kill PID` (or Ctrl-C) does
        proc.wait(180)
        stderr = proc.stderr.read().decode()
        assert proc.returncode == 128 + signum, (masks, stderr[-3000:])
        assert said in stderr, stderr[-3000:]
        assert wait_gone(server, started, 10), "Prefect's ephemeral server outlived the terminated ingest"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the run left, so a failure here does not leak

    again = subprocess.run(ingest_cmd(docs, tmp_path / "data", tmp_path / "r2.json"), env=env(tmp_path),
                           cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    statuses = {Path(r["source"]).name: r["status"] for r in json.loads((tmp_path / "r2.json").read_text())}
    assert statuses == {"a-scan.pdf": "indexed", "b-report.pdf": "indexed"}


def test_sigkill_leaves_no_prefect_server_behind(docs, tmp_path):
    proc, server, kids = start_and_wait_mid_run(docs, tmp_path)
    started = _start_time(server)
    watchdogs = [pid for pid, cmd in kids.items() if "folioflow.flows.ephemeral" in cmd]
    assert len(watchdogs) == 1, kids
    watchdog_started = _start_time(watchdogs[0])
    try:
        os.kill(proc.pid, signal.SIGKILL)  # no exit hook runs: only the watchdog can stop the server
        proc.wait(30)
        assert wait_gone(server, started, 30), "Prefect's ephemeral server outlived the killed ingest"
        assert wait_gone(watchdogs[0], watchdog_started, 10), "the watchdog did not end"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def long_scan(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("terminate-long")
    scratch = tmp_path_factory.mktemp("terminate-long-src")
    write_scanned_copy(long_pdf(scratch / "text.pdf", 16), folder / "long-scan.pdf", dpi=150)
    return folder


@pytest.mark.parametrize("target", ["process", "group"])
def test_ctrl_c_stops_the_document_being_converted_at_its_next_page(long_scan, tmp_path, target):
    """A breaking trial: SIGINT to the ingest process let the document being converted run to its
    end (2 minutes) before the run stopped; Ctrl-C in a terminal (SIGINT to the whole process group)
    also killed Prefect's ephemeral server, and the run then retried it for minutes and ended with a
    traceback. Now both stop at the next page (the scan's 16 pages are not all converted), exit 130
    saying so, with no traceback, and the server is gone."""
    data = tmp_path / "data"
    proc, server, _ = start_and_wait_mid_run(long_scan, tmp_path, "long-scan.pdf")
    scan_hash = sha256_file(long_scan / "long-scan.pdf")
    try:
        started = _start_time(server)
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: every process of the group
        else:
            os.kill(proc.pid, signal.SIGINT)
        proc.wait(180)
        stderr = proc.stderr.read().decode()
        assert proc.returncode == 130, stderr[-3000:]
        assert "folioflow: interrupted (Ctrl-C)" in stderr, stderr[-3000:]
        for noise in ("Traceback", "Unable to connect", "ConnectError"):
            assert noise not in stderr, stderr[-3000:]
        assert len(cached_pages(data / "ocr-cache", scan_hash)) < 16  # stopped before the document's end
        assert wait_gone(server, started, 10), "Prefect's ephemeral server outlived the interrupted ingest"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
