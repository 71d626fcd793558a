"""``folioflow ingest``, ``reindex``, ``query``, ``status``, ``show`` and ``sample``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.options import (
    VLM_PROFILE_HELP,
    build_settings,
    check_report,
    check_vlm_profile,
    fail,
    require_extras,
)

# Common options (typer Annotated aliases).
DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Data directory (embedded store, OCR cache, converted documents). Default ./.folioflow")]
QdrantUrl = Annotated[str | None, typer.Option("--qdrant-url", envvar="QDRANT_URL", help="Qdrant server URL; the embedded store is used when unset")]
Collection = Annotated[str | None, typer.Option("--collection", help="Qdrant collection (default folioflow)")]
EmbeddingModel = Annotated[str | None, typer.Option("--embedding-model", help="sentence-transformers model name or path (default all-MiniLM-L6-v2, bundled)")]
Config = Annotated[Path | None, typer.Option("--config", envvar="FOLIOFLOW_CONFIG", help="YAML settings file")]
ApiUrl = Annotated[str | None, typer.Option("--api-url", envvar="FOLIOFLOW_API_URL", help="Go through the folioflow API server at this URL (default: the settings' api_url, else the server `folioflow api` announced in the data directory for this collection, if it runs)")]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="FOLIOFLOW_API_KEY", help="Bearer API key for the server (prefer the FOLIOFLOW_API_KEY variable: options show in process lists)")]


#: Seconds Prefect's ephemeral API server gets to start (``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS``
#: when unset; Prefect 3.9's own default, 20 s in prefect/settings/models/server/ephemeral.py, is short
#: on a loaded 2-core machine).
EPHEMERAL_STARTUP_TIMEOUT_S = "120"


def _server(settings, api_url: str | None) -> str | None:
    """The API server a command goes through (:func:`folioflow.indexing.remote.resolve_server`):
    ``--api-url``, else the settings' ``api_url``, else the one announced in the data directory
    for the collection; None (no server): the command opens the store itself."""
    from folioflow.indexing.remote import resolve_server

    return resolve_server(api_url or settings.api_url, settings.data_dir, settings.collection, settings.qdrant_url)


def _api_client(settings, url: str, api_key: str | None):
    """An :class:`~folioflow.indexing.remote.ApiClient` for ``url`` with ``--api-key``, else the
    settings' ``api_key``."""
    from folioflow.flows.service.client import ApiClient

    key = api_key or (settings.api_key.get_secret_value() if settings.api_key else None)
    return ApiClient(url, key)


def _check_store_free(settings) -> None:
    """Exit 1 at once, naming the holder's pid and command line and suggesting `folioflow api`,
    when the embedded store is held by another process (:func:`folioflow.indexing.store.check_unlocked`):
    before Prefect starts or a model loads."""
    from folioflow.indexing.store import check_unlocked
    from folioflow.ocr.errors import StoreError

    try:
        check_unlocked(settings.store_settings())
    except StoreError as exc:
        fail(str(exc))


def _quiet_prefect(verbose: bool) -> None:
    """Prefect's own logging stays off the console unless ``verbose``. Call before Prefect is
    imported: it reads these settings (environment variables, which the user's own values beat)
    once, and its ephemeral API server, a subprocess writing to this process's stderr, inherits
    them. Without ``verbose``:

    * ``PREFECT_LOGGING_LEVEL=ERROR``: the client's loggers (``prefect``, ``prefect.client``, ...);
    * ``PREFECT_SERVER_LOGGING_LEVEL=CRITICAL``: the server's (``prefect.server.*``, uvicorn,
      fastapi). Its services log as warnings and errors what is routine for a short-lived
      ephemeral server: the event queue dropping messages under a burst ("Subscription queue is
      full" from ``prefect.server.utilities.messaging.memory``) and the task-run recorder's flush
      cancelled at shutdown (an ERROR with a ``CancelledError`` traceback from
      ``prefect.server.services.task_run_recorder``). The run's outcome never depends on them: the
      summary and report are built in this process;
    * ``PREFECT_INTERNAL_LOGGING_LEVEL=CRITICAL``: ``prefect._internal`` (its background workers).

    With ``verbose``: ``PREFECT_LOGGING_LEVEL=INFO`` (flow and task run logs), the rest at Prefect's
    defaults (server WARNING, internal ERROR)."""
    if verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "INFO")
    else:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
        os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
        os.environ.setdefault("PREFECT_INTERNAL_LOGGING_LEVEL", "CRITICAL")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", EPHEMERAL_STARTUP_TIMEOUT_S)
    _quiet_models()


