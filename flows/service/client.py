"""The CLI's side of the API server: finding a running server (the discovery file it writes in
the data directory) and the calls ``folioflow query``, ``status``, ``show`` and ``ingest`` make
through it. Imports no server package (FastAPI), only httpx and tenacity; the HTTP plumbing and
discovery live in :mod:`folioflow.indexing.remote` (the retriever uses them too)."""

from __future__ import annotations

import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

from folioflow.indexing.remote import (
    DISCOVERY_FILE,
    ApiClient,
    ServerError,
    announce,
    discover_server,
    resolve_server,
)

__all__ = ["DISCOVERY_FILE", "ApiClient", "ServerError", "announce", "discover_server", "query_server",
           "resolve_server", "submit_paths", "wait_job"]

#: Seconds between two polls of a running job (``GET /v1/jobs/{id}``).
POLL_S = 0.5
#: Attempts at one poll when the server cannot be reached (a restart, a dropped connection) before
#: the wait gives up, with exponential backoff between them (tenacity).
POLL_ATTEMPTS = 5


def query_server(url: str, body: dict[str, Any], api_key: str | None = None, timeout: float = 60.0) -> list[dict]:
    """``POST {url}/v1/query`` with ``body`` (:class:`~folioflow.flows.service.models.QueryRequest`
    fields); returns the hits (``query --json`` objects). Raises :class:`ServerError` with the
    server's ``detail`` on a 4xx/5xx, or the connection error."""
    with ApiClient(url, api_key, timeout) as client:
        return client.query(body)


def submit_paths(client: ApiClient, paths: list[str], tenant: str | None = None, force: bool = False,
                 max_files: int = 20, notice: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Queue ingest jobs for ``paths`` (files, folders or globs, as ``folioflow ingest`` takes
    them) on the server; returns the jobs (``Job`` JSON, the order they were queued in).

    Each argument that names an existing file or folder is first offered by path (``POST
    /v1/documents`` with ``{"path": <absolute path>}``): the server reads it in place when it sits
    under one of its ``allowed_roots`` (same machine or a shared mount), which keeps its recorded
    path, source name and prune roots as a local run has them. When the server refuses (403: no
    allowed root holds it; 404: it cannot see it), the argument's files (:func:`folioflow.flows.sources.discover`)
    are uploaded (multipart, at most ``max_files`` per request) and recorded under the source
    ``upload``. Globs are always uploaded. ``notice`` gets one line per argument that is uploaded
    rather than read in place, with the server's reason (a copy is stored on the server), and one per
    uploaded file that the server's index already holds by its own path (the upload becomes a second
    document). Raises :class:`ServerError` on any other refusal, and
    :class:`~folioflow.ocr.errors.SourceError` when an argument names nothing readable."""
    from folioflow.flows.sources import discover
    from folioflow.ocr.errors import SourceError

    jobs: list[dict[str, Any]] = []
    uploads: list[Path] = []
    for argument in paths:
        if "://" in argument and not argument.startswith("file://"):
            raise SourceError(f"{argument}: URLs are not sent to the API server; name a file or folder, or configure "
                              "the source on the server")
        local = Path(argument.removeprefix("file://")).expanduser()
        if local.exists():
            try:
                jobs.append(client.request("POST", "/v1/documents",
                                           json={"path": str(local.resolve()), "tenant": tenant, "force": force}))
                continue
            except ServerError as exc:
                if exc.status not in (403, 404):
                    raise
                why = str(exc)
        else:
            why = "a glob or a path the server is not given"
        found = discover([str(local) if local.exists() else argument])
        if found.errors and not found.files:
            raise SourceError(f"{argument}: {found.errors[0].error}")
        uploads += [f.local_path for f in found.files if f.local_path is not None]
        if notice is not None and found.files:
            notice(f"{argument}: uploading {len(found.files)} file(s), a copy kept on the server (source 'upload'), "
                   f"since the server does not read it in place ({why})")
    if uploads and notice is not None:  # a file indexed from its own path before becomes a second document
        try:
            listed = client.request("GET", "/v1/documents").get("document_list") or []
        except ServerError:
            listed = []
        by_uri = {row.get("uri"): row for row in listed}
        for path in uploads:
            row = by_uri.get(path.resolve().as_uri())
            if row is not None:
                notice(f"{path}: already indexed from this path (doc {str(row.get('doc_id'))[:8]}); the upload becomes "
                       "a second document beside it: delete one with `folioflow delete`, or let the server read the "
                       "folder in place (allowed_roots)")
    names = [path.name for path in uploads]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise SourceError(f"uploads are kept by file name on the server and {', '.join(twice[:5])} occur more than "
                          "once: ingest them in separate runs, or let the server read them by path (allowed_roots)")
    for start in range(0, len(uploads), max_files):
        batch = uploads[start:start + max_files]
        files = [("files", (p.name, p.read_bytes(), mimetypes.guess_type(p.name)[0] or "application/octet-stream"))
                 for p in batch]
        data = {"force": "true" if force else "false", **({"tenant": tenant} if tenant else {})}
        jobs.append(client.request("POST", "/v1/documents", files=files, data=data))
    return jobs


def wait_job(client: ApiClient, job_id: str, on_poll: Callable[[dict[str, Any]], None] | None = None,
             poll_s: float = POLL_S, attempts: int = POLL_ATTEMPTS) -> dict[str, Any]:
    """Poll ``GET /v1/jobs/{job_id}`` every ``poll_s`` seconds until the job is ``succeeded`` or
    ``failed``; returns that last state (``Job`` JSON). ``on_poll`` gets every state seen
    (progress). A poll that cannot reach the server is tried ``attempts`` times with exponential
    backoff (tenacity) before :class:`ServerError`; a 4xx (the job forgotten) raises at once."""
    from tenacity import (
        Retrying,
        retry_if_exception,
        retry_if_result,
        stop_after_attempt,
        wait_exponential,
        wait_fixed,
    )

    def unreachable(exc: BaseException) -> bool:
        return isinstance(exc, ServerError) and (exc.status is None or exc.status >= 500)

    def poll() -> dict[str, Any]:
        for attempt in Retrying(retry=retry_if_exception(unreachable), stop=stop_after_attempt(attempts),
                                wait=wait_exponential(multiplier=0.5, max=8), reraise=True):
            with attempt:
                state = client.request("GET", f"/v1/jobs/{job_id}")
        if on_poll is not None:
            on_poll(state)
        return state

    running = Retrying(retry=retry_if_result(lambda job: job["state"] not in ("succeeded", "failed")),
                       wait=wait_fixed(poll_s), reraise=True)
    return running(poll)
