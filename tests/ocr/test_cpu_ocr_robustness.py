"""Bad and odd input for the CPU OCR engines: blank pages, huge images, timeouts, corrupt scans,
threads."""

from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image, ImageDraw

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.engines.tesseract import TesseractRecognizer
from folioflow.ocr.errors import OcrError
from folioflow.ocr.render import RenderLimits, open_document
from folioflow.ocr.schema import PageStatus


@pytest.fixture(scope="module")
def tesseract():
    engine = get_cpu_engine("tesseract", ["eng"])
    engine.warm_up()
    return engine


def png_bytes(image: Image.Image, dpi: int = 200) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", dpi=(dpi, dpi))
    return buffer.getvalue()


def test_blank_page_is_ok_and_empty(tesseract):
    blank = Image.new("L", (1700, 2200), 255)
    noise = ImageDraw.Draw(blank)
    for x, y in ((100, 100), (900, 1500), (1600, 2100)):  # scanner dust
        noise.point((x, y), fill=0)
    with open_document(png_bytes(blank)) as doc:
        page = next(iter(tesseract.convert_pages(doc, [1])))
    assert page.status == PageStatus.OK and page.errors == []
    assert page.markdown == "" and page.blocks == [] and page.attributes["blank"] is True


def test_huge_image_is_scaled_to_the_render_limit(tesseract):
    image = Image.new("L", (6000, 4500), 255)
    ImageDraw.Draw(image).text((400, 2000), "Quarterly statement", fill=0, font_size=200)
    limits = RenderLimits(max_render_pixels=3_000_000)
    with open_document(png_bytes(image, dpi=600), limits=limits) as doc:
        gray, dpi = tesseract.render(doc.page(1))
        page = next(iter(tesseract.convert_pages(doc, [1])))
    assert gray.size <= 3_000_000 and dpi < 600
    assert page.status == PageStatus.OK
    assert "Quarterly statement" in page.markdown


def test_image_over_the_source_limit_is_refused_with_a_reason():
    from folioflow.ocr.errors import ResourceLimitError

    big = png_bytes(Image.new("L", (3000, 3000), 255))
    with pytest.raises(ResourceLimitError, match="pixel limit"), open_document(big, limits=RenderLimits(max_image_pixels=1_000_000)):
        pass


def test_tesseract_timeout_is_an_ocr_error_and_a_failed_page(scanned_sample):
    image = np.asarray(Image.open(scanned_sample(".png", dpi=200)).convert("L"))
    recognizer = TesseractRecognizer(["eng"], timeout_s=0.001)
    recognizer.warm_up()
    with pytest.raises(OcrError, match="timed out"):
        recognizer.recognize(image)
    engine = get_cpu_engine("tesseract", ["eng"])
    engine.recognizer.timeout_s = 0.001
    with open_document(scanned_sample(".png", dpi=200)) as doc:
        page = next(iter(engine.convert_pages(doc, [1])))
    assert page.status == PageStatus.FAILED and "timed out" in page.errors[0]


def test_threads_get_their_own_tesseract_handles(tesseract, scanned_sample):
    path = scanned_sample(".tif", dpi=200)
    with open_document(path) as doc:
        sequential = [p.markdown for p in tesseract.convert_pages(doc, [1, 2])]

    def one(number: int) -> str:
        with open_document(path) as doc:
            return tesseract.convert_page(doc.page(number)).markdown

    with ThreadPoolExecutor(max_workers=2) as pool:
        parallel = list(pool.map(one, [1, 2]))
    assert parallel == sequential


def test_malformed_corpus_scans_never_raise(tesseract, corpus):
    """Corrupt scan images, a blank page and a page with only a page number: every page comes back
    ok or failed with a reason; nothing raises."""
    root = corpus / "E_malformed"
    for rel in ("pdfjs/scan-bad.pdf", "pdfjs/issue18042.pdf", "ocrmypdf/blank.pdf", "camelot/only_page_number.pdf",
                "pypdf_samples/imagemagick-CCITTFaxDecode.pdf"):
        # scan-bad.pdf ends mid-stream: refused as truncated by default, opened here to exercise OCR on it
        with open_document(root / rel, limits=RenderLimits(allow_truncated=True)) as doc:
            pages = list(tesseract.convert_pages(doc, list(range(1, doc.page_count + 1))))
        assert len(pages) == doc.page_count, rel
        for page in pages:
            assert page.status in (PageStatus.OK, PageStatus.FAILED), rel
            assert page.status == PageStatus.OK or page.errors[0], rel
    with open_document(root / "ocrmypdf" / "blank.pdf") as doc:
        page = next(iter(tesseract.convert_pages(doc, [1])))
    assert page.status == PageStatus.OK and page.markdown == ""
