"""Run a batch through ``folioflow ingest`` and account for every file and every page.

The ingest runs as its own process (``python -m folioflow.flows.cli ingest``, Prefect ephemeral mode), as a
user runs it, so a crash of that process is seen as one. Its process tree's resident memory is
sampled every 50 ms (psutil). Then every file of the batch gets one outcome:

* **ingested**: indexed with at least one page converted (blank pages count: they were read);
* **rejected with a reason**: failed with a specific one-line reason, or indexed with every page
  failed, each with its reason (e.g. a decompression bomb's only page);
* **crashed**: absent from the report (the process died), failed with an ``internal error`` or
  ``task failed``, or failed without a reason. Must be 0.

And every page of an ingested document is accounted for from its converted document (kept under
``<data_dir>/documents``) and the index: a page is **lost** when it is missing from the document,
failed without a reason, or holds a word that no searchable point of its document holds (chunk
text, heading path, or the page headers/footers a chunk keeps as metadata; lines the engine itself
labelled page header/footer are furniture by design and not counted). Words, not page spans: the
chunker may fold repeated content into one chunk, which is not a loss. The document is chunked
again with the run's chunker (chunks are deterministic), and its searchable point ids must be
exactly those chunks' ids (**points that differ**: must be 0, no duplicate or orphan point).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from folioflow.flows.reliability.batch import Batch

__all__ = ["FileOutcome", "Figures", "ingest_env", "run_batch", "run_sampled"]

_CRASH_PREFIXES = ("internal error", "task failed")
_FURNITURE = {"page_header", "page_footer"}
_WORD = re.compile(r"\w+")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
#: An HTML tag of a table block (its attributes, such as colspan="7", are markup, not page words).
_TAG = re.compile(r"</?[a-zA-Z][^<>]*>")


@dataclass
class FileOutcome:
    """What became of one batch file (see module docstring); ``reason`` for rejected/crashed."""

    path: str
    kind: str
    origin: str
    outcome: str
    reason: str | None = None
    pages: int = 0
    pages_failed: int = 0
    pages_failed_with_reason: int = 0
    pages_lost: int = 0
    points_differ: bool = False
    page_reasons: list[str] = field(default_factory=list)


@dataclass
class Figures:
    """The batch's figures (see module docstring). ``peak_rss_mib``: resident memory of the
    ingest's process tree at its peak; ``seconds``: wall time of the ingest."""

    tried: int = 0
    ingested: int = 0
    rejected: int = 0
    crashed: int = 0
    pages: int = 0
    pages_failed_with_reason: int = 0
    pages_lost: int = 0
    documents_with_wrong_points: int = 0
    good: int = 0
    good_indexed: int = 0
    seconds: float = 0.0
    peak_rss_mib: float = 0.0
    exit_code: int | None = None
    files: list[FileOutcome] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Nothing crashed, no page lost, every point right, every good file indexed."""
        return (self.crashed == 0 and self.pages_lost == 0 and self.documents_with_wrong_points == 0
                and self.good_indexed == self.good and self.exit_code == 0)

    def as_dict(self) -> dict:
        return {**asdict(self), "passed": self.passed}


def _sample_rss(pid: int, stop: threading.Event, peak: list[float]) -> None:
    import psutil

    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
            total = 0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            peak[0] = max(peak[0], total / 2**20)
        except psutil.Error:
            return
        stop.wait(0.05)


def run_sampled(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 3600,
                cwd: Path | None = None) -> tuple[int, float, float, str]:
    """Run ``cmd`` while sampling the resident memory of its whole process tree every 50 ms
    (psutil). Returns ``(exit code, wall seconds, peak RSS in MiB, last 4,000 characters of
    stderr)``; the command is killed after ``timeout`` seconds (exit code then negative)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        # its own session, so a timeout kills the whole tree (Prefect's ephemeral server included)
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors,
                                start_new_session=True)
        stop, peak = threading.Event(), [0.0]
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, stop, peak), daemon=True)
        sampler.start()
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        stop.set()
        sampler.join()
        errors.seek(0)
        tail = errors.read()[-4000:].decode("utf-8", "replace")
    return code, time.perf_counter() - started, peak[0], tail


