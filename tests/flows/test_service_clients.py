"""``folioflow status``, ``show``, ``ingest`` and the Python retriever through a running API server
(the real app on uvicorn, in a thread of this process on a loopback port, over a real embedded
store of the generated sample PDFs), compared with the same commands run locally on the same store
before the server started; and a store held by a second process reported at once, naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the `api` extra is not installed")

from folioflow.flows.service.client import DISCOVERY_FILE  # noqa: E402
from folioflow.ocr.samples import write_sample_pdf  # noqa: E402
from tests.flows.servers import free_port, python_module, wait_http  # noqa: E402

pytestmark = pytest.mark.slow

QUESTION = "How much did total revenue grow?"
#: Retriever metadata that a search through the server carries (the ``query --json`` keys).
SHARED_KEYS = ("doc_id", "source", "uri", "path", "page_start", "page_end", "heading_path", "kind", "chunk_index",
               "score", "search_score", "page_repeat")


def cli(*args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(python_module("folioflow.flows.cli", *args), capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "120", **(env or {})})


def local_views(data: Path) -> dict:
    """What the local commands print on ``data`` (no server running)."""
    views = {}
    for name, args in {"status": ("status", "--json"), "status_docs": ("status", "--json", "--documents"),
                       "table": ("status", "--documents"), "show": ("show", "report.pdf"),
                       "show_json": ("show", "report.pdf", "--format", "json", "--page", "2"),
                       "chunks": ("show", "report.pdf", "--chunks"),
                       "chunks_json": ("show", "report.pdf", "--chunks", "--format", "json", "--page", "2")}.items():
        done = cli(*args, "--data-dir", str(data))
        assert done.returncode == 0, done.stderr
        views[name] = done.stdout
    return views


@pytest.fixture(scope="module")
def served(tmp_path_factory, prefect_harness):
    """A data dir with the sample indexed (in this process, then closed), the local commands'
    output and the local retriever's answer on it, then the API server over it, announced in the
    data dir: ``{"data", "docs", "url", "local", "local_docs", "report"}`` (``report``: the local run's)."""
    import uvicorn

    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.service import ApiSettings, create_app
    from folioflow.flows.settings import load_settings
    from folioflow.indexing.retriever import FolioRetriever

    root = tmp_path_factory.mktemp("clients")
    docs, data = root / "docs", root / "data"
    write_sample_pdf(docs / "report.pdf")
    settings = load_settings(data_dir=data, workers=1)
    report = run_ingest([str(docs)], settings)
    assert [d.status for d in report.documents] == ["indexed"]

    local = local_views(data)
    retriever = FolioRetriever.connect(data, k=3)
    assert retriever.api_url is None  # no server yet: the store is opened here
    try:
        local_docs = retriever.invoke(QUESTION)
    finally:
        retriever.store.close()

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    app = create_app(settings, ApiSettings(allowed_roots=[docs]), url=url)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="folioflow-api-test", daemon=True)
    thread.start()
    try:
        wait_http(f"{url}/healthz", timeout=240)
        assert json.loads((data / DISCOVERY_FILE).read_text())["url"] == url
        yield {"data": data, "docs": docs, "url": url, "local": local, "local_docs": local_docs, "report": report}
    finally:
        server.should_exit = True
        thread.join(60)
    assert not (data / DISCOVERY_FILE).exists()


def test_status_and_show_through_the_server_equal_local(served):
    # found by discovery: the server holds the store, so only the server can answer
    assert local_views(served["data"]) == served["local"]
    # named explicitly: no data dir needed on this side
    named = cli("status", "--json", "--api-url", served["url"], "--data-dir", str(served["data"].parent / "none"))
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout) == json.loads(served["local"]["status"])
    missing = cli("show", "nope.pdf", "--data-dir", str(served["data"]))
    assert missing.returncode == 1 and "answered 404" in missing.stderr and "no such document" in missing.stderr


