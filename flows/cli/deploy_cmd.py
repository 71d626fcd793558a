"""``folioflow watch``, ``deploy``, ``serve`` and ``watch-files``: running folioflow unattended."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.ingest_cmd import Config, DataDir, _mute_run_logs, _quiet_prefect
from folioflow.flows.cli.options import build_settings, check_report, fail, need, require_extras

PrefectFile = Annotated[Path | None, typer.Option("--prefect-file", help="Prefect project file (default infra/prefect.yaml)")]
OcrSlots = Annotated[int | None, typer.Option("--ocr-slots", help="Concurrent OCR task runs the fleet takes (default: settings.ocr_slots, else 2 per OCR endpoint, else 1)")]


@app.command()
def watch(
    source: Annotated[list[str] | None, typer.Option("--source", help="Only this configured source (repeatable)")] = None,
    prune: Annotated[bool, typer.Option("--prune/--no-prune", help="Delete documents gone from their source")] = True,
    report: Annotated[Path | None, typer.Option("--report", help="Write one JSON record per document to this file")] = None,
    data_dir: DataDir = None,
    config: Config = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Prefect logs on the console")] = False,
) -> None:
    """Sync the configured sources (the `sources:` of --config) into the index once (the `watch`
    flow, ephemeral mode). --data-dir overrides the settings' data_dir.

    New and changed documents are ingested, unchanged ones skipped without reading, removed ones
    pruned. Exits 0 unless the run cannot proceed.
    """
    _quiet_prefect(verbose)
    settings = build_settings(config, data_dir=data_dir)
    require_extras(settings, convert=True)
    check_report(report)
    from folioflow.flows.cli.ui import print_run
    from folioflow.flows.watch import watch_flow
    from folioflow.indexing.store import locked_error
    from folioflow.ocr.errors import FolioflowError, StoreLockedError

    _mute_run_logs(verbose)

    try:
        result = watch_flow(sources=source or None, prune=prune, settings=settings)
    except StoreLockedError as exc:  # watch reads and writes the store itself, never through the API server
        fail(f"watch cannot proceed: {locked_error(Path(exc.folder), 'watch') if exc.folder else exc}")
    except FolioflowError as exc:
        fail(f"watch cannot proceed: {exc}")
    print_run(result, report, title="Watch summary")


@app.command()
def deploy(
    config: Config = None,
    prefect_file: PrefectFile = None,
    pool: Annotated[str, typer.Option("--pool", help="Work pool the deployments use (created, type process)")] = "folioflow",
    ocr_slots: OcrSlots = None,
    name: Annotated[list[str] | None, typer.Option("--name", help="Only this deployment (repeatable)")] = None,
) -> None:
    """Create the work pool, the OCR concurrency limit and the deployments of infra/prefect.yaml
    on the Prefect server at PREFECT_API_URL. Then start workers: `prefect worker start --pool folioflow`."""
    from folioflow.flows.deploy import PREFECT_FILE
    from folioflow.flows.deploy import deploy as do_deploy
    from folioflow.ocr.errors import FolioflowError

    try:
        done = do_deploy(config, prefect_file or PREFECT_FILE, pool=pool, ocr_slots=ocr_slots, names=name)
    except FolioflowError as exc:
        fail(str(exc))
    typer.echo(done.stdout[-4000:])


@app.command()
def serve(
    config: Config = None,
    prefect_file: PrefectFile = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Flow runs at once (default: no limit)")] = None,
    ocr_slots: OcrSlots = None,
) -> None:
    """Serve the Prefect deployments of infra/prefect.yaml from this process (schedules and
    triggers included; no work pool or worker needed) until interrupted. Needs a Prefect server
    (PREFECT_API_URL).

    Not the HTTP API server and web UI: that is `folioflow api`."""
    _quiet_prefect(False)
    build_settings(config)  # fail early on a bad config file
    from folioflow.flows.deploy import PREFECT_FILE, serve_deployments
    from folioflow.ocr.errors import FolioflowError

    try:
        serve_deployments(config, prefect_file or PREFECT_FILE, limit=limit, ocr_slots=ocr_slots)
    except FolioflowError as exc:
        fail(str(exc))


@app.command("watch-files")
def watch_files(
    config: Config = None,
    debounce: Annotated[int, typer.Option("--debounce", help="Milliseconds of quiet that close a batch of changes")] = 5000,
) -> None:
    """Watch local sources and emit a `folioflow.source.changed` Prefect event per debounced batch
    (the folioflow-ingest deployment's trigger then ingests that source)."""
    settings = build_settings(config)
    need("orchestration", "folioflow watch-files")
    from folioflow.flows.events import watch_files as run_watcher

    try:
        run_watcher(settings, debounce_ms=debounce)
    except ValueError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass
