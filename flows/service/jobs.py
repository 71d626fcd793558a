"""Jobs of the API server: ingest runs and OCR of large documents, kept in a small SQLite table
(:class:`JobTable`) so that they outlive the process, and run one at a time, in the order queued,
by one worker thread (:class:`JobQueue`).

Ingest jobs run the existing ingest flow (:func:`folioflow.flows.ingest.run_ingest`) with the
server's embedder and store lent to each run (:class:`~folioflow.flows.pipeline.Shared`), or are
handed to a Prefect deployment (:class:`PrefectIngest`) so that work pools run them instead of the
API process. A job that was queued or running when its server stopped (killed, crashed) is marked
``failed`` when a server on the same table starts again on the same host: re-submitting it is
safe, because an ingest run skips unchanged documents and replaces a document's points whole.

A server that stops in order (SIGTERM, Ctrl-C: uvicorn's shutdown, then :meth:`JobQueue.close`)
tells the running job to stop the way ``folioflow ingest`` is stopped: a :class:`KeyboardInterrupt`
(:class:`JobStopped`), raised in the job's own threads at its next page or document (from its
:class:`Progress`), unwinds the run through its ``finally`` clauses; finished OCR pages stay in
the page cache, documents already indexed stay indexed, and the job is marked ``failed`` with
:data:`INTERRUPTED` before the process exits.
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from folioflow.flows.report import DocumentReport
from folioflow.flows.service.models import Job, JobProgress, UploadedFile
from folioflow.ocr.errors import ConfigurationError, FolioflowError

__all__ = ["INTERRUPTED", "NOT_STARTED", "STOP_GRACE", "JobQueue", "JobStopped", "JobTable", "OrchestratorError",
           "PrefectIngest"]

log = logging.getLogger(__name__)

#: ``error`` of a job that was running when its server stopped.
INTERRUPTED = "server stopped while the job ran; submit it again (unchanged documents are skipped)"
#: ``error`` of a job that was still queued when its server stopped.
NOT_STARTED = "server stopped before the job ran; submit it again"
#: Seconds a stopping server waits for its running job to reach its next page or document and end.
STOP_GRACE = 30.0

Runner = Callable[[dict[str, Any], "Progress"], Any]


class JobTable:
    """The jobs, one row each (``id``, ``host``, ``state``, ``tenant``, ``created_at`` and the
    :class:`Job` as JSON), in the SQLite file ``path`` (WAL mode; several server processes on one
    host may share it: each marks only its own host's unfinished jobs at start). Thread-safe."""

    def __init__(self, path: Path, host: str | None = None):
        self.path = Path(path)
        self.host = host or socket.gethostname()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, host TEXT NOT NULL, "
                             "state TEXT NOT NULL, tenant TEXT, created_at TEXT NOT NULL, body TEXT NOT NULL)")
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open the job table {self.path}: {exc}") from exc

    def save(self, job: Job) -> None:
        """Insert or replace ``job``'s row (its internal ``uploads`` included, which answers leave out)."""
        body = job.model_dump(mode="json")
        if job.uploads:
            body["uploads"] = [asdict(upload) for upload in job.uploads]
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO jobs (id, host, state, tenant, created_at, body) "
                             "VALUES (?, ?, ?, ?, ?, ?)",
                             (job.id, self.host, job.state, job.tenant, job.created_at.isoformat(),
                              json.dumps(body)))

    def get(self, job_id: str) -> Job | None:
        """The job with ``job_id``, or None."""
        with self._lock:
            row = self._db.execute("SELECT body FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return Job.model_validate_json(row[0]) if row else None

    def all(self, tenant: str | None = None) -> list[Job]:
        """The jobs (of ``tenant`` only, when given), newest first."""
        with self._lock:
            if tenant is None:
                rows = self._db.execute("SELECT body FROM jobs ORDER BY created_at DESC").fetchall()
            else:
                rows = self._db.execute("SELECT body FROM jobs WHERE tenant = ? ORDER BY created_at DESC",
                                        (tenant,)).fetchall()
        return [Job.model_validate_json(body) for (body,) in rows]

    def counts(self) -> Counter[str]:
        """Jobs per state."""
        with self._lock:
            return Counter(dict(self._db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall()))

    def counts_by_kind(self) -> Counter[tuple[str, str]]:
        """Jobs per (kind, state): kind ``ingest``, ``ocr`` or ``reindex`` (the job's ``kind``)."""
        with self._lock:
            rows = self._db.execute("SELECT COALESCE(json_extract(body, '$.kind'), 'ingest'), state, COUNT(*) "
                                    "FROM jobs GROUP BY 1, 2").fetchall()
        return Counter({(str(kind), str(state)): int(n) for kind, state, n in rows})

    def unfinished(self) -> list[Job]:
        """The queued and running jobs (every host's), oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT body FROM jobs WHERE state IN ('queued', 'running') "
                                    "ORDER BY created_at").fetchall()
        return [Job.model_validate_json(body) for (body,) in rows]

    def forget_old(self, keep: int) -> None:
        """Delete finished jobs beyond the newest ``keep`` ones."""
        with self._lock:
            self._db.execute("DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('succeeded', 'failed') "
                             "ORDER BY created_at DESC LIMIT -1 OFFSET ?)", (keep,))

    def fail_unfinished(self) -> list[str]:
        """Mark this host's queued and running jobs ``failed`` (their server stopped: this runs when
        a server starts); returns their ids."""
        return [job.id for job in self.fail_unfinished_jobs()]

    def fail_unfinished_jobs(self) -> list[Job]:
        """:meth:`fail_unfinished`, returning the jobs as saved."""
        with self._lock:
            rows = self._db.execute("SELECT body FROM jobs WHERE host = ? AND state IN ('queued', 'running')",
                                    (self.host,)).fetchall()
        failed = []
        for (body,) in rows:
            job = Job.model_validate_json(body)
            if job.flow_run_id is not None:  # Prefect runs it: its state lives there, not in this process
                continue
            job.error = INTERRUPTED if job.state == "running" else NOT_STARTED
            job.state, job.finished_at = "failed", datetime.now(UTC)
            self.save(job)
            failed.append(job)
        return failed

    def close(self) -> None:
        with self._lock:
            self._db.close()


class JobStopped(KeyboardInterrupt):
    """The server is stopping: raised in a running job's threads at its next page or document (by
    :class:`Progress`). A :class:`KeyboardInterrupt`, as SIGTERM is for ``folioflow ingest``
    (:func:`folioflow.flows.cli.terminate_like_interrupt`), so that no ``except Exception`` of a
    document's task keeps the run going: the task crashes, its document is reported failed and is
    not recorded, and the run ends through its ``finally`` clauses."""


class Progress:
    """:class:`~folioflow.flows.tasks.IngestProgress` that counts into a job and saves it (worker
    threads); OCR jobs call :meth:`page_done` for each converted page. Once ``stop`` is set, the
    next :meth:`document_started` or :meth:`page_done` raises :class:`JobStopped`."""

    def __init__(self, job: Job, save: Callable[[], None], lock: threading.Lock,
                 stop: threading.Event | None = None):
        self.job, self.save, self.lock, self.stop = job, save, lock, stop
        self.stopped = False  # JobStopped was raised (in some thread of the job)

    def _check(self) -> None:
        if self.stop is not None and self.stop.is_set():
            self.stopped = True
            raise JobStopped("the server is stopping")

    @property
    def progress(self) -> JobProgress:
        return self.job.progress

    def document_started(self, file: Any, pages: int) -> None:
        with self.lock:
            self.progress.documents_started += 1
            self.progress.pages_total += pages
        self.save()
        self._check()

    def page_done(self, file: Any, page: Any) -> None:
        with self.lock:
            self.progress.pages_done += 1
        self.save()
        self._check()

    def document_skipped(self, file: Any, pages: int) -> None:
        with self.lock:
            self.progress.documents_skipped += 1
        self.save()


@dataclass
class _Item:
    job: Job
    params: dict[str, Any] = field(default_factory=dict)


class JobQueue:
    """The job table and the worker thread. ``runners``: ``{kind: run(params, progress)}``: an
    ``ingest`` or ``reindex`` runner returns a :class:`~folioflow.flows.report.RunReport`, an ``ocr`` runner an
    :class:`~folioflow.flows.service.models.OcrResult`; ``table``: where jobs are kept (marked
    failed at start when unfinished, see :meth:`JobTable.fail_unfinished`); ``keep``: finished jobs
    remembered; ``prefect``: hand ingest jobs to this deployment instead of running them here;
    ``on_prefect_end``: called with such a job once it is seen ended (by :meth:`get`), its report
    read back (errors it raises are logged); ``on_interrupted``: called with each job that this
    start marked failed (its server stopped before it ended; errors it raises are logged)."""

    def __init__(self, runners: dict[str, Runner], table: JobTable, keep: int = 1000,
                 prefect: PrefectIngest | None = None, on_prefect_end: Callable[[Job], Any] | None = None,
                 on_interrupted: Callable[[Job], Any] | None = None):
        self._runners = runners
        self._on_prefect_end = on_prefect_end
        self._table = table
        self._keep = keep
        self._prefect = prefect
        self._lock = threading.Lock()
        self._stop = threading.Event()
        interrupted = table.fail_unfinished_jobs()
        if interrupted:
            log.warning("%d job(s) were unfinished when the server stopped: marked failed", len(interrupted))
        for job in interrupted:
            try:
                if on_interrupted is not None:
                    on_interrupted(job)
            except Exception:  # noqa: BLE001 - clean-up after a job never stops the server's start
                log.exception("after interrupted job %s", job.id)
        self._queue: queue.Queue[_Item | None] = queue.Queue()
        self._active: dict[str, _Item] = {}  # the job thread's jobs queued or running, by id (under _lock)
        self._thread = threading.Thread(target=self._work, name="folioflow-jobs", daemon=True)
        self._thread.start()

    def submit(self, inputs: list[str], paths: list[str], tenant: str | None, force: bool = False,
               source: str = "default", retenant: bool = True, uploads: list[UploadedFile] | None = None) -> Job:
        """Queue an ingest of ``paths`` (shown as ``inputs``) for ``tenant``, recorded under the
        source name ``source``; ``retenant`` False: a document indexed for another tenant (or for
        none) fails instead of moving to ``tenant`` (the settings' ``retenant``); ``uploads``: the
        files the request wrote (the job's ``uploads`` and the runner's ``params["uploads"]``, for
        the clean-up at its end). Returns the job. With a Prefect deployment configured the job is
        a flow run of it (raises :class:`FolioflowError` when Prefect refuses it)."""
        params = {"paths": paths, "force": force, "source": source, "tenant": tenant, "retenant": retenant,
                  "uploads": list(uploads or [])}
        job = self._new("ingest", inputs, tenant)
        job.uploads = list(uploads or [])
        if self._prefect is not None:
            job.flow_run_id = self._prefect.submit(params)
            self._table.save(job)
            self._table.forget_old(self._keep)
            return job.model_copy(deep=True)
        return self._enqueue(job, params)

    def submit_ocr(self, name: str, pages: int, tenant: str | None, params: dict[str, Any]) -> Job:
        """Queue an OCR of one document (``name``, ``pages`` selected); ``params`` go to the
        ``ocr`` runner and are never saved (they hold the document and its password)."""
        job = self._new("ocr", [name], tenant)
        job.progress.documents_started, job.progress.pages_total = 1, pages
        return self._enqueue(job, params)

    def submit_reindex(self, doc_ids: list[str], shown: list[str], tenant: str | None, force: bool = False) -> Job:
        """Queue a re-chunking of the kept conversions of ``doc_ids`` (shown as ``shown``: what the
        caller named, or ``["all documents"]``) for ``tenant``; runs in this process also when
        Prefect runs ingest jobs (it reads no source: nothing for a worker elsewhere to do)."""
        job = self._new("reindex", shown, tenant)
        return self._enqueue(job, {"doc_ids": doc_ids, "force": force})

    def _new(self, kind: Literal["ingest", "ocr", "reindex"], inputs: list[str], tenant: str | None) -> Job:
        return Job(id=uuid.uuid4().hex, kind=kind, state="queued", inputs=inputs, tenant=tenant,
                   created_at=datetime.now(UTC))

    def _enqueue(self, job: Job, params: dict[str, Any]) -> Job:
        item = _Item(job, params)
        with self._lock:
            self._active[job.id] = item
        self._table.save(job)
        self._table.forget_old(self._keep)
        self._queue.put(item)
        return job.model_copy(deep=True)

    def unfinished(self, refresh: bool = True) -> list[tuple[Job, dict[str, Any]]]:
        """The ingest and reindex jobs of this server that are queued or running, each with what it
        writes: ``{"paths": [...]}`` (an ingest job's files and folders) or ``{"doc_ids": [...]}``
        (a reindex job's documents). First those of the job thread, in the order queued; then the
        flow runs that Prefect runs, from the job table: an upload's paths are its ``uploads``, a
        path job's its ``inputs`` (the path given), and ``refresh`` reads each run's state from
        Prefect first (unreachable: the state last seen)."""
        with self._lock:
            mine = [(item.job.model_copy(deep=True), item.params) for item in self._active.values()
                    if item.job.kind in ("ingest", "reindex")]
        if self._prefect is None:
            return mine
        runs: list[tuple[Job, dict[str, Any]]] = []
        for job in self._table.unfinished():
            if job.flow_run_id is None or job.kind != "ingest":
                continue
            if refresh:
                seen = self.get(job.id)
                if seen is None or seen.state not in ("queued", "running"):
                    continue
                job = seen
            runs.append((job, {"paths": [u.path for u in job.uploads] or list(job.inputs)}))
        return mine + runs

    def get(self, job_id: str) -> Job | None:
        """The job (its state refreshed from Prefect when Prefect runs it), or None."""
        job = self._table.get(job_id)
        if job is None or self._prefect is None or job.flow_run_id is None or job.state not in ("queued", "running"):
            return job
        if self._prefect.refresh(job):
            self._table.save(job)
            if job.state in ("succeeded", "failed") and self._on_prefect_end is not None:
                try:
                    self._on_prefect_end(job.model_copy(deep=True))
                except Exception:  # noqa: BLE001 - clean-up after a job never fails the request
                    log.exception("after Prefect job %s", job.id)
        return job

    def list(self, tenant: str | None = None) -> list[Job]:
        """The jobs (of ``tenant`` only, when given), newest first."""
        return self._table.all(tenant)

    def counts(self) -> Counter[str]:
        """Jobs per state."""
        return self._table.counts()

    def counts_by_kind(self) -> Counter[tuple[str, str]]:
        """Jobs per (kind, state), see :meth:`JobTable.counts_by_kind`."""
        return self._table.counts_by_kind()

    def close(self, timeout: float = STOP_GRACE) -> None:
        """Stop taking jobs and tell the running one to stop at its next page or document
        (:class:`JobStopped`); wait up to ``timeout`` seconds for it to end, marked ``failed``
        (:data:`INTERRUPTED`). Jobs still queued stay queued: the next start marks them failed. A
        job that does not end in time (a page that takes longer; a task runner other than
        ``thread``, whose documents report no progress here) is left to the process's end, and
        marked failed by the next start."""
        self._stop.set()
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("the running job did not stop within %.0f s; it is marked failed at the next start", timeout)

    def _save(self, job: Job) -> None:
        with self._lock:
            snapshot = job.model_copy(deep=True)
        self._table.save(snapshot)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None or self._stop.is_set():  # stopping: what is still queued stays queued
                return
            job = item.job
            with self._lock:
                job.state, job.started_at = "running", datetime.now(UTC)
            self._save(job)
            progress = Progress(job, partial(self._save, job), self._lock, self._stop)
            try:
                result = self._runners[job.kind](item.params, progress)
            except JobStopped:
                log.warning("%s job %s stopped: the server is stopping", job.kind, job.id)
                self._finish(job, "failed", error=INTERRUPTED)
            except FolioflowError as exc:
                self._finish(job, "failed", error=str(exc))
            except Exception as exc:  # noqa: BLE001 - a job's crash is its failure, never the server's
                log.exception("%s job %s crashed", job.kind, job.id)
                reason = (str(exc).splitlines() or [""])[0][:300]
                self._finish(job, "failed", error=f"{job.kind} run failed: {type(exc).__name__}: {reason}")
            else:
                if progress.stopped:  # its documents' tasks were stopped (each reported failed)
                    log.warning("%s job %s stopped: the server is stopping", job.kind, job.id)
                    self._finish(job, "failed", error=INTERRUPTED, result=result)
                else:
                    self._finish(job, "succeeded", result=result)

    def _finish(self, job: Job, state: Literal["succeeded", "failed"], error: str | None = None,
                result: Any = None) -> None:
        with self._lock:
            self._active.pop(job.id, None)
            job.state = state
            job.finished_at = datetime.now(UTC)
            job.error = error
            if result is not None and job.kind in ("ingest", "reindex"):
                job.documents = list(result.documents)
                job.counts = dict(Counter(d.status for d in result.documents))
            elif result is not None:
                job.ocr = result
                job.counts = dict(Counter(p.status for p in result.pages))
        self._save(job)


#: Prefect flow-run state types -> job states.
_PREFECT_STATES: dict[str, Literal["queued", "running", "succeeded", "failed"]] = {
    "SCHEDULED": "queued", "PENDING": "queued", "PAUSED": "queued", "RUNNING": "running", "CANCELLING": "running",
    "COMPLETED": "succeeded", "FAILED": "failed", "CRASHED": "failed", "CANCELLED": "failed",
}


class PrefectIngest:
    """Ingest jobs as flow runs of a Prefect deployment (``deployment``: ``"<flow>/<deployment>"``,
    as in ``infra/prefect.yaml``: ``ingest/folioflow-ingest``), which the work pool's workers run;
    the server then holds no job state of its own. Uses the Prefect API of ``PREFECT_API_URL``."""

    def __init__(self, deployment: str):
        self.deployment = deployment

    def submit(self, params: dict[str, Any]) -> str:
        """Create a flow run of the deployment for an ingest job's ``params`` (``paths``,
        ``force``, ``source``, ``tenant``); returns its id. Raises :class:`FolioflowError` when
        Prefect cannot be reached or has no such deployment."""
        from prefect.deployments import run_deployment

        overrides = {"source_name": params["source"]}
        if params.get("tenant"):
            overrides["tenant"] = params["tenant"]
        if not params.get("retenant", True):
            overrides["retenant"] = False
        try:
            run = run_deployment(self.deployment, timeout=0, tags=["folioflow-api"], as_subflow=False,
                                 parameters={"paths": params["paths"], "force": params["force"],
                                             "overrides": overrides})
        except Exception as exc:  # noqa: BLE001 - Prefect's client errors: the job cannot be queued
            reason = (str(exc).splitlines() or [""])[0][:300]
            raise OrchestratorError(f"cannot start a run of the Prefect deployment {self.deployment!r}: "
                                f"{type(exc).__name__}: {reason}") from None
        return str(run.id)  # type: ignore[union-attr]

    def refresh(self, job: Job) -> bool:
        """Update ``job`` from its flow run's state; returns whether it changed. Prefect being
        unreachable leaves the job as it was (logged)."""
        from prefect.client.orchestration import get_client

        try:
            with get_client(sync_client=True) as client:
                run = client.read_flow_run(uuid.UUID(job.flow_run_id))
        except Exception as exc:  # noqa: BLE001 - an unreachable API: the state is unknown for now
            log.warning("cannot read flow run %s: %s", job.flow_run_id, type(exc).__name__)
            return False
        state = run.state
        new = _PREFECT_STATES.get(state.type.value if state is not None else "SCHEDULED", "queued")
        if new == job.state:
            return False
        job.state = new
        if state is not None and new in ("succeeded", "failed"):
            job.finished_at = state.timestamp
            job.documents = self.documents(job.flow_run_id, job.tenant)
            job.counts = dict(Counter(d.status for d in job.documents))
            if new == "failed":
                job.error = f"Prefect flow run {state.name}: {(state.message or '').splitlines()[0][:300] if state.message else ''}"
        elif new == "running" and state is not None:
            job.started_at = state.timestamp
        return True

    def documents(self, flow_run_id: str | None, tenant: str | None) -> list[DocumentReport]:
        """The per-document report of a finished flow run, read back from the table artifact that
        the run published (:func:`folioflow.flows.artifacts.publish_run_artifacts`, key
        ``ingest-documents``; its data lives in the Prefect API, so no result storage is shared
        with the workers). Empty when the run published none (it failed before the end) or
        Prefect cannot be reached (logged)."""
        import json

        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

        from folioflow.flows.artifacts import report_from_rows

        if flow_run_id is None:
            return []
        flow = self.deployment.split("/", 1)[0]
        wanted = ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[uuid.UUID(flow_run_id)]),
                                key=ArtifactFilterKey(any_=[f"{flow}-documents"]))
        try:
            with get_client(sync_client=True) as client:
                artifacts = client.read_artifacts(artifact_filter=wanted)
            if not artifacts:
                return []
            data = artifacts[0].data  # the rows as a JSON string (Prefect's TableArtifact.format)
            rows = json.loads(data) if isinstance(data, str) else data
            if not isinstance(rows, list):
                raise TypeError(f"the table artifact holds {type(rows).__name__}, not rows")
            return report_from_rows(rows, tenant)
        except Exception as exc:  # noqa: BLE001 - unreachable API or an unexpected table: no report
            log.warning("cannot read the report of flow run %s: %s", flow_run_id, type(exc).__name__)
            return []


class OrchestratorError(FolioflowError):
    """Prefect refused or could not take a flow run (the API answers 503)."""
