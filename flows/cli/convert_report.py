"""Output writing and the end-of-run summary of ``folioflow convert``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from folioflow.ocr.export import document_html, document_json, document_markdown, extract_figures
from folioflow.ocr.schema import Document, DocumentStatus, PageStatus

__all__ = ["ConvertStats", "write_outputs", "print_summary"]


@dataclass
class ConvertStats:
    """Counts for the summary table: documents by status, pages, pages per engine, failures."""

    documents: Counter = field(default_factory=Counter)
    pages: int = 0
    pages_done: int = 0
    failed_pages: int = 0
    fallback_pages: int = 0
    partial_pages: int = 0
    engines: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def page_done(self) -> None:
        self.pages_done += 1

    def add(self, name: str, document: Document) -> None:
        self.documents[document.status.value] += 1
        self.pages += len(document.pages)
        for page in document.pages:
            if page.status == PageStatus.FAILED:
                self.failed_pages += 1
                self.failures.append((f"{name} p.{page.number}", "; ".join(page.errors) or "failed"))
            else:
                self.engines[page.engine] += 1
                self.fallback_pages += page.status == PageStatus.FALLBACK
                self.partial_pages += page.status == PageStatus.PARTIAL
                if page.status == PageStatus.PARTIAL:
                    self.failures.append((f"{name} p.{page.number} (partial)", "; ".join(page.errors) or "partial"))
        if document.status == DocumentStatus.FAILED and document.errors:
            self.failures.append((name, "; ".join(document.errors)))

    def fail(self, name: str, reason: str) -> None:
        self.documents["failed"] += 1
        self.failures.append((name, reason))


def write_outputs(document: Document, source: Path, base: Path, formats: list[str], include_headers_footers: bool,
                  include_images: bool, password: str | None, dpi: int, max_image_width: int | None) -> list[Path]:
    """Write ``base.md`` / ``base.html`` / ``base.json`` (and ``base_images/``); return the paths."""
    base.parent.mkdir(parents=True, exist_ok=True)
    links = {}
    if include_images:
        links = extract_figures(document, source, base.parent / f"{base.name}_images", prefix="", password=password,
                                dpi=dpi, max_width=max_image_width)
    written = []
    if "markdown" in formats:
        path = base.with_name(base.name + ".md")
        path.write_text(document_markdown(document, include_headers_footers, links), encoding="utf-8")
        written.append(path)
    if "html" in formats:
        path = base.with_name(base.name + ".html")
        path.write_text(document_html(document, include_headers_footers, links), encoding="utf-8")
        written.append(path)
    if "json" in formats:
        path = base.with_name(base.name + ".json")
        path.write_text(document_json(document), encoding="utf-8")
        written.append(path)
    return written


def print_summary(console: Console, stats: ConvertStats, output: Path) -> None:
    """Print the summary table (documents, pages, engines' shares, pages/s) and the failures."""
    table = Table(title="folioflow convert", show_header=False)
    total_docs = sum(stats.documents.values())
    table.add_row("documents", f"{total_docs} ({', '.join(f'{k} {v}' for k, v in sorted(stats.documents.items()))})")
    table.add_row("pages", f"{stats.pages} ({stats.failed_pages} failed, {stats.partial_pages} partial, "
                           f"{stats.fallback_pages} fallback)")
    converted = sum(stats.engines.values())
    shares = ", ".join(f"{e} {n} ({n / converted:.0%})" for e, n in stats.engines.most_common()) if converted else "-"
    table.add_row("pages per engine", shares)
    rate = stats.pages / stats.seconds if stats.seconds > 0 else 0.0
    table.add_row("time", f"{stats.seconds:.1f} s, {rate:.2f} pages/s")
    table.add_row("output", str(output))
    console.print(table)
    if stats.failures:
        failures = Table(title="failures", show_lines=False)
        failures.add_column("document")
        failures.add_column("reason", overflow="fold")
        for name, reason in stats.failures:
            failures.add_row(name, reason)
        console.print(failures)
