"""Request and response bodies of the HTTP API. Search and listing answers reuse the CLI's JSON
models (:class:`~folioflow.flows.queries.QueryHit`, :class:`~folioflow.flows.queries.IndexStatus`,
:class:`~folioflow.flows.queries.DocumentRow`); ingest jobs carry the run report's
:class:`~folioflow.flows.report.DocumentReport` records."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic.json_schema import SkipJsonSchema

from folioflow.flows.queries import DocumentRow, QueryHit
from folioflow.flows.report import DocumentReport
from folioflow.indexing.retriever import check_query_text
from folioflow.ocr.errors import QueryError

__all__ = ["DocumentDetail", "ErrorBody", "Health", "IngestPath", "Job", "JobProgress", "OcrPage", "OcrRequest", "OcrResult",
           "QueryRequest", "QueryHit", "DeleteResult", "ReindexRequest", "UploadedFile"]


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: ``detail`` is the one-line reason."""

    detail: str


class Health(BaseModel):
    """``GET /healthz``: ``ok`` once the embedder is loaded and the store open."""

    status: Literal["ok"] = "ok"
    collection: str
    location: str
    embedding_model: str
    documents: int
    jobs_queued: int


def _query_text(text: str) -> str:
    """The words ``folioflow query`` and the retriever answer an empty query with (a 422)."""
    try:
        return check_query_text(text)
    except QueryError as exc:
        raise ValueError(str(exc)) from None


class QueryRequest(BaseModel):
    """``POST /v1/query``: what ``folioflow query`` takes. ``doc``: document ids, unique id prefixes,
    recorded paths or file names (``--doc``); ``source``: one configured source name;
    ``tenant``: the caller's tenant (required when tenancy is on; a tenant-bound API key implies
    its own); ``profile``, ``distinct_pages`` and ``glossary`` as ``query --profile``,
    ``--distinct-pages/--all-chunks`` and ``--glossary`` take them (``glossary``: the built-in
    finance or legal glossary, or none; the server reads no glossary file)."""

    model_config = ConfigDict(extra="forbid")

    text: Annotated[str, StringConstraints(strip_whitespace=True, max_length=4000), AfterValidator(_query_text)] = Field(
        description="The question or search text (not only whitespace; at most 4000 characters: "
                    "folioflow.indexing.retriever.MAX_QUERY_CHARS)")
    k: int = Field(default=5, ge=1, le=100, description="Hits to return")
    mode: Literal["dense", "sparse", "hybrid"] = "hybrid"
    doc: list[str] | None = Field(default=None, max_length=100, description="Only these documents")
    source: str | None = Field(default=None, description="Only this configured source")
    tenant: str | None = Field(default=None, description="The caller's tenant")
    profile: Literal["auto", "finance", "legal", "general"] = Field(
        default="auto", description="Ranking defaults: auto (the collection's, inferred from its documents' titles, "
                                    "or their text where a title names no kind), finance, legal or general")
    distinct_pages: bool | None = Field(default=None, description="At most one chunk per page (the best ranked; "
                                                                  "further chunks of those pages fill up to k); "
                                                                  "default: the profile's")
    glossary: Literal["finance", "legal", "none"] | None = Field(
        default=None, description="Query expansion: the finance or legal glossary, or none; default: the profile's")
    route_titles: bool = Field(default=True, description="Also search inside documents whose titles the question names")


class DocumentDetail(DocumentRow):
    """``GET /v1/documents/{doc_id}``: the document's row plus the OCR engine per page and whether
    its converted form is kept (``folioflow show``)."""

    engines: list[str] = Field(default_factory=list, description="Engine per page, in page order")
    content_hash: str
    mime_type: str | None = None
    converted: bool = Field(description="Whether the converted Document JSON is kept in the data dir")


class DeleteResult(BaseModel):
    """``DELETE /v1/documents/{doc_id}``: the document and the chunk points removed."""

    doc_id: str
    deleted_chunks: int


