"""Prefect artifacts of an ingestion run: what a platform team reads in the Prefect UI.

* a **progress** artifact created when the run starts and updated while it runs
  (:class:`RunProgress`, at most every ``interval`` seconds, from the flow's main thread);
* a **table** artifact, one row per document: source, status, pages, chunks, engine(s), fallback,
  failed and cached pages, seconds, error;
* a **Markdown summary**: counts by status, pages and chunks, pages per engine, throughput (pages
  per second over the run's wall-clock time) and the failures with their reasons.

Artifact keys (``<flow>-documents``, ``<flow>-summary``) group the runs of one flow in the UI.
Secrets never reach artifacts: reports hold no passwords or storage options.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, cast
from uuid import UUID

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)

from folioflow.flows.report import DocumentReport, RunReport

__all__ = ["RunProgress", "RunStopped", "document_rows", "publish_run_artifacts", "report_from_rows", "summary_markdown"]


class RunStopped(KeyboardInterrupt):
    """The run is stopping (Ctrl-C or SIGTERM reached the flow's thread): raised in the document
    tasks' threads at their next page or document by :class:`RunProgress`, so that a document
    being converted stops there instead of running to its end. A :class:`KeyboardInterrupt`, so
    that no ``except Exception`` of a task keeps it going; the document is reported failed and is
    not recorded, and its finished pages stay in the OCR page cache for the next run."""


class RunProgress:
    """Counts documents and pages as tasks report them (thread-safe), forwards every event to an
    optional inner progress (the CLI's bar), and mirrors the fraction done into a Prefect progress
    artifact. Progress = (documents finished + pages done of documents in flight / their pages) /
    documents. After :meth:`stop`, the next :meth:`document_started` or :meth:`page_done` of any
    task raises :class:`RunStopped`."""

    def __init__(self, flow_name: str, documents: int, inner: Any = None, interval: float = 2.0):
        self.inner, self.documents, self.interval = inner, max(documents, 1), interval
        self._lock = threading.Lock()
        self._pages: dict[str, list[int]] = {}  # uri -> [done, total] for documents in flight
        self.finished = 0
        self.pages_done = 0
        self._last = 0.0
        self._stop = threading.Event()
        # called from synchronous flow code, where Prefect's async_dispatch runs the sync variant (a UUID)
        self._artifact = cast(UUID, create_progress_artifact(0.0, key=f"{flow_name}-progress",
                                                            description=f"{flow_name}: documents and pages done"))

    # -- IngestProgress (worker threads) ------------------------------------------------------
    def document_started(self, file, pages: int) -> None:
        self._check()
        with self._lock:
            self._pages[file.uri] = [0, max(pages, 1)]
        if self.inner:
            self.inner.document_started(file, pages)

    def page_done(self, file, page) -> None:
        with self._lock:
            self.pages_done += 1
            if file.uri in self._pages:
                self._pages[file.uri][0] += 1
        if self.inner:
            self.inner.page_done(file, page)
        self._check()

    def stop(self) -> None:
        """Make every task stop at its next page or document (:class:`RunStopped`)."""
        self._stop.set()

    def _check(self) -> None:
        if self._stop.is_set():
            raise RunStopped("the run is stopping")

    def document_skipped(self, file, pages: int) -> None:
        if self.inner:
            self.inner.document_skipped(file, pages)

    # -- flow thread -------------------------------------------------------------------------
    def document_finished(self, file) -> None:
        with self._lock:
            self.finished += 1
            self._pages.pop(file.uri, None)

    @property
    def fraction(self) -> float:
        with self._lock:
            partial = sum(done / total for done, total in self._pages.values())
            return min(1.0, (self.finished + partial) / self.documents)

    def publish(self, force: bool = False) -> None:
        """Update the progress artifact (percent) if ``interval`` seconds passed or ``force``."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        update_progress_artifact(self._artifact, round(100.0 * self.fraction, 1),
                                 description=f"{self.finished}/{self.documents} documents, {self.pages_done} pages converted")


def document_rows(report: RunReport) -> list[dict[str, Any]]:
    """One table row per document (values are strings or numbers); :func:`report_from_rows` reads
    them back (the API server does, for ingest jobs that Prefect ran)."""
    rows = []
    for doc in report.documents:
        engines = Counter(doc.engines)
        rows.append({
            "source": doc.source,
            "doc_id": doc.doc_id or "",
            "status": doc.status,
            "change": doc.change or "",
            "pages": doc.pages,
            "chunks": doc.chunks,
            "engine": ", ".join(f"{name} x{n}" for name, n in sorted(engines.items())),
            "fallback pages": ",".join(map(str, doc.fallback_pages)),
            "failed pages": ",".join(map(str, doc.failed_pages)),
            "cached pages": len(doc.cached_pages),
            "seconds": round(doc.seconds, 2),
            "error": doc.error or "",
        })
    return rows


def report_from_rows(rows: list[dict[str, Any]], tenant: str | None = None) -> list[DocumentReport]:
    """The per-document records of :func:`document_rows`' ``rows`` (the table artifact's data):
    source, doc id, status, change, pages, chunks, failed and fallback pages, seconds and error
    (engines per page are not in the table: left empty); ``tenant`` set on each. Raises
    :class:`pydantic.ValidationError` for a row that is not such a record."""

    def numbers(text: Any) -> list[int]:
        return [int(n) for n in str(text or "").split(",") if n.strip().isdigit()]

    return [DocumentReport(source=str(row["source"]), doc_id=row.get("doc_id") or None, status=row["status"],
                           change=row.get("change") or None, pages=int(row.get("pages") or 0),
                           chunks=int(row.get("chunks") or 0), failed_pages=numbers(row.get("failed pages")),
                           fallback_pages=numbers(row.get("fallback pages")),
                           seconds=float(row.get("seconds") or 0.0), error=row.get("error") or None, tenant=tenant)
            for row in rows]


def summary_markdown(report: RunReport, title: str) -> str:
    """The Markdown summary of a run: counts, pages, chunks, engines, throughput, failures."""
    lines = [f"# {title}", "", "| metric | value |", "| --- | ---: |", f"| documents | {len(report.documents)} |"]
    for status in ("indexed", "skipped", "failed", "pruned"):
        lines.append(f"| {status} | {report.count(status)} |")
    cached = sum(len(d.cached_pages) for d in report.documents if d.status == "indexed")
    lines += [f"| pages processed | {report.pages_processed} |",
              f"| pages from the OCR cache | {cached} |",
              f"| chunks indexed | {report.chunks_indexed} |",
              f"| seconds | {report.seconds:.1f} |",
              f"| **pages per second** | **{report.pages_per_second:.2f}** |"]
    shares = report.engine_shares()
    if shares:
        lines += ["", "Pages by engine: " + ", ".join(f"{k} {v}" for k, v in sorted(shares.items()))]
    failures = report.failures()
    if failures:
        lines += ["", "## Failures", ""] + [f"- `{d.source}`: {d.error}" for d in failures]
    return "\n".join(lines) + "\n"


def publish_run_artifacts(report: RunReport, flow_name: str) -> None:
    """Create the table and Markdown summary artifacts of ``report`` for the current flow run."""
    rows = document_rows(report)
    if rows:
        create_table_artifact(rows, key=f"{flow_name}-documents",
                              description=f"{flow_name}: one row per document (status, pages, chunks, engine, error)")
    create_markdown_artifact(summary_markdown(report, f"folioflow {flow_name} run"), key=f"{flow_name}-summary",
                             description=f"{flow_name}: totals and throughput")
