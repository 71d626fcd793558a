"""folioflow's exception tree.

Every error folioflow raises on purpose derives from :class:`FolioflowError`. The tree lives here, at
the bottom of the dependency graph (``flows -> indexing -> chunking -> ocr``), so every package can
raise and catch the same classes::

    FolioflowError
    ├── ConfigurationError        bad settings, unknown profile/engine, model not found
    │   └── MissingExtraError         a command needs an optional extra that is not installed
    ├── SourceError               a document cannot be read (carries ``reason``, one line)
    │   ├── UnsupportedFormatError    not a PDF or supported image ("not a PDF: ...")
    │   ├── EncryptedDocumentError    password missing or wrong
    │   ├── CorruptDocumentError      the parser refused the bytes (broken xref, truncated, ...)
    │   ├── ResourceLimitError        pixel/page/size limits (decompression bombs, huge pages)
    │   └── SourceAccessError         path escapes its root, file vanished, permission denied
    ├── OcrError                  a page could not be converted by an engine
    │   ├── EngineUnavailableError    engine not installed / not configured / all endpoints down
    │   ├── EndpointError             one VLM endpoint failed (connection, timeout, HTTP 5xx)
    │   ├── RequestRejectedError      a VLM endpoint refused a request as invalid (HTTP 4xx)
    │   └── OutputValidationError     a VLM answer was truncated, repetitive or unparsable
    ├── ChunkingError             chunker invariants could not be met
    ├── IndexingError             embedding or vector store failure
    │   ├── EmbeddingError
    │   ├── StoreError                Qdrant unreachable or refused a request
    │   │   └── StoreLockedError          the embedded store is held by another process (names it)
    │   ├── CollectionNotFoundError   no such data directory or collection to search
    │   └── TenancyError              tenancy is on and a tenant is missing
    ├── DocumentLookupError       a filter or lookup names no document, several, or an unsearchable one
    │   └── AmbiguousDocumentError    the key names several documents (the API answers 400)
    └── ServerError               the folioflow API server is unreachable or answered an error

Per-page and per-document failures are *data* (``Page.status``/``Page.errors`` and the run report's
records), not exceptions that stop a batch: converters and flows catch :class:`FolioflowError` per
document and record ``str(error)``, which is always a specific one-line reason.
"""

from __future__ import annotations

__all__ = [
    "FolioflowError",
    "ConfigurationError",
    "MissingExtraError",
    "SourceError",
    "UnsupportedFormatError",
    "EncryptedDocumentError",
    "CorruptDocumentError",
    "ResourceLimitError",
    "SourceAccessError",
    "OcrError",
    "EngineUnavailableError",
    "EndpointError",
    "OutputValidationError",
    "RequestRejectedError",
    "ChunkingError",
    "IndexingError",
    "EmbeddingError",
    "StoreError",
    "StoreLockedError",
    "CollectionNotFoundError",
    "TenancyError",
    "QueryError",
    "DocumentLookupError",
    "AmbiguousDocumentError",
    "ServerError",
]


class FolioflowError(Exception):
    """Root of every error folioflow raises deliberately. ``str(err)`` is a one-line reason."""


class ConfigurationError(FolioflowError):
    """Invalid or inconsistent configuration (unknown engine or profile, missing model, bad URL)."""


class MissingExtraError(ConfigurationError):
    """A command or engine needs an optional extra that is not installed. ``extra`` is its name
    (``folioflow[extra]``); the message is one line naming the extra and the pip command."""

    def __init__(self, extra: str, what: str, missing: str):
        self.extra = extra
        super().__init__(f"{what} needs the `{extra}` extra ({missing} is not installed): "
                         f"pip install 'folioflow[{extra}]'")


class SourceError(FolioflowError):
    """A document could not be read. The message starts with a short category, e.g.
    ``"encrypted: password required"`` or ``"not a PDF: starts with b'PK\\x03\\x04'"``."""


class UnsupportedFormatError(SourceError):
    """The bytes are neither a PDF nor a supported image (PNG, JPEG, TIFF, HEIC/HEIF, AVIF), or
    the decoder of a recognised image format is missing."""


class EncryptedDocumentError(SourceError):
    """The PDF is encrypted and no (or a wrong) password was supplied."""


class CorruptDocumentError(SourceError):
    """The parser could not open the document (broken structure, truncated file, zero pages)."""


class ResourceLimitError(SourceError):
    """A configured limit was exceeded (pixels per page, pages per document, file size)."""


class SourceAccessError(SourceError):
    """The document cannot be accessed: outside its source root, vanished, or permission denied."""


class OcrError(FolioflowError):
    """A page could not be converted by an OCR engine."""


class EngineUnavailableError(OcrError):
    """The engine cannot run here: missing package or data, or no healthy endpoint left."""


class EndpointError(OcrError):
    """One VLM endpoint failed a request (connection error, timeout, non-2xx status)."""


class RequestRejectedError(OcrError):
    """A VLM endpoint answered HTTP 4xx: the request itself is wrong for that server (prompt longer
    than the context, image refused, unknown model). Retrying it elsewhere does not help."""


class OutputValidationError(OcrError):
    """A VLM answer is unusable: truncated (finish_reason != "stop"), repetitive or unparsable."""


class ChunkingError(FolioflowError):
    """The chunker could not produce chunks that respect its invariants."""


class IndexingError(FolioflowError):
    """Embedding or vector-store failure."""


class EmbeddingError(IndexingError):
    """The embedding model could not be loaded or failed to encode."""


class StoreError(IndexingError):
    """The vector store is unreachable or refused a request (after bounded retries)."""


class StoreLockedError(StoreError):
    """An embedded store's folder is held by another process (embedded Qdrant admits one process
    per data directory). ``pid``: the holder's process id (None when unknown); ``command``: its
    command line (None when it cannot be read); ``folder``: the locked folder."""

    def __init__(self, message: str, pid: int | None = None, command: str | None = None, folder: str | None = None):
        super().__init__(message)
        self.pid, self.command, self.folder = pid, command, folder


class CollectionNotFoundError(IndexingError):
    """A search (or a retriever) was pointed at a data directory or collection that holds no
    folioflow collection: the message names the place looked in and the settings that choose it.
    Not a :class:`StoreError`: retrying cannot help, the caller must point somewhere else."""


class TenancyError(IndexingError):
    """Tenancy is on and an index write or a search came without a tenant (never answered with
    another tenant's chunks)."""


class QueryError(IndexingError):
    """A query no search can run: empty (or only whitespace) text, or text longer than
    :data:`folioflow.indexing.retriever.MAX_QUERY_CHARS`."""


class DocumentLookupError(FolioflowError):
    """A document named by a filter or a lookup (doc id, id prefix, path, file name, source name)
    matches no indexed document, several of them, or one that is not searchable; the message
    names the key and the candidates."""


class AmbiguousDocumentError(DocumentLookupError):
    """The key (a file name, an id prefix) names several documents: a bad value rather than a
    missing document (the API answers 400, not 404); the message lists the candidates and asks
    for the doc id or the full path."""


class ServerError(FolioflowError):
    """The folioflow API server (``folioflow api``) could not be reached or answered an error: the
    message names the URL and the server's one-line ``detail``. ``status``: the HTTP status (None
    when no answer came)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status
