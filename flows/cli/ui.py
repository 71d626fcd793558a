"""Terminal output shared by the commands: a page progress bar and run summary tables (rich).

Progress goes to standard error so ``--json`` output on standard output stays machine-readable.
Standard output (:data:`stdout`) is as wide as the terminal; piped or redirected (not a terminal)
it is :data:`PIPED_WIDTH` columns wide unless ``COLUMNS`` says otherwise, so a table row stays one
line to read or grep instead of wrapping at 80 columns (rich's default width off a terminal) or
at the width of a terminal that standard error still shows.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console, ConsoleDimensions
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from folioflow.flows.report import RunReport

__all__ = ["PIPED_WIDTH", "OutputConsole", "stderr", "stdout", "PageProgress", "page_progress", "summary_table",
           "failures_table"]

#: Columns of standard output when it is not a terminal and ``COLUMNS`` is unset: wider than any
#: row the commands print, so none wraps.
PIPED_WIDTH = 10_000


class OutputConsole(Console):
    """A rich console whose width, when it writes to no terminal (a pipe, a file) and ``COLUMNS``
    is unset, is :data:`PIPED_WIDTH`: tables then print each row on one line. Decided at each
    print, so it follows whatever ``sys.stdout`` is then (typer's test runner swaps it)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)  # type: ignore[attr-defined]  # rich's property
        if not self.is_terminal and not os.environ.get("COLUMNS", "").isdigit():  # rich reads only digits
            return ConsoleDimensions(PIPED_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


stderr = Console(stderr=True)
stdout = OutputConsole(soft_wrap=True)


class PageProgress:
    """A rich page progress bar implementing :class:`folioflow.flows.ingest.IngestProgress` (thread-safe):
    the total grows as documents are opened; skipped documents count as done at once."""

    def __init__(self, progress: Progress):
        self._progress = progress
        self._task = progress.add_task("pages", total=0)
        self._lock = threading.Lock()
        self.total = 0

    def document_started(self, file, pages: int) -> None:
        with self._lock:
            self.total += pages
            self._progress.update(self._task, total=self.total, description=file.path)

    def page_done(self, file, page) -> None:
        with self._lock:
            self._progress.update(self._task, advance=1, description=file.path)

    def document_skipped(self, file, pages: int) -> None:
        with self._lock:
            self.total += pages
            self._progress.update(self._task, total=self.total, advance=pages, description=f"{file.path} (unchanged)")

    def set_pages(self, done: int, total: int, description: str) -> None:
        """Show ``done`` of ``total`` pages (counts reported by someone else: an API server's jobs)."""
        with self._lock:
            self.total = total
            self._progress.update(self._task, total=total, completed=done, description=description)


@contextmanager
def page_progress(enabled: bool = True) -> Iterator[PageProgress | None]:
    """A live progress bar on standard error (``None`` when disabled or not a terminal and
    ``enabled`` is false); cleared at the end when it counted no page."""
    if not enabled:
        yield None
        return
    columns = (TextColumn("[bold]{task.description:<40.40}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("pages"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=stderr, transient=False) as progress:
        try:
            yield PageProgress(progress)
        finally:
            if not any(task.total for task in progress.tasks):
                # nothing was counted (an error before the first page, or nothing to do): no empty
                # "0/0 pages" bar left under the error or the summary
                progress.live.transient = True


def summary_table(report: RunReport, title: str = "Run summary", rechunked: bool = False) -> Table:
    """Documents by status (and the indexed ones with no text: pages but 0 chunks), pages, chunks,
    pages per engine, failures, pages per second;
    ``rechunked`` (``folioflow reindex``: no page converted): documents re-chunked, skipped and
    failed, their pages and chunks, seconds."""
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("documents", str(len(report.documents)))
    if rechunked:
        table.add_row("  re-chunked", str(report.count("indexed")))
        table.add_row("  skipped", str(report.count("skipped")))
        table.add_row("  failed", str(report.count("failed")))
        table.add_row("pages of the re-chunked documents", str(report.pages_processed))
        table.add_row("chunks indexed", str(report.chunks_indexed))
        table.add_row("seconds (model load included)", f"{report.seconds:.1f}")
        return table
    for status in ("indexed", "skipped", "failed", "pruned"):
        if status in ("indexed", "skipped", "failed") or report.count(status):
            table.add_row(f"  {status}", str(report.count(status)))
            if status == "indexed":  # blank pages only (an empty form, a blank scan): searchable by nothing
                empty = sum(1 for d in report.documents if d.status == "indexed" and d.pages and not d.chunks)
                if empty:
                    table.add_row("    with no text (0 chunks)", str(empty))
    table.add_row("pages processed", str(report.pages_processed))
    for engine, pages in sorted(report.engine_shares().items()):
        share = pages / max(report.pages_processed, 1)
        table.add_row(f"  pages by {engine}", f"{pages} ({share:.0%})")
    fallback = sum(len(d.fallback_pages) for d in report.documents)
    failed_pages = sum(len(d.failed_pages) for d in report.documents)
    partial = sum(len(d.partial_pages) for d in report.documents if d.status != "skipped")  # this run's pages
    if fallback or failed_pages or partial:
        table.add_row("  pages fallback / partial / failed", f"{fallback} / {partial} / {failed_pages}")
    rerouted = sum(len(d.rerouted_pages) for d in report.documents)
    if rerouted:
        table.add_row("  pages re-routed (fidelity)", str(rerouted))
    table.add_row("chunks indexed", str(report.chunks_indexed))
    table.add_row("seconds (flow run, model load included)", f"{report.seconds:.1f}")
    table.add_row("pages per second", f"{report.pages_per_second:.2f}")
    return table


def failures_table(report: RunReport) -> Table | None:
    """One row per failed document with its reason, or ``None`` when nothing failed."""
    failed = report.failures()
    if not failed:
        return None
    table = Table(title="Failures", show_header=True, header_style="bold red")
    table.add_column("document", overflow="fold")
    table.add_column("reason", overflow="fold")
    for doc in failed:  # plain text: a reason such as "pip install 'folioflow[ocr]'" is not rich markup
        table.add_row(Text(doc.source), Text(doc.error or "unknown"))
    return table


def print_run(result: RunReport, report: Path | None = None, title: str = "Run summary", rechunked: bool = False) -> None:
    """Print a run's summary table (``rechunked``: a ``reindex`` run's, see :func:`summary_table`)
    and failures (stdout) and write ``report`` (JSON, one record per document, see
    :meth:`folioflow.flows.report.RunReport.write`) when given."""
    stdout.print(summary_table(result, title=title, rechunked=rechunked))
    failures = failures_table(result)
    if failures is not None:
        stdout.print(failures)
    if report:
        try:
            result.write(report)
        except OSError as exc:  # checked at the start (options.check_report); the disk may have filled since
            from folioflow.flows.cli.options import fail

            fail(f"cannot write the report {report}: {exc.strerror or exc}")
        stderr.print(f"report: {report}")
