"""The ingestion stages for one document, without Prefect: plan, convert, chunk, index.

:class:`Pipeline` wires the library packages (``ocr`` -> ``chunking`` -> ``indexing``) from
:class:`~flows.settings.Settings`; the Prefect flow in :mod:`flows.ingest` runs each stage as a
task. Keeping the stages here makes them testable and reusable without an orchestrator.

Skip rule: a document is ``skipped`` when the index already holds a record with the same doc id,
the same content hash and the same :attr:`Pipeline.fingerprint` (embedding model and chunk limit).
Then no OCR, chunking or embedding runs.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from chunking.chunker import Chunker
from chunking.schema import Chunk
from indexing.embedder import Embedder
from indexing.indexer import Indexer
from indexing.store import ChunkStore, DocumentRecord, StoreSettings, open_store
from ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from ocr.ids import sha256_bytes
from ocr.render import open_document
from ocr.schema import Document, Page, PageStatus, SourceRef

from flows.cache import PageCache
from flows.report import DocumentReport
from flows.settings import Settings
from flows.sources import SourceFile

__all__ = ["Pipeline", "Planned"]


@dataclass
class Planned:
    """A document read from its source and checked against the index."""

    file: SourceFile
    data: bytes
    content_hash: str
    source: SourceRef
    skip: bool
    page_count: int = 0


class Pipeline:
    """Stages of one ingestion run. Cheap to construct; :meth:`warm_up` loads models and opens
    the store (raises :class:`~ocr.errors.FolioflowError` subclasses when it cannot)."""

    def __init__(self, settings: Settings, vlm_engine=None):
        self.settings = settings
        self._vlm_engine = vlm_engine
        self.embedder: Embedder | None = None
        self.store: ChunkStore | None = None
        self.indexer: Indexer | None = None
        self.chunker: Chunker | None = None
        self.converter: DocumentConverter | None = None
        self.cache = PageCache(str(settings.cache_dir))
        self._write_lock = threading.Lock()

    # ------------------------------------------------------------------------------- set-up
    def warm_up(self) -> None:
        s = self.settings
        self.embedder = Embedder(model=s.embedding_model, device=s.device)
        self.embedder.warm_up()
        counter = self.embedder.token_counter()
        if s.max_tokens:
            counter.max_tokens = min(s.max_tokens, counter.max_tokens)
        self.chunker = Chunker(counter)
        self.store = open_store(self.store_settings(s))
        self.store.ensure_collection(self.embedder.dimension, self.embedder.model_name)
        self.indexer = Indexer(self.embedder, self.store)
        options = ConvertOptions(engine=s.engine, languages=s.languages, dpi=s.dpi,
                                 **({"cpu_engine": s.cpu_ocr_engine} if s.cpu_ocr_engine else {}))
        if self._vlm_engine is None and s.ocr_endpoints:
            self._vlm_engine = self.vlm_engine_for(s)
        self.converter = DocumentConverter(options, vlm_engine=self._vlm_engine, page_cache=self.cache)
        self.converter.warm_up()

    @staticmethod
    def vlm_engine_for(s: Settings):
        """The vLLM OCR engine for ``s.ocr_endpoints`` and ``s.profile`` (see :mod:`ocr.vlm`)."""
        from ocr.vlm import VlmEngine, VlmOptions

        return VlmEngine(VlmOptions(**{**s.vlm, "endpoints": s.ocr_endpoints, "profile": s.profile,
                                       "api_key": s.ocr_api_key}))

    @staticmethod
    def store_settings(s: Settings) -> StoreSettings:
        return StoreSettings(
            data_dir=s.store_dir,
            url=s.qdrant_url,
            api_key=s.qdrant_api_key.get_secret_value() if s.qdrant_api_key else None,
            collection=s.collection,
        )

    @property
    def fingerprint(self) -> str:
        """What else than the bytes decides the indexed content: model and chunk limit."""
        assert self.embedder and self.chunker
        return f"{self.embedder.model_name}|{self.chunker.counter.max_tokens}"

    def close(self) -> None:
        for part in (self.converter, self.store):
            if part is not None:
                part.close()

    # ------------------------------------------------------------------------------- stages
    def password_for(self, file: SourceFile) -> str | None:
        for pattern, secret in self.settings.passwords.items():
            if fnmatch.fnmatch(file.path, pattern) or fnmatch.fnmatch(Path(file.path).name, pattern):
                return secret.get_secret_value()
        return None

    def plan(self, file: SourceFile) -> Planned:
        """Read the bytes, hash them and decide whether the document can be skipped."""
        assert self.store is not None
        data = file.read_bytes()
        content_hash = sha256_bytes(data)
        source = SourceRef(uri=file.uri, path=file.path, source=self.settings.source_name,
                           tenant=self.settings.tenant, size=len(data), mtime=file.mtime)
        record = self.store.get_document(file.doc_id)
        skip = bool(record and record.content_hash == content_hash
                    and record.metadata.get("fingerprint") == self.fingerprint)
        page_count = 0
        if not skip:  # opening also rejects unreadable documents before any OCR is scheduled
            with open_document(data, password=self.password_for(file)) as opened:
                page_count = opened.page_count
        return Planned(file=file, data=data, content_hash=content_hash, source=source, skip=skip,
                       page_count=page_count)

    def convert(self, planned: Planned, on_page: Callable[[Page], None] | None = None) -> Document:
        """OCR every page (cached pages are reused). Raises ``SourceError`` if it cannot open."""
        assert self.converter is not None
        item = DocumentInput(data=planned.data, source=planned.source, password=self.password_for(planned.file))
        document = self.converter.convert(item, on_page=on_page)
        if self.settings.keep_documents:
            self.save_document(document)
        return document

    def save_document(self, document: Document) -> Path:
        path = self.settings.documents_dir / f"{document.doc_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{threading.get_ident()}.tmp")
        tmp.write_text(document.model_dump_json())
        tmp.replace(path)
        return path

    def chunk(self, document: Document) -> list[Chunk]:
        assert self.chunker is not None
        return self.chunker.chunk(document)

    def index(self, document: Document, chunks: list[Chunk]) -> DocumentRecord:
        """Embed and upsert the chunks, delete the document's stale points, write its record."""
        assert self.indexer is not None
        record = DocumentRecord(
            doc_id=document.doc_id,
            uri=document.source.uri,
            path=document.source.path,
            source=document.source.source,
            tenant=document.source.tenant,
            content_hash=document.content_hash,
            pages=document.page_count,
            chunks=len(chunks),
            engines=document.engines(),
            indexed_at=datetime.now(timezone.utc),
            metadata={"fingerprint": self.fingerprint, "status": document.status.value},
        )
        self.indexer.index(record, chunks)
        return record

    @staticmethod
    def describe(report: DocumentReport, document: Document) -> None:
        """Copy page-level facts of ``document`` into ``report``."""
        report.pages = document.page_count
        report.engines = document.engines()
        report.fallback_pages = [p.number for p in document.pages if p.status == PageStatus.FALLBACK]
        report.failed_pages = [p.number for p in document.pages if p.status == PageStatus.FAILED]
        notes = [f"page {p.number}: fallback: {p.fallback_reason}" for p in document.pages if p.fallback_reason]
        notes += [f"page {p.number}: {e}" for p in document.pages for e in p.errors]
        report.page_errors = notes[:50]
