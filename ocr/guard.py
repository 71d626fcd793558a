"""Inspect a document in a separate, time-limited process before PDFium touches it in-process.

PDFium and Pillow's decoders are C code: on a hostile or fuzzed file they can crash the process
(SIGSEGV, abort) or loop forever, and neither can be interrupted from a Python thread. In a batch,
one such file would kill or stall the whole run, and a resumed run would die on the same file
again. :class:`DocumentGuard` runs the risky calls first in a worker process (``python -m
ocr.guard``) with a deadline per step:

1. open the document (:func:`folioflow.ocr.render.open_document`, same limits and password);
2. per page: load it, load its text page and extract its text, walk its objects for image sizes
   (:meth:`folioflow.ocr.render.PageHandle.check_images`), and render a thumbnail at ``thumbnail_dpi``
   (which runs the image decoders: JBIG2, JPX, CCITT, DCT, Flate); image frames are decoded.

The worker reports each step; when a step outlives its deadline the worker is killed, and when the
worker dies (a signal or an abort) its death is observed. A failure while *opening* raises
:class:`~folioflow.ocr.errors.CorruptDocumentError` ("PDFium crashed (SIGSEGV) while opening the document",
"... did not open the document within 60 s"); a failure on a *page* marks that page unsafe in the
returned :class:`Inspection` (``"page 3: PDFium crashed (SIGSEGV) on this page"``) and a fresh
worker continues after it. :class:`~folioflow.ocr.converter.DocumentConverter` then never loads unsafe pages
in its own process: they become ``failed`` pages carrying the reason, and the rest of the document
is converted. Errors the worker reports (encrypted, corrupt, limits) are raised as the same
:class:`~folioflow.ocr.errors.SourceError` subclasses with the same one-line reasons.

The worker's address space is capped (``memory_limit_mb``, RLIMIT_AS), so a decompression bomb
fails there instead of exhausting the machine. Passwords travel over the worker's stdin, never on
its command line. Workers are reused across documents (start-up costs about 0.2 s once), one per
concurrent caller; :func:`shared_guard` is the process-wide pool. What the guard does not cover:
a crash that only the full-resolution render or an OCR engine triggers (the thumbnail exercises
the same decoders, at another scale).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from folioflow.ocr import errors
from folioflow.ocr.errors import CorruptDocumentError, SourceError
from folioflow.ocr.render import RenderLimits

__all__ = ["Inspection", "DocumentGuard", "shared_guard"]


@dataclass
class Inspection:
    """What the guard found: ``mime_type``, ``page_count``, ``repairs`` made to open it,
    ``unsafe``: page number -> one-line reason for pages that crashed or hung the worker (never
    load them in-process), ``seconds``: wall time of the inspection, ``restarts``: workers lost."""

    mime_type: str
    page_count: int
    repairs: list[str] = field(default_factory=list)
    unsafe: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0
    restarts: int = 0


class _Died(Exception):
    def __init__(self, how: str):
        super().__init__(how)
        self.how = how


class _Worker:
    """One ``python -m folioflow.ocr.guard`` process; events arrive on a queue fed by a reader thread."""

    def __init__(self, memory_limit_mb: int):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "FOLIOFLOW_GUARD_MEMORY_MB": str(memory_limit_mb)}
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.proc = subprocess.Popen([sys.executable, "-m", "folioflow.ocr.guard"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.events: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True, name="folioflow-guard-reader").start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(json.loads(line))
            except ValueError:
                continue
        self.events.put(None)  # end of stream: the worker exited

    def send(self, request: dict[str, Any], payload: bytes | None) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            if payload:
                self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _Died(self.death()) from exc

    def next(self, timeout: float) -> dict[str, Any]:
        """The next event; raises ``TimeoutError`` past ``timeout`` seconds, :class:`_Died` when
        the worker exited."""
        try:
            event = self.events.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError from None
        if event is None:
            raise _Died(self.death())
        return event

    def death(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        if code < 0:
            try:
                return f"crashed ({signal.Signals(-code).name})"
            except ValueError:
                return f"crashed (signal {-code})"
        return f"exited with status {code}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class DocumentGuard:
    """Pool of inspection workers (see module docstring).

    ``open_timeout_s``: deadline for opening a document; ``page_timeout_s``: for each page's
    checks; ``thumbnail_dpi``: resolution of the check render; ``memory_limit_mb``: address-space
    cap of each worker; ``max_failures``: pages that crashed or hung before the whole document is
    refused. Thread-safe: concurrent callers get their own worker.
    """

    def __init__(self, open_timeout_s: float = 60.0, page_timeout_s: float = 30.0, thumbnail_dpi: float = 24.0,
                 memory_limit_mb: int = 4096, max_failures: int = 5):
        self.open_timeout_s = open_timeout_s
        self.page_timeout_s = page_timeout_s
        self.thumbnail_dpi = thumbnail_dpi
        self.memory_limit_mb = memory_limit_mb
        self.max_failures = max_failures
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                worker.kill()
        return _Worker(self.memory_limit_mb)

    def _give(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed and worker.proc.poll() is None:
                self._idle.append(worker)
                return
        worker.kill()

    def inspect(self, data: bytes | Path, password: str | None = None, limits: RenderLimits | None = None,
                page_range: str | None = None) -> Inspection:
        """Open ``data`` and check the pages of ``page_range`` (``"1-5,9"``, see
        :func:`folioflow.ocr.pages.parse_page_range`; ``None``: every page) in a worker.

        Returns an :class:`Inspection`. Raises the :class:`~folioflow.ocr.errors.SourceError` subclass the
        document deserves (same reasons as :func:`folioflow.ocr.render.open_document`), or
        :class:`CorruptDocumentError` when opening crashes or hangs, or when more than
        ``max_failures`` pages do.
        """
        started = time.perf_counter()
        limits = limits or RenderLimits()
        request: dict[str, Any] = {"password": password, "limits": limits.__dict__, "page_range": page_range,
                                   "after": 0, "thumbnail_dpi": self.thumbnail_dpi}
        payload = None
        if isinstance(data, Path):
            request["path"] = str(data)
        else:
            payload = bytes(data)
            request["size"] = len(payload)
        result: Inspection | None = None
        restarts = 0
        while True:
            worker = self._take()
            current, phase = 0, "open"
            try:
                worker.send(request, payload)
                while True:
                    event = worker.next(self.open_timeout_s if phase == "open" else self.page_timeout_s)
                    kind = event.get("event")
                    if kind == "error":
                        self._give(worker)
                        raise _error(event)
                    if kind == "opened":
                        if result is None:
                            result = Inspection(mime_type=event["mime"], page_count=int(event["pages"]),
                                                repairs=list(event.get("repairs") or []))
                        phase = "pages"
                    elif kind == "page":
                        current = int(event["n"])
                    elif kind == "done":
                        self._give(worker)
                        assert result is not None
                        result.seconds = time.perf_counter() - started
                        result.restarts = restarts
                        return result
            except (TimeoutError, _Died) as exc:
                worker.kill()
                restarts += 1
                what = (f"did not finish within {self.open_timeout_s if phase == 'open' else self.page_timeout_s:g} s"
                        if isinstance(exc, TimeoutError) else exc.how)
                if phase == "open" or result is None:
                    raise CorruptDocumentError(f"corrupt PDF: PDFium {_phrase(what)} while opening the document") from None
                if current == 0:  # died between pages: nothing to blame, try once more
                    if restarts > self.max_failures:
                        raise CorruptDocumentError(f"corrupt PDF: the inspection worker {what} repeatedly") from None
                    continue
                result.unsafe[current] = f"page {current}: PDFium {_phrase(what)} on this page (page skipped)"
                if len(result.unsafe) > self.max_failures:
                    pages = ", ".join(map(str, sorted(result.unsafe)))
                    raise CorruptDocumentError(f"corrupt PDF: PDFium crashed or hung on pages {pages}; giving up") from None
                request["after"] = current

    def close(self) -> None:
        """Stop every idle worker (idempotent); workers in use stop when returned."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


