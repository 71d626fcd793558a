"""``folioflow ingest`` and ``reindex`` through a running API server: queue the documents as jobs
(:func:`folioflow.flows.service.client.submit_paths`: by path when the server may read them, else
uploaded; ``POST /v1/reindex``), follow the jobs' progress on the page bar, and print the same run
summary, failures table and ``--report`` file as a local run from the jobs' report records."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from folioflow.flows.cli.options import fail
from folioflow.flows.cli.ui import page_progress, print_run, stderr
from folioflow.flows.report import DocumentReport, RunReport

__all__ = ["ingest_through", "reindex_through", "report_of"]


def report_of(jobs: list[dict[str, Any]]) -> RunReport:
    """One :class:`RunReport` of finished jobs (``Job`` JSON): their documents in order, started
    at the first job's start, ``seconds`` the sum of the jobs' run times (queue waits excluded)."""
    documents = [DocumentReport.model_validate(d) for job in jobs for d in job.get("documents") or []]
    starts = [datetime.fromisoformat(j["started_at"]) for j in jobs if j.get("started_at")]
    ends = [datetime.fromisoformat(j["finished_at"]) for j in jobs if j.get("finished_at")]
    seconds = sum((datetime.fromisoformat(j["finished_at"]) - datetime.fromisoformat(j["started_at"])).total_seconds()
                  for j in jobs if j.get("started_at") and j.get("finished_at"))
    report = RunReport(documents=documents, seconds=seconds, finished_at=max(ends) if ends else None)
    if starts:
        report.started_at = min(starts)
    return report


def ingest_through(client: Any, paths: list[str], tenant: str | None = None, force: bool = False,
                   report: Path | None = None, progress: bool = True) -> None:
    """Ingest ``paths`` through the server ``client`` (an
    :class:`~folioflow.indexing.remote.ApiClient`, closed here) and print the run as a local
    ``ingest`` does. Exits 1 (reason on stderr) when the server refuses the request, cannot be
    reached, or a job could not proceed (its ``error``); documents that failed are in the summary
    and report, and exit 0 as locally."""
    from folioflow.flows.service.client import submit_paths, wait_job
    from folioflow.ocr.errors import FolioflowError

    with client, page_progress(progress) as bar:
        try:
            jobs = submit_paths(client, paths, tenant=tenant, force=force,
                                notice=lambda line: stderr.print(f"note: {line}", markup=False))
            latest = {job["id"]: job for job in jobs}

            def show(state: dict[str, Any]) -> None:
                latest[state["id"]] = state
                if bar is not None:
                    done = sum(j["progress"]["pages_done"] for j in latest.values())
                    total = sum(j["progress"]["pages_total"] for j in latest.values())
                    bar.set_pages(done, total, f"server job {state['id'][:8]}: {state['state']}")

            finished = [wait_job(client, job["id"], on_poll=show) for job in jobs]
        except FolioflowError as exc:
            fail(f"ingest cannot proceed: {exc}")
    failed = [job for job in finished if job["state"] == "failed"]
    if failed:
        fail(f"ingest cannot proceed: server job {failed[0]['id']} failed: {failed[0].get('error') or 'no reason given'}")
    print_run(report_of(finished), report)
    for job in finished:
        if job.get("flow_run_id") and not job.get("documents"):
            stderr.print(f"note: server job {job['id']} ran as Prefect flow run {job['flow_run_id']}: its per-document "
                         "report is in that flow run's artifacts (Prefect UI), not in the summary above", markup=False)


def reindex_through(client: Any, docs: list[str] | None = None, force: bool = False, report: Path | None = None,
                    progress: bool = True) -> None:
    """``folioflow reindex`` through the server ``client`` (closed here): one ``POST /v1/reindex``
    job, followed to its end and printed as a local run. Exits 1 (reason on stderr) when the server
    refuses it (a ``--doc`` that names no document: 404), cannot be reached, or the job could not
    proceed."""
    from folioflow.flows.service.client import wait_job
    from folioflow.ocr.errors import FolioflowError

    with client, page_progress(progress) as bar:
        try:
            job = client.request("POST", "/v1/reindex", json={"doc": docs or None, "force": force})

            def show(state: dict[str, Any]) -> None:
                if bar is not None:
                    bar.set_pages(state["progress"]["pages_done"], state["progress"]["pages_total"],
                                  f"server job {state['id'][:8]}: {state['state']}")

            finished = wait_job(client, job["id"], on_poll=show)
        except FolioflowError as exc:
            fail(f"reindex cannot proceed: {exc}")
    if finished["state"] == "failed":
        fail(f"reindex cannot proceed: server job {finished['id']} failed: {finished.get('error') or 'no reason given'}")
    print_run(report_of([finished]), report, title="Reindex summary", rechunked=True)
