"""The ``folioflow`` command line (typer). Each sub-module registers its commands on :data:`app`;
heavy imports (torch, Prefect, models) happen inside the commands so ``--help`` stays fast."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="folioflow",
    help="Document ingestion for legal and finance knowledge bases: OCR, chunk, embed, index, retrieve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Sub-modules register their commands on import (order = order in --help).
from flows.cli import ingest_cmd  # noqa: E402,F401
from flows.cli import convert_cmd  # noqa: E402,F401
from flows.cli import ocr_cmd  # noqa: E402,F401
from flows.cli import deploy_cmd  # noqa: E402,F401
from flows.cli import eval_cmd  # noqa: E402,F401


def main() -> None:
    """Console-script entry point."""
    app()
