"""Benchmark: what each ``folioflow`` command costs before and after, side by side.

Times, for two checkouts (this tree and a baseline, by default the last release, commit
``568b0d3``), each command in a fresh process: wall seconds and CPU seconds (user + system from the
child's ``rusage`` via ``os.wait4``, which includes the processes it waited for, such as Prefect's
ephemeral API server, but not a process left to exit on its own):

* ``--help``;
* ``status`` on a data dir holding one document;
* ``query`` on it (loads the embedding model);
* a no-op re-ingest of that one file (``--file``; default: the generated sample report);
* a no-op re-ingest of a folder of N files (``--corpus``; default: the 74 FinanceBench PDFs under
  ``$FOLIOFLOW_CORPUS/A_finance/financebench/pdfs``).

Each checkout ingests into its own data dirs under ``--work`` first (untimed; kept, so a second
invocation with the same ``--work`` reuses them, and the set-up ingest is then itself a no-op).
Repetitions alternate the checkouts; the table shows medians and the ratio baseline / this tree.
The load average is printed before and after: the figures are only comparable on an idle machine.

Checkouts: a tree with ``flows/_package`` (the ``folioflow`` import root) is run through a
symlink farm under ``<tree>/build/farm`` (as ``/work/wt/devenv.sh`` builds it), older trees with
``PYTHONPATH=<tree>`` (top-level ``flows``, ``ocr``, ...). ``--baseline PATH`` names a checkout;
when PATH does not exist it is created with ``git worktree add --detach PATH COMMIT``
(``--baseline-commit``). Both run with the same interpreter (``--python``, default this one).

Run (on an idle machine; the 74-file set-up ingest takes a long while the first time)::

    python tests/benchmarks/bench_startup.py --work /tmp/bench-startup [--repeat 3] [--json out.json]

Smoke run on tiny inputs::

    python tests/benchmarks/bench_startup.py --work /tmp/bs --corpus /tmp/three-pdfs --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASELINE_COMMIT = "568b0d3"
DEFAULT_CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus")) / "A_finance" / \
    "financebench" / "pdfs"
QUERY = "What was the operating margin?"


@dataclass
class Checkout:
    """One tree to time: its name in the table, the module that runs its CLI, its environment."""

    name: str
    tree: Path
    module: str
    env: dict[str, str]
    work: Path
    times: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def _farm(tree: Path) -> Path:
    """The symlink farm that maps ``folioflow`` onto ``tree``'s top-level folders (as devenv.sh)."""
    farm = tree / "build" / "farm" / "folioflow"
    farm.mkdir(parents=True, exist_ok=True)
    links = {"__init__.py": tree / "flows" / "_package" / "__init__.py",
             "__main__.py": tree / "flows" / "_package" / "__main__.py",
             **{name: tree / name for name in ("ocr", "chunking", "indexing", "flows", "infra")}}
    for name, target in links.items():
        link = farm / name
        if link.is_symlink() or link.exists():
            if link.resolve() == target.resolve():
                continue
            link.unlink()
        link.symlink_to(target)
    return farm.parent


