"""The no-op re-run: deciding that every document of an ``ingest`` is unchanged before Prefect starts.

A re-run over documents that are all indexed and unchanged should cost little more than reading
the file list. :func:`run_if_unchanged` makes that decision with the skip rule of
:meth:`folioflow.flows.stages.Stages.plan` at its cheapest step: each document's registry record
(:mod:`folioflow.indexing.registry`) must be indexed with no failed page, under the same index
fingerprint (embedding model name, chunker options, OCR settings; :func:`~folioflow.flows.stages.
index_fingerprint`) and tenant, with the same change token (size and mtime: the bytes are not read).
When it holds for every document, the run's report is built from the records (status ``skipped``,
change ``unchanged (change token)``) without loading the embedding model or the tokenizer, without
opening the OCR engines and without starting a Prefect flow run (so no ephemeral API server); no
run artifacts are published then. When anything else is the case the function returns ``None``
and the caller runs the flow, which decides per document as before:

* ``force`` (or ``settings.force``), an object-store URL among the paths, or no paths;
* a path that matches nothing, or a symlink leading out of its folder (a ``failed`` row);
* a configured VLM endpoint with an engine other than ``text`` (its part of the fingerprint needs
  the served model's id, asked from the endpoint);
* any document new, changed, failed, or recorded under other settings or tenant;
* with ``prune``, an indexed document under the given folders that is gone from disk;
* the store cannot be opened or read (another process holds the embedded store, the server is
  unreachable: the flow reports it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from folioflow.flows.report import DocumentReport, RunReport
from folioflow.flows.settings import Settings

__all__ = ["run_if_unchanged"]


def run_if_unchanged(paths: Sequence[str], settings: Settings, prune: bool = False, force: bool = False,
                     progress: Any = None) -> RunReport | None:
    """The :class:`RunReport` of an ``ingest`` of local ``paths`` (files, folders, globs) whose
    documents are all indexed and unchanged, one ``skipped`` record each in discovery order, as
    the flow reports them; ``None`` when the flow must run (see module docstring). ``progress`` (an :class:`~folioflow.flows.tasks.IngestProgress`)
    hears ``document_skipped`` for each. Never raises for a store it cannot open or read
    (returns ``None``); raises :class:`~folioflow.ocr.errors.ConfigurationError` for invalid
    chunking settings, as the flow would."""
    if force or settings.force or not paths or any("://" in p and not p.startswith("file://") for p in paths):
        return None
    if settings.ocr_endpoints and settings.engine != "text":
        return None
    started = time.perf_counter()
    from folioflow.flows.sources import discover

    discovery = discover(list(paths))
    if discovery.errors or not discovery.files:
        return None
    from folioflow.flows.pipeline import local_file_exists, stale_records
    from folioflow.flows.stages import (
        Known,
        chunker_options,
        index_fingerprint,
        ocr_identity,
        unchanged_by_token,
    )
    from folioflow.indexing.embedder import canonical_model_name
    from folioflow.indexing.store import open_store
    from folioflow.ocr.errors import StoreError

    fingerprint = index_fingerprint(canonical_model_name(settings.embedding_model), chunker_options(settings),
                                    ocr_identity(settings))
    try:
        store = open_store(settings.store_settings())
    except StoreError:
        return None
    try:
        known: list[Known] = []
        for file in discovery.files:
            record = store.get_document(file.doc_id)
            item = None if record is None else Known.from_record(record)
            if item is None or not unchanged_by_token(item, fingerprint, settings.tenant, file.change_token):
                return None
            known.append(item)
        if prune and discovery.roots and stale_records(store, settings.source_name, {f.uri for f in discovery.files},
                                                       discovery.roots, still_there=local_file_exists):
            return None
    except StoreError:  # unreachable server, missing registry: the flow reports it as it always has
        return None
    finally:
        store.close()
    report = RunReport()
    for file, item in zip(discovery.files, known, strict=True):
        row = DocumentReport(source=file.display, doc_id=file.doc_id, status="skipped",
                             content_hash=item.content_hash, change="unchanged (change token)",
                             tenant=settings.tenant, source_name=file.source_name)
        item.carry_to(row, settings.documents_dir)
        report.documents.append(row)
        if progress is not None:
            progress.document_skipped(file, item.pages)
    report.finished_at = datetime.now(UTC)
    report.seconds = time.perf_counter() - started
    return report
