"""``python -m folioflow.flows.reliability``: build the reliability batch, ingest it, print the figures."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)


def figures_table(figures) -> Table:
    table = Table(title="Reliability figures")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("must be", justify="right")
    rows = [
        ("files tried", figures.tried, ""),
        ("ingested", figures.ingested, ""),
        ("rejected with a reason", figures.rejected, ""),
        ("crashed", figures.crashed, "0"),
        ("pages in ingested documents", figures.pages, ""),
        ("pages failed with a reason", figures.pages_failed_with_reason, ""),
        ("pages lost", figures.pages_lost, "0"),
        ("documents whose points differ from their chunks", figures.documents_with_wrong_points, "0"),
        ("good files indexed", f"{figures.good_indexed}/{figures.good}", f"{figures.good}/{figures.good}"),
        ("ingest exit code", figures.exit_code, "0"),
        ("peak RSS of the ingest (MiB)", f"{figures.peak_rss_mib:,.0f}", ""),
        ("wall time of the ingest (s)", f"{figures.seconds:,.1f}", ""),
    ]
    for name, value, must in rows:
        table.add_row(name, str(value), must)
    return table


def files_table(figures) -> Table:
    table = Table(title="Per file")
    for column in ("file", "outcome", "pages", "reason"):
        table.add_column(column, overflow="fold")
    for f in figures.files:
        reason = f.reason or ("; ".join(f.page_reasons[:2]) if f.page_reasons else "")
        table.add_row(f.path, f.outcome, str(f.pages) if f.outcome == "ingested" else "", reason)
    return table


@app.command()
def main(
    corpus: Annotated[Path | None, typer.Option(help="Shared corpus root (default ../shared/corpus, or $FOLIOFLOW_CORPUS)")] = None,
    work: Annotated[Path | None, typer.Option(help="Where to build the batch and the data dir (default: a temporary folder)")] = None,
    good: Annotated[int, typer.Option(help="Good corpus files mixed in (CUAD contracts, a filing, a scan)")] = 6,
    details: Annotated[bool, typer.Option("--details/--no-details", help="Also print one row per file")] = True,
    as_json: Annotated[Path | None, typer.Option("--json", help="Write the figures and per-file outcomes as JSON")] = None,
) -> None:
    """Build the batch, ingest it with `folioflow ingest`, print the figures (exit 1 if one fails)."""
    from folioflow.flows.reliability import build_batch, run_batch

    root = Path(__file__).resolve().parents[2]
    corpus = corpus or Path(os.environ.get("FOLIOFLOW_CORPUS", root.parent / "shared" / "corpus"))
    if not (corpus / "E_malformed").is_dir():
        typer.secho(f"no corpus at {corpus}: generated files only", err=True, fg=typer.colors.YELLOW)
        corpus = None
    console = Console()
    with tempfile.TemporaryDirectory(prefix="folioflow-reliability-") as tmp:
        base = work or Path(tmp)
        batch = build_batch(base / "batch", corpus, good=good)
        console.print(f"batch: {len(batch.files)} files in {batch.folder}; ingesting ...")
        figures = run_batch(batch, base / "run")
    if details:
        console.print(files_table(figures))
    console.print(figures_table(figures))
    if as_json:
        as_json.write_text(json.dumps(figures.as_dict(), indent=2) + "\n")
    raise typer.Exit(0 if figures.passed else 1)


if __name__ == "__main__":
    app()
