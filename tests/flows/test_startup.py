"""Commands pay only for what they use: ``--help``, ``status`` and ``show`` import no torch, no
transformers and no Prefect, and an ``ingest`` re-run whose documents are all unchanged loads no
model and starts no Prefect (:mod:`folioflow.flows.unchanged`). Each command runs in a fresh
interpreter, through the CLI's entry point, against a data dir the real CLI built (``folioflow
sample`` then ``folioflow ingest``), and the modules loaded at exit are checked."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: Runs ``folioflow ARGS`` (a JSON list in argv[1]) through :func:`folioflow.flows.cli.main`, then
#: prints the names of the loaded modules as the last line of stdout; exits with the command's code.
PROBE = r"""
import json, sys
args = json.loads(sys.argv[1])
sys.argv = ["folioflow", *args]
from folioflow.flows.cli import main
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
sys.stdout.flush()
print("\nMODULES " + json.dumps(sorted(sys.modules)))
sys.exit(code)
"""

HEAVY = ("torch", "sentence_transformers", "transformers", "prefect")


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "PREFECT_HOME": str(home), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    env.pop("PREFECT_API_URL", None)
    return env


def run_cli(args: list[str], home: Path, timeout: float = 600) -> tuple[subprocess.CompletedProcess, set[str]]:
    """``folioflow ARGS`` in a fresh interpreter; returns the finished process (its stdout without
    the module line) and the set of module names loaded at exit. Fails the test on a non-zero exit."""
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], env=_env(home), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"folioflow {args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    head, _, tail = done.stdout.rpartition("\nMODULES ")
    done.stdout = head
    return done, set(json.loads(tail))


def heavy_in(modules: set[str]) -> list[str]:
    """The heavy top-level packages among ``modules``."""
    return sorted(name for name in HEAVY if name in modules)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> dict:
    """A data dir holding the generated sample, ingested by the real CLI once for this module."""
    root = tmp_path_factory.mktemp("startup")
    docs, data, home = root / "docs", root / "data", root / "prefect"
    docs.mkdir()
    sample = docs / "sample.pdf"
    run_cli(["sample", "--output", str(sample)], home)
    first = root / "first.json"
    run_cli(["ingest", str(docs), "--data-dir", str(data), "--no-progress", "--report", str(first)], home)
    return {"root": root, "docs": docs, "data": data, "home": home, "sample": sample,
            "first": json.loads(first.read_text())}


def test_help_imports_no_heavy_package(tmp_path):
    done, modules = run_cli(["--help"], tmp_path)
    assert "ingest" in done.stdout and "status" in done.stdout
    assert heavy_in(modules) == []


@pytest.mark.slow
def test_status_and_show_import_no_heavy_package(indexed):
    done, modules = run_cli(["status", "--data-dir", str(indexed["data"])], indexed["home"])
    assert "default" in done.stdout and heavy_in(modules) == []
    done, modules = run_cli(["status", "--documents", "--json", "--data-dir", str(indexed["data"])], indexed["home"])
    assert heavy_in(modules) == []
    done, modules = run_cli(["show", "sample.pdf", "--data-dir", str(indexed["data"])], indexed["home"])
    assert "Northwind" in done.stdout  # the sample's converted Markdown
    assert heavy_in(modules) == []


@pytest.mark.slow
def test_unchanged_rerun_loads_no_model_and_starts_no_prefect(indexed):
    first = indexed["first"]
    assert [r["status"] for r in first] == ["indexed"]
    report = indexed["root"] / "again.json"
    done, modules = run_cli(["ingest", str(indexed["docs"]), "--data-dir", str(indexed["data"]), "--no-progress",
                             "--report", str(report)], indexed["home"])
    assert heavy_in(modules) == []
    assert "skipped" in done.stdout
    records = json.loads(report.read_text())
    assert len(records) == 1
    again, before = records[0], first[0]
    assert again["status"] == "skipped" and again["change"] == "unchanged (change token)"
    for key in ("source", "doc_id", "pages", "chunks", "engines", "content_hash", "tenant", "source_name"):
        assert again[key] == before[key], key


@pytest.mark.slow
def test_fast_path_declines_what_the_flow_must_decide(indexed, tmp_path):
    """In-process: every case outside "all unchanged by change token" goes to the flow (None)."""
    from folioflow.flows.settings import load_settings
    from folioflow.flows.unchanged import run_if_unchanged

    settings = load_settings(data_dir=indexed["data"])
    docs = str(indexed["docs"])
    assert run_if_unchanged([docs], settings) is not None
    assert run_if_unchanged([docs], settings, force=True) is None
    assert run_if_unchanged([docs, str(tmp_path / "missing.pdf")], settings) is None
    assert run_if_unchanged([docs], settings.model_copy(update={"tenant": "acme"})) is None
    assert run_if_unchanged([docs], settings.model_copy(update={"max_tokens": 128})) is None
    assert run_if_unchanged(["s3://bucket/prefix"], settings) is None
    copy = tmp_path / "copy.pdf"
    shutil.copy2(indexed["sample"], copy)
    assert run_if_unchanged([docs, str(copy)], settings) is None  # a new document
    with_prune = run_if_unchanged([docs], settings, prune=True)  # nothing indexed there is gone
    assert with_prune is not None and [d.status for d in with_prune.documents] == ["skipped"]


@pytest.mark.slow
def test_a_touched_file_with_the_same_bytes_goes_to_the_flow(indexed):
    """Size and mtime are the change token: a new mtime (bytes unchanged) is not decided here."""
    from folioflow.flows.settings import load_settings
    from folioflow.flows.unchanged import run_if_unchanged

    settings = load_settings(data_dir=indexed["data"])
    sample = indexed["sample"]
    stat = sample.stat()
    try:
        os.utime(sample, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**10))
        assert run_if_unchanged([str(indexed["docs"])], settings) is None
    finally:
        os.utime(sample, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert run_if_unchanged([str(indexed["docs"])], settings) is not None


@pytest.mark.slow
def test_prefect_stays_off_the_console_on_a_run_that_succeeded(tmp_path):
    """A burst of documents (200 empty files and the sample) without --verbose: the run succeeds
    (each empty file a ``failed`` row with its reason) and stderr holds none of Prefect's service
    warnings or tracebacks (before: "Subscription queue is full" warnings and the task-run
    recorder's ``CancelledError`` traceback at shutdown)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(200):
        (docs / f"empty-{i:03d}.pdf").write_bytes(b"")
    home = tmp_path / "prefect"
    run_cli(["sample", "--output", str(docs / "sample.pdf")], home)
    report = tmp_path / "report.json"
    done, _ = run_cli(["ingest", str(docs), "--data-dir", str(tmp_path / "data"), "--no-progress",
                       "--report", str(report)], home, timeout=900)
    records = json.loads(report.read_text())
    assert len(records) == 201
    empty = [r for r in records if "empty-" in r["source"]]
    assert len(empty) == 200 and all(r["status"] == "failed" and "empty file" in (r["error"] or "") for r in empty)
    # The sample is indexed (once, under a load average of 17 on 2 cores, it failed; its status is
    # not what this test is about, so it is not asserted).
    assert [r["status"] in ("indexed", "failed") for r in records if r["source"].endswith("sample.pdf")] == [True]
    for noise in ("Traceback", "Subscription queue", "CancelledError", "WARNING", "ERROR"):
        assert noise not in done.stderr, f"{noise!r} on stderr:\n{done.stderr[-3000:]}"
