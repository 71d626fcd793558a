"""The distribution as a user gets it: ``python -m build`` makes a wheel and an sdist that
``twine check`` accepts, the wheel ships the infra templates as package data, and the wheel
installed (not editable) with only the core into a fresh virtualenv runs the README's main job
(``folioflow sample`` / ``ingest`` / ``query``) from an empty folder, claims no global import name
such as ``ocr``, and names the ``ocr`` extra where a command or a scanned page needs it.

Slow (minutes): it builds, creates a virtualenv and installs torch and the core dependencies into it
(from pip's cache and the local wheel folder when they are there; ``--no-compile``: only the
modules the commands import get byte-compiled, on first import). ``FOLIOFLOW_TORCH`` is the torch
requirement installed first, as in ``infra/setup.sh`` (default ``torch==2.13.0``, the CPU build).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

#: what the wheel must carry besides code (folioflow.infra templates, the JSON schema, the web UI's
#: templates and static files, the legal query adapter)
PACKAGE_DATA = [
    "folioflow/infra/prefect.yaml",
    "folioflow/infra/folioflow.example.yaml",
    "folioflow/infra/Dockerfile",
    "folioflow/infra/compose/docker-compose.yml",
    "folioflow/infra/vllm/1gpu.yaml",
    "folioflow/infra/vllm/cpu-test.yaml",
    "folioflow/ocr/document.schema.json",
    "folioflow/flows/service/templates/document.html",
    "folioflow/flows/service/static/app.js",
    "folioflow/flows/service/static/app.css",
    "folioflow/indexing/adapters/legal-all-MiniLM-L6-v2.npz",
]


def _env() -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH pointing into a checkout, no virtualenv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "FOLIOFLOW_ROOT")}
    env.update(HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
    return env


def _run(args: list[str], cwd: Path, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    started = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    # wall seconds per step, shown with `pytest -s` (where the time of this slow test goes)
    print(f"{time.perf_counter() - started:7.1f} s  {' '.join(Path(a).name if '/' in a else a for a in args[:4])}")
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    pytest.importorskip("build", reason="the `build` package (test extra) makes the wheel")
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    return out


def test_build_makes_a_wheel_and_an_sdist_that_twine_accepts(dist):
    pytest.importorskip("twine", reason="twine (test extra) checks the distributions")
    wheels, sdists = list(dist.glob("folioflow-*.whl")), list(dist.glob("folioflow-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    out = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)], cwd=dist)
    assert out.stdout.count("PASSED") == 2
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert [n for n in PACKAGE_DATA if n not in names] == []
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"folioflow"}


def test_the_core_wheel_runs_the_main_job_from_an_empty_folder(dist, tmp_path):
    venv, work = tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    pip, python, folioflow = venv / "bin" / "pip", venv / "bin" / "python", venv / "bin" / "folioflow"
    install = [str(pip), "install", "-q", "--no-compile"]
    _run([*install, os.environ.get("FOLIOFLOW_TORCH", "torch==2.13.0")], cwd=tmp_path, timeout=900)
    _run([*install, str(next(dist.glob("folioflow-*.whl")))], cwd=tmp_path, timeout=900)
    _run([str(pip), "check"], cwd=tmp_path)

    # no global import name; the templates are package data; importing it loads no torch
    out = _run([str(python), "-c", "import ocr"], cwd=work, check=False)
    assert out.returncode == 1 and "No module named 'ocr'" in out.stderr, out.stderr
    code = ("import sys, importlib.resources as r, folioflow\n"
            "assert (r.files('folioflow.infra') / 'prefect.yaml').is_file()\n"
            "assert 'torch' not in sys.modules and 'prefect' not in sys.modules\n"
            "print(folioflow.__version__)")
    assert _run([str(python), "-c", code], cwd=work).stdout.strip() == "0.1.0"

    # the README's main job, plus a scan that the core (no `ocr` extra) cannot read
    _run([str(folioflow), "sample", "-o", "sample.pdf", "--scanned", "scan.png"], cwd=work)
    out = _run([str(folioflow), "ingest", "sample.pdf", "scan.png", "--no-progress", "--report", "report.json"],
               cwd=work)
    records = {Path(r["source"]).name: r for r in json.loads((work / "report.json").read_text())}
    assert len(records) == 2, records
    sample, scan = records["sample.pdf"], records["scan.png"]
    assert sample["status"] == "indexed", sample
    assert scan["status"] == "failed" and "pip install 'folioflow[ocr]'" in scan["error"], scan
    assert "'folioflow[ocr]'" in out.stdout  # the failures table shows the extra verbatim (not as markup)
    hits = json.loads(_run([str(folioflow), "query", "What was the operating margin?", "-k", "3", "--json"],
                           cwd=work).stdout)
    assert any("Operating margin improved to 18.4%" in hit["text"] for hit in hits), hits
    assert (work / ".folioflow").is_dir() and not (work / "ocr").exists()

    # a command that needs an extra says which one, before any work
    out = _run([str(folioflow), "ingest", "sample.pdf", "--engine", "ocr"], cwd=work, check=False)
    assert out.returncode == 1 and "pip install 'folioflow[ocr]'" in out.stderr, out.stderr
