"""``folioflow api``: the HTTP API server (FastAPI on uvicorn; see ``docs/service.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.ingest_cmd import (
    Collection,
    Config,
    DataDir,
    QdrantUrl,
    _quiet_models,
    _quiet_prefect,
)
from folioflow.flows.cli.options import build_settings, fail


@app.command("api")
def api(
    host: Annotated[str, typer.Option("--host", help="Address to listen on (0.0.0.0: every interface)")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port", min=0, max=65535)] = 8080,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    config: Config = None,
    api_config: Annotated[Path | None, typer.Option("--api-config", envvar="FOLIOFLOW_API_CONFIG", help="YAML file of the server's settings: keys, max_upload_bytes, max_ocr_pages, allowed_roots (its top level or an `api:` section); FOLIOFLOW_API_* variables beat it")] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level: critical, error, warning, info, debug")] = "info",
) -> None:
    """Serve the HTTP API: search, documents, ingest jobs, OCR, /healthz and /metrics, with the
    embedder loaded once and the store opened once for every request."""
    from folioflow.ocr.errors import FolioflowError
    from folioflow.ocr.extras import require

    try:
        require("api", "folioflow api")
    except FolioflowError as exc:
        fail(str(exc))
    _quiet_models()
    # Prefect (the ingest jobs' flow engine) as the CLI runs it: its ephemeral API server without
    # telemetry (its heartbeat wrote to the server's SQLite database beside the job's flow runs and
    # logged "database is locked" tracebacks) and its services' routine warnings off the log.
    _quiet_prefect(False)
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    import uvicorn

    from folioflow.flows.service import create_app
    from folioflow.flows.service.config import load_api_settings

    try:
        api_settings = load_api_settings(api_config)
    except FolioflowError as exc:
        fail(str(exc))
    # Prefect configures logging once, when `prefect.main` is first imported (lazily, by the first
    # job's `from prefect import flow`), and that resets the `uvicorn` loggers (level WARNING, the
    # access log's handler removed): the request log went silent from the first job on. Imported
    # here, before uvicorn configures its loggers, uvicorn's configuration is the one that stays.
    import prefect.main  # noqa: F401

    if api_settings.ingest == "local":
        # Prefect's ephemeral API server for the ingest jobs, started now rather than by the first
        # job: tied to this process (stopped even if it is SIGKILLed, flows/ephemeral.py) and ready
        # before the first request. Nothing is started when PREFECT_API_URL names a server.
        from folioflow.flows.ephemeral import start_tied_server

        try:
            start_tied_server()
        except RuntimeError as exc:
            fail(f"cannot start Prefect's API server for ingest jobs: {exc}")
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else shown}:{port}"
    uvicorn.run(create_app(settings, api_settings, url=url if port else None), host=host, port=port,
                log_level=log_level)
