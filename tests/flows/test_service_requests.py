"""Request handling of the API that needs no loaded model or store: the real app under FastAPI's
TestClient without its lifespan (nothing is loaded), so these checks run in seconds. Content types
of JSON endpoints, OCR page ranges against the document's page count."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402


@pytest.fixture
def client(tmp_path):
    return TestClient(create_app(load_settings(data_dir=tmp_path / "data"), ApiSettings(max_ocr_pages=100)))


@pytest.mark.parametrize(("content_type", "body"), [
    ("text/plain", b'{"text": "revenue"}'),
    ("application/x-www-form-urlencoded", b"text=revenue"),
    (None, b'{"text": "revenue"}'),
])
def test_json_endpoint_refuses_other_content_types_with_415(client, content_type, body):
    headers = {"content-type": content_type} if content_type else {}
    answer = client.post("/v1/query", content=body, headers=headers)
    assert answer.status_code == 415, answer.text
    assert "application/json" in answer.json()["detail"]
    # a JSON body that is invalid is still a 422 naming the field (the handler is not reached)
    invalid = client.post("/v1/query", json={"text": ""})
    assert invalid.status_code == 422 and "text" in invalid.json()["detail"]
    assert client.post("/v1/query", content=b'{"text": ""}',
                       headers={"content-type": "application/json; charset=utf-8"}).status_code == 422


def test_multipart_endpoints_still_take_uploads(client):
    answer = client.post("/v1/ocr", files={"file": ("a.txt", b"plain text, not a document", "text/plain")})
    assert answer.status_code == 422 and "not a PDF" in answer.json()["detail"]  # parsed as an upload


def test_json_415_comes_after_the_key_check(tmp_path):
    from folioflow.flows.service import ApiKey

    app = create_app(load_settings(data_dir=tmp_path / "data"), ApiSettings(keys=[ApiKey(key="k" * 20)]))
    answer = TestClient(app).post("/v1/query", content=b"x", headers={"content-type": "text/plain"})
    assert answer.status_code == 401


@pytest.mark.parametrize("job_pages", [10, 1])  # converted in the request, or as a job (selected > ocr_job_pages)
def test_ocr_page_range_past_the_end_is_a_422_with_the_page_count(tmp_path, job_pages):
    from folioflow.ocr.samples import write_sample_pdf

    pdf = write_sample_pdf(tmp_path / "report.pdf").read_bytes()  # 2 pages
    app = create_app(load_settings(data_dir=tmp_path / "data"), ApiSettings(ocr_job_pages=job_pages))
    client = TestClient(app)
    for page_range in ("50-60", "3", "3-"):
        answer = client.post("/v1/ocr", files={"file": ("report.pdf", pdf, "application/pdf")},
                             data={"page_range": page_range, "engine": "text"})
        assert answer.status_code == 422, (page_range, answer.text)
        assert "the document has 2 pages" in answer.json()["detail"] and page_range in answer.json()["detail"]
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "report.pdf").write_bytes(pdf)
    by_path = create_app(load_settings(data_dir=tmp_path / "data2"),
                         ApiSettings(ocr_job_pages=job_pages, allowed_roots=[tmp_path / "root"]))
    answer = TestClient(by_path).post("/v1/ocr", json={"file_url": str(tmp_path / "root" / "report.pdf"),
                                                       "page_range": "50-60"})
    assert answer.status_code == 422 and "2 pages" in answer.json()["detail"], answer.text


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_api_doc_pages_load_everything_from_the_app(client, page):
    import re

    html = client.get(page)
    assert html.status_code == 200 and "text/html" in html.headers["content-type"]
    urls = re.findall(r'(?:src|href)="([^"]+)"', html.text)
    assets = [u for u in urls if u.endswith((".js", ".css", ".png"))]
    assert any(u.endswith(".js") for u in assets), urls
    for url in assets:
        assert url.startswith("/"), f"{page} loads {url} from outside the app"
        answer = client.get(url)
        assert answer.status_code == 200 and len(answer.content) > 1000, url
    assert "/openapi.json" in html.text and client.get("/openapi.json").status_code == 200


@pytest.mark.parametrize(("text", "reason"), [("   ", "empty query"), ("\n\t", "empty query"), ("", "empty query"),
                                            ("x" * 4001, "at most 4000")])
def test_query_text_of_only_whitespace_or_over_the_limit_is_a_422(client, text, reason):
    """The same texts the retriever and `folioflow query` refuse (a trial found "   " answered 200
    with 5 arbitrary hits), in the same words (a later trial found "   " answered "String should
    have at least 1 character"); the limit is the retriever's."""
    from folioflow.indexing.retriever import MAX_QUERY_CHARS

    answer = client.post("/v1/query", json={"text": text})
    assert answer.status_code == 422 and answer.json()["detail"].startswith("invalid request: text:"), answer.text
    assert reason in answer.text and MAX_QUERY_CHARS == 4000, answer.text
