"""``folioflow delete``: remove documents from the index (points, registry record, kept converted
JSON, uploaded file), on the store itself or through a running ``folioflow api``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.ingest_cmd import (
    ApiKey,
    ApiUrl,
    Collection,
    Config,
    DataDir,
    QdrantUrl,
    _api_client,
    _server,
)
from folioflow.flows.cli.options import build_settings, fail, require_extras

__all__ = ["delete", "delete_local", "delete_through"]

#: Where a lookup error sends the user for the documents' names, ids and tenants.
LISTING = "`folioflow status --documents`"


@app.command()
def delete(
    docs: Annotated[list[str], typer.Argument(metavar="DOC", help="What `show` takes: document id (or a unique prefix), the path it was ingested from, or its file name when unambiguous")],
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only documents of this tenant: a DOC of another tenant, or of none, is not found")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list with doc_id and deleted_chunks for each document deleted")] = False,
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    config: Config = None,
    api_url: ApiUrl = None,
    api_key: ApiKey = None,
) -> None:
    """Delete documents from the index: each one's chunk points and registry record, its kept
    converted JSON (DATA_DIR/documents) and, for a document that came by upload to `folioflow
    api` (DATA_DIR/uploads), the uploaded file. A source file elsewhere is never touched: a later
    `ingest` of it indexes it again. There is no prompt.

    Each DOC is looked up as `show` does; all are looked up before anything is deleted, and a
    document named twice is deleted once. Exits 1 when a DOC names no document or several (the
    reason on stderr, as `show` says it), after deleting the documents the other DOCs named; 0
    when every DOC was deleted.

    With --api-url, or when `folioflow api` runs on the same data directory and collection, that
    server deletes them (DELETE /v1/documents/{doc_id}, what its web UI does), with its key's
    rights. Without one, an embedded store held by another process is reported at once, naming it."""
    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    require_extras(settings)
    server = _server(settings, api_url)
    if server:
        from folioflow.ocr.errors import ServerError

        try:
            with _api_client(settings, server, api_key) as client:
                deleted, errors = delete_through(client, docs, tenant)
        except ServerError as exc:
            fail(str(exc))
    else:
        deleted, errors = delete_local(settings, docs, tenant)
    _print_deleted(deleted, as_json)
    for error in errors:
        typer.secho(f"error: {error}", err=True, fg=typer.colors.RED)
    if errors:
        raise typer.Exit(1)


def delete_local(settings, keys: list[str], tenant: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Delete the documents ``keys`` name (:func:`folioflow.flows.queries.resolve_document`, among
    ``tenant``'s documents when given) from the store of ``settings`` (opened and closed here) with
    :func:`folioflow.flows.deletion.delete_document`; uploads are looked for under
    ``<data_dir>/uploads``. Returns ``(deleted, errors)``: one ``{"doc_id", "deleted_chunks",
    "path"}`` per document deleted, in the order named, and one reason per key that named no
    document or several. Exits 1 (reason on stderr) when the store cannot be opened, holds no
    such collection, or fails to write."""
    from folioflow.flows.cli.query_view import _open_store
    from folioflow.flows.deletion import delete_document
    from folioflow.ocr.errors import FolioflowError

    store = _open_store(settings)
    deleted: list[dict[str, Any]] = []
    try:
        store.require_collection()
        records = store.list_documents()
        if tenant is not None:
            records = [r for r in records if r.tenant == tenant]
        chosen, errors = _resolve_all(records, keys, tenant)
        for record in chosen:
            count = delete_document(store, record, settings.documents_dir, settings.data_dir / "uploads")
            deleted.append({"doc_id": record.doc_id, "deleted_chunks": count, "path": record.path})
    except FolioflowError as exc:
        fail(str(exc))
    finally:
        store.close()
    return deleted, errors


def _resolve_all(records, keys: list[str], tenant: str | None) -> tuple[list, list[str]]:
    """The records ``keys`` name, each once, in the order named, and the lookup errors."""
    from folioflow.flows.queries import resolve_document
    from folioflow.ocr.errors import AmbiguousDocumentError, DocumentLookupError

    chosen: dict[str, Any] = {}
    errors: list[str] = []
    for key in keys:
        try:
            record = resolve_document(records, key, option="delete", listing=LISTING)
        except AmbiguousDocumentError as exc:
            errors.append(str(exc))
            continue
        except DocumentLookupError as exc:
            errors.append(_not_of_tenant(key, tenant) if tenant is not None else str(exc))
            continue
        chosen.setdefault(record.doc_id, record)
    return list(chosen.values()), errors


def _not_of_tenant(key: str, tenant: str) -> str:
    return f"delete {key!r}: no document of tenant {tenant!r} in the index has this name (see {LISTING})"


def delete_through(api: Any, keys: list[str], tenant: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """:func:`delete_local` through the API server ``api`` (an
    :class:`~folioflow.flows.service.client.ApiClient`): each key is looked up with ``GET
    /v1/documents/{key}`` (a path on this machine sent as its doc id), all before any is deleted,
    then each document found is deleted with ``DELETE /v1/documents/{doc_id}``. A key the server
    answers 404 or 400 for (no such document, several) is an error of the list returned, with the
    server's reason; so is one whose document is not of ``tenant``. Raises
    :class:`~folioflow.ocr.errors.ServerError` for any other failure (unreachable, refused key)."""
    from urllib.parse import quote

    from folioflow.flows.cli.query_view import _server_key
    from folioflow.ocr.errors import ServerError

    chosen: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    for key in keys:
        try:
            record = api.request("GET", f"/v1/documents/{quote(_server_key(key), safe='')}")
        except ServerError as exc:
            if exc.status not in (400, 404):
                raise
            errors.append(str(exc))
            continue
        if tenant is not None and record.get("tenant") != tenant:
            errors.append(_not_of_tenant(key, tenant))
            continue
        chosen.setdefault(record["doc_id"], record)
    deleted = []
    for doc_id, record in chosen.items():
        answer = api.request("DELETE", f"/v1/documents/{quote(doc_id, safe='')}")
        deleted.append({"doc_id": answer["doc_id"], "deleted_chunks": answer["deleted_chunks"], "path": record["path"]})
    return deleted, errors


def _print_deleted(deleted: list[dict[str, Any]], as_json: bool) -> None:
    """The documents deleted: a JSON list of ``{doc_id, deleted_chunks}`` (what ``DELETE
    /v1/documents/{doc_id}`` answers, one per document), or one line each."""
    if as_json:
        print(json.dumps([{"doc_id": d["doc_id"], "deleted_chunks": d["deleted_chunks"]} for d in deleted], indent=2))
        return
    for d in deleted:
        chunks = d["deleted_chunks"]
        typer.echo(f"deleted {d['path']} ({d['doc_id']}): {chunks} chunk{'' if chunks == 1 else 's'}")
