"""Implementation of ``folioflow query``, ``status`` and ``show`` (kept out of the command
definitions so ``--help`` does not import torch or Qdrant)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from folioflow.flows.cli.options import fail
from folioflow.flows.cli.ui import stderr, stdout
from folioflow.flows.queries import QUERY_KEYS, index_status, match_documents, search_index
from folioflow.flows.queries import resolve_document as _resolve
from folioflow.flows.settings import Settings

__all__ = ["QUERY_KEYS", "match_documents", "run_query", "check_tenant_through", "print_results", "print_status",
           "local_status", "render_status", "print_document"]

def _open_store(settings: Settings, must_exist: bool = True, direct: str | None = None):
    """The store of ``settings``, or exit with the reason. ``direct``: the command, when it cannot
    go through the API server (a store held by it then says so: :func:`~folioflow.indexing.store.locked_error`)."""
    from folioflow.indexing.store import locked_error, open_store
    from folioflow.ocr.errors import StoreError, StoreLockedError

    store_settings = settings.store_settings()  # not Pipeline's: status and show import no pipeline
    if must_exist and not settings.qdrant_url and not Path(store_settings.data_dir).exists():
        fail(f"no index under {settings.data_dir} (run `folioflow ingest` first, or pass --data-dir / --qdrant-url)")
    try:
        return open_store(store_settings)
    except StoreLockedError as exc:
        fail(str(locked_error(Path(exc.folder), direct) if direct and exc.folder else exc))
    except StoreError as exc:
        fail(str(exc))


def run_query(settings: Settings, text: str, k: int = 5, mode: str = "hybrid", doc_ids=None, source=None,
              tenant=None, distinct_pages: bool | None = None, glossary: str | None = None,
              route_titles: bool = True, profile: str = "auto") -> list[dict]:
    """Search with :func:`folioflow.flows.queries.search_index` (``profile``: ``auto`` (the
    collection's, inferred from its documents' titles, or their text where a title names no kind), ``finance``, ``legal`` or ``general``, see
    :mod:`folioflow.indexing.profiles`; ``distinct_pages``: at most one chunk per page,
    ``glossary``: ``finance``, ``none`` or a glossary file (see
    :func:`folioflow.indexing.glossary.load_glossary`), each None for the profile's;
    ``route_titles``: document routing by title, see :mod:`folioflow.indexing.routing`); returns
    one dict per hit (a :class:`~folioflow.flows.queries.QueryHit`: :data:`QUERY_KEYS` plus
    ``path`` and ``chunk_index``), in rank order: ``score`` is the ranking score (title routing's
    fused score when it re-ranked, else the mode's) and ``search_score`` the mode's own;
    ``source`` is the configured source the document came from (what ``--source`` filters on)
    and ``uri`` the document's URI. Fails (exit 1, reason on stderr) when there is no index, when
    ``tenant`` is given and no indexed document has it, or when ``doc_ids`` (see
    :func:`resolve_document`) or ``source`` match no indexed document (of ``tenant``, when given)."""
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.glossary import load_glossary
    from folioflow.indexing.profiles import PROFILE_NAMES
    from folioflow.ocr.errors import FolioflowError

    if mode not in ("dense", "sparse", "hybrid"):
        fail(f"--mode must be dense, sparse or hybrid, not {mode!r}")
    if profile not in PROFILE_NAMES:
        fail(f"--profile must be one of {', '.join(PROFILE_NAMES)}, not {profile!r}")
    try:
        terms = load_glossary(glossary) if glossary not in (None, "none") else glossary  # a bad file fails here
    except FolioflowError as exc:
        fail(str(exc))
    store = _open_store(settings)
    try:
        info = store.require_collection()  # CollectionNotFoundError: where it looked, what is there
        model = settings.embedding_model or info.get("model")
        embedder = (Embedder(model=model, device=settings.device, precision=settings.embedding_precision)
                    if mode != "sparse" else None)
        if embedder is not None:
            embedder.warm_up()
        hits = search_index(store, embedder, text, k=k, mode=mode, doc_ids=doc_ids, source=source, tenant=tenant,
                            distinct_pages=distinct_pages, glossary=terms, route_titles=route_titles,
                            profile=profile, known_tenant=True)
    except FolioflowError as exc:
        fail(str(exc))
    finally:
        store.close()
    return [hit.model_dump() for hit in hits]


def check_tenant_through(api: Any, tenant: str) -> None:
    """Exit 1 with :func:`~folioflow.flows.queries.check_filters`' reason ("--tenant 'x': no
    indexed document has this tenant ...") when none of the documents the server ``api`` (an
    :class:`~folioflow.flows.service.client.ApiClient`) lists (``GET /v1/documents``, as this
    caller's key sees them) has ``tenant``: what ``query --tenant`` says without a server, where
    the server's ``POST /v1/query`` answers ``[]``. Raises
    :class:`~folioflow.ocr.errors.ServerError` when the server cannot be asked."""
    from folioflow.flows.queries import DocumentRow, check_filters
    from folioflow.ocr.errors import DocumentLookupError

    rows = [DocumentRow.model_validate(r) for r in api.request("GET", "/v1/documents").get("document_list") or []]
    try:
        check_filters(rows, None, None, tenant=tenant)
    except DocumentLookupError as exc:
        fail(str(exc))


def resolve_document(records, key: str, option: str = "--doc"):
    """The one record ``key`` names (:func:`folioflow.flows.queries.resolve_document`); fails
    (exit 1) naming ``option`` when nothing matches, or listing the candidates when several do."""
    from folioflow.ocr.errors import DocumentLookupError

    try:
        return _resolve(records, key, option)
    except DocumentLookupError as exc:
        fail(str(exc))


def print_results(hits: list[dict], as_json: bool = False) -> None:
    """Print hits as a JSON list (``as_json``) or as numbered panels with their provenance."""
    if as_json:
        print(json.dumps(hits, indent=2, ensure_ascii=False))
        return
    if not hits:
        stdout.print("no results")
        return
    for rank, hit in enumerate(hits, 1):
        pages = f"p. {hit['page_start']}" + (f"-{hit['page_end']}" if hit["page_end"] != hit["page_start"] else "")
        heading = " > ".join(hit["heading_path"]) or "(no heading)"
        search = hit.get("search_score", hit["score"])
        routed = f" (search {search:.4f})" if search != hit["score"] else ""
        repeat = "  another chunk of a page above" if hit.get("page_repeat") else ""
        stdout.print(f"[bold]{rank}. {hit['path'] or hit['uri']}[/bold]  {pages}  "
                     f"[dim]score {hit['score']:.4f}{routed}  {hit['kind']}{repeat}[/dim]")
        stdout.print(f"   [cyan]{heading}[/cyan]")
        body = hit["text"].strip()
        stdout.print("   " + (body[:700] + " ..." if len(body) > 700 else body).replace("\n", "\n   "))
        stdout.print()


def print_status(settings: Settings, as_json: bool = False, documents: bool = False,
                 summary: dict | None = None) -> None:
    """Documents, pages and chunks in the index, per source (from the documents registry), and the
    retrieval profile ``query`` uses by default (``profile``, inferred from the documents' titles, or their text where a title names no kind:
    :func:`folioflow.flows.queries.collection_profile`); with ``documents``, one row per document (source, path, doc id, tenant where any document has one, pages, chunks, status with the
    number of failed and of partial pages) as well, then every recorded error (failed pages, failed
    documents) and every partial page with its reason (pages indexed with part of their content
    missing or implausible, :mod:`folioflow.ocr.fidelity`); JSON adds ``failed_pages``, ``errors``,
    ``partial_pages`` and ``partial_notes`` to each document (:class:`~folioflow.flows.queries.DocumentRow`). ``summary``: an
    :class:`~folioflow.flows.queries.IndexStatus` dict already read (from an API server's ``GET
    /v1/documents``) instead of opening the store. Fails (exit 1, reason on stderr) when the data
    directory or server holds no such collection."""
    if summary is None:
        summary = local_status(settings, documents)
    elif not documents:
        summary = {k: v for k, v in summary.items() if k != "document_list"}
    render_status(summary, as_json=as_json, documents=documents)


def local_status(settings: Settings, documents: bool = False) -> dict:
    """The ``status --json`` dict of the store ``settings`` name (opened and closed here); fails
    (exit 1) when it cannot be opened or holds no such collection."""
    from folioflow.ocr.errors import FolioflowError

    store = _open_store(settings)
    try:
        store.require_collection()  # a mistyped --collection or an empty folder is an error, not "0 documents"
        records = store.list_documents()
        points = store.count()
    except FolioflowError as exc:
        fail(str(exc))
    finally:
        store.close()
    status = index_status(settings, records, points, documents=documents)
    return status.model_dump(exclude={"document_list"} if status.document_list is None else None)


def render_status(summary: dict, as_json: bool = False, documents: bool = False) -> None:
    """Print a ``status --json`` dict as JSON or as the tables of :func:`print_status`."""
    per_source = summary["sources"]
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    table = Table(title=f"Index {summary['collection']} at {summary['location']}", header_style="bold")
    for column in ("source", "documents", "pages", "chunks", "failed"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for name, row in sorted(per_source.items()):
        table.add_row(name, *(str(row[c]) for c in ("documents", "pages", "chunks", "failed")))
    table.add_row("[bold]total", str(summary["documents"]), str(sum(r["pages"] for r in per_source.values())),
                  str(summary["chunks"]), str(sum(r["failed"] for r in per_source.values())))
    stdout.print(table)
    stdout.print(f"retrieval profile: [bold]{summary['profile']}[/bold] (inferred from the documents' titles, or their text "
                 "where a title names no kind; "
                 "`query --profile` overrides)")
    if documents:
        docs = Table(title="Documents", header_style="bold")
        tenants = any(row.get("tenant") for row in summary["document_list"])  # a column only where tenants are used
        for column in ("source", "path", "doc id", *(("tenant",) if tenants else ()), "pages", "chunks", "status"):
            docs.add_column(column, justify="right" if column in ("pages", "chunks") else "left",
                            overflow="fold")
        for row in summary["document_list"]:
            shown = row["status"]
            if shown == "indexed":
                for key, word in (("failed_pages", "failed"), ("partial_pages", "partial")):
                    count = len(row.get(key) or [])  # a server older than partial_pages has no such key
                    if count:
                        shown += f", {count} page{'s' if count > 1 else ''} {word}"
            tenant = (row.get("tenant") or "-",) if tenants else ()
            docs.add_row(row["source"], row["path"], row["doc_id"], *tenant, str(row["pages"]), str(row["chunks"]), shown)
        stdout.print(docs)
        troubled = [row for row in summary["document_list"] if row["errors"]]
        if troubled:
            stdout.print("[bold]Errors[/bold] (retried on the next ingest run)")
            for row in troubled:
                for error in row["errors"]:
                    stdout.print(f"  {row['path']}: {error}", markup=False)
        partial = [row for row in summary["document_list"] if row.get("partial_pages")]
        if partial:
            stdout.print("[bold]Partial pages[/bold] (indexed with part of their content missing or implausible: "
                         "`folioflow show DOC --page N` shows what was kept)")
            for row in partial:
                for note in row.get("partial_notes") or [f"page {n}: partial" for n in row["partial_pages"]]:
                    stdout.print(f"  {row['path']}: {note}", markup=False)


def _find_document(settings: Settings, key: str) -> Path:
    """The converted document JSON ``key`` names, read the way ``query --doc`` reads it (see
    :func:`match_documents`). A doc id, a unique id prefix or an existing path is found among the
    files under ``documents_dir`` without opening the index; anything else (a bare file name, the
    recorded path) is resolved through the documents registry, which then says why a document
    has no converted JSON (its last run failed, or ``keep_documents`` was off)."""
    folder = settings.documents_dir
    stem = key
    if Path(key).exists():
        from folioflow.ocr.ids import doc_id_for

        stem = doc_id_for(key)
    matches = sorted(folder.glob(f"{stem}*.json")) if folder.exists() and "/" not in stem else []
    if len(matches) == 1:
        return matches[0]
    store = _open_store(settings)
    try:
        records = store.list_documents()
    finally:
        store.close()
    record = resolve_document(records, key, option="show")
    from folioflow.ocr.schema import kept_document_path

    path = kept_document_path(folder, record.doc_id)
    if path.is_file():
        if record.status != "indexed":
            reason = "; ".join(record.errors[:3]) or "no reason recorded"
            stderr.print(f"note: {record.path} failed on its last run ({reason}); shown: the version indexed before",
                         markup=False)
        return path
    if record.status != "indexed":
        reason = "; ".join(record.errors[:3]) or "no reason recorded"
        fail(f"{record.path} ({record.doc_id}) is not indexed: its last run failed: {reason}")
    fail(f"no converted document for {record.path} ({record.doc_id}) under {folder} (keep_documents was off "
         "when it was ingested)")


def print_document(settings: Settings, key: str, page: int | None = None, fmt: str = "markdown",
                   api: Any = None) -> None:
    """Print the converted document kept by ``ingest`` (Markdown with page markers, or JSON).
    ``key``: what ``query --doc`` takes (doc id or unique prefix, path, bare file name when
    unambiguous; see :func:`_find_document`). Failed pages show as ``<!-- page N failed: ... -->``
    in Markdown and with their ``errors`` in JSON, partial pages add ``<!-- page N partial: ... -->``,
    and page headers/footers (indexed as metadata and in the sparse index, not as chunk text) show as
    ``<!-- furniture (page header): ... -->``. ``api``: an
    :class:`~folioflow.flows.service.client.ApiClient` to read the document from a server instead
    (``GET /v1/documents/{key}`` then ``/converted``)."""
    from folioflow.ocr.export import document_markdown
    from folioflow.ocr.schema import Document

    if fmt not in ("json", "markdown"):
        fail(f"--format must be markdown or json, not {fmt!r}")
    if api is not None:
        document = Document.model_validate_json(_server_document(api, key))
    else:
        document = Document.model_validate_json(_find_document(settings, key).read_text())
    if page is not None:
        selected = [p for p in document.pages if p.number == page]
        if not selected:
            fail(f"page {page} outside 1..{document.page_count}")
        document = document.model_copy(update={"pages": selected})
    if fmt == "json":
        print(document.model_dump_json(indent=2))
    else:
        print(document_markdown(document, mark_furniture=True), end="")


def print_chunks(settings: Settings, key: str, page: int | None = None, fmt: str = "markdown",
                 api: Any = None) -> None:
    """Print the indexed chunks of the document ``key`` names (as :func:`print_document` finds it),
    in reading order, from the index itself: in Markdown each chunk is its text under a
    ``<!-- chunk N · pages · kind (role) · tokens · heading path -->`` line; in JSON a list of
    :class:`~folioflow.flows.queries.ChunkRow`. ``page``: only the chunks whose page span holds it.
    ``api``: read them from a server instead (``GET /v1/documents/{key}/chunks``)."""
    from urllib.parse import quote

    from folioflow.flows.queries import ChunkRow, document_chunks

    if fmt not in ("json", "markdown"):
        fail(f"--format must be markdown or json, not {fmt!r}")
    if api is not None:
        from folioflow.ocr.errors import ServerError

        key = _server_key(key)
        try:
            params = {"page": page} if page is not None else {}
            rows = [ChunkRow.model_validate(r) for r in api.request("GET", f"/v1/documents/{quote(key, safe='')}/chunks",
                                                                     params=params)]
        except ServerError as exc:
            fail(str(exc))
    else:
        store = _open_store(settings)
        try:
            record = resolve_document(store.list_documents(), key, option="show")
            if page is not None and not 1 <= page <= max(record.pages, 0):
                fail(f"page {page} outside 1..{record.pages}")
            rows = document_chunks(store.payloads(record.doc_id), page)
        finally:
            store.close()
    if not rows:
        stderr.print(f"note: no indexed chunks for {key}" + (f" on page {page}" if page is not None else ""), markup=False)
    if fmt == "json":
        print(json.dumps([r.model_dump() for r in rows], indent=2, ensure_ascii=False))
        return
    for row in rows:
        pages = f"p.{row.page_start}" + (f"-{row.page_end}" if row.page_end != row.page_start else "")
        path = " > ".join(row.heading_path) if row.heading_path else "(no heading path)"
        kind = (row.kind or "text") + (f" ({row.role})" if row.role else "")
        print(f"<!-- chunk {row.index} · {pages} · {kind} · {row.token_count} tokens · {path} -->")
        print(row.text.rstrip() + "\n")


def _server_key(key: str) -> str:
    """What to send a server for ``key``: the doc id of a path on this machine (the server resolves
    paths against its own working directory), else ``key`` as given (a doc id, a file name)."""
    if Path(key).exists():
        from folioflow.ocr.ids import doc_id_for

        return doc_id_for(key)
    return key


def _server_document(api: Any, key: str) -> bytes:
    """The converted Document JSON of the document ``key`` names, from the server ``api``; the
    same note (stderr) and failures as :func:`_find_document`, with the server's reasons."""
    from urllib.parse import quote

    from folioflow.ocr.errors import ServerError

    key = _server_key(key)
    try:
        record = api.request("GET", f"/v1/documents/{quote(key, safe='')}")
        if record["converted"] and record["status"] != "indexed":
            reason = "; ".join(record["errors"][:3]) or "no reason recorded"
            stderr.print(f"note: {record['path']} failed on its last run ({reason}); shown: the version indexed before",
                         markup=False)
        return api.request_bytes("GET", f"/v1/documents/{quote(record['doc_id'], safe='')}/converted")
    except ServerError as exc:
        fail(str(exc))
