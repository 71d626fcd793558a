"""Near-real-time mode: the watchfiles-based watcher debounces a burst of changes into one batch
per source, keeps only what the source wants, and names each source's changed paths."""

from __future__ import annotations

import threading
import time

from folioflow.flows.events import EVENT, changes_by_source, source_resource, watch_files
from folioflow.flows.settings import load_settings
from folioflow.flows.source_config import SourceConfig


def test_changes_are_grouped_and_filtered(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    sources = [SourceConfig(name="a", url=str(a), exclude=["drafts/**"]), SourceConfig(name="b", url=str(b)),
               SourceConfig(name="s3", url="s3://bucket/x")]
    paths = [a / "x.pdf", a / "drafts" / "y.pdf", a / "notes.txt", a / ".tmp" / "z.pdf", b / "sub" / "c.PDF",
             tmp_path / "elsewhere.pdf"]
    assert changes_by_source(sources, map(str, paths)) == {"a": ["x.pdf"], "b": ["sub/c.PDF"]}
    assert source_resource("a") == {"prefect.resource.id": "folioflow.source.a", "prefect.resource.name": "a"}
    assert EVENT == "folioflow.source.changed"


def test_watcher_debounces_a_burst_into_one_batch(tmp_path):
    root = tmp_path / "inbox"
    root.mkdir()
    settings = load_settings(sources=[SourceConfig(name="inbox", url=str(root))])
    batches: list[tuple[str, list[str]]] = []
    stop = threading.Event()
    thread = threading.Thread(target=watch_files, args=(settings,),
                              kwargs={"debounce_ms": 800, "stop_event": stop, "emit": lambda n, p: batches.append((n, p))})
    thread.start()
    try:
        # Ready once it reports a probe file: a fixed sleep was too short on a loaded CI machine
        # (files written before the watcher starts are never reported).
        deadline = time.monotonic() + 60
        probes = 0
        while not batches and time.monotonic() < deadline:
            (root / f"probe{probes}.pdf").write_bytes(b"%PDF-1.4 probe")
            probes += 1
            until = time.monotonic() + 2
            while not batches and time.monotonic() < until:
                time.sleep(0.05)
        assert batches, "the watcher reported no probe file within 60 s"
        time.sleep(1.5)  # late probe batches land now
        batches.clear()
        for n in range(5):  # 0.2 s apart: watchfiles' default 50 ms of quiet would split this burst
            (root / f"doc{n}.pdf").write_bytes(b"%PDF-1.4 burst")
            time.sleep(0.2)
        (root / "ignored.txt").write_text("not a document")
        deadline = time.monotonic() + 20
        while not batches and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # a second batch would have arrived by now
    finally:
        stop.set()
        thread.join(10)
    # a probe batch that lands late is not the burst's business
    burst = [(name, [p for p in paths if not p.startswith("probe")]) for name, paths in batches]
    assert [b for b in burst if b[1]] == [("inbox", [f"doc{n}.pdf" for n in range(5)])]
