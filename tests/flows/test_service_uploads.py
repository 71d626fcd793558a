"""Uploaded files on the server: the real app (TestClient, lifespan included: the real MiniLM
model, an embedded store, Prefect ingest runs in the process) and real files: the generated sample
PDF, a text file, a zip archive and a truncated PDF. What is not indexed leaves nothing behind in
the uploads folder; what is indexed stays until it is deleted."""

from __future__ import annotations

import io
import zipfile

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from fastapi.testclient import TestClient  # noqa: E402

from folioflow.flows.service import ApiSettings, create_app  # noqa: E402
from folioflow.flows.settings import load_settings  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import wait_job  # noqa: E402

pytestmark = pytest.mark.slow



def test_uploads_that_are_not_indexed_leave_no_file(tmp_path, prefect_harness):
    pdf = write_sample_pdf(tmp_path / "report.pdf").read_bytes()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("inner.txt", "a zip of text, no document in it")
    uploads = tmp_path / "uploads"
    api = ApiSettings(upload_dir=uploads)
    with TestClient(create_app(load_settings(data_dir=tmp_path / "data", workers=1), api)) as client:
        # a force field that is no boolean is refused before any file is written (it was read as false)
        maybe = client.post("/v1/documents", files=[("files", ("report.pdf", pdf, "application/pdf"))],
                            data={"force": "maybe"})
        assert maybe.status_code == 422 and "force: give true or false" in maybe.text, maybe.text
        assert not (uploads / "_shared").exists() or not list((uploads / "_shared").iterdir())
        answer = client.post("/v1/documents", files=[
            ("files", ("notes.txt", b"plain text, not a document", "text/plain")),
            ("files", ("bundle.zip", archive.getvalue(), "application/zip")),
            ("files", ("cut.pdf", pdf[: len(pdf) // 3], "application/pdf")),
            ("files", ("report.pdf", pdf, "application/pdf"))])
        assert answer.status_code == 202, answer.text
        job = wait_job(client, answer.json()["id"])
        by_name = {d["source"].rsplit("/", 1)[-1]: d for d in job["documents"]}
        assert by_name["report.pdf"]["status"] == "indexed", job
        refused = [n for n in ("notes.txt", "bundle.zip", "cut.pdf") if by_name[n]["status"] != "indexed"]
        assert refused and all(by_name[n]["error"] for n in refused), job  # the report keeps the reasons
        listed = {r["path"].rsplit("/", 1)[-1]: r for r in client.get("/v1/documents").json()["document_list"]}
        left = {p.name for p in (uploads / "_shared").iterdir()}
        assert left == set(listed), (left, listed)  # every file kept can be listed, hence deleted
        assert "report.pdf" in left and "notes.txt" not in left and "bundle.zip" not in left
        for record in listed.values():
            assert client.delete(f"/v1/documents/{record['doc_id']}").status_code == 200
        assert list((uploads / "_shared").iterdir()) == []
