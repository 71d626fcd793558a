"""Ingest jobs of the API server: a FIFO queue and one worker thread that runs them one at a time
through the existing ingest flow (:func:`folioflow.flows.ingest.run_ingest`), with the server's
embedder and store lent to each run (:class:`~folioflow.flows.pipeline.Shared`)."""

from __future__ import annotations

import logging
import queue
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from folioflow.flows.service.models import Job, JobProgress
from folioflow.ocr.errors import FolioflowError

__all__ = ["JobQueue"]

log = logging.getLogger(__name__)


class _Progress:
    """:class:`~folioflow.flows.tasks.IngestProgress` that counts into a job (worker threads)."""

    def __init__(self, progress: JobProgress, lock: threading.Lock):
        self.progress, self.lock = progress, lock

    def document_started(self, file: Any, pages: int) -> None:
        with self.lock:
            self.progress.documents_started += 1
            self.progress.pages_total += pages

    def page_done(self, file: Any, page: Any) -> None:
        with self.lock:
            self.progress.pages_done += 1

    def document_skipped(self, file: Any, pages: int) -> None:
        with self.lock:
            self.progress.documents_skipped += 1


class JobQueue:
    """Jobs by id, and the worker thread. ``run``: ``run(paths, tenant, force, progress, source)
    -> RunReport`` (the server's closure over :func:`run_ingest`); ``keep``: jobs remembered (the
    oldest finished ones are forgotten beyond it)."""

    def __init__(self, run: Callable[..., Any], keep: int = 1000):
        self._run = run
        self._keep = keep
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, list[str], bool, str] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="folioflow-ingest-jobs", daemon=True)
        self._thread.start()

    def submit(self, inputs: list[str], paths: list[str], tenant: str | None, force: bool = False,
               source: str = "default") -> Job:
        """Queue an ingest of ``paths`` (shown as ``inputs``) for ``tenant``, recorded under the
        source name ``source``; returns the job."""
        job = Job(id=uuid.uuid4().hex, state="queued", inputs=inputs, tenant=tenant, created_at=datetime.now(UTC))
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()
        self._queue.put((job.id, paths, force, source))
        return job.model_copy(deep=True)

    def get(self, job_id: str) -> Job | None:
        """A snapshot of the job, or None."""
        with self._lock:
            job = self._jobs.get(job_id)
            return job.model_copy(deep=True) if job is not None else None

    def list(self, tenant: str | None = None) -> list[Job]:
        """Snapshots of the jobs (of ``tenant`` only, when given), newest first."""
        with self._lock:
            jobs = [j.model_copy(deep=True) for j in self._jobs.values() if tenant is None or j.tenant == tenant]
        return sorted(jobs, key=lambda j: j.created_at, reverse=True)

    def counts(self) -> Counter[str]:
        """Jobs per state."""
        with self._lock:
            return Counter(j.state for j in self._jobs.values())

    def close(self, timeout: float = 5.0) -> None:
        """Stop taking jobs; the running one finishes in the background (daemon thread)."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j.state in ("succeeded", "failed")]
        for job in sorted(finished, key=lambda j: j.created_at)[:max(0, len(self._jobs) - self._keep)]:
            del self._jobs[job.id]

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            job_id, paths, force, source = item
            with self._lock:
                job = self._jobs.get(job_id)
                if job is None:
                    continue
                job.state, job.started_at = "running", datetime.now(UTC)
                tenant = job.tenant
            try:
                report = self._run(paths, tenant, force, _Progress(job.progress, self._lock), source)
            except FolioflowError as exc:
                self._finish(job, "failed", error=str(exc))
            except Exception as exc:  # noqa: BLE001 - a job's crash is its failure, never the server's
                log.exception("ingest job %s crashed", job_id)
                reason = (str(exc).splitlines() or [""])[0][:300]
                self._finish(job, "failed", error=f"ingest run failed: {type(exc).__name__}: {reason}")
            else:
                self._finish(job, "succeeded", report=report)

    def _finish(self, job: Job, state: Literal["succeeded", "failed"], error: str | None = None,
                report: Any = None) -> None:
        with self._lock:
            job.state = state
            job.finished_at = datetime.now(UTC)
            job.error = error
            if report is not None:
                job.documents = list(report.documents)
                job.counts = dict(Counter(d.status for d in report.documents))
