"""Running document tasks on the configured task runner and indexing their results.

Task runners (``settings.task_runner``):

* ``thread`` (default): :class:`~prefect.task_runners.ThreadPoolTaskRunner` with
  ``settings.workers`` threads; page conversion inside a document goes to a process pool
  (:mod:`folioflow.flows.convert_pool`) so all cores convert, PDFium's lock notwithstanding.
* ``dask``: :class:`prefect_dask.DaskTaskRunner` on ``settings.runner_address``
  (``tcp://scheduler:8786``), or a local cluster of ``settings.runner_workers`` single-threaded
  worker processes. Plan, convert and chunk run on the workers (a document per worker, pages
  converted in-process there); the page cache should then be shared (``cache_url``).
* ``ray``: :class:`prefect_ray.RayTaskRunner` on ``settings.runner_address`` (``pip install
  folioflow[ray]``).

Indexing never leaves the flow process: embedded Qdrant allows one process per data dir, and one
embedder per run is cheaper than one per worker. With a Qdrant server (``qdrant_url``) this still
holds; embedding is then the only stage that does not scale out, and it is rarely the bottleneck
next to OCR. The flow's main thread indexes documents as their tasks finish, so embedding overlaps
the conversion of other documents.

Every submitted future is resolved: a task that failed or crashed is reported as a ``failed``
document with its state message; nothing fails unseen and no document failure fails the run.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
import time
from typing import Any

from prefect.futures import as_completed

from folioflow.flows.artifacts import RunProgress
from folioflow.flows.pipeline import Pipeline
from folioflow.flows.report import DocumentReport
from folioflow.flows.settings import Settings
from folioflow.flows.sources import SourceFile
from folioflow.flows.tasks import failed_report, index_task, ingest_document_task, is_transient, retrying
from folioflow.ocr.errors import FolioflowError
from folioflow.ocr.extras import require

__all__ = ["build_task_runner", "run_documents"]

log = logging.getLogger(__name__)


def build_task_runner(settings: Settings):
    """The Prefect task runner ``settings`` ask for (see module docstring). Raises
    :class:`~folioflow.ocr.errors.MissingExtraError` (a ConfigurationError) when the runner's extra is not installed."""
    if settings.task_runner == "thread":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=settings.workers)
    if settings.task_runner == "dask":
        require("dask", "task_runner 'dask'")
        from prefect_dask import DaskTaskRunner

        if settings.runner_address:
            return DaskTaskRunner(address=settings.runner_address)
        workers = settings.runner_workers or max(1, os.cpu_count() or 1)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                                              "dashboard_address": None})
    require("ray", "task_runner 'ray'")
    from prefect_ray import RayTaskRunner

    return RayTaskRunner(address=settings.runner_address) if settings.runner_address else RayTaskRunner()


def _index(pipeline: Pipeline, prepared, file: SourceFile) -> DocumentReport:
    report = prepared.report
    if report.status == "skipped":
        if prepared.change_token and report.change == "unchanged (content hash)":
            pipeline.remember_token(file, prepared.change_token)
        return report
    if report.status == "failed" and prepared.document is not None:  # converted, but every page failed
        try:
            pipeline.record_failure(prepared.document, report.error or "every page failed", prepared.change_token)
        except Exception as exc:  # noqa: BLE001 - the document is reported failed either way
            report.error = f"{report.error}; and its failure could not be recorded: {type(exc).__name__}: {exc}"
        return report
    if report.status != "indexed":
        return report
    started = time.perf_counter()
    try:
        retrying(index_task, pipeline.settings)(pipeline, prepared)
    except FolioflowError as exc:
        report.status, report.error = "failed", f"index: {exc}"
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        kind = "transient error, retries exhausted" if is_transient(exc) else "internal error"
        report.status, report.error = "failed", f"index: {kind}: {type(exc).__name__}: {exc}"
    report.seconds += time.perf_counter() - started
    return report


def run_documents(pipeline: Pipeline, files: list[SourceFile], flow_name: str, progress: Any = None) -> list[DocumentReport]:
    """Submit one ``ingest-document`` task per file to the configured runner, index results in
    this thread as they complete, keep a progress artifact current; one report per file, in the
    order of ``files``. Raises only what stops the whole run (runner cannot start)."""
    settings = pipeline.settings
    in_process = settings.task_runner == "thread"
    tracker = RunProgress(flow_name, len(files), inner=progress if in_process else None)
    events = tracker if in_process else None
    reports: dict[int, DocumentReport] = {}
    if not files:
        tracker.publish(force=True)
        return []
    runner = build_task_runner(settings)
    ticker = _Ticker(tracker)
    with runner:
        futures = {}
        for i, file in enumerate(files):
            future = runner.submit(ingest_document_task, parameters={"spec": pipeline.spec, "file": file,
                                                                     "known": pipeline.known(file), "progress": events})
            futures[future] = i
        ticker.start()
        try:
            for future in as_completed(list(futures)):
                i = futures[future]
                file = files[i]
                future.wait()  # sets the future's final state from the runner (the API may lag behind)
                state = future.state
                if state.is_completed():
                    reports[i] = _index(pipeline, future.result(), file)
                else:  # failed or crashed task (should not happen: the task catches): seen, reported
                    message = state.message or type(state.result(raise_on_failure=False)).__name__
                    reports[i] = failed_report(file, f"task {(state.name or 'failed').lower()}: {message}")
                tracker.document_finished(file)
        except BaseException:  # Ctrl-C or SIGTERM here: the documents being converted stop at their next
            tracker.stop()     # page, rather than the runner's exit waiting for each to finish converting
            raise
        finally:
            ticker.stop()
    tracker.publish(force=True)
    return [reports[i] for i in range(len(files))]


class _Ticker:
    """Publishes the progress artifact every ``interval`` seconds from a helper thread that runs
    in a copy of the flow's context (so it talks to the same Prefect API)."""

    def __init__(self, tracker: RunProgress):
        self.tracker = tracker
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.tracker.interval):
            try:
                self.tracker.publish(force=True)
            except Exception:  # noqa: BLE001 - progress is best effort; the run goes on
                log.debug("progress artifact update failed", exc_info=True)

    def start(self) -> None:
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._loop,), name="folioflow-progress", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
