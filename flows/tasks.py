"""Prefect tasks of the ingestion flows.

Per document, ``ingest-document`` runs the CPU stages as nested tasks, ``plan`` -> ``convert`` ->
``chunk``, on whatever task runner the flow uses (threads by default, Dask or Ray workers by
configuration); the flow process then runs ``index`` (embedding and upsert stay where the store
is). ``convert`` carries the tag :data:`OCR_TAG`: a Prefect concurrency limit on it (``folioflow
deploy`` creates one sized to the OCR fleet) bounds concurrent OCR task runs across every flow run
sharing the fleet.

Retries: ``plan`` (source reads), ``convert`` (OCR endpoints down, a conversion process died) and
``index`` (store unreachable) retry *transient* errors only, ``settings.retries`` times with
exponential backoff from ``settings.retry_delay`` seconds and jitter; a bad document fails at once.
``ingest-document`` never raises: its failures come back as data in the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Protocol

from prefect import task
from prefect.cache_policies import NO_CACHE

from folioflow.chunking.schema import Chunk
from folioflow.flows.listing import Listing, list_source
from folioflow.flows.report import DocumentReport
from folioflow.flows.settings import Settings
from folioflow.flows.source_config import SourceConfig
from folioflow.flows.sources import SourceFile
from folioflow.flows.stages import Known, Prepared, StageSpec, stages_for
from folioflow.ocr.errors import EndpointError, EngineUnavailableError, FolioflowError, StoreError
from folioflow.ocr.schema import Document, DocumentStatus, Page

__all__ = ["OCR_TAG", "IngestProgress", "is_transient", "retrying", "ingest_document_task", "index_task",
           "list_source_task"]

#: Tag on every OCR task; size a Prefect concurrency limit on it to the OCR fleet.
OCR_TAG = "folioflow-ocr"

_PERMANENT_OS = (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError)
_TRANSIENT_MODULES = ("aiohttp", "botocore", "aiobotocore", "httpx", "requests", "google.api_core", "azure.core")


class IngestProgress(Protocol):
    """Receives progress events from document tasks (called from worker threads)."""

    def document_started(self, file: SourceFile, pages: int) -> None: ...

    def page_done(self, file: SourceFile, page: Page) -> None: ...

    def document_skipped(self, file: SourceFile, pages: int) -> None: ...


def is_transient(exc: BaseException) -> bool:
    """Whether another attempt may succeed: timeouts, connection and store/endpoint outages, I/O
    errors other than missing/forbidden files, a crashed conversion process."""
    if isinstance(exc, (StoreError, EndpointError, EngineUnavailableError, TimeoutError, ConnectionError,
                        BrokenProcessPool)):
        return True
    if isinstance(exc, (FolioflowError, *_PERMANENT_OS)):
        return False
    if isinstance(exc, OSError):
        return True
    return type(exc).__module__.startswith(_TRANSIENT_MODULES)


def _retry_condition(task, task_run, state) -> bool:
    try:
        state.result()
    except Exception as exc:  # noqa: BLE001 - classify whatever the attempt raised
        return is_transient(exc)
    return False


def retrying(task_obj, settings: Settings):
    """``task_obj`` with ``settings.retries`` retries of transient errors, delays doubling from
    ``settings.retry_delay`` seconds, 20% jitter."""
    delays = [settings.retry_delay * 2 ** i for i in range(settings.retries)]
    return task_obj.with_options(retries=settings.retries, retry_delay_seconds=delays or 0, retry_jitter_factor=0.2,
                                 retry_condition_fn=_retry_condition)


@task(name="plan", cache_policy=NO_CACHE)
def plan_task(spec: StageSpec, file: SourceFile, known: Known | None):
    return stages_for(spec).read_plan(file, known)


@task(name="inspect", cache_policy=NO_CACHE)
def inspect_task(spec: StageSpec, planned):
    return stages_for(spec).inspect(planned)


@task(name="convert", cache_policy=NO_CACHE, tags=[OCR_TAG])
def convert_task(spec: StageSpec, planned, on_page: Callable[[Page], None] | None):
    return stages_for(spec).convert(planned, on_page)


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_task(spec: StageSpec, document: Document) -> list[Chunk]:
    return stages_for(spec).chunk(document)


@task(name="ingest-document", cache_policy=NO_CACHE, task_run_name="ingest {file.path}")
def ingest_document_task(spec: StageSpec, file: SourceFile, known: Known | None = None,
                         progress: Any = None) -> Prepared:
    """Plan, convert and chunk one document (nested tasks); never raises. Returns a
    :class:`Prepared` whose report is ``skipped``, ``failed`` (with the reason; with the converted
    document when every page failed, for the flow to record the failure in the registry) or, still
    to be indexed by the flow, ``indexed`` with the document and its chunks."""
    settings = spec.settings
    started = time.perf_counter()
    report = DocumentReport(source=file.display, doc_id=file.doc_id, status="failed", source_name=file.source_name,
                            tenant=file.tenant if file.config else settings.tenant)
    on_page = (lambda page: progress.page_done(file, page)) if progress else None
    prepared = Prepared(report=report, change_token=file.change_token)
    try:
        planned = retrying(plan_task, settings)(spec, file, known)
        report.content_hash, report.change = planned.content_hash, planned.why
        if planned.skip:
            report.status = "skipped"
            if known is not None:
                known.carry_to(report, settings.documents_dir)
            if progress:
                progress.document_skipped(file, report.pages)
            return prepared
        # opened after the report says what changed: a refused document keeps its `change`
        planned = retrying(inspect_task, settings)(spec, planned)
        if progress:
            progress.document_started(file, planned.page_count)
        document = retrying(convert_task, settings)(spec, planned, on_page)
        planned.data = None  # the bytes are not needed any more (nor shipped back from a worker)
        from folioflow.flows.pipeline import Pipeline

        Pipeline.describe(report, document)
        if document.status == DocumentStatus.FAILED:  # no page has content: nothing to index
            report.error = no_content_error(document)
            prepared.document = document  # "failed" with the document: the flow records the failure
            return prepared
        prepared.chunks = chunk_task(spec, document)
        prepared.document = document
        report.chunks = len(prepared.chunks)
        report.status = "indexed"  # provisional: the flow indexes it next
    except FolioflowError as exc:
        report.error = str(exc)
    except Exception as exc:  # noqa: BLE001 - keep the batch going; the type names the bug
        report.error = f"{'transient error, retries exhausted' if is_transient(exc) else 'internal error'}: " \
                       f"{type(exc).__name__}: {exc}"
    finally:
        report.seconds = time.perf_counter() - started
    return prepared


@task(name="index", cache_policy=NO_CACHE)
def index_task(pipeline, prepared: Prepared):
    """Embed and upsert one prepared document (flow process; retried on store outages)."""
    return pipeline.index(prepared.document, prepared.chunks, prepared.change_token)


@task(name="list-source", cache_policy=NO_CACHE, task_run_name="list {config.name}")
def list_source_task(config: SourceConfig) -> Listing:
    """List a configured source (never raises; an unreachable root gives an incomplete listing)."""
    return list_source(config)


def no_content_error(document: Document) -> str:
    """The one-line error of a converted document none of whose pages has content: how many pages
    failed, then the document's and the pages' errors (each prefixed ``page N:`` once)."""
    from folioflow.flows.pipeline import page_failures

    failures = page_failures(document)
    reasons = "; ".join([*document.errors, *failures.values()]) or "no page converted"
    return f"every page failed ({len(failures)} of {document.page_count}): {reasons}" if failures else reasons


def failed_report(file: SourceFile, error: str) -> DocumentReport:
    """A ``failed`` report for ``file`` with ``error``."""
    return DocumentReport(source=file.display, doc_id=file.doc_id, status="failed", error=error,
                          source_name=file.source_name, tenant=file.tenant)
