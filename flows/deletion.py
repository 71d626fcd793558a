"""Deleting a document from the index: what ``folioflow delete`` does. The API's ``DELETE
/v1/documents/{doc_id}`` (:mod:`folioflow.flows.service.app`) takes the same three steps inline,
with two more of its own: a 409 while one of its jobs covers the document, and the uploaded file
removed only while it is still the file the document was indexed from (an upload of the same name
may have replaced it meanwhile, under the server's upload lock). Not yet one function: that one
would need a hook for the upload file's removal."""

from __future__ import annotations

from pathlib import Path

from folioflow.indexing.registry import DocumentRecord

__all__ = ["delete_document"]


def delete_document(store, record: DocumentRecord, documents_dir: str | Path, upload_dir: str | Path) -> int:
    """Remove the document of ``record`` (a registry record of ``store``, an open
    :class:`~folioflow.indexing.store.ChunkStore`): its points and its registry record
    (:meth:`~folioflow.indexing.store.ChunkStore.delete_document`), its kept converted JSON
    (:func:`folioflow.ocr.schema.kept_document_path` under ``documents_dir``), and, when it came by
    upload (its ``file://`` URI lies under ``upload_dir``, the API server's uploads folder, by
    default ``<data_dir>/uploads``), that uploaded file. A file already gone is no error; a source
    file outside ``upload_dir`` is never touched. Returns the number of chunk points removed.
    Raises the store's :class:`~folioflow.ocr.errors.StoreError` when it cannot write (then nothing
    else is removed)."""
    from folioflow.flows.pipeline import local_path
    from folioflow.ocr.schema import kept_document_path

    deleted = store.delete_document(record.doc_id)
    kept_document_path(documents_dir, record.doc_id).unlink(missing_ok=True)
    local = local_path(record.uri)
    if local is not None and Path(local).resolve().is_relative_to(Path(upload_dir).resolve()):
        Path(local).unlink(missing_ok=True)
    return deleted
