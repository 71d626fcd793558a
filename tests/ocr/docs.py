"""Generated test documents for the OCR tests (written fresh into pytest's tmp folders).

* :func:`two_column_pdf`: two columns whose content stream draws the right column first, so only
  a geometric reading order gets the text right.
* :func:`plain_pdf`: one page of headings and paragraphs only (no table, formula or image).
* :func:`figure_pdf`: a page with a heading, a paragraph and a raster chart image.
* :func:`mixed_pdf`: page 1 of the born-digital sample followed by page 2 of its image-only scan.
* :func:`rotated_pdf`: the sample with ``/Rotate 90`` on every page.
"""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium

from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

LEFT = ["Alpha column opens the article.", "Alpha continues with more words.", "Alpha ends the left column."]
RIGHT = ["Omega column is on the right.", "Omega keeps going down here.", "Omega finishes the page."]


def two_column_pdf(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Helvetica", 11)
    for i, text in enumerate(RIGHT):  # right column first in the content stream
        c.drawString(320, 700 - 15 * i, text)
    for i, text in enumerate(LEFT):
        c.drawString(72, 700 - 15 * i, text)
    c.setFont("Helvetica-Bold", 20)
    c.drawString(72, 740, "Columns Report")
    c.save()
    return path


def plain_pdf(path: Path) -> Path:
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story = [Paragraph("Plain Memo", styles["Heading1"])]
    story += [Paragraph("This memo has only prose. " * 12, styles["BodyText"]) for _ in range(3)]
    SimpleDocTemplate(str(path)).build(story)
    return path


def figure_pdf(path: Path) -> Path:
    from PIL import Image, ImageDraw
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    chart = Image.new("RGB", (400, 250), "white")
    draw = ImageDraw.Draw(chart)
    for i, h in enumerate((80, 150, 120, 200)):
        draw.rectangle((40 + i * 90, 240 - h, 100 + i * 90, 240), fill=(30, 90, 160))
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, 730, "Revenue by Quarter")
    c.setFont("Helvetica", 11)
    c.drawString(72, 700, "The chart below shows revenue for each quarter of fiscal 2025.")
    c.drawImage(ImageReader(chart), 72, 380, width=400, height=250)
    c.save()
    return path


def mixed_pdf(folder: Path) -> Path:
    sample = write_sample_pdf(folder / "sample.pdf")
    scan = write_scanned_copy(sample, folder / "scan.pdf", dpi=150)
    out = pdfium.PdfDocument.new()
    out.import_pages(pdfium.PdfDocument(sample), [0])
    out.import_pages(pdfium.PdfDocument(scan), [1])
    path = folder / "mixed.pdf"
    out.save(path)
    return path


def rotated_pdf(folder: Path) -> Path:
    sample = write_sample_pdf(folder / "sample_for_rotation.pdf")
    doc = pdfium.PdfDocument(sample)
    for page in doc:
        page.set_rotation(90)
    path = folder / "rotated.pdf"
    doc.save(path)
    return path
