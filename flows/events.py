"""Near-real-time mode: a file-system watcher that turns changes in local sources into Prefect events.

``folioflow watch-files --config FILE`` watches every local source's root (watchfiles, inotify on
Linux). Changes are debounced (``debounce_ms``: a burst of writes, e.g. a copy of 500 files, becomes
one batch) and filtered by the source's include/exclude patterns; each batch emits one event per
source touched::

    event:    folioflow.source.changed
    resource: {prefect.resource.id: folioflow.source.<name>, prefect.resource.name: <name>}
    payload:  {paths: [first 100 relative paths], count: N}

The ``folioflow-ingest`` deployment in ``infra/prefect.yaml`` has a trigger on this event that starts
``ingest`` with ``sources=[<name>]`` and ``prune=true``; the ingest is incremental, so a batch costs
only its changed documents. Object stores have no portable change feed: the scheduled ``watch``
deployment covers them (and is the safety net for missed file events).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from folioflow.flows.settings import Settings
from folioflow.flows.source_config import SourceConfig

__all__ = ["EVENT", "source_resource", "changes_by_source", "emit_source_changed", "watch_files"]

log = logging.getLogger(__name__)

#: Name of the event emitted for a batch of changes in one source.
EVENT = "folioflow.source.changed"


def source_resource(name: str) -> dict[str, str]:
    """The Prefect event resource of source ``name``."""
    return {"prefect.resource.id": f"folioflow.source.{name}", "prefect.resource.name": name}


def _root(source: SourceConfig) -> Path:
    text = source.url[len("file://"):] if source.url.startswith("file://") else source.url
    return Path(text).expanduser().resolve()


def changes_by_source(sources: Iterable[SourceConfig], paths: Iterable[str]) -> dict[str, list[str]]:
    """Group changed absolute ``paths`` by the local source whose root holds them, keeping only
    paths the source wants (include/exclude, no hidden parts); relative paths, sorted."""
    grouped: dict[str, set[str]] = {}
    roots = [(s, _root(s)) for s in sources if s.is_local]
    for path in paths:
        p = Path(path)
        for source, root in roots:
            if not p.is_relative_to(root):
                continue
            relative = p.relative_to(root).as_posix()
            if not any(part.startswith(".") for part in p.relative_to(root).parts) and source.wanted(relative):
                grouped.setdefault(source.name, set()).add(relative)
    return {name: sorted(found) for name, found in grouped.items()}


def emit_source_changed(name: str, relative_paths: list[str]) -> None:
    """Emit one :data:`EVENT` for source ``name`` (Prefect events API of the current profile)."""
    from prefect.events import emit_event

    emit_event(event=EVENT, resource=source_resource(name),
               payload={"paths": relative_paths[:100], "count": len(relative_paths)})


def watch_files(settings: Settings, debounce_ms: int = 5000, stop_event=None,
                emit: Callable[[str, list[str]], None] = emit_source_changed) -> None:
    """Watch the local sources of ``settings`` until ``stop_event`` is set (or interrupted),
    calling ``emit(source_name, relative_paths)`` once per debounced batch and source touched.

    A batch closes after ``debounce_ms`` of quiet (watchfiles' ``step``), or after
    ``max(10 x debounce_ms, 30 s)`` of changes that never pause (watchfiles' ``debounce``, its
    upper bound). watchfiles' own default closes a batch after 50 ms of quiet, which split a copy
    of a few files into several batches (and several ingest runs). Setting ``stop_event`` ends the
    watch within about ``debounce_ms``."""
    from watchfiles import watch

    local = [s for s in settings.sources if s.is_local]
    if not local:
        raise ValueError("no local source to watch (object stores are covered by the scheduled watch deployment)")
    roots = [str(_root(s)) for s in local]
    longest = max(10 * debounce_ms, 30_000)
    for batch in watch(*roots, step=debounce_ms, debounce=longest, stop_event=stop_event, recursive=True):
        for name, relative in changes_by_source(local, (path for _, path in batch)).items():
            log.info("source %s: %d changed paths", name, len(relative))
            emit(name, relative)
