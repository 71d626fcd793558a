"""A data dir on a disk about to be full: each document fails with the reason, and the process
lives. The embedded store maps its segment files into memory, and a write into a mapping on a full
disk ended the ingest with SIGBUS ("Bus error", exit 135), no message and no report (a breaking
trial on a 2 MB tmpfs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from folioflow.flows.pipeline import MIN_FREE_BYTES, check_free_space
from folioflow.ocr.errors import IndexingError, StoreError
from folioflow.ocr.samples import write_sample_pdf

ROOT = Path(__file__).resolve().parents[2]


def test_check_free_space_names_the_disk_and_what_is_missing(tmp_path):
    check_free_space(tmp_path, needed=1)
    with pytest.raises(IndexingError, match=r"has [0-9.]+ MiB free, under the [0-9]+ MiB") as caught:
        check_free_space(tmp_path / "not" / "made" / "yet", needed=1 << 62)  # more than any disk: the nearest folder's
    assert not isinstance(caught.value, StoreError)  # not retried: waiting frees no disk
    assert str(tmp_path) in str(caught.value)


def test_ingest_into_a_nearly_full_disk_fails_each_document_and_lives(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode().strip()[:200]}")
    try:
        assert MIN_FREE_BYTES > 2 << 20
        sample = write_sample_pdf(tmp_path / "report.pdf")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PREFECT_HOME": str(tmp_path / "prefect")}
        env.pop("PREFECT_API_URL", None)
        report = tmp_path / "run.json"
        run = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", "ingest", str(sample), "--data-dir",
                              str(mount / "data"), "--report", str(report), "--no-progress"],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, (run.returncode, run.stderr[-3000:])
        [record] = json.loads(report.read_text())
        assert record["status"] == "failed" and "MiB free" in record["error"], record
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)
