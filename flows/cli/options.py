"""Helpers shared by CLI commands: settings from options, and a clean exit on fatal errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

__all__ = ["build_settings", "fail", "require_extra"]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``message`` on standard error and exit with ``code``."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


def build_settings(config: Path | None = None, **overrides: Any):
    """:func:`folioflow.flows.settings.load_settings` with CLI overrides; exits 1 with the reason on a
    configuration error."""
    from folioflow.flows.settings import load_settings
    from folioflow.ocr.errors import ConfigurationError

    try:
        return load_settings(config, **overrides)
    except ConfigurationError as exc:
        fail(str(exc))


def require_extra(extra: str, what: str) -> None:
    """Exit 1 with one line naming ``extra`` and its pip command unless it is installed
    (:func:`folioflow.ocr.extras.require`; nothing is imported). Call before the work starts."""
    from folioflow.ocr.errors import MissingExtraError
    from folioflow.ocr.extras import require

    try:
        require(extra, what)
    except MissingExtraError as exc:
        fail(str(exc))
