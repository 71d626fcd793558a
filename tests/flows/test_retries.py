"""Transient errors are retried with backoff, permanent ones fail at once (real Prefect tasks)."""

from __future__ import annotations

from concurrent.futures.process import BrokenProcessPool

import pytest
from prefect import task

from folioflow.flows.settings import load_settings
from folioflow.flows.tasks import is_transient, retrying
from folioflow.ocr.errors import EncryptedDocumentError, EndpointError, StoreError, UnsupportedFormatError


@pytest.mark.parametrize("exc, transient", [
    (StoreError("qdrant unreachable"), True),
    (EndpointError("vllm-1: 503"), True),
    (TimeoutError("read timed out"), True),
    (ConnectionResetError("reset by peer"), True),
    (BrokenProcessPool("worker died"), True),
    (OSError("EIO"), True),
    (FileNotFoundError("gone"), False),
    (PermissionError("denied"), False),
    (UnsupportedFormatError("not a PDF"), False),
    (EncryptedDocumentError("encrypted: password required"), False),
    (ValueError("bug"), False),
])
def test_transient_classification(exc, transient):
    assert is_transient(exc) is transient


def test_retries_transient_then_succeeds_and_fails_permanent_at_once(prefect_harness):
    calls = {"flaky": 0, "bad": 0}

    @task
    def flaky() -> str:
        calls["flaky"] += 1
        if calls["flaky"] < 3:
            raise ConnectionError("store not ready")
        return "ok"

    @task
    def bad() -> None:
        calls["bad"] += 1
        raise UnsupportedFormatError("not a PDF: starts with b'PK'")

    settings = load_settings(retries=3, retry_delay=0.05)
    assert retrying(flaky, settings)() == "ok" and calls["flaky"] == 3
    with pytest.raises(UnsupportedFormatError):
        retrying(bad, settings)()
    assert calls["bad"] == 1
    assert retrying(flaky, settings).retry_delay_seconds == [0.05, 0.1, 0.2]  # doubling backoff
