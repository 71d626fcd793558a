"""CPU OCR on real scans and rendered pages of the corpus, per language (skipped without corpus).

References: OCRmyPDF's ``linn.txt``; for born-digital pages the text layer (the engine never reads
it: it OCRs the rendered image)."""

from __future__ import annotations

import re

import pypdfium2 as pdfium
import pytest

from ocr.engines.cpu import get_cpu_engine
from ocr.postprocess.textmetrics import plain_text, word_recall
from ocr.render import open_document
from ocr.schema import PageStatus


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
