"""The API server's job table (SQLite): jobs of a stopped server are marked failed when a server
on the same host starts again; other hosts' jobs (replicas sharing the file) and jobs that Prefect
runs are left alone; finished jobs beyond the limit are forgotten, oldest first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from folioflow.flows.service.jobs import INTERRUPTED, NOT_STARTED, JobTable
from folioflow.flows.service.models import Job


def job(name: str, state: str, minutes: int, **extra) -> Job:
    return Job(id=name, state=state, inputs=[name], created_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes),
               **extra)


def test_unfinished_jobs_of_this_host_are_marked_failed(tmp_path):
    path = tmp_path / "jobs.sqlite"
    mine, other = JobTable(path, host="api-1"), JobTable(path, host="api-2")
    mine.save(job("running", "running", 1))
    mine.save(job("queued", "queued", 2))
    mine.save(job("done", "succeeded", 3))
    mine.save(job("prefect", "running", 4, flow_run_id="5f0c8f3e-0000-4000-8000-000000000000"))
    other.save(job("elsewhere", "running", 5, tenant="acme"))
    mine.close()

    restarted = JobTable(path, host="api-1")
    assert sorted(restarted.fail_unfinished()) == ["queued", "running"]
    states = {j.id: (j.state, j.error) for j in restarted.all()}
    assert states == {"running": ("failed", INTERRUPTED), "queued": ("failed", NOT_STARTED), "done": ("succeeded", None),
                      "prefect": ("running", None), "elsewhere": ("running", None)}
    assert INTERRUPTED.startswith("server stopped while the job ran")
    assert [j.id for j in restarted.all("acme")] == ["elsewhere"]
    assert restarted.counts() == {"failed": 2, "succeeded": 1, "running": 2}
    assert sum(restarted.counts_by_kind().values()) == 5
    assert {state for _, state in restarted.counts_by_kind()} == {"failed", "succeeded", "running"}
    assert [j.id for j in restarted.all()][:2] == ["elsewhere", "prefect"]  # newest first

    restarted.forget_old(keep=1)  # finished jobs: done (3), queued (2), running (1) -> keep the newest
    assert {j.id for j in restarted.all()} == {"done", "prefect", "elsewhere"}
    assert restarted.get("running") is None and restarted.get("done").state == "succeeded"