def _phrase(what: str) -> str:
    return what if what.startswith(("crashed", "did not", "exited", "stopped")) else f"failed: {what}"


def _error(event: dict[str, Any]) -> SourceError:
    cls = getattr(errors, str(event.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, SourceError)):
        cls = CorruptDocumentError
    return cls(str(event.get("message")))


_SHARED: DocumentGuard | None = None
_SHARED_LOCK = threading.Lock()


def shared_guard() -> DocumentGuard:
    """The process-wide :class:`DocumentGuard` (default settings), closed at exit."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = DocumentGuard()
            atexit.register(_SHARED.close)
        return _SHARED


# ---------------------------------------------------------------------------------------- worker side
def _serve() -> None:  # pragma: no cover - runs in the worker process (exercised by the tests through it)
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # stray C-level prints must not corrupt the event stream
    limit_mb = int(os.environ.get("FOLIOFLOW_GUARD_MEMORY_MB", "0") or 0)
    if limit_mb > 0:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    from folioflow.ocr.pages import parse_page_range
    from folioflow.ocr.render import PDFIUM_LOCK, open_document

    def emit(**event: Any) -> None:
        out.write(json.dumps(event).encode("utf-8") + b"\n")

    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        request = json.loads(line)
        data: bytes | Path = Path(request["path"]) if "path" in request else stdin.read(int(request["size"]))
        limits = RenderLimits(**request["limits"])
        scale = float(request["thumbnail_dpi"]) / 72.0
        try:
            with open_document(data, password=request.get("password"), limits=limits) as doc:
                emit(event="opened", mime=doc.mime_type, pages=doc.page_count, repairs=doc.repairs)
                for n in parse_page_range(request.get("page_range"), doc.page_count):
                    if n <= request["after"]:
                        continue
                    emit(event="page", n=n)
                    _check_page(doc, n, scale, PDFIUM_LOCK)
                    emit(event="checked", n=n)
        except SourceError as exc:
            emit(event="error", type=type(exc).__name__, message=str(exc))
            continue
        except MemoryError:
            emit(event="error", type="ResourceLimitError",
                 message=f"document needs more than the inspection memory limit ({limit_mb} MiB) to open")
            continue
        emit(event="done")


def _check_page(doc, number: int, scale: float, lock) -> None:  # pragma: no cover - worker side
    """Run the risky calls of one page; Python-level failures are fine (the converter reports
    them itself), only crashes and hangs matter here."""
    try:
        handle = doc.page(number)
    except Exception:  # noqa: BLE001 - Python-level failures are the converter's to report
        return
    if handle.pdf_page is None:
        return  # image frames were decoded by doc.page()
    try:
        with lock:
            textpage = handle.pdf_page.get_textpage()
            textpage.get_text_range()
            textpage.close()
        handle.check_images()
        with lock:
            handle.pdf_page.render(scale=scale).close()
    except Exception:  # noqa: BLE001 - Python-level failures are the converter's to report
        return


if __name__ == "__main__":  # pragma: no cover
    _serve()
