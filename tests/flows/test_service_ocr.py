"""``POST /v1/ocr`` by reference and as a job, and the upload limit enforced while the body
streams in: the real app (TestClient, lifespan included, the real MiniLM model), the generated
sample PDF, and a real static HTTP server on loopback (``python -m http.server``) for ``image_url``."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.service.config import load_api_settings  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.errors import ConfigurationError  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import free_port, python_module, serve_process, wait_job  # noqa: E402

pytestmark = pytest.mark.slow

LIMIT = 200_000


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A folder holding the sample (2 pages) and a file over the byte limit, served over HTTP."""
    root = tmp_path_factory.mktemp("ocr-root")
    write_sample_pdf(root / "report.pdf")
    (root / "huge.pdf").write_bytes(b"%PDF-1.7\n" + b"0" * (LIMIT * 3))
    port = free_port()
    with serve_process(python_module("http.server", "--bind", "127.0.0.1", str(port), "--directory", str(root)),
                       f"http://127.0.0.1:{port}/", root.parent / f"http-{port}.log"):
        yield root, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def client(tmp_path_factory, served):
    root, _ = served
    api = ApiSettings(max_upload_bytes=LIMIT, max_ocr_pages=5, ocr_job_pages=1, allowed_roots=[root],
                      ocr_url_hosts=["127.0.0.1"], ocr_url_timeout=10)
    with TestClient(create_app(load_settings(data_dir=tmp_path_factory.mktemp("data")), api)) as c:
        yield c



def test_file_url_and_image_url_answer_like_an_upload(client, served):
    root, base = served
    upload = client.post("/v1/ocr", files={"file": ("report.pdf", (root / "report.pdf").read_bytes())},
                         data={"page_range": "2", "engine": "text"})
    assert upload.status_code == 200, upload.text
    for body in ({"file_url": (root / "report.pdf").as_uri()}, {"file_url": str(root / "report.pdf")},
                 {"image_url": f"{base}/report.pdf"},
                 {"image_url": "data:application/pdf;base64," + base64.b64encode((root / "report.pdf").read_bytes()).decode()}):
        answer = client.post("/v1/ocr", json={**body, "page_range": "2", "engine": "text"})
        assert answer.status_code == 200, (body, answer.text)
        got = answer.json()
        assert got["content_hash"] == upload.json()["content_hash"]
        assert [(p["number"], p["status"], p["engine"], p["content"]) for p in got["pages"]] == \
               [(p["number"], p["status"], p["engine"], p["content"]) for p in upload.json()["pages"]]


@pytest.mark.parametrize(("body", "status", "reason"), [
    ({"file_url": "/etc/hostname"}, 403, "allowed_roots"),
    ({"file_url": "file:///no/such/file.pdf"}, 404, "no such file"),
    ({"file_url": "s3://bucket/a.pdf"}, 400, "file://"),
    ({"file_url": "file://[x/a.pdf"}, 400, "file://"),
    ({"image_url": "http://localhost:1/a.pdf"}, 403, "not allowed"),
    ({"image_url": "ftp://127.0.0.1/a.pdf"}, 400, "http://"),
    ({"image_url": "data:application/pdf;base64,@@@"}, 400, "not valid base64"),  # was read as 0 bytes
    ({"image_url": "data:application/pdf;base64,!!!!"}, 400, "not valid base64"),
    ({"image_url": "data:application/pdf;base64,"}, 422, "empty file"),
    ({"image_url": "data:text/plain,hello"}, 422, "not a PDF"),
    ({}, 422, "exactly one of file_url or image_url"),
    ({"file_url": "/x", "image_url": "http://127.0.0.1/x"}, 422, "exactly one"),
    ({"file_url": "/x", "output_format": "docx"}, 422, "output_format"),
])
def test_bad_references_get_a_4xx_with_the_reason(client, body, status, reason):
    answer = client.post("/v1/ocr", json=body)
    assert answer.status_code == status, answer.text
    assert reason in answer.json()["detail"], answer.json()


def test_fetches_are_limited(client, served):
    root, base = served
    missing = client.post("/v1/ocr", json={"image_url": f"{base}/missing.pdf"})
    assert missing.status_code == 422 and "answered 404" in missing.json()["detail"]
    huge = client.post("/v1/ocr", json={"image_url": f"{base}/huge.pdf"})
    assert huge.status_code == 413 and "max_upload_bytes" in huge.json()["detail"]
    local = client.post("/v1/ocr", json={"file_url": str(root / "huge.pdf")})
    assert local.status_code == 413 and "max_upload_bytes" in local.json()["detail"]
    closed = client.post("/v1/ocr", json={"image_url": f"http://127.0.0.1:{free_port()}/a.pdf"})
    assert closed.status_code == 422 and "cannot fetch" in closed.json()["detail"]


def test_off_by_default(tmp_path):
    app = create_app(load_settings(data_dir=tmp_path / "data"))
    with TestClient(app) as c:
        url = c.post("/v1/ocr", json={"image_url": "http://127.0.0.1/a.pdf"})
        assert url.status_code == 403 and "ocr_url_hosts" in url.json()["detail"]
        path = c.post("/v1/ocr", json={"file_url": "/etc/hostname"})
        assert path.status_code == 403 and "allowed_roots" in path.json()["detail"]


