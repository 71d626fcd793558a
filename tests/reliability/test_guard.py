"""The inspection guard (ocr.guard): documents that hang or crash PDFium fail alone.

A page that outlives the page deadline (a 2.0 GB decoded image against a 0.3 s deadline: the
check needs about 1 s) and a worker killed by SIGSEGV in the middle of a page are both reported on
that page, and the pages after it are still checked by a fresh worker; the converter then never
loads the unsafe page in-process and converts the others.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from folioflow.flows.reliability.hostile import image_page, raw_pdf, text_page
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.errors import SourceError
from folioflow.ocr.guard import DocumentGuard
from folioflow.ocr.render import open_document
from folioflow.ocr.schema import PageStatus, SourceRef


@pytest.fixture(scope="module")
def slow_page_pdf(tmp_path_factory) -> Path:
    """Page 2 holds a 45,000 x 45,000 grey image (2.0 GB decoded, under the 2 GiB limit)."""
    folder = tmp_path_factory.mktemp("guard")
    return raw_pdf(folder / "slow.pdf", [text_page("First page", "The first page holds this sentence."),
                                         image_page(45_000, 45_000),
                                         text_page("Third page", "The third page holds this sentence.")])


def _guard_workers(before: frozenset[int] = frozenset()) -> list[psutil.Process]:
    """Guard worker processes of this test process, leaving out ``before`` (pids of workers that
    earlier tests' pipelines still hold when the whole suite runs in one process)."""
    me = psutil.Process()
    return [p for p in me.children(recursive=True)
            if p.pid not in before and "folioflow.ocr.guard" in " ".join(p.cmdline())]


def _existing_workers() -> frozenset[int]:
    return frozenset(p.pid for p in _guard_workers())


def test_page_past_its_deadline_is_unsafe_and_the_rest_is_checked(slow_page_pdf):
    before = _existing_workers()
    guard = DocumentGuard(page_timeout_s=0.3)
    try:
        result = guard.inspect(slow_page_pdf)
    finally:
        guard.close()
    assert result.page_count == 3
    assert result.unsafe == {2: "page 2: PDFium did not finish within 0.3 s on this page (page skipped)"}
    assert result.restarts == 1
    assert _guard_workers(before) == []  # killed and closed: nothing left behind


def test_worker_crash_on_a_page_marks_only_that_page(slow_page_pdf, tmp_path):
    before = _existing_workers()
    guard = DocumentGuard(page_timeout_s=60)
    try:
        guard.inspect(raw_pdf(tmp_path / "warm.pdf", [text_page("warm up")]))  # start the worker
        (worker,) = _guard_workers(before)
        baseline = worker.cpu_times().user + worker.cpu_times().system
        outcome: dict = {}
        thread = threading.Thread(target=lambda: outcome.update(result=guard.inspect(slow_page_pdf)))
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # pages 1 and 3 take milliseconds: CPU time means page 2
            times = worker.cpu_times()
            if times.user + times.system - baseline > 0.3:
                os.kill(worker.pid, signal.SIGSEGV)
                break
            time.sleep(0.01)
        thread.join(60)
        result = outcome["result"]
    finally:
        guard.close()
    assert result.unsafe == {2: "page 2: PDFium crashed (SIGSEGV) on this page (page skipped)"}
    assert result.restarts == 1


def test_converter_skips_the_unsafe_page_and_converts_the_others(slow_page_pdf):
    converter = DocumentConverter(ConvertOptions(engine="text", guard_page_timeout_s=0.3))
    try:
        document = converter.convert(DocumentInput(data=slow_page_pdf, source=SourceRef(uri="file:///slow.pdf", path="slow.pdf")))
    finally:
        converter.close()
    pages = {p.number: p for p in document.pages}
    assert [p.number for p in document.pages] == [1, 2, 3]
    assert pages[2].status == PageStatus.FAILED and pages[2].engine == "guard"
    assert pages[2].errors == ["page 2: PDFium did not finish within 0.3 s on this page (page skipped)"]
    assert "first page holds" in pages[1].markdown and "third page holds" in pages[3].markdown


def test_guard_gives_the_same_reasons_as_opening_in_process(corpus):
    """Every file of E_malformed: the guard refuses exactly what open_document refuses, with the
    same reason, and finds no unsafe page (no file there crashes or hangs PDFium 5.15)."""
    guard = DocumentGuard()
    try:
        for path in sorted((corpus / "E_malformed").rglob("*.pdf")):
            try:
                with open_document(path) as opened:
                    expected = ("ok", opened.page_count)
            except SourceError as exc:
                expected = (type(exc).__name__, str(exc))
            try:
                result = guard.inspect(path)
                got = ("ok", result.page_count)
                assert result.unsafe == {}, path.name
            except SourceError as exc:
                got = (type(exc).__name__, str(exc))
            assert got == expected, path.name
    finally:
        guard.close()