def test_retriever_through_the_server_equals_local(served):
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.ocr.errors import ConfigurationError

    discovered = FolioRetriever.connect(served["data"], k=3)
    assert discovered.api_url == served["url"] and discovered.store is None
    named = FolioRetriever(api_url=served["url"], k=3)
    expected = [(d.page_content, {k: d.metadata[k] for k in SHARED_KEYS}) for d in served["local_docs"]]
    for retriever in (discovered, named):
        got = retriever.invoke(QUESTION)
        assert [(d.page_content, {k: d.metadata[k] for k in SHARED_KEYS}) for d in got] == expected
    with pytest.raises(ConfigurationError, match="page_from"):
        named.invoke(QUESTION, page_from=2)
    with pytest.raises(ConfigurationError, match="fusion"):  # the server fuses as its profile says
        named.invoke(QUESTION, fusion="rrf")
    with pytest.raises(ConfigurationError, match="query_adapter"):  # the server's profile picks its adapter
        named.invoke(QUESTION, query_adapter=None)
    with pytest.raises(ConfigurationError, match="expansion_terms"):
        named.invoke(QUESTION, expansion_terms=0)
    # the built-in glossaries go by name (the legal one was refused: "other than the finance glossary")
    from folioflow.indexing.glossary import LEGAL, Glossary

    assert len(FolioRetriever(api_url=served["url"], k=3, glossary=LEGAL).invoke(QUESTION)) == 3
    with pytest.raises(ConfigurationError, match="glossary"):  # a glossary of one's own is read here only
        FolioRetriever(api_url=served["url"], k=3, glossary=Glossary(name="mine", entries=[])).invoke(QUESTION)


def test_ingest_through_the_server(served, tmp_path):
    data, docs = served["data"], served["docs"]
    # by path (under the server's allowed root): the same registry entries as the local run, so unchanged
    again = cli("ingest", str(docs), "--data-dir", str(data), "--report", str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert "Run summary" in again.stdout
    records = json.loads((tmp_path / "again.json").read_text())
    first = served["report"].documents[0]
    assert [(r["status"], r["doc_id"], r["source_name"]) for r in records] == [("skipped", first.doc_id,
                                                                                  first.source_name)], records

    # outside the allowed roots: uploaded; a broken file fails alone and the run still exits 0
    outside = tmp_path / "outside"
    write_sample_pdf(outside / "other.pdf")
    (outside / "broken.pdf").write_bytes(b"PK\x03\x04 a zip archive, not a PDF")
    added = cli("ingest", str(outside), "--data-dir", str(data), "--report", str(tmp_path / "added.json"))
    assert added.returncode == 0, added.stderr
    assert "Failures" in added.stdout and "not a PDF" in added.stdout
    assert "uploading 2 file(s), a copy kept on the server" in " ".join(added.stderr.split())  # said, not silent
    by_name = {Path(r["source"]).name: r for r in json.loads((tmp_path / "added.json").read_text())}
    assert by_name["other.pdf"]["status"] == "indexed" and by_name["other.pdf"]["pages"] == 2
    assert by_name["broken.pdf"]["status"] == "failed"
    status = json.loads(cli("status", "--json", "--data-dir", str(data)).stdout)
    assert status["documents"] == 2 and status["sources"]["upload"]["documents"] == 1

    refused = cli("ingest", str(outside), "--engine", "ocr", "--data-dir", str(data))
    assert refused.returncode == 1 and "--engine" in refused.stderr and "own settings" in refused.stderr

    # a user's trial: a file the index holds by its own path, uploaded (a glob always is), became a
    # second document unannounced; the CLI now says so, naming the way out
    glob = cli("ingest", str(docs / "*.pdf"), "--data-dir", str(data))
    assert glob.returncode == 0, glob.stderr
    said = " ".join(glob.stderr.split())
    assert "already indexed from this path" in said and "folioflow delete" in said, glob.stderr


def test_a_held_store_is_reported_at_once_naming_the_holder(tmp_path):
    """A second process holds the embedded store and announces no server: every command, and the
    retriever, says so within seconds, naming its pid, before Prefect or a model starts."""
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.ocr.errors import StoreLockedError

    data = tmp_path / "data"
    sample = write_sample_pdf(tmp_path / "report.pdf")
    hold = ("import sys\nfrom folioflow.indexing.store import StoreSettings, open_store\n"
            f"store = open_store(StoreSettings(data_dir={str(data)!r}))\nstore.ensure_collection(8, 'test-model')\n"
            "print('ready', flush=True)\nsys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        prefect_home = tmp_path / "prefect"
        for args in (("ingest", str(sample)), ("query", "revenue"), ("status",), ("show", "report.pdf")):
            started = time.monotonic()
            done = cli(*args, "--data-dir", str(data), env={"PREFECT_HOME": str(prefect_home)}, timeout=60)
            seconds = time.monotonic() - started
            assert done.returncode == 1, (args, done.stdout, done.stderr)
            assert f"in use by pid {holder.pid} (" in done.stderr and "folioflow api" in done.stderr, done.stderr
            assert seconds < 20, (args, seconds)  # the CLI's own start-up; no model, no Prefect server
        assert not prefect_home.exists()  # Prefect never started (it creates its home on start)

        started = time.monotonic()
        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}") as caught:
            FolioRetriever.connect(data)
        assert time.monotonic() - started < 5
        assert caught.value.pid == holder.pid and caught.value.command and "open_store" in caught.value.command
    finally:
        holder.communicate(timeout=30)
