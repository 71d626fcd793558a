"""CPU OCR on real scans and rendered pages of the corpus, per language (skipped without corpus).

References: OCRmyPDF's ``linn.txt``; for born-digital pages the text layer (the engine never reads
it: it OCRs the rendered image)."""

from __future__ import annotations

import re

import pypdfium2 as pdfium
import pytest

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.postprocess.textmetrics import plain_text, word_recall
from folioflow.ocr.render import open_document
from folioflow.ocr.schema import PageStatus


def first_page(engine, path):
    engine.warm_up()
    with open_document(path) as doc:
        page = next(iter(engine.convert_pages(doc, [1])))
    assert page.status == PageStatus.OK, page.errors
    return page


def text_layer(path) -> str:
    doc = pdfium.PdfDocument(str(path))
    try:
        return doc[0].get_textpage().get_text_range()
    finally:
        doc.close()


def count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


@pytest.fixture(scope="module")
def scans(corpus):
    return corpus / "C_scanned_multilang"


def test_english_two_column_brochure(scans):
    page = first_page(get_cpu_engine("tesseract", ["eng"]), scans / "ocrmypdf" / "linn.png")
    reference = (scans / "ocrmypdf" / "linn.txt").read_text(encoding="utf-8")
    assert word_recall(reference, plain_text(page.markdown)) >= 0.85


def test_french_accents(scans):
    path = scans / "unstructured" / "fr_olap.pdf"
    page = first_page(get_cpu_engine("auto", ["fra", "eng"]), path)
    assert page.engine == "tesseract"
    assert "Résumé" in page.markdown and "Université François Rabelais" in page.markdown
    assert word_recall(text_layer(path), plain_text(page.markdown)) >= 0.85


def test_korean_hangul(scans):
    path = scans / "unstructured" / "korean-text-with-tables.pdf"
    page = first_page(get_cpu_engine("auto", ["kor", "eng"]), path)
    assert count(r"[\uac00-\ud7af]", page.markdown) >= 200
    assert "포인트" in page.markdown
    assert word_recall(text_layer(path), plain_text(page.markdown)) >= 0.85  # syllables


def test_arabic(scans):
    path = scans / "pdfjs_fonts_scripts" / "ArabicCIDTrueType.pdf"
    page = first_page(get_cpu_engine("tesseract", ["ara"]), path)
    assert page.markdown.count("انواع الخطوط") >= 2  # logical (right-to-left) order


@pytest.mark.slow
def test_chinese_found_by_script_with_default_languages(scans):
    """Languages left at English: tesseract reads garbage, OSD says Han, rapidocr re-reads it."""
    page = first_page(get_cpu_engine("auto", ["eng"]), scans / "unstructured" / "chi_sim_image.jpeg")
    assert page.engine == "rapidocr" and page.attributes["auto"]["script"] == "Han"
    assert count(r"[\u4e00-\u9fff]", page.markdown) >= 60
    assert "肌肤" in page.markdown


@pytest.mark.slow
def test_chinese_with_configured_languages(scans):
    page = first_page(get_cpu_engine("auto", ["chi_sim", "eng"]),
                      scans / "omnidocbench_demo" / "images" / "yanbaopptmerge_yanbaoPPT_145.jpg")
    assert page.engine == "rapidocr"
    assert count(r"[\u4e00-\u9fff]", page.markdown) >= 100


def test_low_resolution_paper_page_with_figure(scans):
    """docling's 72 DPI TIFF of the DocLayNet paper: upscaled before OCR; the figure becomes a figure
    block followed by its caption; the vertical arXiv stamp in the margin comes after the body."""
    from folioflow.ocr.schema import BlockType

    page = first_page(get_cpu_engine("tesseract", ["eng"]), scans / "docling_ocr" / "2206.01062.tif")
    assert page.attributes["upscaled"] >= 2
    assert page.markdown.startswith("# DocLayNet: A Large Human-Annotated Dataset for Document-Layout Analysis")
    kinds = [b.type for b in page.blocks]
    figure = kinds.index(BlockType.FIGURE)
    assert kinds[figure + 1] == BlockType.CAPTION
    assert page.blocks[figure + 1].text.startswith("Figure 1:")
    assert not any(b.type == BlockType.TABLE for b in page.blocks)  # the grid drawn inside the figure
    assert "2206.01062v1 [cs.CV]" in page.blocks[-1].text or "2206.01062v1 [cs.CV]" in page.blocks[-2].text
    assert "Accurate document layout analysis is a key requirement for" in page.markdown


@pytest.mark.slow
def test_korean_found_by_script_with_default_languages(scans):
    page = first_page(get_cpu_engine("auto", ["eng"]), scans / "unstructured" / "korean-text-with-tables.pdf")
    assert page.attributes["auto"]["script"] == "Korean"
    assert page.attributes["auto"]["retried"] == "tesseract:kor+eng" and page.engine == "tesseract"
    assert count(r"[\uac00-\ud7af]", page.markdown) >= 200