def test_a_large_document_is_converted_as_a_job(client, served):
    root, base = served
    answer = client.post("/v1/ocr", json={"image_url": f"{base}/report.pdf", "output_format": "markdown"})
    assert answer.status_code == 202, answer.text
    job = answer.json()
    assert job["kind"] == "ocr" and answer.headers["location"] == f"/v1/jobs/{job['id']}"
    assert job["progress"]["pages_total"] == 2 and job["inputs"] == ["report.pdf"]
    done = wait_job(client, job["id"], timeout=120.0, poll=0.2)
    assert done["state"] == "succeeded", done
    assert done["progress"]["pages_done"] == 2 and done["counts"] == {"ok": 2}
    pages = done["ocr"]["pages"]
    assert [p["number"] for p in pages] == [1, 2] and all(p["engine"] == "text" for p in pages)
    assert "Risk-Adjusted Return" in pages[1]["content"]
    upload = client.post("/v1/ocr", files={"file": ("r.pdf", (root / "report.pdf").read_bytes())},
                         data={"password": "s3cret-pw-123"})  # an unencrypted PDF with a password: opened as usual
    assert upload.status_code == 202
    assert wait_job(client, upload.json()["id"], timeout=120.0, poll=0.2)["state"] == "succeeded"
    table = client.app.state.service.settings.data_dir / "api-jobs.sqlite"
    assert "s3cret-pw-123" not in upload.text and b"s3cret-pw-123" not in table.read_bytes()


@pytest.mark.parametrize(("path", "content_type", "head", "tail"), [
    ("/v1/ocr", b"multipart/form-data; boundary=b0undary",
     b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n\r\n', b"\r\n--b0undary--\r\n"),
    # a JSON body: FastAPI reads it whole before any route code runs (a trial finding: it was, 422 after)
    ("/v1/query", b"application/json", b'{"text": "', b'"}'),
])
def test_body_limit_holds_while_the_body_streams(client, path, content_type, head, tail):
    """A chunked body without Content-Length, fed to the ASGI app message by message (the
    TestClient would buffer it all first): refused with 413 once past the limit, without reading
    the rest of the body, on an upload route and on a JSON route alike."""
    import asyncio

    chunks = [head, *([b"0" * 10_000] * 100), tail]
    pulled, sent = [], []

    async def receive() -> dict:
        pulled.append(1)
        return {"type": "http.request", "body": chunks[len(pulled) - 1], "more_body": len(pulled) < len(chunks)}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(b"host", b"testserver"), (b"content-type", content_type),
                         (b"transfer-encoding", b"chunked")],
             "client": ("127.0.0.1", 1), "server": ("testserver", 80), "app": client.app}
    asyncio.run(client.app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert start["status"] == 413 and b"max_upload_bytes" in body, body
    assert len(pulled) <= LIMIT // 10_000 + 2 < len(chunks)  # stopped at the limit, 1 MB never read


def test_ingest_mode_setting_is_validated(monkeypatch):
    assert load_api_settings(ingest="prefect").prefect_deployment == "ingest/folioflow-ingest"
    with pytest.raises(ConfigurationError, match="prefect_deployment"):
        load_api_settings(ingest="prefect", prefect_deployment="folioflow-ingest")
    with pytest.raises(ConfigurationError, match="ingest"):
        load_api_settings(ingest="dask")
    monkeypatch.setenv("FOLIOFLOW_API_OCR_URL_HOSTS", '["docs.example.com", "*.cdn.example.com"]')
    hosts = load_api_settings()
    assert hosts.host_allowed("docs.example.com") and hosts.host_allowed("a.cdn.example.com")
    assert not hosts.host_allowed("cdn.example.com") and not hosts.host_allowed("example.com")
    monkeypatch.setenv("FOLIOFLOW_API_OCR_URL_HOSTS", '["http://x/"]')
    with pytest.raises(ConfigurationError, match="ocr_url_hosts"):
        load_api_settings()


def test_schema_documents_both_ocr_bodies(tmp_path):
    schema = create_app(load_settings(data_dir=tmp_path)).openapi()
    post = schema["paths"]["/v1/ocr"]["post"]
    assert set(post["requestBody"]["content"]) == {"multipart/form-data", "application/json"}
    assert {"200", "202", "413"} <= set(post["responses"])


@pytest.mark.integration
def test_ocr_requests_share_the_servers_vlm_engine(vllm_fleet, tmp_path):
    """``POST /v1/ocr`` with ``engine=vlm`` against the two real vLLM CPU servers: every page is
    answered by the VLM, and the requests go through the server's one engine (built on the first
    request, the same object after the second), so they share its endpoint health and connections
    instead of each finding a dead endpoint again."""
    vllm_fleet.ensure_ready()
    write_sample_pdf(tmp_path / "report.pdf")
    settings = load_settings(data_dir=tmp_path / "data", ocr_endpoints=vllm_fleet.urls, profile="markdown",
                             vlm={"max_tokens": 64, "render_workers": 1, "probe_interval_s": 1.0,
                                  "extra_body": {"structured_outputs": {"regex": "[a-z ]{1,12}"}, "temperature": 0.0}})
    with TestClient(create_app(settings, ApiSettings())) as c:
        service = c.app.state.service  # type: ignore[attr-defined]
        assert service._vlm is None  # nothing built before an OCR request
        engines = []
        for _ in range(2):
            answer = c.post("/v1/ocr", files={"file": ("report.pdf", (tmp_path / "report.pdf").read_bytes())},
                            data={"engine": "vlm", "output_format": "json"})
            assert answer.status_code == 200, answer.text
            assert [(p["number"], p["engine"]) for p in answer.json()["pages"]] == [(1, "vlm:markdown"), (2, "vlm:markdown")]
            engines.append(service._vlm)
        assert engines[0] is not None and engines[0] is engines[1]
    assert service._vlm is None  # closed with the service
