"""`folioflow delete DOC...` as a user runs it, in fresh processes on a real data dir: the embedded
store, and through a running `folioflow api` (real uvicorn). A user found no CLI command to delete
one document."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from folioflow.flows.reliability.hostile import raw_pdf, text_page
from folioflow.ocr.samples import write_sample_pdf
from folioflow.ocr.schema import kept_document_path
from tests.flows.servers import folioflow

pytestmark = pytest.mark.slow


def lease(path: Path) -> Path:
    return raw_pdf(path, [text_page("Harbour Lease", "The tenant pays rent monthly to the harbour board.",
                                    "Termination: either party may end this lease with ninety days notice.")])


def test_delete_by_file_name_from_the_embedded_store(tmp_path):
    docs = tmp_path / "docs"
    write_sample_pdf(docs / "a" / "sample.pdf")
    write_sample_pdf(docs / "b" / "sample.pdf")
    lease(docs / "lease.pdf")
    raw_pdf(docs / "memo.pdf", [text_page("Memo", "The harbour board meets on Tuesdays to discuss rent.")])
    run = folioflow("ingest", str(docs), "--report", "report.json", "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    ids = {Path(r["source"]).relative_to(docs).as_posix(): r for r in json.loads((tmp_path / "report.json").read_text())}
    gone = ids["lease.pdf"]
    documents = tmp_path / ".folioflow" / "documents"
    assert kept_document_path(documents, gone["doc_id"]).is_file()
    before = json.loads(folioflow("query", "rent termination notice", "--json", "-k", "10", cwd=tmp_path).stdout)
    assert gone["doc_id"] in {hit["doc_id"] for hit in before}

    deleted = folioflow("delete", "lease.pdf", "--json", cwd=tmp_path)  # by file name, as `show` takes it
    assert deleted.returncode == 0, deleted.stderr[-3000:]
    assert json.loads(deleted.stdout) == [{"doc_id": gone["doc_id"], "deleted_chunks": gone["chunks"]}]
    status = json.loads(folioflow("status", "--json", "--documents", cwd=tmp_path).stdout)
    assert sorted(row["path"] for row in status["document_list"]) == ["a/sample.pdf", "b/sample.pdf", "memo.pdf"]
    assert status["chunks"] == sum(r["chunks"] for name, r in ids.items() if name != "lease.pdf")
    after = json.loads(folioflow("query", "rent termination notice", "--json", "-k", "10", cwd=tmp_path).stdout)
    assert after and gone["doc_id"] not in {hit["doc_id"] for hit in after}
    assert not kept_document_path(documents, gone["doc_id"]).exists()
    assert (docs / "lease.pdf").is_file()  # the source file is not the index's to delete

    # unknown and ambiguous names: show's reasons, exit 1, and the document named beside them is deleted
    mixed = folioflow("delete", "nosuch.pdf", "sample.pdf", "memo.pdf", cwd=tmp_path)
    assert mixed.returncode == 1, mixed.stdout + mixed.stderr[-3000:]
    errors = [line for line in mixed.stderr.splitlines() if line.startswith("error: ")]
    assert errors[0] == ("error: delete 'nosuch.pdf': no such document in the index (see `folioflow status "
                         "--documents`)"), mixed.stderr
    assert errors[1].startswith("error: delete 'sample.pdf' matches 2 documents: ") and len(errors) == 2
    assert f"deleted memo.pdf ({ids['memo.pdf']['doc_id']}): " in mixed.stdout
    status = json.loads(folioflow("status", "--json", "--documents", cwd=tmp_path).stdout)
    assert sorted(row["path"] for row in status["document_list"]) == ["a/sample.pdf", "b/sample.pdf"]
    again = folioflow("delete", "lease.pdf", cwd=tmp_path)
    assert again.returncode == 1 and "delete 'lease.pdf': no such document in the index" in again.stderr
    # --tenant: only that tenant's documents (these have none)
    other = folioflow("delete", ids["a/sample.pdf"]["doc_id"], "--tenant", "acme", cwd=tmp_path)
    assert other.returncode == 1 and "no document of tenant 'acme'" in other.stderr, other.stderr
    helped = " ".join(folioflow("delete", "--help", cwd=tmp_path).stdout.split())
    assert "What show takes" in helped and "--json" in helped and "--data-dir" in helped


def test_delete_through_the_api_server_and_uploaded_files(tmp_path):
    """With `folioflow api` holding the data dir, delete goes through its DELETE
    /v1/documents/{doc_id}; a document that came by upload loses its uploaded file, with the server
    or without it."""
    pytest.importorskip("fastapi", reason="the `api` extra is not installed")
    import httpx

    from tests.flows.servers import free_port, python_module, serve_process

    data, port = tmp_path / "data", free_port()
    url = f"http://127.0.0.1:{port}"
    first, second = lease(tmp_path / "in" / "lease.pdf"), write_sample_pdf(tmp_path / "in" / "report.pdf")
    uploads = data / "uploads" / "acme"
    with serve_process(python_module("folioflow.flows.cli", "api", "--host", "127.0.0.1", "--port", str(port),
                                     "--data-dir", str(data), "--log-level", "warning"),
                       f"{url}/healthz", tmp_path / "api.log", timeout=400,
                       env={"PREFECT_HOME": str(tmp_path / "prefect"),
                            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}):
        files = [("files", (p.name, p.read_bytes())) for p in (first, second)]
        job = httpx.post(f"{url}/v1/documents", files=files, data={"tenant": "acme"}, timeout=60).json()
        deadline = time.monotonic() + 400
        while (state := httpx.get(f"{url}/v1/jobs/{job['id']}", timeout=30).json())["state"] not in ("succeeded",
                                                                                                     "failed"):
            assert time.monotonic() < deadline, state
            time.sleep(0.5)
        assert [d["status"] for d in state["documents"]] == ["indexed", "indexed"], state
        rows = {r["path"]: r for r in httpx.get(f"{url}/v1/documents", timeout=30).json()["document_list"]}
        assert (uploads / "lease.pdf").is_file() and (uploads / "report.pdf").is_file()

        wrong = folioflow("delete", "lease.pdf", "--tenant", "globex", "--data-dir", str(data), cwd=tmp_path)
        assert wrong.returncode == 1 and "no document of tenant 'globex'" in wrong.stderr, wrong.stderr[-2000:]
        missing = folioflow("delete", "nosuch.pdf", "--data-dir", str(data), cwd=tmp_path)
        assert missing.returncode == 1 and "answered 404" in missing.stderr and "no such document" in missing.stderr

        done = folioflow("delete", "lease.pdf", "--tenant", "acme", "--json", "--data-dir", str(data), cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        lease_id = rows["lease.pdf"]["doc_id"]
        assert json.loads(done.stdout) == [{"doc_id": lease_id, "deleted_chunks": rows["lease.pdf"]["chunks"]}]
        left = httpx.get(f"{url}/v1/documents", timeout=30).json()["document_list"]
        assert [r["path"] for r in left] == ["report.pdf"]
        assert not (uploads / "lease.pdf").exists() and not kept_document_path(data / "documents", lease_id).exists()
        hits = httpx.post(f"{url}/v1/query", json={"text": "rent termination notice", "k": 10}, timeout=60).json()
        assert hits and lease_id not in {hit["doc_id"] for hit in hits}

    # the server stopped: the same on the embedded store, uploaded file included
    report_id = rows["report.pdf"]["doc_id"]
    local = folioflow("delete", report_id[:8], "--data-dir", str(data), cwd=tmp_path)  # a doc id prefix
    assert local.returncode == 0, local.stderr[-3000:]
    assert local.stdout.strip() == f"deleted report.pdf ({report_id}): {rows['report.pdf']['chunks']} chunks"
    assert not (uploads / "report.pdf").exists() and not kept_document_path(data / "documents", report_id).exists()
    status = json.loads(folioflow("status", "--json", "--data-dir", str(data), cwd=tmp_path).stdout)
    assert status["documents"] == 0 and status["chunks"] == 0
    assert first.is_file() and second.is_file()  # the files uploaded from are untouched
