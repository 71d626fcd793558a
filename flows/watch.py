"""The Prefect ``watch`` flow: keep the index equal to the current content of configured sources.

Each run lists every configured source (or the ``sources`` named), then per document:

* **new** (no record in the index) or **changed** (another change token, then another content
  hash): converted, chunked, embedded; its new points are upserted before its stale ones are
  deleted;
* **unchanged**: same change token (etag, or size and mtime): skipped without reading a byte;
  same bytes under a new token: skipped after hashing, and the new token is remembered;
* **removed** (recorded for the source, absent from a *complete* listing): pruned. A source whose
  root could not be listed (store down, folder missing) prunes nothing: an outage never empties
  the index.

Schedule it (``infra/prefect.yaml``: ``folioflow-watch`` every 15 minutes) or trigger it from file
events (:mod:`folioflow.flows.events`). Concurrent watch runs on one embedded store are refused by the store
lock (one process per data dir); with a Qdrant server they are safe (writes are idempotent).
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from folioflow.flows.ingest import resolve_settings, run_body
from folioflow.flows.report import RunReport
from folioflow.ocr.errors import ConfigurationError

__all__ = ["watch_flow"]


@flow(name="watch", log_prints=True, validate_parameters=False)
def watch_flow(
    sources: list[str] | None = None,
    config: str | None = None,
    overrides: dict[str, Any] | None = None,
    prune: bool = True,
    settings: Any = None,
) -> RunReport:
    """Bring the index in step with the configured ``sources`` (all when ``None``): ingest new and
    changed documents, prune removed ones (``prune``). ``config``/``overrides``/``settings`` as in
    :func:`folioflow.flows.ingest.ingest_flow`. Raises :class:`ConfigurationError` when no source is
    configured or a named one is unknown."""
    settings = resolve_settings(settings, config, overrides)
    if not settings.sources:
        raise ConfigurationError("watch needs configured sources (a `sources:` list in the config file)")
    names = list(sources) if sources else [s.name for s in settings.sources]
    for name in names:
        settings.source(name)  # unknown names stop the run before any work
    return run_body("watch", settings, (), names, prune)
