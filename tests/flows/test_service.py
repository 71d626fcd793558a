"""The HTTP API end to end: the real app (FastAPI's TestClient, lifespan included) over a real
embedded store, the real MiniLM model and Prefect ingest runs; documents are the generated sample
PDF, a non-PDF named ``.pdf`` and an encrypted copy. The tests share one app and store (module
fixtures) and run in file order: the first sees the store empty, before the upload fixture fills it,
and the documents test deletes what it listed last.

The last tests start their own app over a fresh data dir that nothing is ingested into (``fresh``):
a new server serves an empty index (200 with an empty listing, ``[]`` for a search, 404 ``no such
document`` for a key), not 404 "no collection" with the store's advice for Python and command-line
readers, and its reasons name its own fields and settings, never the CLI's options
(``--collection``, ``--tenant``, ``--ocr-endpoint``) or Python's (``StoreSettings``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.queries import QUERY_KEYS, QueryHit  # noqa: E402
from folioflow.flows.service import ApiKey, ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import SAMPLE_FACTS, write_encrypted_pdf, write_sample_pdf  # noqa: E402
from tests.flows.servers import wait_job  # noqa: E402

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    return write_sample_pdf(tmp_path_factory.mktemp("docs") / "report.pdf")


@pytest.fixture(scope="module")
def roots(tmp_path_factory, sample) -> Path:
    folder = tmp_path_factory.mktemp("allowed")
    (folder / "kept.pdf").write_bytes(sample.read_bytes())
    return folder


@pytest.fixture(scope="module")
def client(tmp_path_factory, prefect_harness, roots, sample):
    """The app over a fresh data dir with the sample uploaded and indexed."""
    data = tmp_path_factory.mktemp("data")
    api = ApiSettings(max_upload_bytes=2_000_000, max_ocr_pages=1, allowed_roots=[roots])
    with TestClient(create_app(load_settings(data_dir=data, workers=1), api)) as c:
        c.app_state = {"data": data}  # type: ignore[attr-defined]
        yield c


@pytest.fixture(scope="module")
def indexed(client, sample) -> dict:
    """The finished job of uploading the sample and a broken file."""
    answer = client.post("/v1/documents", files=[
        ("files", ("report.pdf", sample.read_bytes(), "application/pdf")),
        ("files", ("broken.pdf", b"PK\x03\x04 a zip archive, not a PDF", "application/pdf"))])
    assert answer.status_code == 202, answer.text
    assert answer.headers["location"] == f"/v1/jobs/{answer.json()['id']}"
    return wait_job(client, answer.json()["id"])


def test_health_before_and_query_on_empty_store(client):
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["embedding_model"].endswith("all-MiniLM-L6-v2")
    if health.json()["documents"] == 0:  # before the upload: no collection yet, an empty index (no hits)
        empty = client.post("/v1/query", json={"text": "revenue"})
        assert empty.status_code == 200 and empty.json() == []


def test_upload_job_reports_each_document(indexed):
    assert indexed["state"] == "succeeded" and indexed["inputs"] == ["report.pdf", "broken.pdf"]
    by_name = {Path(d["source"]).name: d for d in indexed["documents"]}
    assert by_name["report.pdf"]["status"] == "indexed" and by_name["report.pdf"]["pages"] == 2
    assert by_name["broken.pdf"]["status"] == "failed" and by_name["broken.pdf"]["error"].startswith("not a PDF")
    assert indexed["counts"] == {"indexed": 1, "failed": 1}
    assert indexed["progress"]["pages_done"] == 2


def test_query_answers_what_query_json_answers(client, indexed):
    answer = client.post("/v1/query", json={"text": "How much did total revenue grow?", "k": 3})
    assert answer.status_code == 200, answer.text
    hits = answer.json()
    assert hits and all(set(QUERY_KEYS) <= set(hit) for hit in hits)
    assert all(QueryHit.model_validate(hit) for hit in hits)
    assert "4,210" in hits[0]["text"] and hits[0]["page_start"] == 1  # the paragraph or the table stating it
    first = [(h["doc_id"], h["page_start"]) for h in hits if not h["page_repeat"]]
    assert len(set(first)) == len(first) and len(hits) == 3  # distinct pages, then repeats fill up to k
    assert all((h["doc_id"], h["page_start"]) in first for h in hits if h["page_repeat"])
    chunks = client.post("/v1/query", json={"text": "How much did total revenue grow?", "k": 5,
                                            "distinct_pages": False}).json()
    assert any(SAMPLE_FACTS["revenue"] in hit["text"] for hit in chunks)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert hits[0]["source"] == "upload"
    sparse = client.post("/v1/query", json={"text": "Sharpe ratio", "mode": "sparse", "k": 1,
                                            "doc": ["report.pdf"], "distinct_pages": False}).json()
    assert sparse and sparse[0]["page_start"] == 2


def test_query_takes_the_legal_glossary(client, indexed):
    """``"glossary": "legal"`` (the built-in LEGAL glossary) answers 200 (it was a 422: the server
    took only finance or none) with what the same search with LEGAL finds in process."""
    from folioflow.flows.queries import search_index
    from folioflow.indexing.glossary import LEGAL

    text = "Which state's law governs the agreement?"
    answer = client.post("/v1/query", json={"text": text, "k": 3, "glossary": "legal"})
    assert answer.status_code == 200, answer.text
    hits = answer.json()
    assert hits and hits[0]["heading_path"] == ["3 Governing Law"]
    service = client.app.state.service
    local = search_index(service.store, service.embedder, text, k=3, glossary=LEGAL)
    assert [(h["doc_id"], h["chunk_index"]) for h in hits] == [(h.doc_id, h.chunk_index) for h in local]
    assert client.post("/v1/query", json={"text": text, "glossary": "bylaws"}).status_code == 422


@pytest.mark.parametrize(("body", "status", "reason"), [
    ({"text": "revenue", "doc": ["nope.pdf"]}, 404, "no such document"),
    ({"text": "revenue", "doc": ["broken.pdf"]}, 404, "no such document"),  # never opened: not registered
    ({"text": "revenue", "source": "elsewhere"}, 404, "no indexed document has source"),
    ({"text": "revenue", "mode": "semantic"}, 422, "mode"),
    ({"text": "revenue", "k": 0}, 422, "k"),
    ({"text": ""}, 422, "text"),
    ({"text": "revenue", "tenant": "../etc"}, 400, "tenant"),
    ({"text": "revenue", "unknown": 1}, 422, "unknown"),
])
def test_bad_queries_get_a_4xx_with_the_reason(client, indexed, body, status, reason):
    answer = client.post("/v1/query", json=body)
    assert answer.status_code == status, answer.text
    assert reason in answer.json()["detail"]


def test_documents_list_show_and_delete(client, indexed, sample):
    listing = client.get("/v1/documents").json()
    assert listing["documents"] == 1 and listing["sources"]["upload"]["failed"] == 0
    rows = {Path(r["path"]).name: r for r in listing["document_list"]}
    good = rows["report.pdf"]  # broken.pdf never opened: its failure is in the job's report only
    assert good["status"] == "indexed" and good["chunks"] == listing["chunks"] and good["source"] == "upload"

    detail = client.get(f"/v1/documents/{good['doc_id'][:8]}").json()
    assert detail["doc_id"] == good["doc_id"] and detail["pages"] == 2 and detail["engines"] == ["text", "text"]
    assert detail["converted"] is True
    assert client.get("/v1/documents/no-such-doc").status_code == 404
    chunks = client.get(f"/v1/documents/{good['doc_id'][:8]}/chunks").json()
    assert [c["index"] for c in chunks] == list(range(good["chunks"]))
    assert any(c["heading_path"] == ["2 Risk-Adjusted Return"] and c["page_start"] == 2 for c in chunks)
    on_page = client.get(f"/v1/documents/{good['doc_id']}/chunks", params={"page": 1}).json()
    assert on_page == [c for c in chunks if c["page_start"] <= 1 <= c["page_end"]] and on_page != chunks
    assert client.get(f"/v1/documents/{good['doc_id']}/chunks", params={"page": 3}).status_code == 404
    assert client.get(f"/v1/documents/{good['doc_id']}/chunks", params={"page": 0}).status_code == 422
    assert client.get("/v1/documents/no-such-doc/chunks").status_code == 404

    # ingest by server-side path: refused outside the allowed roots, accepted inside
    assert client.post("/v1/documents", json={"path": str(sample)}).status_code == 403
    assert client.post("/v1/documents", json={"path": "/nonexistent/x.pdf"}).status_code == 404
    assert client.post("/v1/documents", json={"path": "a", "uri": "file:///b"}).status_code == 422
    assert client.post("/v1/documents", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    roots = client.app.state.service.api.allowed_roots[0]
    job = client.post("/v1/documents", json={"uri": (roots / "kept.pdf").as_uri()})
    assert job.status_code == 202, job.text
    done = wait_job(client, job.json()["id"])
    assert [d["status"] for d in done["documents"]] == ["indexed"]
    assert len(client.get("/v1/jobs").json()) == 2

    metrics = client.get("/metrics").text
    assert 'folioflow_index_documents{status="indexed"} 2.0' in metrics  # the upload and kept.pdf
    assert 'folioflow_jobs{kind="ingest",state="succeeded"} 2.0' in metrics  # the upload's job and kept.pdf's
    assert 'folioflow_jobs{kind="ocr",state="succeeded"} 0.0' in metrics
    assert 'folioflow_http_requests_total{method="POST",route="/v1/query",status="200"}' in metrics
    assert 'folioflow_http_request_duration_seconds_bucket{le="0.5",method="POST",route="/v1/query"}' in metrics

    kept = next(r for r in client.get("/v1/documents").json()["document_list"] if r["path"].endswith("kept.pdf"))
    deleted = client.delete(f"/v1/documents/{kept['doc_id']}")
    assert deleted.status_code == 200 and deleted.json()["deleted_chunks"] == kept["chunks"] > 0
    assert client.get(f"/v1/documents/{kept['doc_id']}").status_code == 404
    assert (roots / "kept.pdf").is_file()  # a server-side original is never deleted, only uploads
    assert f'folioflow_index_chunks {float(good["chunks"])}' in client.get("/metrics").text
    uploaded = Path(good["uri"].removeprefix("file://"))
    assert uploaded.is_file()
    assert client.delete(f"/v1/documents/{good['path']}").status_code == 200
    assert not uploaded.exists()  # the uploaded copy went with it
    assert client.get("/v1/documents").json()["documents"] == 0


def test_upload_limits_and_bad_names(client):
    big = client.post("/v1/documents", files=[("files", ("big.pdf", b"%PDF-1.7\n" + b"0" * 2_100_000, "application/pdf"))])
    assert big.status_code == 413 and "max_upload_bytes" in big.json()["detail"]
    huge_query = client.post("/v1/query", json={"text": "revenue " * 300_000})  # 2.4 MB, over the 2 MB limit
    assert huge_query.status_code == 413 and "max_upload_bytes" in huge_query.json()["detail"], huge_query.text
    many = client.post("/v1/documents", files=[("files", (f"{n}.pdf", b"%PDF-1.7", "application/pdf")) for n in range(21)])
    assert many.status_code == 413 and "max_files" in many.json()["detail"], many.text  # was a 400 (a trial finding)
    hidden = client.post("/v1/documents", files=[("files", ("..", b"%PDF-1.7", "application/pdf"))])
    assert hidden.status_code == 400 and "file name" in hidden.json()["detail"]
    none = client.post("/v1/documents", data={"tenant": "x"}, files=[("other", ("a.pdf", b"x", "application/pdf"))])
    assert none.status_code == 422 and "files" in none.json()["detail"]
    assert client.get("/v1/jobs/unknown").status_code == 404


def test_ocr_pages_formats_and_limits(client, sample, tmp_path):
    pdf = sample.read_bytes()
    answer = client.post("/v1/ocr", files={"file": ("report.pdf", pdf, "application/pdf")},
                         data={"page_range": "2", "engine": "text"})
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["page_count"] == 2 and [p["number"] for p in result["pages"]] == [2]
    page = result["pages"][0]
    assert page["status"] == "ok" and page["engine"] == "text" and "Risk-Adjusted Return" in page["content"]
    html = client.post("/v1/ocr", files={"file": ("r.pdf", pdf, "application/pdf")},
                       data={"page_range": "1", "output_format": "html"}).json()
    assert html["pages"][0]["content"].lstrip().startswith("<h1>")
    as_json = client.post("/v1/ocr", files={"file": ("r.pdf", pdf, "application/pdf")},
                          data={"page_range": "1", "output_format": "json"}).json()
    assert as_json["pages"][0]["content"]["number"] == 1 and as_json["pages"][0]["content"]["blocks"]

    over = client.post("/v1/ocr", files={"file": ("r.pdf", pdf, "application/pdf")})
    assert over.status_code == 413 and "max_ocr_pages" in over.json()["detail"]
    corrupt = client.post("/v1/ocr", files={"file": ("r.pdf", b"%PDF-1.7\ngarbage", "application/pdf")})
    assert corrupt.status_code == 422, corrupt.text
    wrong = client.post("/v1/ocr", files={"file": ("r.txt", b"plain text, not a document", "text/plain")})
    assert wrong.status_code == 422 and "not a PDF" in wrong.json()["detail"]
    encrypted = write_encrypted_pdf(tmp_path / "locked.pdf", "s3cret")
    locked = client.post("/v1/ocr", files={"file": ("l.pdf", encrypted.read_bytes(), "application/pdf")})
    assert locked.status_code == 422 and "password" in locked.json()["detail"].lower()
    opened = client.post("/v1/ocr", files={"file": ("l.pdf", encrypted.read_bytes(), "application/pdf")},
                         data={"password": "s3cret", "page_range": "1"})
    assert opened.status_code == 200 and opened.json()["pages"][0]["status"] == "ok"
    assert "s3cret" not in opened.text
    bad_range = client.post("/v1/ocr", files={"file": ("r.pdf", pdf, "application/pdf")}, data={"page_range": "x-"})
    assert bad_range.status_code in (400, 422) and "page" in bad_range.json()["detail"]
    vlm = client.post("/v1/ocr", files={"file": ("r.pdf", pdf, "application/pdf")},
                      data={"page_range": "1", "engine": "vlm"})
    assert vlm.status_code == 400 and "vlm" in vlm.json()["detail"].lower()


KEY_ADMIN, KEY_ACME, KEY_GLOBEX = "admin-key-0123456789abcdef", "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_api_keys_and_tenants(tmp_path, prefect_harness, sample, caplog):
    """With keys configured every /v1 route needs one; a tenant-bound key acts for its tenant only."""
    keys = [ApiKey(key=KEY_ADMIN, name="ops"), ApiKey(key=KEY_ACME, tenant="acme"), ApiKey(key=KEY_GLOBEX, tenant="globex")]
    settings = load_settings(data_dir=tmp_path / "data", workers=1, tenancy=True)
    caplog.set_level("DEBUG")
    api = ApiSettings(keys=keys, allowed_roots=[sample.parent])
    with TestClient(create_app(settings, api)) as c:
        assert c.get("/healthz").status_code == 200  # liveness needs no key
        for method, path in (("post", "/v1/query"), ("get", "/v1/documents"), ("get", "/v1/jobs"), ("post", "/v1/ocr"),
                             ("post", "/v1/documents"), ("get", "/v1/documents/x"), ("delete", "/v1/documents/x")):
            missing = c.request(method, path)
            assert missing.status_code == 401 and "missing API key" in missing.json()["detail"], (method, path)
            assert missing.headers["www-authenticate"] == "Bearer"
        wrong = c.get("/v1/jobs", headers=bearer("not-a-key-0123456789"))
        assert wrong.status_code == 401 and wrong.json()["detail"] == "invalid API key"
        unscheme = c.get("/v1/jobs", headers={"Authorization": KEY_ACME})  # the key without "Bearer "
        assert unscheme.status_code == 401 and "not a bearer key" in unscheme.json()["detail"]
        assert KEY_ACME not in unscheme.text

        refused = c.post("/v1/documents", headers=bearer(KEY_ACME), data={"tenant": "globex"},
                         files=[("files", ("report.pdf", sample.read_bytes(), "application/pdf"))])
        assert refused.status_code == 403 and "tenant" in refused.json()["detail"]
        posted = c.post("/v1/documents", headers=bearer(KEY_ACME),
                        files=[("files", ("report.pdf", sample.read_bytes(), "application/pdf"))])
        assert posted.status_code == 202 and posted.json()["tenant"] == "acme"
        job = wait_job(c, posted.json()["id"], headers=bearer(KEY_ACME))
        assert job["state"] == "succeeded" and [d["status"] for d in job["documents"]] == ["indexed"], job
        assert job["documents"][0]["tenant"] == "acme"
        assert c.get(f"/v1/jobs/{job['id']}", headers=bearer(KEY_GLOBEX)).status_code == 404
        assert c.get("/v1/jobs", headers=bearer(KEY_GLOBEX)).json() == []

        question = {"text": "How much did total revenue grow?", "k": 2}
        acme = c.post("/v1/query", json=question, headers=bearer(KEY_ACME))
        assert acme.status_code == 200 and any("4,210" in hit["text"] for hit in acme.json())
        assert c.post("/v1/query", json=question, headers=bearer(KEY_GLOBEX)).json() == []
        other = c.post("/v1/query", json={**question, "tenant": "globex"}, headers=bearer(KEY_ACME))
        assert other.status_code == 403
        untenanted = c.post("/v1/query", json=question, headers=bearer(KEY_ADMIN))
        assert untenanted.status_code == 400 and "tenant" in untenanted.json()["detail"]
        assert c.post("/v1/query", json={**question, "tenant": "acme"}, headers=bearer(KEY_ADMIN)).json()

        doc_id = acme.json()[0]["doc_id"]
        assert c.get("/v1/documents", headers=bearer(KEY_GLOBEX)).json()["documents"] == 0
        assert c.get(f"/v1/documents/{doc_id}", headers=bearer(KEY_GLOBEX)).status_code == 404
        assert c.delete(f"/v1/documents/{doc_id}", headers=bearer(KEY_GLOBEX)).status_code == 404
        assert c.get(f"/v1/documents/{doc_id}", headers=bearer(KEY_ACME)).json()["tenant"] == "acme"
        assert c.get("/v1/documents", headers=bearer(KEY_ADMIN)).json()["documents"] == 1

        # a file on the server is one document whoever names it: once acme's, globex cannot take it
        # over by naming it too (it became globex's: "tenant changed ('acme' -> 'globex')")
        by_path = {"path": str(sample)}
        first = wait_job(c, c.post("/v1/documents", json=by_path, headers=bearer(KEY_ACME)).json()["id"],
                         headers=bearer(KEY_ACME))
        [mine] = first["documents"]
        assert mine["status"] == "indexed" and mine["tenant"] == "acme", mine
        taken = wait_job(c, c.post("/v1/documents", json=by_path, headers=bearer(KEY_GLOBEX)).json()["id"],
                         headers=bearer(KEY_GLOBEX))
        [theirs] = taken["documents"]
        assert theirs["status"] == "failed" and "already indexed for another tenant" in theirs["error"], theirs
        assert "acme" not in theirs["error"]
        assert c.get(f"/v1/documents/{mine['doc_id']}", headers=bearer(KEY_ACME)).json()["tenant"] == "acme"
        assert c.get(f"/v1/documents/{mine['doc_id']}", headers=bearer(KEY_GLOBEX)).status_code == 404
        again = wait_job(c, c.post("/v1/documents", json=by_path, headers=bearer(KEY_ACME)).json()["id"],
                         headers=bearer(KEY_ACME))
        assert again["documents"][0]["status"] == "skipped", again  # its owner's re-run is as before
        everything = "".join(r.text for r in (acme, untenanted, wrong))
    logged = caplog.text
    for key in (KEY_ADMIN, KEY_ACME, KEY_GLOBEX):
        assert key not in logged and key not in everything


def test_api_settings_name_the_field_never_the_key(monkeypatch):
    from folioflow.flows.service.config import load_api_settings
    from folioflow.ocr.errors import ConfigurationError

    monkeypatch.setenv("FOLIOFLOW_API_KEYS", '[{"key": "short-secret"}]')
    with pytest.raises(ConfigurationError) as caught:
        load_api_settings()
    assert "keys.0.key" in str(caught.value) and "short-secret" not in str(caught.value)
    monkeypatch.setenv("FOLIOFLOW_API_KEYS", f'[{{"key": "{KEY_ACME}", "tenant": "acme"}}]')
    loaded = load_api_settings(max_ocr_pages=3)
    assert loaded.keys[0].tenant == "acme" and loaded.max_ocr_pages == 3 and KEY_ACME not in repr(loaded)


#: What a reason for Python code or a command line says; an HTTP answer says none of it.
NOT_FOR_HTTP = ("StoreSettings", "--collection", "--data-dir", "--tenant", "--ocr-endpoint", "FOLIOFLOW_",
                "in Python", "command line")


def api_reason(answer) -> str:
    detail = answer.json()["detail"]
    assert not [words for words in NOT_FOR_HTTP if words in detail], detail
    return detail


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    data = tmp_path_factory.mktemp("data") / "emptykb"  # not even created yet, as `folioflow api --data-dir`
    with TestClient(create_app(load_settings(data_dir=data, workers=1), ApiSettings())) as client:
        yield client


def test_the_read_routes_answer_as_over_an_empty_index(fresh):
    assert fresh.get("/healthz").json()["documents"] == 0
    listing = fresh.get("/v1/documents")  # was 404 "no collection 'folioflow' ... StoreSettings(collection=...)"
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert (body["documents"], body["chunks"], body["sources"], body["document_list"]) == (0, 0, {}, [])
    assert fresh.get("/v1/jobs").json() == []
    for mode in ("dense", "sparse", "hybrid"):
        hits = fresh.post("/v1/query", json={"text": "revenue", "mode": mode})
        assert hits.status_code == 200 and hits.json() == [], hits.text
    for method, path in (("get", "/v1/documents/x"), ("get", "/v1/documents/x/chunks"),
                         ("get", "/v1/documents/x/converted"), ("get", "/v1/documents/x/pages/1"),
                         ("delete", "/v1/documents/x")):
        missing = getattr(fresh, method)(path)
        assert missing.status_code == 404 and "no such document" in api_reason(missing), (path, missing.text)
    named = fresh.post("/v1/query", json={"text": "revenue", "doc": ["a.pdf"]})
    assert named.status_code == 404 and api_reason(named).startswith("doc 'a.pdf': no such document")
    source = fresh.post("/v1/query", json={"text": "revenue", "source": "kb"})
    assert source.status_code == 404 and api_reason(source).startswith("source 'kb': no indexed document")
    reindex = fresh.post("/v1/reindex", json={"doc": ["a.pdf"]})
    assert reindex.status_code == 404 and "no such document" in api_reason(reindex)
    # reading created nothing: the first ingest creates the collection
    assert fresh.app.state.service.store.collection_info() is None


def test_ocr_with_the_vlm_engine_names_the_servers_setting(fresh, tmp_path):
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter
    from folioflow.ocr.errors import ConfigurationError

    pdf = write_sample_pdf(tmp_path / "a.pdf").read_bytes()
    answer = fresh.post("/v1/ocr", files={"file": ("a.pdf", pdf, "application/pdf")}, data={"engine": "vlm"})
    assert answer.status_code == 400, answer.text
    assert "ocr_endpoints" in api_reason(answer)  # was "needs a VLM engine (--ocr-endpoint)"
    # what the CLI and Python say stays theirs
    with pytest.raises(ConfigurationError, match="--ocr-endpoint"):
        DocumentConverter(ConvertOptions(engine="vlm"))


def test_tenancy_without_a_tenant_names_the_field(tmp_path):
    settings = load_settings(data_dir=tmp_path / "data", workers=1, tenancy=True)
    with TestClient(create_app(settings, ApiSettings())) as client:
        untenanted = client.post("/v1/query", json={"text": "revenue"})
        assert untenanted.status_code == 400 and "`tenant`" in api_reason(untenanted)
        assert client.post("/v1/query", json={"text": "revenue", "tenant": "acme"}).json() == []


def test_a_missing_collection_in_the_store_keeps_its_advice_for_python_and_the_cli(tmp_path):
    from folioflow.indexing.store import StoreSettings, open_store
    from folioflow.ocr.errors import CollectionNotFoundError

    (tmp_path / "kb").mkdir()
    store = open_store(StoreSettings(data_dir=tmp_path / "kb"))
    try:
        with pytest.raises(CollectionNotFoundError, match=r"StoreSettings\(collection=\.\.\.\).*--collection"):
            store.require_collection()
    finally:
        store.close()


def test_uploads_and_their_errors_name_absolute_paths_under_a_relative_data_dir(tmp_path, monkeypatch,
                                                                                prefect_harness, sample):
    """A server started on a relative data dir (`folioflow api --data-dir D9`) keeps its uploads in
    the absolute folder: a job's report names `<cwd>/D9/uploads/_shared/report.pdf`, and an upload
    gone before its job ran fails `not found: <cwd>/D9/uploads/_shared/gone.pdf` (a breaking trial
    read `not found: D9/uploads/_shared/y.pdf`, relative to the server's working directory)."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "D9" / "uploads" / "_shared"
    with TestClient(create_app(load_settings(data_dir=Path("D9"), workers=1), ApiSettings())) as client:
        service = client.app.state.service
        assert service.upload_dir == tmp_path / "D9" / "uploads"
        done = wait_job(client, client.post("/v1/documents", files=[
            ("files", ("report.pdf", sample.read_bytes(), "application/pdf"))]).json()["id"])
        [report] = done["documents"]
        assert report["status"] == "indexed" and report["source"] == str(folder / "report.pdf"), done
        ingest, started, go_on = service._ingest, threading.Event(), threading.Event()

        def held(*args, **kwargs):  # the job waits before it reads anything: its upload goes meanwhile
            started.set()
            go_on.wait(120)
            return ingest(*args, **kwargs)

        monkeypatch.setattr(service, "_ingest", held)
        queued = client.post("/v1/documents", files=[("files", ("gone.pdf", sample.read_bytes(), "application/pdf"))])
        assert started.wait(120)
        (folder / "gone.pdf").unlink()
        go_on.set()
        gone = wait_job(client, queued.json()["id"])
        assert [d["error"] for d in gone["documents"]] == [f"not found: {folder / 'gone.pdf'}"], gone


def test_a_jobs_clean_up_leaves_a_newer_upload_of_the_same_name(tmp_path, monkeypatch, prefect_harness, sample):
    """Job J2 uploads an empty `y.pdf`; after J2 has read it and before its clean-up (the breaking
    trial's slow 14-page contract in the same job held it there), J3 uploads a good `y.pdf`,
    which replaces J2's file (uploads are kept by name). J2's clean-up deleted J3's file (it
    deleted any unregistered file of its names), and J3 failed 'not found' with the upload lost;
    now a job deletes only the file it wrote, so J3's upload is indexed, listed and searchable."""
    uploads = tmp_path / "uploads"
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data", workers=1),
                               ApiSettings(upload_dir=uploads))) as client:
        service = client.app.state.service
        ingest, read, go_on = service._ingest, threading.Event(), threading.Event()

        def first_run_then_wait(*args, **kwargs):  # J2's run has read y.pdf; its clean-up waits for J3's upload
            try:
                return ingest(*args, **kwargs)
            finally:
                if not read.is_set():
                    read.set()
                    go_on.wait(120)

        monkeypatch.setattr(service, "_ingest", first_run_then_wait)
        j2 = client.post("/v1/documents", files=[("files", ("y.pdf", b"", "application/pdf"))])
        assert j2.status_code == 202 and "uploads" not in j2.json(), j2.text  # internal: never in an answer
        assert read.wait(120)
        j3 = client.post("/v1/documents", files=[("files", ("y.pdf", sample.read_bytes(), "application/pdf"))])
        assert j3.status_code == 202, j3.text
        go_on.set()
        first = wait_job(client, j2.json()["id"])
        assert [d["status"] for d in first["documents"]] == ["failed"], first
        assert (uploads / "_shared" / "y.pdf").read_bytes() == sample.read_bytes()  # J3's file, kept
        second = wait_job(client, j3.json()["id"])
        assert [d["status"] for d in second["documents"]] == ["indexed"], second  # was 'not found: .../y.pdf'
        [row] = client.get("/v1/documents").json()["document_list"]
        assert row["path"] == "y.pdf" and row["status"] == "indexed"
        hits = client.post("/v1/query", json={"text": "How much did total revenue grow?", "k": 3}).json()
        assert hits and hits[0]["doc_id"] == row["doc_id"]
        assert "uploads" not in client.get(f"/v1/jobs/{second['id']}").json()

        # a job's own file that is not in the index is still deleted at its end
        bad = wait_job(client, client.post("/v1/documents", files=[("files", ("z.pdf", b"", "application/pdf"))]).json()["id"])
        assert [d["status"] for d in bad["documents"]] == ["failed"] and not (uploads / "_shared" / "z.pdf").exists()


