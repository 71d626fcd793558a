"""Reliability tests run offline (no hub lookups, no Prefect analytics); tesseract single-threaded."""

from __future__ import annotations

import os

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch  # noqa: E402,F401  (its OpenMP runtime loads before the tesseract limit below)

os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def embedder():
    """The default embedding model on the CPU, loaded once."""
    from folioflow.indexing.embedder import Embedder

    return Embedder(device="cpu").warm_up()
