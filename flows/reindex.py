"""Chunk and embed again the converted documents a data directory keeps, without converting them.

``folioflow ingest`` keeps each converted document as ``<data_dir>/documents/<doc_id>.json`` (the
:class:`~folioflow.ocr.schema.Document`, unless ``keep_documents`` is off). When only what comes
after conversion changes (an upgrade whose chunker changed, other chunking options or token
limit), :func:`reindex` chunks those documents with the current chunker and replaces their points
and records, as an ingest would, but reads no source file and runs no OCR: for a store converted by
a VLM that is no GPU time, and for documents whose source has moved or gone it is the only way.

Which documents: every record of the collection (or those ``doc_ids`` names) whose last ingest
indexed it. Per document, one :class:`~folioflow.flows.report.DocumentReport`:

* ``indexed``: chunked, embedded and upserted; its record's fingerprint then carries this run's
  embedding model and chunker parts and keeps the OCR part it was converted under
  (:func:`~folioflow.flows.stages.rechunk_fingerprint`), so a later ``ingest`` under the same OCR
  settings skips it, and one under other OCR settings or a newer
  :data:`~folioflow.ocr.finish.CONVERSION_VERSION` converts it again (its ``change`` then ends with
  :data:`STALE_NOTE`, judged against the run's settings; not told with VLM endpoints, whose part
  of the fingerprint needs the served model);
* ``skipped``: recorded under the same embedding model and chunker already (``force`` re-chunks
  it anyway), or its last ingest failed (there is no conversion to re-chunk: ``ingest`` retries it);
* ``failed``, with the reason: no kept conversion, an unreadable one, one that is not the indexed
  version (another content hash), or chunking or indexing failed. Its record and points stay as
  they were, searchable; the other documents go on.

The embedding model is the collection's: a collection keeps the one model it was built with
(another model needs another collection, filled by ``ingest``). The run is a plain loop in this
process, not a Prefect flow: it reads no source, so there is nothing to retry or spread over workers
but the embedding, which the embedder batches.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from folioflow.flows.pipeline import Pipeline, Shared, local_path
from folioflow.flows.report import DocumentReport, RunReport
from folioflow.flows.settings import Settings
from folioflow.flows.stages import (
    Known,
    chunker_options,
    ocr_identity,
    ocr_part,
    rechunk_fingerprint,
    recorded_ocr_part,
    settings_change,
)

__all__ = ["STALE_NOTE", "reindex", "load_kept_document"]

#: Added to a document's ``change`` when its conversion was made under other OCR settings than the
#: run's, or by an older :data:`~folioflow.ocr.finish.CONVERSION_VERSION`.
STALE_NOTE = ("; converted under other OCR settings or an older conversion version: the next "
              "`folioflow ingest` converts it again")


def load_kept_document(documents_dir: Path, record: Any):
    """The converted :class:`~folioflow.ocr.schema.Document` kept for ``record`` (a registry
    :class:`~folioflow.indexing.registry.DocumentRecord`) under ``documents_dir``. Raises
    :class:`~folioflow.ocr.errors.SourceError` with the reason when there is none, it cannot be
    read or parsed, or it is another version than the indexed one (another content hash)."""
    from pydantic import ValidationError

    from folioflow.ocr.errors import SourceError
    from folioflow.ocr.schema import Document, kept_document_path

    path = kept_document_path(documents_dir, record.doc_id)
    if not path.is_file():
        raise SourceError(f"no converted document kept at {path} (keep_documents was off when it was ingested, or "
                          "the file was removed): run `folioflow ingest --force` on its source")
    try:
        document = Document.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        first = str(exc).splitlines()[0][:300]
        raise SourceError(f"kept converted document {path} is unreadable ({type(exc).__name__}: {first}): run "
                          "`folioflow ingest --force` on its source") from exc
    if document.content_hash != record.content_hash:
        raise SourceError(f"kept converted document {path} is of other content (hash {document.content_hash[:12]}, "
                          f"indexed {record.content_hash[:12]}): run `folioflow ingest --force` on its source")
    return document


def reindex(settings: Settings, docs: Sequence[str] | None = None, force: bool = False,
            progress: Any = None, doc_ids: Sequence[str] | None = None, shared: Shared | None = None) -> RunReport:
    """Chunk and embed again, from their kept conversions, the documents of ``settings``'
    collection, in registry order, or only those ``docs`` names (each a doc id, unique id prefix,
    path or file name, as ``query --doc`` reads it: :func:`folioflow.flows.queries.resolve_document`;
    one that names none or several raises :class:`~folioflow.ocr.errors.DocumentLookupError`
    before any document is touched), or only the documents of ``doc_ids`` (exact ids; the API
    server passes those a caller may see); see the module docstring for
    what is done and reported per document. ``progress``: an object with ``document_started(item,
    pages)``, ``page_done(item, page)`` and ``document_skipped(item, pages)`` (``item.path``
    shown), such as :class:`folioflow.flows.cli.ui.PageProgress`. ``shared``: the embedder and
    open store of a long-lived process (the API server's), used instead of loading and opening
    them (see :class:`~folioflow.flows.pipeline.Pipeline`). Raises
    :class:`~folioflow.ocr.errors.FolioflowError` subclasses when the run cannot proceed (model or
    store unavailable, invalid chunking settings, another embedding model than the collection's);
    a document's own problem is its report's ``error``, never raised."""
    report = RunReport()
    started = time.perf_counter()
    options = chunker_options(settings)  # invalid options: raised before any model loads
    if shared is None:
        settings = _collection_settings(settings)
    pipeline = Pipeline(settings, shared=shared).warm_up(convert=False)
    try:
        assert pipeline.store is not None and pipeline.embedder is not None and pipeline.chunker is not None
        records = pipeline.store.list_documents()
        if docs:
            from folioflow.flows.queries import resolve_document

            wanted = {resolve_document(records, key).doc_id for key in docs}
            records = [r for r in records if r.doc_id in wanted]
        if doc_ids is not None:
            exact = set(doc_ids)
            records = [r for r in records if r.doc_id in exact]
        # the OCR part an ingest with these settings records (not asked of a VLM endpoint: unknown then)
        current_ocr = None if settings.ocr_endpoints else ocr_part(ocr_identity(settings))
        for record in records:
            recorded = (record.metadata or {}).get("fingerprint")
            fingerprint = rechunk_fingerprint(pipeline.embedder.model_name, options, recorded)
            stale = current_ocr is not None and recorded_ocr_part(recorded) != current_ocr
            row = DocumentReport(source=local_path(record.uri) or record.uri, doc_id=record.doc_id, status="skipped",
                                 pages=record.pages, chunks=record.chunks, content_hash=record.content_hash,
                                 tenant=record.tenant, engines=list(record.engines),
                                 source_name=None if record.source == "default" else record.source)
            shown = _Shown(record.path)
            report.documents.append(row)
            t0 = time.perf_counter()
            if record.status != "indexed":
                row.change = "its last ingest failed: no conversion to re-chunk (`folioflow ingest` retries it)"
            elif not force and recorded == fingerprint:
                row.change = "unchanged (embedding model and chunking)" + (STALE_NOTE if stale else "")
                # its partial pages and their reasons, as ingest's skipped rows and status show them
                Known.from_record(record).carry_to(row, settings.documents_dir)
            else:
                row.change = "forced" if recorded == fingerprint else settings_change(recorded, fingerprint)
                _rechunk(pipeline, record, fingerprint, row, progress, shown)
                row.seconds = time.perf_counter() - t0
                if stale and row.status == "indexed":
                    row.change = f"{row.change}{STALE_NOTE}"
                continue
            if progress is not None:
                progress.document_skipped(shown, record.pages)
    finally:
        pipeline.close()
    report.seconds = time.perf_counter() - started
    report.finished_at = datetime.now(UTC)
    return report


@dataclass(frozen=True)
class _Shown:
    """What the progress bar shows of a document (its ``path``, as ``ingest``'s files have)."""

    path: str


def _collection_settings(settings: Settings) -> Settings:
    """``settings`` with the collection's embedding model when they name none (the collection
    keeps the model it was built with; the default model may not be it). Raises
    :class:`~folioflow.ocr.errors.CollectionNotFoundError` when there is no collection to re-chunk
    (an embedded data directory that does not exist is not created)."""
    from folioflow.indexing.store import open_store
    from folioflow.ocr.errors import CollectionNotFoundError

    if settings.qdrant_url is None and not Path(settings.data_dir).is_dir():
        raise CollectionNotFoundError(f"no folioflow index in {settings.data_dir}: the directory does not exist "
                                      "(check --data-dir / FOLIOFLOW_DATA_DIR)")
    store = open_store(settings.store_settings())
    try:
        info = store.require_collection()
    finally:
        store.close()
    if settings.embedding_model is None and info.get("model"):
        return settings.model_copy(update={"embedding_model": info["model"]})
    return settings


def _rechunk(pipeline: Pipeline, record: Any, fingerprint: str, row: DocumentReport, progress: Any,
             shown: _Shown) -> None:
    """Chunk ``record``'s kept conversion and index it under ``fingerprint``; ``row`` (its ``change``
    set) says how it went."""
    from folioflow.ocr.errors import FolioflowError

    assert pipeline.chunker is not None
    if progress is not None:
        progress.document_started(shown, record.pages)
    try:
        document = load_kept_document(pipeline.settings.documents_dir, record)
        chunks = pipeline.chunker.chunk(document)
        pipeline.index(document, chunks, change_token=(record.metadata or {}).get("change_token"),
                       fingerprint=fingerprint, save=False)
    except FolioflowError as exc:
        row.status, row.error = "failed", str(exc)
    except Exception as exc:  # noqa: BLE001 - one document's bug must not stop the others; its reason is reported
        row.status, row.error = "failed", f"{type(exc).__name__}: {exc}"
    else:
        row.status, row.chunks, row.pages = "indexed", len(chunks), document.page_count
    if progress is not None:
        for page in range(record.pages):
            progress.page_done(shown, page + 1)