def test_delete_is_refused_while_a_job_would_write_the_document_back(tmp_path, monkeypatch, prefect_harness, sample):
    """A breaking trial deleted a document (200) while a running job re-ingested it: when the job
    ended the document was back, listed and searchable, with its uploaded file gone. A DELETE is
    now a 409 naming the job while a queued or running ingest or reindex job covers the document
    (an upload of its file, a path job of its file or a folder above it, a reindex naming it), and
    succeeds once the jobs have ended; a job that covers another document does not stand in its way."""
    docs, uploads = tmp_path / "docs", tmp_path / "uploads"
    (docs / "sub").mkdir(parents=True)
    for name in ("sub/other.pdf", "third.pdf", "free.pdf"):
        (docs / name).write_bytes(sample.read_bytes())
    api = ApiSettings(upload_dir=uploads, allowed_roots=[docs])
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data", workers=1), api)) as client:
        service = client.app.state.service
        for job in (client.post("/v1/documents", files=[("files", ("slow.pdf", sample.read_bytes(), "application/pdf"))]),
                    client.post("/v1/documents", json={"path": str(docs)})):
            assert {d["status"] for d in wait_job(client, job.json()["id"])["documents"]} == {"indexed"}
        ids = {Path(r["path"]).name: r["doc_id"] for r in client.get("/v1/documents").json()["document_list"]}
        assert set(ids) == {"slow.pdf", "other.pdf", "third.pdf", "free.pdf"}

        ingest, started, go_on = service._ingest, threading.Event(), threading.Event()

        def held(*args, **kwargs):  # the job runs (state running) and waits before it reads anything
            started.set()
            go_on.wait(120)
            return ingest(*args, **kwargs)

        monkeypatch.setattr(service, "_ingest", held)
        again = client.post("/v1/documents", files=[("files", ("slow.pdf", sample.read_bytes(), "application/pdf"))],
                            data={"force": "true"}).json()
        assert started.wait(120)
        folder = client.post("/v1/documents", json={"path": str(docs / "sub"), "force": True}).json()
        reindex = client.post("/v1/reindex", json={"doc": [ids["third.pdf"]]}).json()

        refused = client.delete(f"/v1/documents/{ids['slow.pdf']}")
        assert refused.status_code == 409, refused.text
        assert refused.json()["detail"] == (f"slow.pdf is being ingested by job {again['id']} (running); "
                                            "delete it after the job ends")
        other = client.delete(f"/v1/documents/{ids['other.pdf']}")
        assert other.status_code == 409 and f"by job {folder['id']} (queued)" in other.json()["detail"], other.text
        third = client.delete(f"/v1/documents/{ids['third.pdf']}")
        assert third.status_code == 409, third.text
        assert third.json()["detail"].startswith(f"third.pdf is being reindexed by job {reindex['id']} (queued)")
        assert (uploads / "_shared" / "slow.pdf").is_file()
        free = client.delete(f"/v1/documents/{ids['free.pdf']}")  # no job covers it
        assert free.status_code == 200, free.text
        assert client.get("/v1/documents").json()["documents"] == 3

        go_on.set()
        for job in (again, folder, reindex):
            assert wait_job(client, job["id"])["state"] == "succeeded"
        for name in ("slow.pdf", "other.pdf", "third.pdf"):
            assert client.delete(f"/v1/documents/{ids[name]}").status_code == 200, name
        assert client.get("/v1/documents").json()["documents"] == 0  # none came back
        assert client.post("/v1/query", json={"text": "How much did total revenue grow?"}).json() == []
        assert not (uploads / "_shared" / "slow.pdf").exists() and (docs / "sub" / "other.pdf").is_file()


