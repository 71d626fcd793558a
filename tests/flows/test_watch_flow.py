"""The watch flow keeps the index equal to its sources: new, unchanged (no read), changed and
removed documents, on an S3 source (moto's server through s3fs) and a local folder source, and an
unreachable source that prunes nothing."""

from __future__ import annotations

import os

import fsspec
import pytest

from folioflow.flows.pipeline import Pipeline
from folioflow.flows.settings import load_settings
from folioflow.flows.source_config import SourceConfig
from folioflow.flows.watch import watch_flow
from folioflow.indexing.store import open_store
from folioflow.ocr.errors import ConfigurationError
from tests.flows.docs import memo_bytes, write_memo

pytestmark = pytest.mark.slow

ALPHA = ["The alpha master services agreement renews every March for two years.",
         "Termination requires ninety days written notice to the other party."]
BETA = ["The beta lease covers the Rotterdam warehouse at 4,200 euros per month."]
GAMMA = ["The gamma loan carries a floating rate of SOFR plus 185 basis points."]


def _index(settings) -> dict[str, tuple[str, set[str]]]:
    """path -> (source, point ids) for every indexed document."""
    store = open_store(Pipeline.store_settings(settings))
    try:
        return {rec.path: (rec.source, store.point_ids(rec.doc_id)) for rec in store.list_documents()}
    finally:
        store.close()


def _by_path(report) -> dict[str, tuple[str, str | None]]:
    return {d.source.split(":", 1)[1]: (d.status, d.change) for d in report.documents}


def test_watch_new_unchanged_changed_removed(tmp_path, s3_endpoint, prefect_harness):
    options = {"endpoint_url": s3_endpoint}
    fs = fsspec.filesystem("s3", **options)
    fs.mkdir("kb-watch")
    fs.pipe("kb-watch/contracts/alpha.pdf", memo_bytes(tmp_path, "Alpha agreement", ALPHA))
    fs.pipe("kb-watch/contracts/beta.pdf", memo_bytes(tmp_path, "Beta lease", BETA))
    fs.pipe("kb-watch/contracts/drafts/wip.pdf", memo_bytes(tmp_path, "Draft", GAMMA))
    local = tmp_path / "local"
    write_memo(local / "gamma.pdf", "Gamma loan", GAMMA)
    sources = [SourceConfig(name="contracts", url="s3://kb-watch/contracts", tenant="acme", exclude=["drafts/**"],
                            storage_options=options),
               SourceConfig(name="loans", url=str(local), metadata={"desk": "credit"})]
    settings = load_settings(data_dir=tmp_path / "data", sources=sources)

    first = watch_flow(settings=settings)
    assert _by_path(first) == {"alpha.pdf": ("indexed", "new"), "beta.pdf": ("indexed", "new"),
                               "gamma.pdf": ("indexed", "new")}
    before = _index(settings)
    assert {path: src for path, (src, _) in before.items()} == {"alpha.pdf": "contracts", "beta.pdf": "contracts",
                                                                 "gamma.pdf": "loans"}

    # Nothing changed: nothing is read (change tokens match), the index is untouched.
    second = watch_flow(settings=settings)
    assert {p: s for p, s in _by_path(second).items()} == {
        p: ("skipped", "unchanged (change token)") for p in ("alpha.pdf", "beta.pdf", "gamma.pdf")}
    assert _index(settings) == before

    # alpha changes, beta is removed, gamma is touched (new mtime, same bytes).
    fs.pipe("kb-watch/contracts/alpha.pdf", memo_bytes(tmp_path, "Alpha agreement v2", ALPHA[:1] + GAMMA))
    fs.rm("kb-watch/contracts/beta.pdf")
    os.utime(local / "gamma.pdf", (1_700_000_000, 1_700_000_000))
    third = watch_flow(settings=settings)
    assert _by_path(third) == {"alpha.pdf": ("indexed", "changed"), "beta.pdf": ("pruned", None),
                               "gamma.pdf": ("skipped", "unchanged (content hash)")}
    after = _index(settings)
    assert set(after) == {"alpha.pdf", "gamma.pdf"}
    assert after["alpha.pdf"][1] and not (after["alpha.pdf"][1] & before["alpha.pdf"][1])  # no stale point left
    assert after["gamma.pdf"] == before["gamma.pdf"]
    # The touched file's new token was remembered: the next run does not even hash it.
    assert _by_path(watch_flow(settings=settings, sources=["loans"]))["gamma.pdf"] == ("skipped", "unchanged (change token)")

    # The store becomes unreachable: the listing is incomplete and nothing is pruned.
    broken = [s.model_copy(update={"storage_options": {"endpoint_url": "http://127.0.0.1:9"}}) if s.name == "contracts"
              else s for s in sources]
    outage = watch_flow(settings=settings.model_copy(update={"sources": broken, "retries": 0}), sources=["contracts"])
    assert [d.status for d in outage.documents] == ["failed"] and "cannot list" in outage.documents[0].error
    assert set(_index(settings)) == {"alpha.pdf", "gamma.pdf"}


def test_watch_needs_sources(tmp_path, prefect_harness):
    with pytest.raises(ConfigurationError, match="configured sources"):
        watch_flow(settings=load_settings(data_dir=tmp_path / "data"))


def test_ingest_takes_object_store_urls_as_paths(tmp_path, http_server, prefect_harness):
    from folioflow.flows.ingest import run_ingest

    root, base = http_server
    write_memo(root / "adhoc" / "memo.pdf", "Board memo", ["The board approved the dividend of 40 cents."])
    write_memo(root / "adhoc" / "old.pdf", "Old memo", GAMMA)
    settings = load_settings(data_dir=tmp_path / "data", source_name="web")
    first = run_ingest([f"{base}/adhoc/"], settings)
    assert {(d.source, d.status) for d in first.documents} == {("web:memo.pdf", "indexed"), ("web:old.pdf", "indexed")}
    assert {path: src for path, (src, _) in _index(settings).items()} == {"memo.pdf": "web", "old.pdf": "web"}
    (root / "adhoc" / "old.pdf").unlink()
    second = run_ingest([f"{base}/adhoc/"], settings, prune=True)
    assert {(d.source, d.status) for d in second.documents} == {("web:memo.pdf", "skipped"), ("web:old.pdf", "pruned")}
