"""The Prefect ``ingest`` flow: sources -> documents -> pages -> chunks -> index.

Shape: the flow resolves its settings (a :class:`~folioflow.flows.settings.Settings` object, or a config file
plus overrides when run from a deployment), collects documents (command-line ``paths``: files,
folders, globs; and/or configured ``sources`` by name), warms up the OCR engines and the store, then
runs one ``ingest-document`` task per document on the configured task runner and indexes their
results in the flow process (:mod:`folioflow.flows.runner`, :mod:`folioflow.flows.tasks`). The
embedding model loads for the first document with pages to convert, so a run whose every document
is skipped or refused never loads it (:class:`~folioflow.flows.pipeline.Pipeline`). One document's failure is a
``failed`` row in the report, never a failed flow run; the flow raises only when the run cannot
proceed at all (bad settings, model or store unavailable: :class:`~folioflow.ocr.errors.FolioflowError`;
a model that cannot be loaded is raised once the documents ran, each that needed it failed with it).

With ``prune``, documents indexed from the same folders or sources that are gone from them are
deleted (for sources only when the listing was complete; for local folders only when the file is
gone from disk, so a hidden file or one without a listed extension that a run was given by name is
kept). Artifacts per run: a progress artifact,
a table of documents and a Markdown summary (:mod:`folioflow.flows.artifacts`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from prefect import flow

from folioflow.flows.artifacts import publish_run_artifacts
from folioflow.flows.pipeline import Pipeline, local_file_exists
from folioflow.flows.report import DocumentReport, RunReport
from folioflow.flows.runner import run_documents
from folioflow.flows.settings import Settings, load_settings
from folioflow.flows.source_config import SourceConfig
from folioflow.flows.sources import discover
from folioflow.flows.tasks import OCR_TAG, IngestProgress, list_source_task
from folioflow.ocr.errors import ConfigurationError

__all__ = ["OCR_TAG", "IngestProgress", "ingest_flow", "run_ingest", "resolve_settings", "run_body"]


def resolve_settings(settings: Settings | None, config: str | None, overrides: dict[str, Any] | None) -> Settings:
    """``settings`` with ``overrides`` applied, else :func:`load_settings` from ``config`` (or
    ``$FOLIOFLOW_CONFIG``), the environment and ``overrides``."""
    if settings is not None:
        return settings.model_copy(update=overrides) if overrides else settings
    return load_settings(config, **(overrides or {}))


def adhoc_source(settings: Settings, url: str) -> SourceConfig:
    """A source for an object-store URL given as a path (``s3://bucket/prefix``, ``https://host/docs/``,
    a glob like ``s3://bucket/*.pdf``): the settings' source name, tenant and passwords; credentials
    from the store's own chain (``AWS_*`` variables, instance roles)."""
    return SourceConfig(name=settings.source_name, url=url, tenant=settings.tenant, passwords=settings.passwords)


def _url_root(url: str) -> str:
    parts = url.split("/")
    fixed = next((i for i, part in enumerate(parts) if set("*?[") & set(part)), len(parts))
    return "/".join(parts[:fixed]).rstrip("/")


def run_body(flow_name: str, settings: Settings, paths: Sequence[str] = (), source_names: Sequence[str] | None = None,
             prune: bool = False, progress: Any = None, shared: Any = None) -> RunReport:
    """What both flows do: collect documents, run them, prune, publish artifacts (``shared``: a
    :class:`~folioflow.flows.pipeline.Shared` embedder and store lent by a long-lived process)."""
    report = RunReport()
    started = time.perf_counter()
    local = [p for p in paths if "://" not in p or p.startswith("file://")]
    discovery = discover(local) if local else None
    files = list(discovery.files) if discovery is not None else []
    if discovery is not None:  # (a Discovery without files is falsy: it has __len__)
        report.documents += [DocumentReport(source=p.display, status="failed", error=p.error) for p in discovery.errors]
    configs = [settings.source(name) for name in source_names] if source_names else []
    configs += [adhoc_source(settings, url) for url in paths if url not in local]
    listings = [list_source_task(config) for config in configs]
    for listing in listings:
        files += listing.files
        report.documents += [DocumentReport(source=f"{listing.source.name}:{p.argument}", status="failed", error=p.error,
                                            source_name=listing.source.name) for p in listing.errors]
    pipeline = Pipeline(settings, in_process=settings.task_runner == "thread", shared=shared)
    pipeline.warm_up()
    try:
        report.documents += run_documents(pipeline, files, flow_name, progress)
        error = pipeline.setup_error()  # the model loads for the first document that needs it
        if error is not None:
            raise error
        if prune and discovery is not None and discovery.roots:
            # A file the folder walk skips (hidden, no or another extension) but an earlier run was
            # given by name is not gone: only files missing from disk are pruned.
            report.documents += pipeline.prune(settings.source_name, {f.uri for f in discovery.files}, discovery.roots,
                                               labelled=False, still_there=local_file_exists)
        for listing in listings:
            if prune and listing.complete:
                roots = [_url_root(listing.source.url)] if listing.source in configs[len(source_names or ()):] else None
                report.documents += pipeline.prune(listing.source.name, {f.uri for f in listing.files}, roots)
        if report.count("indexed") or report.count("pruned"):
            assert pipeline.store is not None  # opened by warm_up()
            pipeline.store.optimize()  # Edge builds its HNSW index only when told; no-op elsewhere
    finally:
        pipeline.close()
    report.finished_at = datetime.now(UTC)
    report.seconds = time.perf_counter() - started
    publish_run_artifacts(report, flow_name)
    print(f"{flow_name}: {report.count('indexed')} indexed, {report.count('skipped')} skipped, "
          f"{report.count('failed')} failed, {report.count('pruned')} pruned; {report.pages_processed} pages "
          f"at {report.pages_per_second:.2f} pages/s")
    return report


@flow(name="ingest", log_prints=True, validate_parameters=False)
def ingest_flow(
    paths: list[str] | None = None,
    sources: list[str] | None = None,
    config: str | None = None,
    overrides: dict[str, Any] | None = None,
    prune: bool = False,
    settings: Any = None,
    progress: Any = None,
    force: bool = False,
    shared: Any = None,
) -> RunReport:
    """Ingest documents: ``paths`` (files, folders recursively, globs; object-store URLs such as
    ``s3://bucket/prefix`` or ``https://host/docs/`` are listed like a source) and/or the configured
    ``sources`` named (all configured sources when neither is given).

    ``config``: YAML settings file (default ``$FOLIOFLOW_CONFIG``); ``overrides``: setting values
    that beat file and environment (e.g. ``{"workers": 4}``); ``settings``: a ready
    :class:`Settings` (in-process callers; typed ``Any`` because Prefect builds a parameter schema
    from the signature); ``progress``: an :class:`IngestProgress` (in-process only); ``force``:
    process every document again, unchanged or not (sets the ``force`` setting for this run: no
    skip on an unchanged change token or content hash); ``shared``: a
    :class:`~folioflow.flows.pipeline.Shared` embedder and open store to use instead of loading
    them (in-process only: the API server's). Returns the
    :class:`RunReport`. Raises :class:`~folioflow.ocr.errors.FolioflowError` only when the run cannot
    proceed (settings, model or store unavailable).
    """
    settings = resolve_settings(settings, config, overrides)
    if force and not settings.force:
        settings = settings.model_copy(update={"force": True})
    if not paths and not sources:
        if not settings.sources:
            raise ConfigurationError("nothing to ingest: give paths, or configure sources (see infra/ORCHESTRATION.md)")
        sources = [s.name for s in settings.sources]
    return run_body("ingest", settings, paths or (), sources, prune, progress, shared)


def run_ingest(paths: Sequence[str], settings: Settings, prune: bool = False, force: bool = False,
               **kwargs) -> RunReport:
    """Run :func:`ingest_flow` in this process on ``paths`` with ``settings`` (``force``: see there)."""
    return ingest_flow(paths=list(paths), settings=settings, prune=prune, force=force, **kwargs)