def ingest_env(prefect_home: Path | None = None) -> dict[str, str]:
    """The environment for an ingest subprocess: this checkout on PYTHONPATH, offline;
    ``prefect_home``: a Prefect home (database) of its own instead of the inherited one."""
    root = str(Path(__file__).resolve().parents[2])
    home = {"PREFECT_HOME": str(prefect_home)} if prefect_home is not None else {}
    return {**os.environ, **home, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "HF_HUB_OFFLINE": "1",
            # a loaded machine can take minutes to start Prefect's ephemeral server
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS":
                os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")}


def _ingest(batch: Batch, data_dir: Path, report: Path, extra: list[str], timeout: float) -> tuple[int, float, float, str]:
    import yaml

    data_dir.parent.mkdir(parents=True, exist_ok=True)
    config = data_dir.parent / f"{data_dir.name}-config.yaml"
    config.write_text(yaml.safe_dump({"passwords": batch.passwords}, allow_unicode=True))
    cmd = [sys.executable, "-m", "folioflow.flows.cli", "ingest", str(batch.folder), "--config", str(config),
           "--data-dir", str(data_dir), "--report", str(report), "--no-progress", *extra]
    return run_sampled(cmd, ingest_env(data_dir.parent / f"{data_dir.name}-prefect"), timeout)


def _words(text: str) -> set[str]:
    """Lower-cased words of ``text`` with Markdown comments and HTML tags left out and HTML
    entities decoded (a table block's ``colspan="7"`` is no word of the page, and a chunk that
    writes the table's rows as text has no tags to match it)."""
    import html

    return set(_WORD.findall(html.unescape(_TAG.sub(" ", _COMMENT.sub(" ", text))).lower()))


def _page_words(page) -> set[str]:
    """Words of a page's content: its blocks' text, page headers/footers left out (the engine
    labelled them furniture: they are kept out of chunk text by design), Markdown comments
    (figure placeholders) ignored."""
    if page.blocks:
        return _words(" ".join(b.text for b in page.blocks if b.type.value not in _FURNITURE))
    return _words(page.markdown)


def _account(outcome: FileOutcome, doc_json: Path, chunker, store) -> None:
    """Fill the page figures of an indexed document (see module docstring)."""
    from folioflow.ocr.schema import Document

    if not doc_json.is_file():
        outcome.pages_lost = outcome.pages
        outcome.page_reasons.append("converted document not kept: pages cannot be verified")
        return
    document = Document.model_validate_json(doc_json.read_text())
    chunks = chunker.chunk(document)
    stored = store.point_ids(document.doc_id, committed=True)
    outcome.points_differ = stored != {c.id for c in chunks} or store.point_ids(document.doc_id) != stored
    indexed: set[str] = set()
    for chunk in chunks:
        if chunk.id in stored:
            furniture = chunk.metadata.get("page_headers", []) + chunk.metadata.get("page_footers", [])
            indexed |= _words(" ".join([chunk.text, *chunk.heading_path, *furniture]))
    numbers = {p.number for p in document.pages}
    lost = [n for n in range(1, document.page_count + 1) if n not in numbers]
    for page in document.pages:
        if page.status.value == "failed":
            outcome.pages_failed += 1
            if not page.errors:
                lost.append(page.number)
            else:
                outcome.pages_failed_with_reason += 1
                outcome.page_reasons.append(page.errors[0])
            continue
        missing = _page_words(page) - indexed
        if missing:
            lost.append(page.number)
            outcome.page_reasons.append(f"page {page.number}: {len(missing)} word(s) not in the index, "
                                        f"e.g. {sorted(missing)[:5]}")
    outcome.pages = document.page_count
    outcome.pages_lost = len(lost)


def run_batch(batch: Batch, work: Path, extra_args: list[str] | None = None, timeout: float = 3600) -> Figures:
    """Ingest ``batch`` into a fresh data dir under ``work`` and return its :class:`Figures`."""
    from folioflow.chunking.chunker import Chunker, ChunkerOptions
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import load_settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.store import open_store

    work.mkdir(parents=True, exist_ok=True)
    data_dir, report = work / "data", work / "report.json"
    code, seconds, peak, tail = _ingest(batch, data_dir, report, list(extra_args or []), timeout)
    figures = Figures(tried=len(batch.files), seconds=round(seconds, 1), peak_rss_mib=round(peak), exit_code=code)
    records: dict[str, dict] = {}
    if report.is_file():
        for record in json.loads(report.read_text()):
            source = Path(record["source"])
            try:
                key = source.resolve().relative_to(batch.folder.resolve()).as_posix()
            except ValueError:
                key = record["source"]
            records[key] = record
    settings = load_settings(data_dir=data_dir)
    embedder = Embedder(model=settings.embedding_model, device=settings.device, precision=settings.embedding_precision)
    embedder.warm_up()
    chunker = Chunker(embedder.token_counter(), ChunkerOptions(**{**settings.chunking, "max_tokens": settings.max_tokens}))
    store = open_store(Pipeline.store_settings(settings))
    try:
        for file in batch.files:
            outcome = FileOutcome(path=file.path, kind=file.kind, origin=file.origin, outcome="crashed")
            record = records.get(file.path)
            if record is None:
                outcome.reason = f"not in the report (ingest exited {code}): {tail.strip().splitlines()[-1:] or ''}"
            elif record["status"] == "failed":
                error = (record.get("error") or "").strip()
                if error and not error.startswith(_CRASH_PREFIXES):
                    outcome.outcome, outcome.reason = "rejected", error
                else:
                    outcome.reason = error or "failed without a reason"
            else:
                from folioflow.ocr.schema import kept_document_path

                _account(outcome, kept_document_path(data_dir / "documents", record["doc_id"]), chunker, store)
                converted = outcome.pages - outcome.pages_failed
                outcome.outcome = "ingested" if converted > 0 or outcome.pages == 0 else "rejected"
                if outcome.outcome == "rejected":
                    outcome.reason = "; ".join(outcome.page_reasons[:2])
            figures.files.append(outcome)
    finally:
        store.close()
    for o in figures.files:
        figures.ingested += o.outcome == "ingested"
        figures.rejected += o.outcome == "rejected"
        figures.crashed += o.outcome == "crashed"
        figures.pages += o.pages
        figures.pages_failed_with_reason += o.pages_failed_with_reason
        figures.pages_lost += o.pages_lost
        figures.documents_with_wrong_points += o.points_differ
        if o.kind == "good":
            figures.good += 1
            figures.good_indexed += o.outcome == "ingested" and o.pages_failed == 0
    return figures