def _mute_run_logs(verbose: bool) -> None:
    """Without ``--verbose``, flow- and task-run logs (a failed document's exception, a run that
    cannot proceed) stay off the console: the summary, failures table and report say it once, in
    one line. They still reach Prefect's API (server UI, database). Call after Prefect is imported
    (it configures logging on import)."""
    import logging

    for name in ("prefect.flow_runs", "prefect.task_runs"):
        logging.getLogger(name).propagate = verbose


def _quiet_models() -> None:
    """No model-loading progress bars or hub lookups from transformers/sentence-transformers."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@app.command()
def ingest(
    paths: Annotated[list[str], typer.Argument(help="PDF/image files, folders (recursive) or globs")],
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    embedding_model: EmbeddingModel = None,
    engine: Annotated[str | None, typer.Option("--engine", help="auto | text | ocr | vlm")] = None,
    cpu_engine: Annotated[str | None, typer.Option("--cpu-engine", help="CPU OCR engine for scans: auto, tesseract, rapidocr")] = None,
    lang: Annotated[list[str] | None, typer.Option("--lang", "--language", "-l", help="OCR language (tesseract code), repeatable")] = None,
    ocr_endpoint: Annotated[list[str] | None, typer.Option("--ocr-endpoint", help="vLLM endpoint URL, repeatable")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help=VLM_PROFILE_HELP)] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="Documents processed concurrently")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Tenant recorded on every chunk")] = None,
    password: Annotated[list[str] | None, typer.Option("--password", help="PDF password as GLOB=PASSWORD (or just PASSWORD for all)")] = None,
    prune: Annotated[bool, typer.Option("--prune", help="Delete indexed documents under the given folders that no longer exist")] = False,
    force: Annotated[bool, typer.Option("--force", help="Process every document again even when unchanged (same size and mtime, same content hash): convert, chunk, embed and upsert; the same points, no duplicates. Needed after an in-place rewrite that kept a file's size and mtime")] = False,
    report: Annotated[Path | None, typer.Option("--report", help="Write one JSON record per document to this file when the run ends (an interrupted run writes none; run it again: finished documents are skipped)")] = None,
    config: Config = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar")] = True,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Prefect logs on the console")] = False,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Convert, chunk, embed and index documents (runs the Prefect `ingest` flow in ephemeral mode).

    Unchanged documents are skipped: same size and mtime (the bytes are not read), else the same
    content hash, with the same embedding model, chunking and OCR settings; --force processes them
    again. A document with failed pages is retried on the next run. When every document is
    unchanged by size and mtime, the run ends there: no model is loaded and no Prefect flow run
    (nor its ephemeral server) is started. Otherwise the embedding model loads for the first
    document with pages to convert: a run whose every input is refused (not a PDF or image,
    empty, unreadable) loads none.

    Exits 0 when every document was indexed, skipped or failed with a reason (see --report);
    exits 1 only when the run itself cannot proceed (bad settings, such as an unknown --engine or
    VLM --profile, model or store unavailable, the embedded store held by another process: said
    at once, naming it).

    With --api-url, or when `folioflow api` runs on the same data directory and collection, the
    documents are ingested by that server as jobs (a file or folder it may read, under its
    allowed_roots, by path; otherwise uploaded) and the same summary, report and exit code follow
    when they end. OCR, model and worker options are then the server's settings, not given here.

    SIGTERM stops it as Ctrl-C does (exit 143); Prefect's ephemeral server is stopped either way.
    """
    _quiet_prefect(verbose)
    passwords = {}
    for item in password or []:
        glob, sep, secret = item.partition("=")
        passwords.update({glob: secret} if sep else {"*": item})
    settings = build_settings(
        config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection, embedding_model=embedding_model,
        engine=engine, cpu_ocr_engine=cpu_engine, languages=lang or None, ocr_endpoints=ocr_endpoint or None,
        profile=profile, workers=workers, tenant=tenant, passwords=passwords or None,
    )
    check_vlm_profile(settings.profile, given=profile is not None)  # whatever the engine, before any work
    check_report(report)
    server = _server(settings, api_url)
    if server:
        local_only = {"--embedding-model": embedding_model, "--engine": engine, "--cpu-engine": cpu_engine,
                      "--lang": lang, "--ocr-endpoint": ocr_endpoint, "--profile": profile, "--workers": workers,
                      "--password": password, "--prune": prune or None}
        given = [name for name, value in local_only.items() if value]
        if given:
            fail(f"{', '.join(given)}: not with the API server at {server}, which converts and indexes with its "
                 "own settings (set them where `folioflow api` runs)")
        from folioflow.flows.cli.remote_ingest import ingest_through

        ingest_through(_api_client(settings, server, api_key), paths, tenant=settings.tenant, force=force,
                       report=report, progress=progress)
        return
    require_extras(settings, paths, convert=True)
    _check_store_free(settings)  # a held store is said now, not after Prefect and the model started
    from folioflow.flows.cli.ui import page_progress, print_run
    from folioflow.flows.unchanged import run_if_unchanged
    from folioflow.ocr.errors import FolioflowError

    with page_progress(progress) as bar:
        try:
            # All documents unchanged (registry, size and mtime): no model, no Prefect (flows/unchanged.py).
            result = run_if_unchanged(paths, settings, prune=prune, force=force, progress=bar)
            if result is None:
                from folioflow.flows.ephemeral import start_tied_server
                from folioflow.flows.ingest import run_ingest

                _mute_run_logs(verbose)
                start_tied_server()  # stopped even if this process is killed (flows/ephemeral.py)
                result = run_ingest(paths, settings, prune=prune, force=force, progress=bar)
        except FolioflowError as exc:
            fail(f"ingest cannot proceed: {exc}")
        except RuntimeError as exc:
            if "ephemeral Prefect API server" not in str(exc):
                raise
            fail(_ephemeral_failure(exc))
    print_run(result, report)