class IngestPath(BaseModel):
    """``POST /v1/documents`` with JSON: a server-side file or folder under one of the operator's
    ``allowed_roots`` (``path``, or its ``file://`` ``uri``)."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(default=None, max_length=4096)
    uri: str | None = Field(default=None, max_length=4096)
    tenant: str | None = None
    force: bool = Field(default=False, description="Process again even when unchanged")


class JobProgress(BaseModel):
    """Documents started, skipped and finished, pages converted (of the documents started)."""

    documents_started: int = 0
    documents_skipped: int = 0
    pages_total: int = 0
    pages_done: int = 0


@dataclass(frozen=True)
class UploadedFile:
    """A file an upload request wrote: its path in the uploads folder and the identity of the file
    it wrote there (device, inode, size, modification time in ns; :meth:`of`). The clean-up at a
    job's end deletes the file at ``path`` only while it is still that file (:meth:`is_current`):
    a file of the same name uploaded since, by another request, is another inode and is its own
    job's. Internal: kept in the job table, never in an answer or the schema (:attr:`Job.uploads`;
    a dataclass, not a model, so that FastAPI lists no schema for it)."""

    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, written: str | Path, path: str | Path | None = None) -> UploadedFile:
        """The identity of the file ``written`` (a temporary name it keeps when renamed to
        ``path``: a rename keeps the inode and the modification time), recorded for ``path``."""
        st = os.lstat(written)
        return cls(path=str(path if path is not None else written), device=st.st_dev, inode=st.st_ino,
                   size=st.st_size, mtime_ns=st.st_mtime_ns)

    def is_current(self) -> bool:
        """Whether :attr:`path` is still the file recorded (not replaced, not gone)."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == (self.device, self.inode, self.size,
                                                                       self.mtime_ns)


class Job(BaseModel):
    """A job: an ingest run (``kind: ingest``), the OCR of a large document (``kind: ocr``) or a
    re-chunking of kept conversions (``kind: reindex``, ``POST /v1/reindex``).
    ``state``: ``queued``, ``running``, ``succeeded`` (the run finished; single documents or pages
    may still have failed: see ``documents`` or ``ocr.pages``) or ``failed`` (the run could not
    proceed, or the server stopped while it ran: ``error``). ``documents``: the ingest run report's
    records (``ingest --report``); ``ocr``: the OCR answer once done; ``flow_run_id``: the Prefect
    flow run that runs it, when the server hands ingestion to a Prefect deployment."""

    id: str
    kind: Literal["ingest", "ocr", "reindex"] = "ingest"
    state: Literal["queued", "running", "succeeded", "failed"]
    inputs: list[str] = Field(description="The files uploaded or the path given")
    tenant: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    progress: JobProgress = Field(default_factory=JobProgress)
    counts: dict[str, int] = Field(default_factory=dict, description="Documents (ingest) or pages (ocr) per status")
    documents: list[DocumentReport] = Field(default_factory=list)
    ocr: OcrResult | None = Field(default=None, description="The OCR answer of an ocr job, once it succeeded")
    flow_run_id: str | None = Field(default=None, description="The Prefect flow run, when Prefect runs the job")
    error: str | None = None
    uploads: SkipJsonSchema[list[UploadedFile]] = Field(
        default_factory=list, exclude=True,
        description="Internal: the files an upload job's request wrote, for its clean-up (kept in the job table, "
                    "left out of answers and the schema)")


class ReindexRequest(BaseModel):
    """``POST /v1/reindex``: chunk and embed again, from their kept conversions, the documents the
    caller may see, or those ``doc`` names (what ``folioflow reindex`` does, see
    :mod:`folioflow.flows.reindex`)."""

    model_config = ConfigDict(extra="forbid")

    doc: list[Annotated[str, StringConstraints(min_length=1, max_length=4096)]] | None = Field(
        default=None, max_length=1000,
        description="Only these documents: id, unique id prefix, recorded path or file name (as `query --doc`)")
    force: bool = Field(default=False, description="Also those already chunked under this embedding model and chunking")


class OcrRequest(BaseModel):
    """``POST /v1/ocr`` with JSON: the document by reference, ``file_url`` (a ``file://`` URL or a
    path on the server, under the operator's ``allowed_roots``) or ``image_url`` (``http(s)://``
    on a host of the operator's ``ocr_url_hosts``, or a ``data:`` URL), and the options of the
    multipart form."""

    model_config = ConfigDict(extra="forbid")

    file_url: str | None = Field(default=None, max_length=4096, description="file:// URL or server path")
    image_url: str | None = Field(default=None, description="http(s):// or data: URL of a PDF or image")
    output_format: Literal["markdown", "html", "json"] = "markdown"
    page_range: str | None = Field(default=None, max_length=200, description='Pages, e.g. "1-5,9"')
    engine: Literal["auto", "text", "ocr", "vlm"] = "auto"
    password: str | None = Field(default=None, max_length=1024, description="PDF password (never echoed)")


class OcrPage(BaseModel):
    """One converted page: ``status`` (ok, fallback, partial, failed), the engine that produced
    it, why it fell back, its errors and its content in the requested format (``json``: the page
    object of the document schema)."""

    number: int
    status: str
    engine: str
    fallback_reason: str | None = None
    errors: list[str] = Field(default_factory=list)
    seconds: float | None = None
    content: str | dict


class OcrResult(BaseModel):
    """``POST /v1/ocr``: the document's identity, status, page count and the converted pages."""

    filename: str
    content_hash: str
    mime_type: str | None = None
    page_count: int
    status: str
    output_format: Literal["markdown", "html", "json"]
    errors: list[str] = Field(default_factory=list)
    pages: list[OcrPage]
