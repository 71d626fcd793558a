"""Implementation of ``folioflow query``, ``status`` and ``show`` (kept out of the command
definitions so ``--help`` does not import torch or Qdrant)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.table import Table

from folioflow.flows.cli.options import fail
from folioflow.flows.cli.ui import stderr, stdout
from folioflow.flows.settings import Settings

if TYPE_CHECKING:
    from folioflow.indexing.store import Mode

__all__ = ["QUERY_KEYS", "run_query", "print_results", "print_status", "print_document"]

#: Keys of every object printed by ``folioflow query --json`` (the documented contract).
#: ``score`` ranks the hits (best first, never increasing); ``search_score`` is the mode's own score
#: (cosine, BM25 or RRF), different from ``score`` when title routing re-ranked the hits.
#: ``source`` is the configured source the document came from (what ``--source`` filters on) and
#: ``uri`` the document's URI: the names of the retriever's metadata and the registry (docs/retrieval.md).
#: ``page_repeat``: a further chunk of a page already listed, filling up to ``k`` (distinct pages).
QUERY_KEYS = ("text", "score", "search_score", "doc_id", "source", "uri", "page_start", "page_end",
              "heading_path", "kind", "page_repeat")


def _open_store(settings: Settings, must_exist: bool = True):
    from folioflow.indexing.store import open_store
    from folioflow.ocr.errors import StoreError

    store_settings = settings.store_settings()
    if must_exist and not settings.qdrant_url and not Path(store_settings.data_dir).exists():
        fail(f"no index under {settings.data_dir} (run `folioflow ingest` first, or pass --data-dir / --qdrant-url)")
    try:
        return open_store(store_settings)
    except StoreError as exc:
        fail(str(exc))


def run_query(settings: Settings, text: str, k: int = 5, mode: str = "hybrid", doc_ids=None, source=None,
              tenant=None, distinct_pages: bool | None = None, glossary: str | None = None,
              route_titles: bool = True, profile: str = "auto") -> list[dict]:
    """Search with :class:`folioflow.indexing.retriever.FolioRetriever` (``profile``: ``auto`` (the
    collection's, inferred from its documents' titles), ``finance``, ``legal`` or ``general``, see
    :mod:`folioflow.indexing.profiles`; ``distinct_pages``: at most one chunk per page, ``glossary``:
    ``finance``, ``none`` or a glossary file (:func:`folioflow.indexing.glossary.load_glossary`),
    each None for the profile's; ``route_titles``: document routing by title, see
    :mod:`folioflow.indexing.routing`); returns one dict per hit with
    :data:`QUERY_KEYS` (plus ``path`` and ``chunk_index``), in rank order: ``score`` is the
    ranking score (title routing's fused score when it re-ranked, else the mode's) and
    ``search_score`` the mode's own; ``source`` is the configured source the document came from
    (what ``--source`` filters on) and ``uri`` the document's URI. Fails (exit 1, reason on
    stderr) when there is no index, or when ``doc_ids`` (see :func:`resolve_document`) or
    ``source`` match no indexed document (of ``tenant``, when given)."""
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.glossary import load_glossary
    from folioflow.indexing.profiles import PROFILE_NAMES
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.ocr.errors import FolioflowError, TenancyError

    if mode not in ("dense", "sparse", "hybrid"):
        fail(f"--mode must be dense, sparse or hybrid, not {mode!r}")
    if profile not in PROFILE_NAMES:
        fail(f"--profile must be one of {', '.join(PROFILE_NAMES)}, not {profile!r}")
    chosen: dict = {}
    if distinct_pages is not None:
        chosen["distinct_pages"] = distinct_pages
    try:
        if glossary is not None:
            chosen["glossary"] = load_glossary(glossary)
    except FolioflowError as exc:
        fail(str(exc))
    store = _open_store(settings)
    try:
        info = store.require_collection()  # CollectionNotFoundError: where it looked, what is there
        if store.tenancy and not tenant:
            raise TenancyError("tenancy is on: the query needs the caller's tenant (--tenant)")
        records = store.list_documents()
        if tenant is not None:  # another tenant's documents are not there for this caller
            records = [r for r in records if r.tenant == tenant]
        doc_ids = _check_filters(records, doc_ids, source)
        model = settings.embedding_model or info.get("model")
        embedder = (Embedder(model=model, device=settings.device, precision=settings.embedding_precision)
                    if mode != "sparse" else None)
        if embedder is not None:
            embedder.warm_up()
        retriever = FolioRetriever(store=store, embedder=embedder, k=k, mode=cast("Mode", mode), doc_ids=doc_ids,  # checked above
                                   sources=[source] if source else None, tenant=tenant,
                                   route_titles=route_titles, profile=profile, **chosen)
        documents = retriever.invoke(text)
    except FolioflowError as exc:
        fail(str(exc))
    finally:
        store.close()
    hits = []
    for doc in documents:
        meta = doc.metadata
        hits.append({
            "text": doc.page_content,
            "score": float(meta.get("score", 0.0)),
            "search_score": float(meta.get("search_score", meta.get("score", 0.0))),
            "doc_id": meta.get("doc_id"),
            "source": meta.get("source"),
            "uri": meta.get("uri"),
            "page_start": int(meta.get("page_start", 0)),
            "page_end": int(meta.get("page_end", 0)),
            "heading_path": list(meta.get("heading_path") or []),
            "kind": meta.get("kind"),
            "path": meta.get("path"),
            "chunk_index": meta.get("chunk_index"),
            "page_repeat": bool(meta.get("page_repeat")),
        })
    return hits


def match_documents(records, key: str) -> list:
    """The registry records ``key`` names, the way ``query --doc`` and ``show`` read it: a full
    doc id, else a doc id prefix, else the path the document was ingested from (as given:
    relative to the working directory, absolute, or its URI), its recorded path or its bare file
    name. Several records back mean ``key`` is ambiguous; none, that nothing matches."""
    from folioflow.ocr.ids import canonical_uri

    try:  # a path as given (relative to the working directory, absolute, or a URI)
        uri = canonical_uri(key)
    except (OSError, ValueError):
        uri = None
    return ([r for r in records if r.doc_id == key] or [r for r in records if r.doc_id.startswith(key)]
            or [r for r in records if key in (r.path, Path(r.path).name, r.uri) or r.uri == uri])


def resolve_document(records, key: str, option: str = "--doc"):
    """The one record ``key`` names (see :func:`match_documents`); fails (exit 1) naming ``option``
    when nothing matches, or listing the candidates (id and where each came from) when several do."""
    found = {r.doc_id: r for r in match_documents(records, key)}
    if not found:
        fail(f"{option} {key!r}: no such document in the index (see `folioflow status --documents`)")
    if len(found) > 1:
        shown = sorted(found.values(), key=lambda r: (r.source, r.uri))
        listed = "; ".join(f"{r.doc_id} ({r.source}: {r.uri})" for r in shown[:10])
        more = f"; and {len(shown) - 10} more" if len(shown) > 10 else ""
        fail(f"{option} {key!r} matches {len(found)} documents: {listed}{more}; give the doc id (or a unique "
             "prefix of it) or the full path")
    return next(iter(found.values()))


def _searchable(record) -> bool:
    """Whether ``record``'s document has points to search: indexed, or failed on its last run
    while an earlier version's points stay in the index."""
    return record.status == "indexed" or record.chunks > 0


