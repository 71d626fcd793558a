"""The API's OpenAPI schema: the served one equals the checked-in flows/service/openapi.json, and
schemathesis fuzzes every operation of the running app in-process (ASGI) over a small real store
(the sample PDF indexed): no answer is a 5xx."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.service.openapi import SCHEMA_PATH, main, render  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402


def test_served_schema_is_the_checked_in_one(tmp_path):
    app = create_app(load_settings(data_dir=tmp_path / "data"))
    served = TestClient(app).get("/openapi.json")  # no lifespan: nothing is loaded to serve the schema
    assert served.status_code == 200
    assert render(served.json()) == SCHEMA_PATH.read_text(), "stale: run python -m folioflow.flows.service.openapi"
    assert main(["--check"]) == 0
    paths = served.json()["paths"]
    assert {"/healthz", "/metrics", "/v1/query", "/v1/documents", "/v1/documents/{doc_id}", "/v1/jobs",
            "/v1/jobs/{job_id}", "/v1/ocr"} <= set(paths)
    assert set(paths["/v1/documents"]["post"]["requestBody"]["content"]) == {"multipart/form-data", "application/json"}
    stale = tmp_path / "openapi.json"
    stale.write_text("{}\n")
    assert main(["--check", "--output", str(stale)]) == 1


schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory, prefect_harness):
    """The app over a store holding the indexed sample, loaded for schemathesis."""
    from schemathesis.python.asgi import shutdown_lifespans

    root = tmp_path_factory.mktemp("fuzz")
    pdf = write_sample_pdf(root / "report.pdf")
    app = create_app(load_settings(data_dir=root / "data", workers=1),
                     ApiSettings(max_upload_bytes=100_000, max_ocr_pages=2, allowed_roots=[root]))
    with TestClient(app) as client:
        job = client.post("/v1/documents", json={"path": str(pdf)}).json()
        deadline = time.monotonic() + 300
        while client.get(f"/v1/jobs/{job['id']}").json()["state"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, "the sample's ingest job did not finish"
            time.sleep(0.3)
        yield schemathesis.openapi.from_asgi("/openapi.json", app)
        service = app.state.service
        deadline = time.monotonic() + 300  # let the fuzzer's ingest jobs end before the store closes
        while (service.jobs.counts().get("queued", 0) or service.jobs.counts().get("running", 0)) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        shutdown_lifespans()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_no_operation_answers_5xx(api_schema, mode):
    """Valid requests (positive) and requests that break the schema (negative) over every
    operation: 2xx or 4xx, never 5xx. (schemathesis's strategies with plain hypothesis: its pytest
    plugin does not run on the pytest installed here.)"""
    from schemathesis import GenerationMode

    statuses: dict[str, set[int]] = {}

    @given(case=api_schema.as_strategy(generation_mode=GenerationMode(mode)))
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def call(case) -> None:
        response = case.call()
        statuses.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)
        assert response.status_code < 500, (f"{case.method} {case.formatted_path}: {response.status_code} "
                                            f"{response.text[:300]}")

    call()
    assert len(statuses) >= 6, statuses  # the strategy reached (nearly) every operation
