"""Near-real-time mode: the watchfiles-based watcher debounces a burst of changes into one batch
per source, keeps only what the source wants, and names each source's changed paths."""

from __future__ import annotations

import threading
import time

from flows.events import EVENT, changes_by_source, source_resource, watch_files
from flows.settings import load_settings
from flows.source_config import SourceConfig


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
        time.sleep(1.0)  # watcher ready
        for n in range(5):
            (root / f"doc{n}.pdf").write_bytes(b"%PDF-1.4 burst")
            time.sleep(0.05)
        (root / "ignored.txt").write_text("not a document")
        deadline = time.monotonic() + 20
        while not batches and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.5)  # a second batch would have arrived by now
    finally:
        stop.set()
        thread.join(10)
    assert batches == [("inbox", [f"doc{n}.pdf" for n in range(5)])]