def _check_filters(records, keys: list[str] | None, source: str | None) -> list[str] | None:
    """Document ids for the ``--doc`` values (:func:`resolve_document`); fails (exit 1) with the
    specific reason when the ``--doc`` / ``--source`` filters leave no indexed document to search:
    a named document that was never indexed (its last run failed), a source no indexed document
    has, or named documents that are not from that source."""
    chosen = [resolve_document(records, key) for key in keys] if keys else None
    for record in chosen or ():
        if not _searchable(record):
            reason = "; ".join(record.errors[:3]) or "no reason recorded"
            fail(f"--doc {record.path!r}: document {record.doc_id} is not indexed (its last run failed: {reason})")
    if source is not None:
        if not any(r.source == source for r in records if _searchable(r)):
            fail(f"--source {source!r}: no indexed document has source {source!r} (see `folioflow status` "
                 "for the sources in the index)")
        if chosen is not None and not any(r.source == source for r in chosen):
            fail(f"--source {source!r} with --doc: none of the documents given has source {source!r} "
                 f"(theirs: {', '.join(sorted({r.source for r in chosen}))})")
    return [r.doc_id for r in chosen] if chosen is not None else None


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
        stdout.print(f"[bold]{rank}. {hit['path'] or hit['uri']}[/bold]  {pages}  "
                     f"[dim]score {hit['score']:.4f}{routed}  {hit['kind']}[/dim]")
        stdout.print(f"   [cyan]{heading}[/cyan]")
        body = hit["text"].strip()
        stdout.print("   " + (body[:700] + " ..." if len(body) > 700 else body).replace("\n", "\n   "))
        stdout.print()


