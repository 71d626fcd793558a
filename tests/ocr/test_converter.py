"""DocumentConverter: routing, page ranges, VLM fallback, page cache, document-level errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.engines.base import PageEngine
from folioflow.ocr.errors import (
    ConfigurationError,
    CorruptDocumentError,
    EncryptedDocumentError,
    EndpointError,
    SourceAccessError,
    UnsupportedFormatError,
)
from folioflow.ocr.ids import canonical_uri
from folioflow.ocr.pages import MemoryPageCache, parse_page_range
from folioflow.ocr.render import PageHandle
from folioflow.ocr.samples import write_sample_pdf
from folioflow.ocr.schema import DocumentStatus, Page, PageStatus, SourceRef
from tests.ocr import docs


def item(path: Path, password: str | None = None) -> DocumentInput:
    return DocumentInput(data=path, source=SourceRef(uri=canonical_uri(path), path=path.name), password=password)


class EndpointDownVlm(PageEngine):
    """Stands in for a VLM whose endpoints are all unreachable (the vLLM engine lives in ocr.vlm)."""

    name = "vlm:test"

    def __init__(self) -> None:
        self.calls: list[list[int]] = []

    def convert_pages(self, doc, numbers):
        self.calls.append(list(numbers))
        return super().convert_pages(doc, numbers)

    def convert_page(self, page: PageHandle) -> Page:
        raise EndpointError(f"page {page.number}: http://gpu-1:8000/v1: connection refused")


class RecordingVlm(PageEngine):
    """A VLM stand-in that answers every page (records which pages it was given)."""

    name = "vlm:recording"

    def __init__(self) -> None:
        self.pages: list[int] = []

    def convert_page(self, page: PageHandle) -> Page:
        self.pages.append(page.number)
        return Page(number=page.number, width=page.width, height=page.height, engine=self.name, markdown="vlm text")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("conv")


@pytest.fixture(scope="module")
def mixed(folder) -> Path:
    return docs.mixed_pdf(folder)


@pytest.fixture(scope="module")
def sample(folder) -> Path:
    return write_sample_pdf(folder / "sample2.pdf")


def test_auto_routes_born_digital_to_text_and_scan_to_cpu_ocr(mixed):
    converter = DocumentConverter()
    seen: list[int] = []
    document = converter.convert(item(mixed), on_page=lambda p: seen.append(p.number))
    assert seen == [1, 2]
    assert document.engines() == ["text", converter.cpu_engine.name]
    assert document.status == DocumentStatus.SUCCESS
    assert document.metadata["routing"]["pages_per_engine"] == {"text": 1, converter.cpu_engine.name: 1}
    assert "Sharpe ratio" in document.pages[1].markdown  # OCR read the scanned page
    assert document.pages[1].attributes["route_reason"].startswith("text layer unusable")
    assert all(p.seconds is not None and p.seconds >= 0 for p in document.pages)


def test_text_mode_fails_scanned_pages_with_reason(mixed):
    document = DocumentConverter(ConvertOptions(engine="text")).convert(item(mixed))
    assert [p.status for p in document.pages] == [PageStatus.OK, PageStatus.FAILED]
    assert "text layer unusable: no text layer" in document.pages[1].errors[0]
    assert document.status == DocumentStatus.PARTIAL


def test_ocr_mode_and_page_range(sample):
    converter = DocumentConverter(ConvertOptions(engine="ocr", page_range="2"))
    document = converter.convert(item(sample))
    assert [p.number for p in document.pages] == [2]
    assert document.page_count == 2
    assert document.pages[0].engine == converter.cpu_engine.name
    assert "Governing Law" in document.pages[0].markdown


def test_page_range_parsing():
    assert parse_page_range("1-5,9", 20) == [1, 2, 3, 4, 5, 9]
    assert parse_page_range("3-", 5) == [3, 4, 5]
    assert parse_page_range("-2, 4", 5) == [1, 2, 4]
    assert parse_page_range("7-9", 5) == []
    assert parse_page_range(None, 3) == [1, 2, 3]
    for bad in ("", "a-b", "5-2", "0", "1,,2"):
        with pytest.raises(ConfigurationError):
            parse_page_range(bad, 10)
    with pytest.raises(ConfigurationError):
        ConvertOptions(page_range="x")


def test_page_range_past_the_end_fails_the_document(sample):
    document = DocumentConverter(ConvertOptions(engine="text", page_range="9")).convert(item(sample))
    assert document.pages == [] and document.status == DocumentStatus.FAILED
    assert "selects no page" in document.errors[0]


def test_vlm_mode_needs_an_engine():
    with pytest.raises(ConfigurationError, match="VLM"):
        DocumentConverter(ConvertOptions(engine="vlm"))


def test_failed_vlm_pages_fall_back_to_the_embedded_route(mixed):
    vlm = EndpointDownVlm()
    converter = DocumentConverter(ConvertOptions(engine="vlm"), vlm_engine=vlm)
    document = converter.convert(item(mixed))
    assert vlm.calls == [[1, 2]]  # both pages handed over in one window
    assert [p.status for p in document.pages] == [PageStatus.FALLBACK, PageStatus.FALLBACK]
    assert document.engines() == ["text", converter.cpu_engine.name]
    assert all("connection refused" in p.fallback_reason for p in document.pages)
    assert document.status == DocumentStatus.PARTIAL
    assert document.metadata["routing"]["fallback_pages"] == 2


def test_auto_with_vlm_keeps_plain_pages_on_the_text_layer(folder, sample):
    plain = docs.plain_pdf(folder / "plain.pdf")
    vlm = RecordingVlm()
    converter = DocumentConverter(vlm_engine=vlm)
    assert converter.convert(item(plain)).engines() == ["text"]
    document = converter.convert(item(sample))  # page 1 has a table, page 2 a formula
    assert document.engines() == ["vlm:recording", "vlm:recording"]
    assert document.pages[0].attributes["route_reason"] == "page has table"
    assert "formula" in document.pages[1].attributes["route_reason"]


class ClosableVlm(RecordingVlm):
    """:class:`RecordingVlm` that counts its :meth:`close` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def test_close_leaves_a_given_vlm_engine_to_its_owner(sample):
    """One VLM engine serves several converters in turn (the API server's, per request): closing
    a converter closes only what it built, so the engine still answers the next one."""
    vlm = ClosableVlm()
    for _ in range(2):
        converter = DocumentConverter(ConvertOptions(engine="vlm"), vlm_engine=vlm)
        assert converter.convert(item(sample)).engines() == ["vlm:recording", "vlm:recording"]
        converter.close()
        assert vlm.closed == 0
    assert vlm.pages == [1, 2, 1, 2]


