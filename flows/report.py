"""The run report: one record per document, plus totals.

``folioflow ingest --report FILE.json`` writes :meth:`RunReport.records_json`: a JSON list with one
object per document (keys of :class:`DocumentReport`). Statuses:

* ``indexed``: converted, chunked, embedded and upserted in this run;
* ``skipped``: already indexed with the same content hash and settings (no OCR, no embedding); its
  ``pages``, ``chunks``, ``engines``, ``partial_pages`` and the partial pages' reasons (in
  ``page_errors``) are those the index holds (:meth:`folioflow.flows.stages.Known.carry_to`);
* ``failed``: could not be indexed; ``error`` holds the specific one-line reason (for a document
  whose every page failed: ``every page failed (N of N): page 1: ...``);
* ``pruned``: removed from the index because it disappeared from its source (``--prune``).

``change`` says why a document was (not) processed (docs/usage.md lists the values); it is ``None``
for an input that gave no document to compare: a path or glob that matches nothing, a folder or
source that cannot be listed, a file that cannot be read.

A document whose pages partly failed or fell back is still ``indexed``; ``failed_pages`` and
``fallback_pages`` say which, and ``page_errors`` why (each prefixed ``page N:`` once). Failed
documents and documents with failed pages are retried on the next run.

Fidelity (:mod:`folioflow.ocr.fidelity`): ``partial_pages`` are pages indexed with part of their
content missing or implausible (the reason, with its measured numbers, is in ``page_errors``);
``rerouted_pages`` are pages whose first route failed a fidelity check and were read again another
way; ``fidelity`` sums the document up: pages checked / ok / partial / failed by the check,
re-routed pages, and the lowest text-layer ``chars_recall``, ``plausibility`` and ``ink_read``
measured on its pages.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["DocumentReport", "RunReport"]

Status = Literal["indexed", "skipped", "failed", "pruned"]


class DocumentReport(BaseModel):
    """Outcome of one document in a run."""

    source: str = Field(description="Path or URI as the user named it")
    doc_id: str | None = None
    status: Status
    pages: int = 0
    chunks: int = 0
    engines: list[str] = Field(default_factory=list, description="Engine per page, in page order")
    fallback_pages: list[int] = Field(default_factory=list)
    failed_pages: list[int] = Field(default_factory=list)
    partial_pages: list[int] = Field(default_factory=list, description="Pages indexed with part of their content missing (fidelity check)")
    rerouted_pages: list[int] = Field(default_factory=list, description="Pages the fidelity check re-read by another route")
    fidelity: dict[str, float] = Field(default_factory=dict, description="Fidelity summary of the document (see the module docstring)")
    cached_pages: list[int] = Field(default_factory=list, description="Pages taken from the OCR page cache (no OCR run)")
    page_errors: list[str] = Field(default_factory=list)
    error: str | None = None
    content_hash: str | None = None
    seconds: float = 0.0
    tenant: str | None = None
    source_name: str | None = Field(default=None, description="Configured source name (None for command-line paths)")
    change: str | None = Field(default=None, description="Why the document was (not) processed: new, changed, unchanged (...)")


class RunReport(BaseModel):
    """All documents of one run and the run's timing."""

    documents: list[DocumentReport] = Field(default_factory=list)
    started_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(1 for d in self.documents if d.status == status)

    @property
    def pages_processed(self) -> int:
        """Pages converted in this run (skipped documents excluded)."""
        return sum(d.pages for d in self.documents if d.status == "indexed")

    @property
    def chunks_indexed(self) -> int:
        return sum(d.chunks for d in self.documents if d.status == "indexed")

    @property
    def pages_per_second(self) -> float:
        """Pages converted per wall-clock second of the whole run (model loading included)."""
        return self.pages_processed / self.seconds if self.seconds > 0 else 0.0

    def engine_shares(self) -> dict[str, int]:
        """Pages per engine over documents indexed in this run."""
        counts: Counter[str] = Counter()
        for doc in self.documents:
            if doc.status == "indexed":
                counts.update(doc.engines)
        return dict(counts)

    def failures(self) -> list[DocumentReport]:
        return [d for d in self.documents if d.status == "failed"]

    def records_json(self) -> str:
        """The ``--report`` file: a JSON list, one object per document."""
        return json.dumps([d.model_dump(mode="json") for d in self.documents], indent=2)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.records_json() + "\n")
        return path
