"""PDF passwords per configured source: the same file name in two sources opens with each
source's own password (one given inline, one read from the environment with ``${NAME}``); a source
without a password gets the specific refusal, and no password appears in the run report."""

from __future__ import annotations

import pytest
import yaml

from folioflow.flows.ingest import run_ingest
from folioflow.flows.settings import load_settings
from folioflow.ocr.samples import write_encrypted_pdf

pytestmark = pytest.mark.slow


def test_each_source_opens_its_files_with_its_own_password(tmp_path, monkeypatch, prefect_harness):
    for name, password in (("fund-a", "alpha-pw-31"), ("fund-b", "bravo-pw-47"), ("fund-c", "charlie-pw-59")):
        (tmp_path / name).mkdir()
        write_encrypted_pdf(tmp_path / name / "statement.pdf", password)
    monkeypatch.setenv("FUND_B_PASSWORD", "bravo-pw-47")
    config = tmp_path / "folioflow.yaml"
    config.write_text(yaml.safe_dump({"sources": [
        {"name": "fund-a", "url": str(tmp_path / "fund-a"), "passwords": {"statement.pdf": "alpha-pw-31"}},
        {"name": "fund-b", "url": str(tmp_path / "fund-b"), "passwords": {"*.pdf": "${FUND_B_PASSWORD}"}},
        {"name": "fund-c", "url": str(tmp_path / "fund-c")},
    ]}))
    report = run_ingest([], load_settings(config, data_dir=tmp_path / "data", workers=2))
    by_source = {d.source_name: d for d in report.documents}
    assert by_source["fund-a"].status == "indexed" and by_source["fund-b"].status == "indexed"
    assert by_source["fund-c"].status == "failed" and by_source["fund-c"].error.endswith("encrypted: password required")
    dumped = report.records_json()
    assert not any(pw in dumped for pw in ("alpha-pw-31", "bravo-pw-47", "charlie-pw-59"))
