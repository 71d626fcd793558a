"""The shortcuts the PDF text reader takes through PDFium give what the plain per-character calls
give: code points from one ``FPDFText_GetText`` call, ``IsGenerated`` asked only for spaces and
line breaks, boxes mapped by numpy, ruled-table cells searched per edge-connected group."""

from __future__ import annotations

import ctypes
from contextlib import contextmanager

import pypdfium2.raw as pdfium_c
import pytest
from pdfplumber.table import TableFinder

from folioflow.ocr.layout import pdfpage, tables
from folioflow.ocr.layout.pdfpage import display_transform, read_page
from folioflow.ocr.render import PDFIUM_LOCK, open_document
from folioflow.ocr.samples import write_sample_pdf

SETTINGS = {"vertical_strategy": "lines", "horizontal_strategy": "lines"}
# pages holding PDFium hyphenation marks (code point 2), astral math letters (UTF-16 surrogate
# pairs), /Rotate 90 and EDGAR row shading (hundreds of rectangles)
PAGES = [
    ("A_finance/financebench/pdfs/3M_2018_10K.pdf", 1),
    ("A_finance/financebench/pdfs/JOHNSON_JOHNSON_2023Q2_EARNINGS.pdf", 4),
    ("D_layout_math_tables/pdfjs/bug1937438_af_from_latex.pdf", 1),
    ("C_scanned_multilang/pdfplumber/nics-background-checks-2015-11-rotated.pdf", 1),
    ("A_finance/financebench/pdfs/BOEING_2018_10K.pdf", 72),
]


@contextmanager
def text_page(path, number):
    """(text page handle, char count, display transform) of page ``number``, under the lock."""
    with open_document(path) as doc, PDFIUM_LOCK:
        page_handle = doc.page(number)  # the PDFium page lives as long as its handle
        page = page_handle.pdf_page
        textpage = page.get_textpage()
        try:
            handle = ctypes.c_void_p(ctypes.cast(textpage.raw, ctypes.c_void_p).value)
            yield textpage, handle, pdfium_c.FPDFText_CountChars(textpage), display_transform(page)
        finally:
            textpage.close()


@pytest.mark.corpus
@pytest.mark.parametrize("rel,number", PAGES)
def test_bulk_code_points_match_per_char_calls(corpus, rel, number):
    with text_page(corpus / rel, number) as (textpage, handle, count, _):
        per_char = [pdfium_c.FPDFText_GetUnicode(textpage, i) for i in range(count)]
        assert pdfpage._text_index(handle, count - 1) == count - 1  # the one-call path applies
        assert pdfpage._codes(handle, count) == per_char
    assert count > 100
    if "3M" in rel:
        assert 2 in per_char  # the hyphenation mark PDFium writes as U+FFFE in the page text
    if "latex" in rel:
        assert any(0xD800 <= c <= 0xDBFF for c in per_char)


@pytest.mark.corpus
@pytest.mark.parametrize("rel,number", PAGES)
def test_generated_chars_are_spaces_or_line_breaks(corpus, rel, number):
    with text_page(corpus / rel, number) as (textpage, _, count, _):
        generated = [pdfium_c.FPDFText_GetUnicode(textpage, i) for i in range(count)
                     if pdfium_c.FPDFText_IsGenerated(textpage, i)]
    assert generated, "no generated characters: the page does not test the assumption"
    assert set(generated) <= {0x20, 0x0A, 0x0D}


@pytest.mark.corpus
@pytest.mark.parametrize("rel,number", PAGES)
def test_boxes_match_per_char_mapping(corpus, rel, number):
    with text_page(corpus / rel, number) as (textpage, handle, count, m):
        found, *mapped = pdfpage._boxes(handle, count, m)
        a, b, c, d, e, f = m
        rect = pdfium_c.FS_RECTF()
        for i in range(count):
            assert found[i] == bool(pdfium_c.FPDFText_GetLooseCharBox(textpage, i, rect))
            if b == 0 and c == 0:
                xs = sorted((a * rect.left + e, a * rect.right + e))
                ys = sorted((d * rect.bottom + f, d * rect.top + f))
            else:
                corners = [(rect.left, rect.bottom), (rect.right, rect.bottom), (rect.left, rect.top),
                           (rect.right, rect.top)]
                xs = sorted(a * x + c * y + e for x, y in corners)
                ys = sorted(b * x + d * y + f for x, y in corners)
            assert (mapped[0][i], mapped[1][i], mapped[2][i], mapped[3][i]) == (xs[0], ys[0], xs[-1], ys[-1])
    if "rotated" in rel:
        assert b != 0 or c != 0


def _same_tables(content) -> int:
    edges = tables._edges(content)
    ours = tables._TableFinder(tables._EdgePage(edges, content.width, content.height), SETTINGS)
    theirs = TableFinder(tables._EdgePage(edges, content.width, content.height), SETTINGS)
    assert ours.cells == theirs.cells
    assert [t.cells for t in ours.tables] == [t.cells for t in theirs.tables]
    return len(theirs.cells)


@pytest.mark.corpus
def test_ruled_table_cells_match_pdfplumber_on_shaded_rows(corpus):
    with open_document(corpus / "A_finance/financebench/pdfs/BOEING_2018_10K.pdf") as doc, PDFIUM_LOCK:
        handle = doc.page(72)
        content = read_page(handle.pdf_page)
    assert len(content.paths) > 300
    assert _same_tables(content) > 100


def test_ruled_table_cells_match_pdfplumber_on_sample(tmp_path):
    with open_document(write_sample_pdf(tmp_path / "sample.pdf")) as doc, PDFIUM_LOCK:
        handle = doc.page(1)
        content = read_page(handle.pdf_page)
    assert _same_tables(content) >= 4


def test_pages_are_freed_under_the_pdfium_lock(tmp_path):
    """PDFium is not thread-safe even across documents, and pypdfium2 frees a dropped page from a
    finalizer on whichever thread drops it: a page freed by one flow thread while another read a
    page's text crashed a benchmark run (SIGSEGV in libpdfium). Dropping a handle must wait for
    the lock, and rendering must leave no bitmap for a finalizer to free."""
    import gc
    import threading

    with open_document(write_sample_pdf(tmp_path / "sample.pdf")) as doc:
        image = doc.page(1).render(dpi=36)  # bitmap closed inside render, handle dropped at once
        assert image.size[0] > 0
        assert not [k for k in (w() for w in doc._pdf._kids) if k is not None and not k._tree_closed()]

        handles = [doc.page(1)]
        page = handles[0].pdf_page
        dropped = threading.Event()

        def drop():
            handles.clear()  # the last reference: PageHandle.__del__ frees the page
            gc.collect()
            dropped.set()

        with PDFIUM_LOCK:  # another thread is inside PDFium
            worker = threading.Thread(target=drop)
            worker.start()
            assert not dropped.wait(0.5), "the page was freed while another thread held the PDFium lock"
            assert page.raw is not None
        worker.join(10)
        assert dropped.is_set() and page.raw is None