def print_status(settings: Settings, as_json: bool = False, documents: bool = False) -> None:
    """Documents, pages and chunks in the index, per source (from the documents registry), and the
    retrieval profile ``query`` uses by default (``profile``, :func:`folioflow.indexing.profiles.infer_profile`); with
    ``documents``, one row per document (source, path, doc id, pages, chunks, status and the
    number of failed pages) as well, then every recorded error (failed pages, failed documents);
    JSON adds ``failed_pages`` and ``errors`` to each document. Fails (exit 1, reason on stderr)
    when the data directory or server holds no such collection."""
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
    per_source: dict[str, dict[str, int]] = defaultdict(lambda: {"documents": 0, "pages": 0, "chunks": 0, "failed": 0})
    for record in records:
        row = per_source[record.source]
        row["documents"] += 1
        row["pages"] += record.pages
        row["chunks"] += record.chunks
        row["failed"] += record.status != "indexed"
    from folioflow.indexing.profiles import infer_profile
    from folioflow.ocr.schema import source_title

    profile = infer_profile(source_title(r.path or r.uri, (r.metadata or {}).get("meta.title")) for r in records)
    summary = {"collection": settings.collection, "location": settings.qdrant_url or str(settings.data_dir),
               "documents": len(records), "chunks": points, "sources": dict(per_source), "profile": profile}
    if documents:
        summary["document_list"] = [
            {"doc_id": r.doc_id, "source": r.source, "path": r.path, "uri": r.uri, "pages": r.pages,
             "chunks": r.chunks, "status": r.status, "tenant": r.tenant, "indexed_at": r.indexed_at.isoformat(),
             "failed_pages": list((r.metadata or {}).get("failed_pages") or []), "errors": list(r.errors)}
            for r in sorted(records, key=lambda r: (r.source, r.path))]
    if as_json:
        print(json.dumps(summary, indent=2))
        return
    table = Table(title=f"Index {summary['collection']} at {summary['location']}", header_style="bold")
    for column in ("source", "documents", "pages", "chunks", "failed"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for name, row in sorted(per_source.items()):
        table.add_row(name, *(str(row[c]) for c in ("documents", "pages", "chunks", "failed")))
    table.add_row("[bold]total", str(len(records)), str(sum(r["pages"] for r in per_source.values())),
                  str(points), str(sum(r["failed"] for r in per_source.values())))
    stdout.print(table)
    stdout.print(f"retrieval profile: [bold]{profile}[/bold] (inferred from the documents' titles; "
                 "`query --profile` overrides)")
    if documents:
        docs = Table(title="Documents", header_style="bold")
        for column in ("source", "path", "doc id", "pages", "chunks", "status"):
            docs.add_column(column, justify="right" if column in ("pages", "chunks") else "left",
                            overflow="fold")
        for row in summary["document_list"]:
            failed = len(row["failed_pages"])
            shown = row["status"]
            if failed and shown == "indexed":
                shown += f", {failed} page{'s' if failed > 1 else ''} failed"
            docs.add_row(row["source"], row["path"], row["doc_id"], str(row["pages"]), str(row["chunks"]), shown)
        stdout.print(docs)
        troubled = [row for row in summary["document_list"] if row["errors"]]
        if troubled:
            stdout.print("[bold]Errors[/bold] (retried on the next ingest run)")
            for row in troubled:
                for error in row["errors"]:
                    stdout.print(f"  {row['path']}: {error}", markup=False)


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
    path = folder / f"{record.doc_id}.json"
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


def print_document(settings: Settings, key: str, page: int | None = None, fmt: str = "markdown") -> None:
    """Print the converted document kept by ``ingest`` (Markdown with page markers, or JSON).
    ``key``: what ``query --doc`` takes (doc id or unique prefix, path, bare file name when
    unambiguous; see :func:`_find_document`). Failed pages show as ``<!-- page N failed: ... -->``
    in Markdown and with their ``errors`` in JSON, partial pages add ``<!-- page N partial: ... -->``,
    and page headers/footers (indexed as metadata and in the sparse index, not as chunk text) show as
    ``<!-- furniture (page header): ... -->``."""
    from folioflow.ocr.export import document_markdown
    from folioflow.ocr.schema import Document

    document = Document.model_validate_json(_find_document(settings, key).read_text())
    if page is not None:
        selected = [p for p in document.pages if p.number == page]
        if not selected:
            fail(f"page {page} outside 1..{document.page_count}")
        document = document.model_copy(update={"pages": selected})
    if fmt == "json":
        print(document.model_dump_json(indent=2))
    elif fmt == "markdown":
        print(document_markdown(document, mark_furniture=True), end="")
    else:
        fail(f"--format must be markdown or json, not {fmt!r}")
