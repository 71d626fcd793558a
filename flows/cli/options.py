"""Helpers shared by CLI commands: settings from options, and a clean exit on fatal errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

__all__ = ["VLM_PROFILE_HELP", "build_settings", "check_report", "check_vlm_profile", "fail", "need", "require_extras"]


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``message`` on standard error and exit with ``code``."""
    typer.secho(f"error: {message}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code)


def check_report(report: Path | None) -> None:
    """Exit 1 at once when ``--report`` names a path that cannot be written when the run ends: an
    existing folder, or a path under a file or an unwritable folder (a missing folder is made
    then). A run of hours otherwise ended with a traceback and no report."""
    import os

    if report is None:
        return
    if report.is_dir():
        fail(f"--report {report}: is a folder; give the path of a file (written when the run ends)")
    existing = next((p for p in report.absolute().parents if p.exists()), None)
    if existing is not None and (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)):
        fail(f"--report {report}: cannot write under {existing} ({'not a folder' if not existing.is_dir() else 'not writable'})")


def build_settings(config: Path | None = None, **overrides: Any):
    """:func:`folioflow.flows.settings.load_settings` with CLI overrides; exits 1 with the reason on a
    configuration error."""
    from folioflow.flows.settings import load_settings
    from folioflow.ocr.errors import ConfigurationError

    try:
        return load_settings(config, **overrides)
    except ConfigurationError as exc:
        fail(str(exc))


#: fsspec URL scheme -> the extra whose package reads it (s3fs, aiohttp, gcsfs, adlfs)
URL_EXTRAS = {"s3": "orchestration", "s3a": "orchestration", "http": "orchestration", "https": "orchestration",
              "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure"}


def need(extra: str, what: str) -> None:
    """:func:`folioflow.ocr.extras.require`, exiting 1 with its one-line message (which names the
    extra and the pip command) when ``extra`` is not installed."""
    from folioflow.ocr.errors import MissingExtraError
    from folioflow.ocr.extras import require

    try:
        require(extra, what)
    except MissingExtraError as exc:
        fail(str(exc))


def require_extras(settings, urls: list[str] | tuple[str, ...] = (), convert: bool = False) -> None:
    """Check, before any work, the extras that ``settings`` and ``urls`` (paths or fsspec URLs)
    call for; exits 1 naming the first one missing. Always: ``qdrant`` for a Qdrant server URL;
    with ``convert`` (commands that convert documents) also ``ocr`` for ``engine: ocr``, ``vlm``
    for VLM endpoints or ``engine: vlm``, ``dask``/``ray`` for those task runners, and each
    source URL's filesystem extra. ``engine: auto`` without the ``ocr`` extra is allowed: pages
    without a text layer then fail, each naming the extra."""
    if settings.qdrant_url:
        need("qdrant", "a Qdrant server by URL (--qdrant-url)")
    if not convert:
        return
    if settings.engine == "ocr":
        need("ocr", "--engine ocr")
    if settings.engine == "vlm" or settings.ocr_endpoints:
        need("vlm", "VLM OCR (--ocr-endpoint)")
    if settings.task_runner in ("dask", "ray"):
        need(settings.task_runner, f"task_runner: {settings.task_runner}")
    for url in [*urls, *(source.url for source in settings.sources)]:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme in URL_EXTRAS:
            need(URL_EXTRAS[scheme], f"reading {scheme}:// URLs")


#: What ``--profile`` means on the commands that convert (and where the other profile is), for
#: option help and errors: a new user took ingest's --profile for the retrieval profile.
VLM_PROFILE_HELP = ("VLM output profile: the OCR model's output format, used with --engine vlm / --ocr-endpoint: "
                    "chandra, deepseek-ocr[:MODE], olmocr, markdown (alias generic), or auto (from the served "
                    "model id). Not the retrieval profile (finance, legal, general): that is `folioflow query "
                    "--profile`")


def check_vlm_profile(name: str | None, given: bool = True) -> None:
    """Exit 1 (``error: unknown VLM profile ...`` on stderr, the message a VLM run gives) unless
    ``name`` is ``auto``, None or a VLM profile :func:`folioflow.ocr.vlm.profiles.get_profile`
    knows (``name:variant`` included), whatever the engine: a mistyped profile is said before any
    work, not only when a page reaches the VLM. The message adds that the retrieval profile is
    ``query --profile``. The profiles live in the ``vlm`` extra: without it, a profile ``given``
    on the command line exits 1 naming the extra; one from the settings file or environment
    (``given`` false) is left unchecked, as nothing can use it."""
    if name is None or name.strip().lower() == "auto":
        return
    from folioflow.ocr.extras import installed

    if not installed("vlm"):
        if given:
            need("vlm", "--profile (a VLM output profile)")
        return
    from folioflow.ocr.errors import ConfigurationError
    from folioflow.ocr.vlm.profiles import get_profile

    try:
        get_profile(name)
    except ConfigurationError as exc:
        fail(f"{exc} (--profile here is the VLM output profile, the OCR model's output format, or auto; the "
             "retrieval profile (finance, legal, general) is `folioflow query --profile`)")