@pytest.mark.parametrize("route", ["/v1/query", "/v1/documents", "/v1/reindex", "/v1/ocr"])
def test_every_json_route_says_why_it_cannot_read_a_body(fresh, route):
    """A breaking trial's body of invalid UTF-8, or nested 100,000 deep, got `400 There was an error
    parsing the body` from /v1/query and /v1/reindex (FastAPI's own reading), where docs/service.md
    promises a 422 saying where the body is wrong; /v1/documents and /v1/ocr said it in pydantic's
    words. Every JSON route now reads its body the same way: UTF-8 (a byte order mark ignored), at
    most 64 levels of arrays and objects, and JSON; the fields are checked after that."""
    def post(body: bytes):
        answer = fresh.post(route, content=body, headers={"content-type": "application/json"})
        assert answer.status_code == 422, (body[:40], answer.text)
        return api_reason(answer)

    assert post('{"text": "café"}'.encode("latin-1")) == ("the body is not UTF-8 (at byte 14, 0xe9: invalid "
                                                          "continuation byte): send JSON as UTF-8")
    assert post('{"text": "x"}'.encode("utf-16")).startswith("the body is not UTF-8 (at byte 1, 0xff: invalid start")
    too_deep = "the body nests deeper than 64 levels of arrays and objects"
    assert post(b"[" * 100_000 + b"]" * 100_000) == too_deep
    assert post(b'{"text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}") == too_deep
    assert post(b'{"text": ' + b"[" * 64 + b"]" * 64 + b"}") == too_deep  # 65 levels with the object
    assert post(b'{"text": ' + b"[" * 63 + b"]" * 63 + b"}").startswith("invalid request: text:")  # 64: read
    assert post(b'{"text": evil}') == "the body is not valid JSON (at character 10: Expecting value)"
    assert post(b'{"k": ' + b"1" * 5000 + b"}").startswith("the body is not valid JSON (Exceeds the limit")
    assert "unknown: Extra inputs are not permitted" in post(b"\xef\xbb\xbf" + b'{"unknown": 1}')  # read past the mark
