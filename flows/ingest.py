"""The Prefect ``ingest`` flow: sources -> documents -> pages -> chunks -> index.

Shape: the flow discovers the files, then submits one ``ingest-document`` task per document to its
task runner (a thread pool of ``settings.workers`` by default). Each document task runs the stages
as nested tasks (``plan``, ``convert``, ``chunk``, ``index``), so every stage is a task run in the
Prefect UI, documents run concurrently, and one document's failure is caught and reported as data:
the document task always completes with a :class:`~flows.report.DocumentReport`. The flow checks
the final state of every future it submitted, so no failure goes unseen; a document task that
somehow failed is reported as ``failed`` with its exception, and the flow still completes.

The ``convert`` task carries the tag :data:`OCR_TAG`; a Prefect concurrency limit on that tag
(``prefect concurrency-limit create folioflow-ocr N``) bounds OCR across all flow runs sharing a
fleet. The ``index`` task retries transient store errors with backoff.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, Sequence

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from ocr.errors import StoreError
from ocr.schema import Page

from flows.pipeline import Pipeline, Planned
from flows.report import DocumentReport, RunReport
from flows.settings import Settings
from flows.sources import SourceFile, discover

__all__ = ["OCR_TAG", "IngestProgress", "ingest_flow", "run_ingest"]

#: Tag on every OCR task; size a Prefect concurrency limit on it to the OCR fleet.
OCR_TAG = "folioflow-ocr"



class IngestProgress(Protocol):
    """Receives progress events from document tasks (called from worker threads)."""

    def document_started(self, file: SourceFile, pages: int) -> None: ...

    def page_done(self, file: SourceFile, page: Page) -> None: ...

    def document_skipped(self, file: SourceFile, pages: int) -> None: ...


def _transient(task, task_run, state) -> bool:
    """Retry only errors that another attempt can fix (store unreachable, timeouts)."""
    try:
        state.result()
    except (StoreError, TimeoutError, ConnectionError):
        return True
    except Exception:
        return False
    return False


@task(name="plan", cache_policy=NO_CACHE)
def plan_task(pipeline: Pipeline, file: SourceFile) -> Planned:
    return pipeline.plan(file)


@task(name="convert", cache_policy=NO_CACHE, tags=[OCR_TAG])
def convert_task(pipeline: Pipeline, planned: Planned, on_page: Callable[[Page], None] | None):
    return pipeline.convert(planned, on_page)


@task(name="chunk", cache_policy=NO_CACHE)
def chunk_task(pipeline: Pipeline, document):
    return pipeline.chunk(document)


@task(name="index", cache_policy=NO_CACHE, retries=3, retry_delay_seconds=[1, 5, 15], retry_condition_fn=_transient)
def index_task(pipeline: Pipeline, document, chunks):
    return pipeline.index(document, chunks)


@task(name="ingest-document", cache_policy=NO_CACHE, task_run_name="ingest {file.path}")
def ingest_document_task(pipeline: Pipeline, file: SourceFile, progress: IngestProgress | None = None) -> DocumentReport:
    """All stages of one document as nested tasks; never raises (failures are in the report)."""
    from ocr.errors import FolioflowError

    started = time.perf_counter()
    report = DocumentReport(source=file.display, doc_id=file.doc_id, status="failed", tenant=pipeline.settings.tenant)
    on_page = (lambda page: progress.page_done(file, page)) if progress else None
    try:
        planned = plan_task(pipeline, file)
        report.content_hash = planned.content_hash
        if planned.skip:
            record = pipeline.store.get_document(file.doc_id)
            report.status = "skipped"
            report.pages, report.chunks = (record.pages, record.chunks) if record else (0, 0)
            report.engines = list(record.engines) if record else []
            if progress:
                progress.document_skipped(file, report.pages)
            return report
        if progress:
            progress.document_started(file, planned.page_count)
        document = convert_task(pipeline, planned, on_page)
        Pipeline.describe(report, document)
        chunks = chunk_task(pipeline, document)
        index_task(pipeline, document, chunks)
        report.chunks = len(chunks)
        report.status = "indexed"
    except FolioflowError as exc:
        report.error = str(exc)
    except Exception as exc:  # keep the batch going; the type names the bug
        report.error = f"internal error: {type(exc).__name__}: {exc}"
    finally:
        report.seconds = time.perf_counter() - started
    return report


@flow(name="ingest", log_prints=True, validate_parameters=False)
def ingest_flow(
    paths: Sequence[str],
    settings: Settings | None = None,
    prune: bool = False,
    progress: Any = None,
) -> RunReport:
    """Ingest every PDF/image under ``paths`` (files, folders recursively, globs).

    ``progress`` is an :class:`IngestProgress` (typed ``Any`` because Prefect builds a parameter
    schema from the signature). Returns the :class:`RunReport`; raises only when the run cannot proceed at all (settings,
    model or store unavailable: :class:`~ocr.errors.FolioflowError`).
    """
    settings = settings or Settings()
    report = RunReport()
    started = time.perf_counter()
    discovery = discover(list(paths))
    report.documents.extend(
        DocumentReport(source=missing.display, status="failed", error=missing.error) for missing in discovery.errors
    )
    files = discovery.files
    pipeline = Pipeline(settings)
    pipeline.warm_up()
    try:
        runner_futures = [ingest_document_task.submit(pipeline, f, progress) for f in files]
        for file, future in zip(files, runner_futures):
            future.wait()
            if future.state.is_completed():
                report.documents.append(future.result())
            else:  # the task itself failed (should not happen): report it, never hide it
                error = future.state.result(raise_on_failure=False)
                report.documents.append(DocumentReport(source=file.display, doc_id=file.doc_id, status="failed",
                                                       error=f"task failed: {error}"))
        if prune:
            report.documents.extend(prune_missing(pipeline, discovery.roots, files))
        if report.count("indexed") or report.count("pruned"):
            pipeline.store.optimize()  # Edge builds its HNSW index only when told; no-op elsewhere
    finally:
        pipeline.close()
    report.finished_at = datetime.now(timezone.utc)
    report.seconds = time.perf_counter() - started
    return report


def prune_missing(pipeline: Pipeline, roots: list[str], files: list[SourceFile]) -> list[DocumentReport]:
    """Delete documents recorded under one of ``roots`` (URI prefixes of the folders ingested)
    that are no longer among ``files``; returns a ``pruned`` report per document."""
    present = {f.uri for f in files}
    pruned = []
    for record in pipeline.store.list_documents(source=pipeline.settings.source_name):
        if record.uri in present or not any(record.uri.startswith(root.rstrip("/") + "/") for root in roots):
            continue
        pipeline.store.delete_document(record.doc_id)
        pruned.append(DocumentReport(source=record.path, doc_id=record.doc_id, status="pruned",
                                     pages=record.pages, chunks=record.chunks))
    return pruned


def run_ingest(paths: Sequence[str], settings: Settings, prune: bool = False, **kwargs) -> RunReport:
    """Run :func:`ingest_flow` with the settings' task runner (a thread pool of ``workers``)."""
    runner = ThreadPoolTaskRunner(max_workers=settings.workers)
    return ingest_flow.with_options(task_runner=runner)(paths, settings=settings, prune=prune, **kwargs)
