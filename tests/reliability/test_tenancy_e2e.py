"""Tenant isolation end to end: documents ingested by the flow for two tenants, then 300 random
queries through :class:`FolioRetriever` (random mode, k, MMR, page and source filters, the other
tenant's source included) never return a chunk of another tenant.

Tenancy is switched on by the first ingest (``tenancy=True``) and recorded with the collection,
so a later process that opens the store without the setting still cannot search without a tenant;
a document ingested without a tenant fails with the reason and writes nothing.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.flows.ingest import run_ingest
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.reliability.hostile import raw_pdf, text_page
from folioflow.flows.settings import load_settings
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import open_store
from folioflow.ocr.errors import TenancyError

pytestmark = pytest.mark.slow

FACTS = {
    "acme": ["Acme rocket skates ship from the Phoenix warehouse.", "Acme anvils carry a lifetime warranty.",
             "The Acme board approved a dividend of 40 cents.", "Acme leases its desert test range until 2031."],
    "globex": ["Globex acquired the Springfield nuclear plant.", "Globex hammocks are sold in Cypress Creek.",
               "The Globex board cut the dividend to 15 cents.", "Globex pays its engineers in gold bullion."],
}


def tenant_docs(root: Path, tenant: str) -> Path:
    folder = root / tenant
    facts = FACTS[tenant]
    for n in range(3):
        pages = [text_page(f"{tenant.title()} memo {n} part {p}", facts[(n + p) % 4],
                           f"This page {p} of memo {n} restates that {facts[(n + p + 1) % 4].lower()}")
                 for p in range(1, 4)]
        raw_pdf(folder / f"memo-{n}.pdf", pages)
    return folder


@pytest.fixture(scope="module")
def index(tmp_path_factory, prefect_harness):
    root = tmp_path_factory.mktemp("tenancy")
    data = root / "data"
    for tenant in FACTS:
        report = run_ingest([str(tenant_docs(root, tenant))],
                            load_settings(data_dir=data, tenancy=True, tenant=tenant, source_name=tenant, workers=2))
        assert [d.status for d in report.documents] == ["indexed"] * 3, [d.error for d in report.documents]
    stray = root / "stray"
    raw_pdf(stray / "untenanted.pdf", [text_page("Stray memo", "A memo that names no tenant at all.")])
    report = run_ingest([str(stray)], load_settings(data_dir=data, workers=1))  # tenancy comes from the collection
    (doc,) = report.documents
    assert doc.status == "failed" and doc.error.endswith("tenancy is on: document untenanted.pdf has no tenant")
    return data


def test_random_queries_never_cross_tenants(index, embedder):
    store = open_store(Pipeline.store_settings(load_settings(data_dir=index)))  # no tenancy setting given
    try:
        assert store.tenancy  # ... it is recorded with the collection
        with pytest.raises(TenancyError):
            FolioRetriever(store=store, embedder=embedder).invoke("dividend")
        words = sorted({w.strip(".,").lower() for facts in FACTS.values() for f in facts for w in f.split() if len(w) > 3})
        rng = random.Random(20251130)
        returned = 0
        for _ in range(300):
            tenant = rng.choice(sorted(FACTS))
            retriever = FolioRetriever(store=store, embedder=embedder, tenant=tenant,
                                       mode=rng.choice(["dense", "sparse", "hybrid"]), k=rng.randint(1, 25),
                                       mmr=rng.random() < 0.3, page_from=rng.choice([None, 1, 2, 3]),
                                       sources=rng.choice([None, [tenant], [rng.choice(sorted(FACTS))], sorted(FACTS)]))
            query = " ".join(rng.sample(words, rng.randint(1, 4)))
            docs = retriever.invoke(query)
            returned += len(docs)
            assert all(d.metadata["tenant"] == tenant and d.metadata["source"] == tenant for d in docs), (query, tenant)
        assert returned > 300  # the queries did return chunks (isolation is not emptiness)
        # each tenant finds its own fact first, and never the other's
        for tenant, other in (("acme", "globex"), ("globex", "acme")):
            retriever = FolioRetriever(store=store, embedder=embedder, tenant=tenant, mode="hybrid", k=5)
            assert FACTS[tenant][2].split()[1] in retriever.invoke(FACTS[tenant][2])[0].page_content
            assert all(other.title() not in d.page_content for d in retriever.invoke(FACTS[other][0]))
    finally:
        store.close()


def test_query_cli_needs_a_tenant(index):
    runner = CliRunner()
    refused = runner.invoke(app, ["query", "dividend", "--data-dir", str(index), "--json"])
    assert refused.exit_code == 1 and "tenancy is on" in refused.output
    allowed = runner.invoke(app, ["query", "dividend", "--data-dir", str(index), "--json", "--tenant", "globex"])
    assert allowed.exit_code == 0, allowed.output
    assert "Globex" in allowed.output and "Acme" not in allowed.output
