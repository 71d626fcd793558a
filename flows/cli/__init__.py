"""The ``folioflow`` command line (typer). Each sub-module registers its commands on :data:`app`;
heavy imports (torch, Prefect, models) happen inside the commands so ``--help`` stays fast."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import sys
import threading

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="folioflow",
    help="Document ingestion for legal and finance knowledge bases: OCR, chunk, embed, index, retrieve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)

# Sub-modules register their commands on import (order = order in --help).
# isort: off
from folioflow.flows.cli import ingest_cmd  # noqa: E402,F401
from folioflow.flows.cli import delete_cmd  # noqa: E402,F401
from folioflow.flows.cli import convert_cmd  # noqa: E402,F401
from folioflow.flows.cli import ocr_cmd  # noqa: E402,F401
from folioflow.flows.cli import deploy_cmd  # noqa: E402,F401
from folioflow.flows.cli import eval_cmd  # noqa: E402,F401
from folioflow.flows.cli import api_cmd  # noqa: E402,F401
# isort: on


#: Width of ``--help`` when standard output is not a terminal and neither ``COLUMNS`` nor
#: ``TERMINAL_WIDTH`` says one.
PIPED_HELP_WIDTH = 120


def main() -> None:
    """Console-script entry point. SIGTERM stops a command the way Ctrl-C does (see
    :func:`terminate_like_interrupt`); the exit status is then 143 (128 + SIGTERM). Output that
    cannot be written (a full disk, ``> /dev/full``) ends the command with one line and exit 1.
    (A closed pipe, ``| head``, is click's: exit 1, quietly.)"""
    terminated = terminate_like_interrupt()
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS") and not os.environ.get("TERMINAL_WIDTH"):
        # piped (`--help | less`, a log): rich's default of 80 columns left an option's help a word or
        # two per line beside its name and type columns
        import typer.rich_utils

        typer.rich_utils.MAX_WIDTH = PIPED_HELP_WIDTH
    try:
        app()
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EDQUOT):
            raise
        # standard output or error cannot be written (`> /dev/full`, a full disk): say so in one line, not a
        # traceback, and leave nothing for the exit-time flush to fail on again
        with contextlib.suppress(OSError):
            print(f"folioflow: cannot write the output: {exc.strerror or exc}", file=sys.__stderr__)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - open until the process ends
        raise SystemExit(1) from None
    except SystemExit as exc:
        if terminated.is_set():
            print("folioflow: stopped by SIGTERM", file=sys.stderr)
            raise SystemExit(128 + signal.SIGTERM) from None
        if exc.code == 128 + signal.SIGINT:  # Ctrl-C: click exits 130 and says nothing
            print("folioflow: interrupted (Ctrl-C)", file=sys.stderr)
        raise


def terminate_like_interrupt() -> threading.Event:
    """Make SIGTERM (``kill PID``, ``systemctl stop``, ``docker stop``, a CI or batch-system
    timeout) raise :class:`KeyboardInterrupt` in the main thread, as Ctrl-C does, so the command
    leaves through the same orderly path: Prefect marks the run crashed, ``with`` blocks and
    ``finally`` clauses run, and at exit Prefect's ephemeral API server is stopped (its own
    ``atexit`` hook; without this, SIGTERM's default action ends the process at once and leaves
    that server running, orphaned). A second SIGTERM takes the default action (immediate end).
    Nothing is installed when SIGTERM already has a handler (an embedding application's own) or
    outside the main thread. Returns an event set once SIGTERM arrived."""
    terminated = threading.Event()
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return terminated

    def interrupt(signum: int, frame: object) -> None:
        terminated.set()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise KeyboardInterrupt(f"terminated by signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)
    return terminated