def checkout(name: str, tree: Path, work: Path) -> Checkout:
    """How to run ``tree``'s CLI (see module docstring), with its own PREFECT_HOME under ``work``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PREFECT_HOME": str(work / name / "prefect"), "COLUMNS": "160"}
    env.pop("PREFECT_API_URL", None)
    if (tree / "flows" / "_package").is_dir():
        env["PYTHONPATH"] = str(_farm(tree))
        module = "folioflow.flows.cli"
    else:
        env["PYTHONPATH"] = str(tree)
        module = "flows.cli"
    (work / name).mkdir(parents=True, exist_ok=True)
    return Checkout(name, tree, module, env, work / name)


def baseline_tree(path: Path, commit: str) -> Path:
    """``path``, created as a detached git worktree of ``commit`` when it does not exist."""
    if not path.exists():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit], check=True)
    return path


def timed(argv: list[str], log: Path, label: str, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> tuple[float, float]:
    """Run ``argv`` with its output in ``log``; returns (wall s, CPU s: user + system of the child
    and what it waited for, from ``os.wait4``; unlike wall time, hardly changed by other jobs on a
    shared machine). Raises ``RuntimeError`` naming ``label``, with the log's tail, on a non-zero
    exit. Shared with ``bench_api.py``."""
    with open(log, "wb") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} exited {proc.returncode}:\n{log.read_text()[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def run(python: str, co: Checkout, args: list[str], log: Path) -> tuple[float, float]:
    """Run ``python -m MODULE ARGS`` for ``co`` (:func:`timed`)."""
    return timed([python, "-m", co.module, *args], log, f"{co.name}: {' '.join(args)}", env=co.env, cwd=co.work)


def commands(co: Checkout, one: Path, corpus: Path) -> dict[str, list[str]]:
    """The timed commands for ``co`` (its data dirs under its work folder)."""
    single, many = str(co.work / "data-one"), str(co.work / "data-corpus")
    return {
        "--help": ["--help"],
        "status": ["status", "--data-dir", single],
        "query": ["query", QUERY, "--data-dir", single],
        "re-ingest 1 file": ["ingest", str(one), "--data-dir", single, "--no-progress"],
        f"re-ingest {_count(corpus)} files": ["ingest", str(corpus), "--data-dir", many, "--no-progress"],
    }


def _count(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def load() -> tuple[float, float, float]:
    return os.getloadavg()


def table(checkouts: list[Checkout]) -> str:
    """Medians per command, both checkouts, ratio baseline / this tree (wall and CPU)."""
    this, base = checkouts
    head = (f"{'command':<22} {this.name + ' wall':>12} {this.name + ' cpu':>12} {base.name + ' wall':>14} "
            f"{base.name + ' cpu':>13} {'wall x':>7} {'cpu x':>7}")
    rows = [head, "-" * len(head)]
    for name in this.times:
        tw, tc = (statistics.median(v[i] for v in this.times[name]) for i in (0, 1))
        bw, bc = (statistics.median(v[i] for v in base.times[name]) for i in (0, 1))
        rows.append(f"{name:<22} {tw:>12.2f} {tc:>12.2f} {bw:>14.2f} {bc:>13.2f} {bw / tw:>7.1f} {bc / max(tc, 1e-3):>7.1f}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="Folder for data dirs, logs (default: a temp dir)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="Baseline checkout (created with git worktree add when missing; default WORK/baseline)")
    parser.add_argument("--baseline-commit", default=BASELINE_COMMIT, help="Commit for a created baseline")
    parser.add_argument("--file", type=Path, default=None, help="The one file (default: the generated sample)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="Folder of N files for the N-file re-ingest")
    parser.add_argument("--repeat", type=int, default=3, help="Repetitions per command and checkout (median shown)")
    parser.add_argument("--python", default=sys.executable, help="Interpreter for both checkouts")
    parser.add_argument("--json", type=Path, default=None, help="Also write every timing as JSON")
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"corpus folder {args.corpus} not found (set FOLIOFLOW_CORPUS or pass --corpus)")
    work = (args.work or Path(tempfile.mkdtemp(prefix="bench-startup-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    base_tree = baseline_tree((args.baseline or work / "baseline").resolve(), args.baseline_commit)
    checkouts = [checkout("this", ROOT, work), checkout("baseline", base_tree, work)]
    before = load()
    print(f"load average before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f} on {os.cpu_count()} cores", flush=True)
    one = args.file
    if one is None:
        one = work / "sample.pdf"
        run(args.python, checkouts[0], ["sample", "--output", str(one)], work / "sample.log")
    one, corpus = one.resolve(), args.corpus.resolve()
    for co in checkouts:  # set-up ingests, untimed
        for name, argv in commands(co, one, corpus).items():
            if name.startswith("re-ingest"):
                wall, _ = run(args.python, co, argv, co.work / f"setup-{name.replace(' ', '-')}.log")
                print(f"set-up {co.name}: {name.replace('re-ingest', 'ingest')} {wall:.1f} s", flush=True)
    for rep in range(args.repeat):
        for co in checkouts if rep % 2 == 0 else checkouts[::-1]:
            for name, argv in commands(co, one, corpus).items():
                timing = run(args.python, co, argv, co.work / f"{name.replace(' ', '-')}.log")
                co.times.setdefault(name, []).append(timing)
                print(f"  {co.name:<8} {name:<22} wall {timing[0]:6.2f} s  cpu {timing[1]:6.2f} s", flush=True)
    after = load()
    print()
    print(f"this tree: {ROOT} ({_head(ROOT)}); baseline: {base_tree} ({_head(base_tree)})")
    print(f"medians of {args.repeat} run(s); seconds; x = baseline / this tree")
    print(table(checkouts))
    idle = before[0] < 0.5
    print(f"\nload average before: {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}; after: {after[0]:.2f} {after[1]:.2f} "
          f"{after[2]:.2f} (1, 5, 15 min; {os.cpu_count()} cores): machine {'idle' if idle else 'NOT idle'} at the "
          f"start{'' if idle else ' (1-min load >= 0.5): figures include other work'}")
    if args.json:
        args.json.write_text(json.dumps({"load_before": before, "load_after": after, "idle": idle,
                                         "checkouts": {co.name: {"tree": str(co.tree), "head": _head(co.tree),
                                                                 "times": co.times} for co in checkouts}}, indent=2))


def _head(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


if __name__ == "__main__":
    main()
