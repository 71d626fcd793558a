"""`folioflow query --tenant` names a tenant that no indexed document has: an error with the
reason, as an unknown `--source` is (a user's trial: "no results", exit 0), with the embedded store
and through a running `folioflow api`; the API itself still answers `[]` for such a tenant (a
tenant-bound key whose tenant has no documents yet searches an empty index)."""

from __future__ import annotations

import json

import pytest

from folioflow.ocr.samples import write_sample_pdf
from tests.flows.servers import folioflow

pytestmark = pytest.mark.slow
UNKNOWN = "error: --tenant 'nobody': no indexed document has this tenant (see `folioflow status --documents`)"


def test_query_with_a_tenant_no_document_has_exits_1(tmp_path):
    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    (tmp_path / "tenancy.yaml").write_text("tenancy: true\n")
    run = folioflow("ingest", str(pdf), "--tenant", "acme", "--config", "tenancy.yaml", "--no-progress", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]

    # (the error is the last line of stderr: a logged warning may come before it, such as the
    # embedder's about OMP_THREAD_LIMIT, which tests/reliability/conftest.py sets for the session)
    nobody = folioflow("query", "termination", "--tenant", "nobody", cwd=tmp_path)
    assert nobody.returncode == 1, nobody.stdout[-2000:]
    assert nobody.stderr.strip().splitlines()[-1] == UNKNOWN, nobody.stderr[-2000:]
    with_doc = folioflow("query", "termination", "--tenant", "nobody", "--doc", "sample.pdf", cwd=tmp_path)
    assert with_doc.returncode == 1 and with_doc.stderr.strip().splitlines()[-1] == UNKNOWN  # the tenant, not "no such document"

    acme = folioflow("query", "Sharpe ratio", "--tenant", "acme", "--json", "-k", "2", cwd=tmp_path)
    assert acme.returncode == 0 and len(json.loads(acme.stdout)) == 2, acme.stderr[-2000:]
    # tenancy rules stand: with tenancy on (recorded with the collection), a query names its tenant
    anyone = folioflow("query", "Sharpe ratio", cwd=tmp_path)
    assert anyone.returncode == 1 and "tenancy is on" in anyone.stderr, anyone.stderr[-2000:]
    # where the message sends the user: the documents table shows their tenant
    table = folioflow("status", "--documents", cwd=tmp_path)
    assert table.returncode == 0 and "tenant" in table.stdout and "acme" in table.stdout, table.stdout

    # The API's search (what POST /v1/query calls, with its filter names and no known_tenant) still
    # answers [] for a tenant without documents; known_tenant (the CLI's) makes it the error above.
    from folioflow.flows.queries import API_FILTER_NAMES, search_index
    from folioflow.indexing.store import StoreSettings, open_store
    from folioflow.ocr.errors import DocumentLookupError

    store = open_store(StoreSettings(data_dir=tmp_path / ".folioflow"))
    try:
        assert search_index(store, None, "termination", mode="sparse", tenant="globex",
                            filter_names=API_FILTER_NAMES) == []
        with pytest.raises(DocumentLookupError, match="^tenant 'globex': no indexed document has this tenant "
                                                      r"\(see GET /v1/documents\)$"):
            search_index(store, None, "termination", mode="sparse", tenant="globex", filter_names=API_FILTER_NAMES,
                         known_tenant=True)
        assert search_index(store, None, "Sharpe ratio", mode="sparse", tenant="acme", known_tenant=True)
    finally:
        store.close()


def test_query_through_the_api_server_says_the_same(tmp_path):
    """With `folioflow api` holding the data dir the query goes through it; its POST /v1/query
    answers [] for the unknown tenant, and the CLI says why as it does without a server."""
    pytest.importorskip("fastapi", reason="the `api` extra is not installed")
    import httpx

    from tests.flows.servers import free_port, python_module, serve_process

    pdf = write_sample_pdf(tmp_path / "sample.pdf")
    data, port = tmp_path / "data", free_port()
    url = f"http://127.0.0.1:{port}"
    with serve_process(python_module("folioflow.flows.cli", "api", "--host", "127.0.0.1", "--port", str(port),
                                     "--data-dir", str(data), "--log-level", "warning"),
                       f"{url}/healthz", tmp_path / "api.log", timeout=400,
                       env={"PREFECT_HOME": str(tmp_path / "prefect"),
                            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "300"}):
        run = folioflow("ingest", str(pdf), "--tenant", "acme", "--data-dir", str(data), "--no-progress", cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-3000:]
        body = {"text": "termination", "tenant": "nobody"}
        assert httpx.post(f"{url}/v1/query", json=body, timeout=60).json() == []  # the API: no error
        nobody = folioflow("query", "termination", "--tenant", "nobody", "--data-dir", str(data), cwd=tmp_path)
        assert nobody.returncode == 1 and nobody.stderr.strip().splitlines()[-1] == UNKNOWN, nobody.stdout + nobody.stderr[-2000:]
        acme = folioflow("query", "Sharpe ratio", "--tenant", "acme", "--json", "--data-dir", str(data), cwd=tmp_path)
        assert acme.returncode == 0 and json.loads(acme.stdout), acme.stderr[-2000:]
        # a user's trial: the built-in legal glossary was refused through the server ("--glossary FILE ...")
        legal = folioflow("query", "Which law governs?", "--tenant", "acme", "--glossary", "Legal", "--json",
                          "--data-dir", str(data), cwd=tmp_path)
        assert legal.returncode == 0 and json.loads(legal.stdout), legal.stderr[-2000:]
        mine = tmp_path / "mine.yaml"
        mine.write_text("- {pattern: revenue, expansion: sales}\n")
        own = folioflow("query", "revenue", "--tenant", "acme", "--glossary", str(mine), "--data-dir", str(data),
                        cwd=tmp_path)
        assert own.returncode == 1 and "a file is read on this machine" in own.stderr, own.stderr[-2000:]