@app.command()
def reindex(
    doc: Annotated[list[str] | None, typer.Option("--doc", help="Only this document: id, unique id prefix, path or file name (repeatable)")] = None,
    force: Annotated[bool, typer.Option("--force", help="Re-chunk and embed documents already recorded under this embedding model and chunking too")] = False,
    report: Annotated[Path | None, typer.Option("--report", help="Write one JSON record per document to this file when the run ends (an interrupted run writes none; run it again: finished documents are skipped)")] = None,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    config: Config = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar")] = True,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Chunk and embed again the converted documents kept in DATA_DIR/documents, without reading a
    source or running OCR: after an upgrade that changed the chunker, or with other chunking
    settings (`chunking`, `max_tokens` in --config). Documents already chunked this way are skipped
    (--force: re-chunk them too).

    A document re-chunked keeps the OCR part of its settings fingerprint, so a later `ingest` of
    the same files with the same OCR settings skips it. The embedding model stays the
    collection's: another model needs another collection, filled by `ingest`.

    A document without a kept conversion (`keep_documents` was off), with an unreadable one, or
    whose chunking or indexing fails is reported failed with the reason; its points stay as they
    were and the rest go on. Exits 0 then too (see --report); exits 1 only when the run cannot
    proceed (model or store unavailable, another process holds the embedded store, a --doc that
    names no document or several).

    With --api-url, or when `folioflow api` runs on the same data directory and collection, that
    server does it as a job (POST /v1/reindex), with its own chunking settings, and the same summary,
    report and exit code follow."""
    _quiet_models()
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    require_extras(settings)
    check_report(report)
    server = _server(settings, api_url)
    if server:
        given = [name for name, value in (("chunking", settings.chunking), ("max_tokens", settings.max_tokens),
                                          ("embedding_model", settings.embedding_model)) if value]
        if given:
            fail(f"{', '.join(given)} set here: not with the API server at {server}, which re-chunks with its own "
                 "settings (set them where `folioflow api` runs and restart it, or stop it and reindex here)")
        from folioflow.flows.cli.remote_ingest import reindex_through

        reindex_through(_api_client(settings, server, api_key), docs=doc, force=force, report=report,
                        progress=progress)
        return
    _check_store_free(settings)
    from folioflow.flows.cli.ui import page_progress, print_run
    from folioflow.flows.reindex import reindex as run_reindex
    from folioflow.ocr.errors import FolioflowError

    with page_progress(progress) as bar:
        try:
            result = run_reindex(settings, docs=doc, force=force, progress=bar)
        except FolioflowError as exc:
            fail(f"reindex cannot proceed: {exc}")
    print_run(result, report, title="Reindex summary", rechunked=True)


def _ephemeral_failure(exc: RuntimeError) -> str:
    """One line for Prefect's ephemeral API server failing to start (``SubprocessASGIServer.start``
    raises a RuntimeError "Timed out while attempting to connect to ephemeral Prefect API server"
    carrying the server's exit code when it died): what happened and the two ways out."""
    newer = _database_from_newer_prefect()
    if newer:
        return f"ingest cannot proceed: {newer}"
    first = str(exc).splitlines()[0][:300]
    limit = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", EPHEMERAL_STARTUP_TIMEOUT_S)
    return (f"ingest cannot proceed: Prefect's ephemeral API server did not start within {limit} s ({first}); "
            "point PREFECT_API_URL at a running Prefect server, or raise "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS on a loaded machine")


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question or search text")],
    k: Annotated[int, typer.Option("-k", "--k", help="Number of chunks to return (1-100, as the API server takes)", min=1, max=100)] = 5,
    mode: Annotated[str, typer.Option("--mode", help="dense | sparse | hybrid")] = "hybrid",
    profile: Annotated[str, typer.Option("--profile", help="Ranking defaults: auto (the collection's, inferred from its documents' titles (file names, or `title` metadata), or their text where a title names no kind, and shown by `folioflow status`), finance, legal or general")] = "auto",
    distinct_pages: Annotated[bool | None, typer.Option("--distinct-pages/--all-chunks", help="At most one chunk per page (the best ranked; further chunks of those pages fill up to k), or the plain chunk ranking [default: the profile's]")] = None,
    glossary: Annotated[str | None, typer.Option("--glossary", help="Query expansion: finance (statement names, line-item abbreviations and metrics in filing wording), legal (clause concepts followed by contract drafting words), none, or a JSON/YAML file of {pattern, expansion} entries, optionally with concepts and example questions (docs/python.md) [default: the profile's]")] = None,
    route_titles: Annotated[bool, typer.Option("--route-titles/--no-route-titles", help="Also search inside the documents whose titles (file names, or `title` metadata) the question names, and fuse the two rankings")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list instead of a table")] = False,
    doc_id: Annotated[list[str] | None, typer.Option("--doc", help="Only this document: id, unique id prefix, path or file name (repeatable)")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Only this configured source name (`default` for command-line paths; see `folioflow status`)")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Caller's tenant (required when tenancy is on)")] = None,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    embedding_model: EmbeddingModel = None,
    config: Config = None,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Search the index; prints the top chunks with source, page span, heading path and score.

    Hits are in rank order; score decreases down the list (when title
    routing re-ranks, it is the fused rank score and the mode's own score
    is shown as "search").

    --json prints a list of objects with keys text, score, search_score,
    doc_id, source (the configured source it came from), uri (the
    document's URI), page_start, page_end (1-based), heading_path (list of
    strings), kind, page_repeat (a further chunk of a page already listed),
    path and chunk_index.

    With --api-url, or when `folioflow api` runs on the same data directory
    (it announces itself in DATA_DIR/api.json), the query goes to that server,
    which has the model loaded and the store open.

    Without a server, an embedded store held by another process is reported at
    once (its pid and command line), before the model loads.

    Exits 1 (reason on stderr) when the text is empty or longer than 4000
    characters (with a server or without), when there is no index, when no indexed document has
    the --tenant given, or when a --doc or --source filter matches no indexed document; 0
    otherwise, also when nothing matches the text ("no results").
    """
    _quiet_models()
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection,
                              embedding_model=embedding_model)
    require_extras(settings)
    from folioflow.flows.cli.query_view import check_tenant_through, print_results, run_query
    from folioflow.indexing.retriever import check_query_text
    from folioflow.ocr.errors import QueryError, ServerError

    try:  # the same answer with a server or without one
        check_query_text(text)
    except QueryError as exc:
        fail(str(exc))

    server = _server(settings, api_url)
    if server:
        if glossary is not None and glossary.strip().lower() in ("finance", "legal", "none"):
            glossary = glossary.strip().lower()  # the built-in glossaries go by name
        elif glossary is not None:
            fail(f"--glossary {glossary}: a file is read on this machine, not by the API server at {server} "
                 "(it takes finance, legal or none); stop the server to use it, or name a built-in one")
        body = {"text": text, "k": k, "mode": mode, "doc": doc_id, "source": source, "tenant": tenant,
                "distinct_pages": distinct_pages, "glossary": glossary, "route_titles": route_titles,
                "profile": profile}
        try:
            with _api_client(settings, server, api_key) as client:
                hits = client.query(body)
                if tenant is not None and not hits:  # the server answers [] for a tenant with no documents
                    check_tenant_through(client, tenant)
        except ServerError as exc:
            fail(str(exc))
        print_results(hits, as_json=as_json)
        return
    hits = run_query(settings, text, k=k, mode=mode, doc_ids=doc_id, source=source, tenant=tenant,
                     distinct_pages=distinct_pages, glossary=glossary, route_titles=route_titles, profile=profile)
    print_results(hits, as_json=as_json)


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
    documents: Annotated[bool, typer.Option("--documents", "-d", help="Also list every document: source, path, doc id, tenant (where documents have one), pages, chunks, status (with the number of failed and of partial pages), their errors, and each partial page with its reason")] = False,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    config: Config = None,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Documents and chunks in the index, per source (--documents: one row per document, then the
    recorded errors of failed documents and failed pages, then the partial pages with their reasons:
    pages indexed with part of their content missing or implausible, by the fidelity check). An
    input refused before any page is converted (not a PDF or image, empty, unreadable, encrypted
    without its password) is never registered, so it is not listed here: its reason is in the
    ingest run's summary and --report.

    With --api-url, or when `folioflow api` runs on the same data directory and collection, the
    server answers (GET /v1/documents; the same tables and JSON). Without one, an embedded store
    held by another process is reported at once, naming it."""
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    require_extras(settings)
    from folioflow.flows.cli.query_view import print_status

    server = _server(settings, api_url)
    if server:
        from folioflow.ocr.errors import ServerError

        try:
            with _api_client(settings, server, api_key) as client:
                summary = client.request("GET", "/v1/documents")
        except ServerError as exc:
            fail(str(exc))
        print_status(settings, as_json=as_json, documents=documents, summary=summary)
        return
    print_status(settings, as_json=as_json, documents=documents)


@app.command()
def show(
    doc: Annotated[str, typer.Argument(help="What query --doc takes: document id (or a unique prefix), the path it was ingested from, or its file name when unambiguous")],
    page: Annotated[int | None, typer.Option("--page", help="Only this page (1-based)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="markdown | json")] = "markdown",
    chunks: Annotated[bool, typer.Option("--chunks", help="Print its indexed chunks instead, in reading order, each with its page span, kind, contract role, token count and heading path")] = False,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    config: Config = None,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Print the converted document that was indexed: its Markdown (or JSON), before chunking
    (page headers, footers and printed page numbers are still in it); a failed page shows as a
    `<!-- page N failed: reason -->` marker. With --chunks, its chunks as the index
    holds them: each under a `<!-- chunk N · p.S-E · kind (role) · tokens · heading path -->` line
    (JSON: one object per chunk). The role marks a contract's parties, definitions, signature
    block or table of contents; tokens are the embedding model's, of what was embedded (heading path and text).

    With --api-url, or when `folioflow api` runs on the same data directory and collection, the
    document is read from that server (the same output)."""
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    from folioflow.flows.cli.query_view import print_chunks, print_document

    printer = print_chunks if chunks else print_document
    server = _server(settings, api_url)
    if server:
        with _api_client(settings, server, api_key) as client:
            printer(settings, doc, page=page, fmt=fmt, api=client)
        return
    printer(settings, doc, page=page, fmt=fmt)


@app.command()
def sample(
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the PDF")] = Path("folioflow-sample.pdf"),
    scanned: Annotated[Path | None, typer.Option("--scanned", help="Also write an image-only scanned copy (.tif/.png/.pdf)")] = None,
) -> None:
    """Write the generated two-page sample report (heading, paragraphs, table, formula, clause)."""
    from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

    path = write_sample_pdf(output)
    typer.echo(f"wrote {path}")
    if scanned:
        typer.echo(f"wrote {write_scanned_copy(path, scanned)}")


def _database_from_newer_prefect() -> str | None:
    """Why the ephemeral server cannot start when its SQLite database (under ``PREFECT_HOME``) was
    migrated by a newer Prefect: its alembic revision is not among the installed Prefect's
    migrations, and the server dies at start-up ("Can't locate revision identified by ...") while
    the client waits out its whole start-up timeout. Seen after installing folioflow into a second
    environment that resolved an older Prefect (3.9.0 beside 3.9.1). None when that is not the
    case or cannot be told (any error while looking)."""
    try:
        import sqlite3

        import prefect
        import prefect.server.database as database
        from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

        url = str(PREFECT_API_DATABASE_CONNECTION_URL.value() or "")
        if not url.startswith("sqlite") or ":///" not in url:
            return None
        path = Path(url.split(":///", 1)[1])
        if not path.is_file():
            return None
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            row = con.execute("select version_num from alembic_version").fetchone()
        revision = str(row[0]) if row else ""
        folder = Path(database.__file__).parent / "_migrations" / "versions" / "sqlite"
        if not revision or not folder.is_dir() or any(revision in f.name for f in folder.glob("*.py")):
            return None
        return (f"Prefect's database {path} was migrated by a newer Prefect (revision {revision} is unknown to the "
                f"Prefect {prefect.__version__} installed here), so its ephemeral API server cannot start; set "
                "PREFECT_HOME to a fresh folder, install that newer Prefect, or point PREFECT_API_URL at a running "
                "Prefect server")
    except Exception:  # noqa: BLE001 - a hint only: any error while looking means no hint
        return None
