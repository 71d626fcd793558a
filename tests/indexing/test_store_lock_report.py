"""The report on a held embedded store names its holder and the way out that fits it: a real
process holding the owner file's pid (its command line read back by the report)."""

from __future__ import annotations

import subprocess
import sys

from folioflow.indexing.store import OWNER_FILE, locked_error


def _holder(*argv: str) -> subprocess.Popen:
    """A process with ``argv`` on its command line, running (it said so) until its stdin closes."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()",
                                *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def test_a_store_held_by_the_api_server_says_to_go_through_it(tmp_path):
    server = _holder("folioflow", "api", "--port", "8080")
    try:
        (tmp_path / OWNER_FILE).write_text(str(server.pid))
        error = locked_error(tmp_path)
        assert error.pid == server.pid and "folioflow api" in (error.command or "")
        assert "held by the folioflow API server" in str(error) and "FolioRetriever.connect" in str(error)
        assert "Run `folioflow api`" not in str(error)  # it runs already
    finally:
        server.communicate(timeout=30)


def test_a_store_held_by_another_process_suggests_the_server(tmp_path):
    other = _holder("my-notebook-kernel")
    try:
        (tmp_path / OWNER_FILE).write_text(str(other.pid))
        error = locked_error(tmp_path)
        assert f"in use by pid {other.pid}" in str(error) and "my-notebook-kernel" in str(error)
        assert "Run `folioflow api` on this data dir" in str(error)
    finally:
        other.communicate(timeout=30)
