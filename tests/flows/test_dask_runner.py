"""The Dask task runner: plan, convert and chunk run on a local 2-worker Dask cluster (separate
processes), indexing stays in the flow process (embedded Qdrant is one process per data dir), and
the result equals the default thread runner's, point for point."""

from __future__ import annotations

import pytest

from folioflow.flows.ingest import run_ingest
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.runner import build_task_runner
from folioflow.flows.settings import load_settings
from folioflow.indexing.store import open_store
from tests.flows.docs import write_memo

pytestmark = pytest.mark.slow


def _points(settings) -> dict[str, set[str]]:
    store = open_store(Pipeline.store_settings(settings))
    try:
        return {rec.path: store.point_ids(rec.doc_id) for rec in store.list_documents()}
    finally:
        store.close()


def test_dask_runner_matches_thread_runner(tmp_path, prefect_harness):
    from prefect_dask import DaskTaskRunner

    docs = tmp_path / "docs"
    write_memo(docs / "a.pdf", "Credit agreement", ["The revolving facility totals 250 million dollars."], pages=2)
    write_memo(docs / "b.pdf", "Supply contract", ["Deliveries are due within thirty days of each order."])
    (docs / "broken.pdf").write_bytes(b"not a pdf at all")

    dask = load_settings(data_dir=tmp_path / "dask", task_runner="dask", runner_workers=2)
    runner = build_task_runner(dask)
    assert isinstance(runner, DaskTaskRunner) and runner.cluster_kwargs["n_workers"] == 2
    on_dask = run_ingest([str(docs)], dask)
    threads = run_ingest([str(docs)], load_settings(data_dir=tmp_path / "threads"))

    def summary(report):
        return {d.source.rsplit("/", 1)[-1]: (d.status, d.pages, d.chunks, d.engines) for d in report.documents}

    assert summary(on_dask) == summary(threads)
    assert summary(on_dask)["a.pdf"][:2] == ("indexed", 2)
    assert summary(on_dask)["broken.pdf"][0] == "failed"
    assert _points(dask) == _points(load_settings(data_dir=tmp_path / "threads"))
