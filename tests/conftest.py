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
