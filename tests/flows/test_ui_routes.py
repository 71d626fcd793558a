"""The web UI's server side without a browser: the page shells (headers, no data, no key) and the
page routes, over the real app (FastAPI's TestClient, lifespan included) with the real store,
model and Prefect ingest of the generated sample, ingested with ``keep_documents`` off so the page
route falls back to the source file for the page size. ``open_client``: a second app without API
keys over its own data dir, for the document page's 404 (docs/ui.md)."""

from __future__ import annotations

import io
import time

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402
from PIL import Image  # noqa: E402

from folioflow.flows.service import ApiKey, ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import wait_job  # noqa: E402

pytestmark = pytest.mark.slow

KEY = "routes-test-key-0123456789"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def client(tmp_path_factory, prefect_harness):
    data = tmp_path_factory.mktemp("data")
    sample = write_sample_pdf(tmp_path_factory.mktemp("docs") / "report.pdf")
    app = create_app(load_settings(data_dir=data, workers=1, keep_documents=False), ApiSettings(keys=[ApiKey(key=KEY)]))
    with TestClient(app) as c:
        job = c.post("/v1/documents", files=[("files", ("report.pdf", sample.read_bytes(), "application/pdf"))],
                     headers=AUTH).json()
        deadline = time.monotonic() + 300
        while job["state"] not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, job
            time.sleep(0.3)
            job = c.get(f"/v1/jobs/{job['id']}", headers=AUTH).json()
        assert job["counts"] == {"indexed": 1}, job
        c.doc_id = job["documents"][0]["doc_id"]  # type: ignore[attr-defined]
        yield c


def test_ui_shells_carry_no_data_and_a_strict_policy(client):
    assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/documents"
    for path in ("/ui/upload", "/ui/documents", f"/ui/documents/{client.doc_id}", "/ui/search"):
        page = client.get(path)  # no key needed for the shell: it holds no data
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
        assert "report.pdf" not in page.text and KEY not in page.text
        assert "<script>" not in page.text  # the one script is external (/ui/static/app.js)
    # assets by path, not by a URL built from the Host header (behind a TLS proxy an http:// URL
    # to the inner host would be blocked as mixed content)
    proxied = client.get("/ui/documents", headers={"host": "inner-host:8080"})
    assert 'src="/ui/static/app.js"' in proxied.text and "inner-host" not in proxied.text
    assert client.get("/ui/static/app.js").headers["content-type"].startswith(("text/javascript", "application/javascript"))
    hostile = client.get('/ui/documents/"><script>alert(1)<script>')  # the id lands in an attribute, escaped
    assert hostile.status_code == 200
    assert "<script>alert(1)" not in hostile.text and "&#34;&gt;&lt;script&gt;alert(1)" in hostile.text


def test_page_route_without_the_converted_document(client):
    assert client.get(f"/v1/documents/{client.doc_id}/pages/1").status_code == 401
    page = client.get(f"/v1/documents/{client.doc_id}/pages/2", headers=AUTH)
    assert page.status_code == 200, page.text
    body = page.json()
    assert body["html"] is None and body["pages"] == 2  # keep_documents off: no Markdown kept
    assert (body["width"], body["height"]) == (612.0, 792.0)  # US Letter, from the source PDF
    law = next(c for c in body["chunks"] if c["heading_path"] == ["3 Governing Law"])
    assert law["page_start"] == law["page_end"] == 2 and "Delaware" in law["text"]
    for x0, y0, x1, y1 in law["bboxes"]:
        assert 0 <= x0 < x1 <= 612 and 0 <= y0 < y1 <= 792
    # the page view's chunks are the chunk listing's rows of that page, each with its boxes
    listed = client.get(f"/v1/documents/{client.doc_id}/chunks", params={"page": 2}, headers=AUTH).json()
    assert [{k: v for k, v in c.items() if k != "bboxes"} for c in body["chunks"]] == listed and law["token_count"] > 0
    assert client.get(f"/v1/documents/{client.doc_id}/pages/3", headers=AUTH).status_code == 404
    assert client.get(f"/v1/documents/{client.doc_id}/pages/0", headers=AUTH).status_code == 404
    assert client.get("/v1/documents/no-such-doc/pages/1", headers=AUTH).status_code == 404


def test_page_image_is_a_png_at_the_asked_resolution(client):
    answer = client.get(f"/v1/documents/{client.doc_id}/pages/1/image?dpi=72", headers=AUTH)
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    image = Image.open(io.BytesIO(answer.content))
    assert image.size == (612, 792)  # 72 dpi: one pixel per point
    assert image.convert("L").getextrema()[0] < 100  # ink on the page, not a blank render
    assert client.get(f"/v1/documents/{client.doc_id}/pages/1/image?dpi=5000", headers=AUTH).status_code == 422
    assert client.get(f"/v1/documents/{client.doc_id}/pages/9/image", headers=AUTH).status_code == 404


@pytest.fixture(scope="module")
def open_client(tmp_path_factory, prefect_harness):
    """An app without API keys (every caller sees every document) with the sample indexed."""
    data = tmp_path_factory.mktemp("open-data")
    sample = write_sample_pdf(tmp_path_factory.mktemp("open-docs") / "annual.pdf")
    with TestClient(create_app(load_settings(data_dir=data, workers=1), ApiSettings())) as c:
        job = c.post("/v1/documents", files=[("files", ("annual.pdf", sample.read_bytes(), "application/pdf"))]).json()
        job = wait_job(c, job["id"])
        assert job["counts"] == {"indexed": 1}, job
        c.doc_id = job["documents"][0]["doc_id"]  # type: ignore[attr-defined]
        yield c


def test_document_page_of_an_unknown_key_is_a_404_where_every_caller_sees_every_document(open_client):
    for key in (open_client.doc_id, open_client.doc_id[:10], "annual.pdf"):  # resolved as the API resolves them
        known = open_client.get(f"/ui/documents/{key}")
        assert known.status_code == 200 and f'data-doc-id="{key}"' in known.text, key
    missing = open_client.get("/ui/documents/nosuchdoc")  # was 200 with an empty shell
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "<h1 id=\"doc-title\">No such document</h1>" in missing.text
    assert "No document in the index matches <code>nosuchdoc</code>" in missing.text
    assert "data-doc-id" not in missing.text and 'data-missing="true"' in missing.text
    assert "script-src 'self'" in missing.headers["content-security-policy"]  # the UI's page, its headers
    assert open_client.get("/v1/documents/nosuchdoc").status_code == 404  # what the API says of that key
    hostile = open_client.get('/ui/documents/"><script>alert(1)<script>')
    assert hostile.status_code == 404 and "<script>alert(1)" not in hostile.text


def test_document_page_with_api_keys_tells_no_one_without_a_key_whether_a_document_exists(client):
    """With keys the server cannot know the caller's tenant (a page load carries no key): the shell
    answers alike for a known and an unknown key; the script shows the API's 404 for the key's caller."""
    known, missing = client.get(f"/ui/documents/{client.doc_id}"), client.get("/ui/documents/nosuchdoc")
    assert known.status_code == missing.status_code == 200
    assert known.text.replace(client.doc_id, "nosuchdoc") == missing.text
    assert client.get("/v1/documents/nosuchdoc", headers=AUTH).status_code == 404
