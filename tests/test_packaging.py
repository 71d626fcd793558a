"""The distribution's import layout: one root, ``folioflow``, mapped onto the top-level folders;
pyproject's explicit package list names every package folder; no top-level name such as ``ocr`` is
claimed by the installed distribution."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"folioflow.flows": "flows", "folioflow.ocr": "ocr", "folioflow.chunking": "chunking",
           "folioflow.indexing": "indexing", "folioflow.infra": "infra"}


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_package_list_holds_every_package_folder():
    tool = _pyproject()["tool"]["setuptools"]
    assert tool["package-dir"]["folioflow"] == "flows/_package"
    assert {k: v for k, v in tool["package-dir"].items() if k != "folioflow"} == FOLDERS
    found = {"folioflow"}
    for package, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "_package" in rel.parts or "__pycache__" in rel.parts:
                continue
            found.add(".".join([package, *rel.parts]))
    found |= {"folioflow.infra.vllm", "folioflow.infra.compose"}  # data folders without __init__.py
    assert set(tool["packages"]) == found


def test_only_folioflow_is_importable_outside_the_checkout(tmp_path):
    code = ("import importlib.util as u, folioflow, folioflow.ocr, folioflow.flows.cli\n"
            "print([n for n in ('ocr', 'chunking', 'indexing', 'flows') if u.find_spec(n) is not None])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
