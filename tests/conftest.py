"""Shared fixtures. The real-document corpus lives beside the project at ``../shared/corpus``
(override with ``FOLIOFLOW_CORPUS``); tests that need it skip with a clear reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Path of the shared corpus; skips the test when it is absent."""
    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"corpus absent: {CORPUS} has no MANIFEST.tsv (set FOLIOFLOW_CORPUS to its path)")
    return CORPUS


@pytest.fixture(scope="session")
def prefect_harness():
    """A real Prefect API for flows run in this session (``prefect_test_harness``: a temporary
    server on loopback with its own database, torn down after the session)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
