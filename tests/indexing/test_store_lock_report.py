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


def test_eval_chunks_on_a_data_dir_held_by_the_api_server_says_what_to_do(tmp_path):
    """A tester's trial: `folioflow eval chunks` while `folioflow api` held the data dir said "go
    through it. The CLI finds it by itself", but eval has no --api-url and never goes through the
    server. The message now names the command and its ways out; commands that go through the server
    keep the old one."""
    import os
    from pathlib import Path

    from folioflow.indexing.store import LOCK_FILE

    root = Path(__file__).resolve().parents[2]
    folder = tmp_path / "data" / "edge"
    folder.mkdir(parents=True)
    server = subprocess.Popen([sys.executable, "-c", "import sys; from filelock import FileLock; "
                               "lock = FileLock(sys.argv[1], timeout=0); lock.acquire(); print('ready', flush=True); "
                               "sys.stdin.read()", str(folder / LOCK_FILE), "folioflow", "api", "--port", "8080"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        (folder / OWNER_FILE).write_text(str(server.pid))
        path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
        run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "eval", "chunks", "--data-dir",
                              str(tmp_path / "data")], cwd=tmp_path, env={**os.environ, "PYTHONPATH": path},
                             capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        said = " ".join(run.stderr.split())
        assert run.returncode == 1, run.stderr[-3000:]
        assert f"held by the folioflow API server (pid {server.pid}" in said, said
        assert "`folioflow eval chunks` cannot go through it" in said and "Stop the server" in said, said
        assert "The CLI finds it by itself" not in said, said
        assert "The CLI finds it by itself" in str(locked_error(folder))  # for commands that go through it
    finally:
        server.communicate(timeout=30)


def test_a_data_dir_whose_lock_cannot_be_written_is_one_line_not_a_traceback(tmp_path):
    """A breaking trial: on a read-only mount, `query`, `status` and `ingest` printed a 72-line
    traceback ending `OSError: [Errno 30] Read-only file system: '.../edge/.folioflow.lock'`. The
    lock is made unwritable here by a folder in its place (root writes through file modes)."""
    import os

    from folioflow.indexing.store import LOCK_FILE
    from folioflow.ocr.samples import write_sample_pdf

    data = tmp_path / "data"
    (data / "edge" / LOCK_FILE).mkdir(parents=True)
    sample = write_sample_pdf(tmp_path / "report.pdf")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    for args in (["status"], ["query", "revenue"], ["ingest", str(sample), "--no-progress"]):
        done = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", *args, "--data-dir", str(data)],
                              capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
        assert done.returncode != 0, (args, done.stdout)
        assert "Traceback" not in done.stderr, (args, done.stderr[-3000:])
        assert f"cannot lock the data dir {data / 'edge'}" in done.stderr, (args, done.stderr[-3000:])
