"""Fixtures for the OCR tests: the generated sample and its scanned copies (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy


@pytest.fixture(scope="session")
def sample_pdf(tmp_path_factory) -> Path:
    """The generated two-page sample PDF (born-digital)."""
    return write_sample_pdf(tmp_path_factory.mktemp("sample") / "sample.pdf")


@pytest.fixture(scope="session")
def scanned_sample(sample_pdf, tmp_path_factory):
    """Factory: ``scanned_sample(suffix=".tif", dpi=200, rotate=0, skew_degrees=0.0)`` -> path of an
    image-only copy of the sample (cached per argument set)."""
    cache: dict = {}
    root = tmp_path_factory.mktemp("scans")

    def make(suffix: str = ".tif", dpi: int = 200, rotate: int = 0, skew_degrees: float = 0.0) -> Path:
        key = (suffix, dpi, rotate, skew_degrees)
        if key not in cache:
            out = root / f"scan-{dpi}-{rotate}-{skew_degrees}{suffix}"
            cache[key] = write_scanned_copy(sample_pdf, out, dpi=dpi, rotate=rotate, skew_degrees=skew_degrees)
        return cache[key]

    return make