def test_page_cache_skips_finished_pages(mixed):
    cache = MemoryPageCache()
    first = DocumentConverter(page_cache=cache).convert(item(mixed))
    assert len(cache.pages) == 2
    second = DocumentConverter(page_cache=cache).convert(item(mixed))
    assert [p.attributes.get("cache") for p in second.pages] == ["hit", "hit"]
    assert [p.markdown for p in second.pages] == [p.markdown for p in first.pages]
    key = {k[2] for k in cache.pages}
    from folioflow.ocr.engines.text_layer import TEXT_ENGINE_VERSION

    assert f"text:{TEXT_ENGINE_VERSION}" in key


def test_document_errors_are_specific(tmp_path, sample):
    converter = DocumentConverter(ConvertOptions(engine="text"))
    with pytest.raises(SourceAccessError, match="not found"):
        converter.convert(item(tmp_path / "missing.pdf"))
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"PK\x03\x04 this is a zip")
    with pytest.raises(UnsupportedFormatError, match="not a PDF"):
        converter.convert(item(junk))
    truncated = tmp_path / "truncated.pdf"
    truncated.write_bytes(sample.read_bytes()[:400])
    with pytest.raises(CorruptDocumentError):
        converter.convert(item(truncated))


@pytest.mark.corpus
def test_encrypted_corpus_documents(corpus):
    converter = DocumentConverter(ConvertOptions(engine="text"))
    path = corpus / "E_malformed/pdfjs/issue6010_1.pdf"
    with pytest.raises(EncryptedDocumentError, match="password required"):
        converter.convert(item(path))
    with pytest.raises(EncryptedDocumentError, match="wrong password"):
        converter.convert(item(path, password="nope"))
    document = converter.convert(item(path, password="abc"))
    assert document.page_count >= 1


@pytest.mark.corpus
def test_financebench_filing_pages_route_to_text(corpus):
    path = corpus / "A_finance/financebench/pdfs/AMAZON_2017_10K.pdf"
    document = DocumentConverter(ConvertOptions(page_range="37-39")).convert(item(path))
    assert document.engines() == ["text", "text", "text"]
    assert "| Total net sales | 107,006 | 135,987 | 177,866 |" in document.pages[1].markdown
