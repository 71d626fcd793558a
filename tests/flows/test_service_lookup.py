"""Finding a document through the HTTP API by every key the docs promise (doc id, recorded path
with folders, absolute path, ``file:`` URI, file name), URL-encoded as the CLI's client sends it;
an ambiguous file name is a 400 naming the candidates; the API's reasons name its own fields and
explain a body that is not JSON. The real app (TestClient, lifespan included) over a real embedded
store, the real MiniLM model and a Prefect ingest run of a folder read in place."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.indexing.remote import ApiClient  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import wait_job  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mix(tmp_path_factory) -> Path:
    """``mix/sub/nested.pdf``, and ``mix/a/same.pdf`` and ``mix/b/same.pdf`` (one file name, two folders)."""
    root = tmp_path_factory.mktemp("allowed") / "mix"
    for name in ("sub/nested.pdf", "a/same.pdf", "b/same.pdf"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write_sample_pdf(root / name)
    return root


@pytest.fixture(scope="module")
def client(tmp_path_factory, prefect_harness, mix):
    """The app over a fresh data dir with ``mix`` ingested in place (``POST /v1/documents`` by path)."""
    data = tmp_path_factory.mktemp("data")
    api = ApiSettings(allowed_roots=[mix.parent])
    with TestClient(create_app(load_settings(data_dir=data, workers=1), api)) as c:
        job = c.post("/v1/documents", json={"path": str(mix)})
        assert job.status_code == 202, job.text
        assert wait_job(c, job.json()["id"])["counts"] == {"indexed": 3}
        yield c


def rows(client) -> dict[str, dict]:
    return {r["path"]: r for r in client.get("/v1/documents").json()["document_list"]}


def test_a_document_is_found_by_each_key_the_docs_promise(client, mix):
    nested = rows(client)["sub/nested.pdf"]  # the recorded path keeps its folder
    for key in (nested["doc_id"], nested["doc_id"][:8], "sub/nested.pdf", "nested.pdf",
                str(mix / "sub/nested.pdf"), (mix / "sub/nested.pdf").as_uri()):
        url = f"/v1/documents/{quote(key, safe='')}"  # as the CLI's client sends it
        for sent in (url, f"/v1/documents/{key}"):  # encoded, or the slashes as they are
            answer = client.get(sent)
            assert answer.status_code == 200, (sent, answer.text)
            assert answer.json()["doc_id"] == nested["doc_id"] and answer.json()["path"] == "sub/nested.pdf"
        chunks = client.get(f"{url}/chunks")
        assert chunks.status_code == 200 and len(chunks.json()) == nested["chunks"], chunks.text
        assert client.get(f"{url}/converted").json()["page_count"] == 2
        page = client.get(f"{url}/pages/1")
        assert page.status_code == 200 and page.json()["doc_id"] == nested["doc_id"], page.text
        assert client.get(f"{url}/pages/1/image", params={"dpi": 30}).headers["content-type"] == "image/png"

    # `folioflow show sub/nested.pdf` through a server: the CLI's client over this app
    api = ApiClient("http://testserver")
    api._http.close()
    api._http = client
    from folioflow.flows.cli.query_view import _server_document

    assert b'"page_count":2' in _server_document(api, "sub/nested.pdf").replace(b" ", b"")

    missing = client.get(f"/v1/documents/{quote('sub/none.pdf', safe='')}")
    assert missing.status_code == 404
    assert missing.json()["detail"] == ("document 'sub/none.pdf': no such document in the index "
                                        "(see GET /v1/documents)")

    deleted = client.delete(f"/v1/documents/{quote('sub/nested.pdf', safe='')}")
    assert deleted.status_code == 200 and deleted.json() == {"doc_id": nested["doc_id"],
                                                             "deleted_chunks": nested["chunks"]}
    assert "sub/nested.pdf" not in rows(client)


def test_an_ambiguous_file_name_is_a_400_naming_the_candidates(client, mix):
    both = rows(client)
    answer = client.get("/v1/documents/same.pdf")
    assert answer.status_code == 400, answer.text
    detail = answer.json()["detail"]
    assert detail.startswith("document 'same.pdf' matches 2 documents: ")
    assert both["a/same.pdf"]["doc_id"] in detail and both["b/same.pdf"]["doc_id"] in detail
    assert detail.endswith("give the doc id (or a unique prefix of it) or the full path")
    for verb in (client.get, client.delete):
        assert verb(f"/v1/documents/{quote('same.pdf', safe='')}/chunks" if verb is client.get
                    else "/v1/documents/same.pdf").status_code == 400
    query = client.post("/v1/query", json={"text": "revenue", "doc": ["same.pdf"]})
    assert query.status_code == 400 and query.json()["detail"].startswith("doc 'same.pdf' matches 2 documents")
    # the fix the reason gives works: the full path
    assert client.get(f"/v1/documents/{quote('a/same.pdf', safe='')}").json()["doc_id"] == both["a/same.pdf"]["doc_id"]


@pytest.mark.parametrize(("body", "reason"), [
    ({"text": "revenue", "doc": ["evil.pdf"]}, "doc 'evil.pdf': no such document in the index (see GET /v1/documents)"),
    ({"text": "revenue", "source": "elsewhere"},
     "source 'elsewhere': no indexed document has source 'elsewhere' (see GET /v1/documents for the sources "
     "in the index)"),
    ({"text": "revenue", "doc": ["a/same.pdf"], "source": "elsewhere"}, "source 'elsewhere': no indexed document"),
])
def test_query_filters_are_named_by_the_request_fields(client, body, reason):
    answer = client.post("/v1/query", json=body)
    assert answer.status_code == 404, answer.text
    assert answer.json()["detail"].startswith(reason) and "--" not in answer.json()["detail"]


def test_a_body_that_is_not_json_says_so_and_where(client):
    headers = {"content-type": "application/json"}
    query = client.post("/v1/query", content=b'{"text": evil}', headers=headers)
    assert query.status_code == 422
    assert query.json()["detail"] == "the body is not valid JSON (at character 10: Expecting value)", query.text
    ingest = client.post("/v1/documents", content=b'{"path": x}', headers=headers)
    assert ingest.status_code == 422
    assert ingest.json()["detail"] == "the body is not valid JSON (at character 10: Expecting value)", ingest.text
