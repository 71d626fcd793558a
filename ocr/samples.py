"""Generated sample documents: the project's own fixtures and the README's demo document.

:func:`write_sample_pdf` writes a born-digital, two-page annual-report excerpt (title, numbered
headings, paragraphs, a financial table, a display formula, a governing-law clause and a repeated
page footer). :func:`write_encrypted_pdf` writes a one-page password-protected PDF.
:func:`write_scanned_copy` turns any PDF into an image-only "scan" (PNG, JPEG or
multi-page TIFF, optionally rotated and skewed) so OCR paths can be exercised on known text.

The facts in :data:`SAMPLE_FACTS` are what the sample states; tests assert them after OCR and
retrieval.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SAMPLE_FACTS", "SAMPLE_TABLE", "write_encrypted_pdf", "write_sample_pdf", "write_scanned_copy"]

#: Sentences the sample states verbatim (one per page section), for assertions after OCR/retrieval.
SAMPLE_FACTS = {
    "revenue": "Total revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees.",
    "margin": "Operating margin improved to 18.4% as compensation costs fell.",
    "sharpe": "The Sharpe ratio of the flagship fund was 1.35 over the trailing three years.",
    "law": "This Agreement shall be governed by the laws of the State of Delaware.",
}

#: The sample's table: header row then data rows (USD millions).
SAMPLE_TABLE = [
    ["Line item", "FY2025", "FY2024", "Change"],
    ["Advisory fees", "2,150", "1,830", "17%"],
    ["Asset management", "1,420", "1,360", "4%"],
    ["Trading revenue", "640", "570", "12%"],
    ["Total revenue", "4,210", "3,760", "12%"],
    ["Operating income", "775", "620", "25%"],
]

_FOOTER = "Northwind Capital Holdings - Annual Report 2025"


def write_sample_pdf(path: str | Path) -> Path:
    """Write the two-page sample PDF to ``path`` (parents created) and return the path.

    Page 1: title, "1 Financial Highlights" with two paragraphs and a 6x4 table (header row
    repeated in :data:`SAMPLE_TABLE`). Page 2: "2 Risk-Adjusted Return" with a display formula,
    "3 Governing Law" with a clause. Each page has the same footer plus its page number.
    """
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.lib.units import inch
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    styles = getSampleStyleSheet()
    body = ParagraphStyle("body", parent=styles["BodyText"], fontSize=11, leading=15)
    formula = ParagraphStyle("formula", parent=body, alignment=1, fontName="Times-Italic", fontSize=13)

    def footer(canvas, doc) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 8)
        canvas.drawString(inch, 0.5 * inch, f"{_FOOTER} - Page {doc.page}")
        canvas.restoreState()

    table = Table(SAMPLE_TABLE, hAlign="LEFT", colWidths=[2.2 * inch, 1.1 * inch, 1.1 * inch, 1.0 * inch])
    table.setStyle(TableStyle([
        ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
        ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
        ("ALIGN", (1, 1), (-1, -1), "RIGHT"),
    ]))
    story = [
        Paragraph("Northwind Capital Holdings Annual Report 2025", styles["Title"]),
        Paragraph("1 Financial Highlights", styles["Heading1"]),
        Paragraph(SAMPLE_FACTS["revenue"] + " Net new assets under management reached $38 billion, "
                  "the highest inflow in the firm's history.", body),
        Paragraph(SAMPLE_FACTS["margin"] + " Headcount was stable at 2,340 employees.", body),
        Spacer(1, 10),
        Paragraph("Consolidated Statement of Operations (USD millions)", styles["Heading2"]),
        table,
        PageBreak(),
        Paragraph("2 Risk-Adjusted Return", styles["Heading1"]),
        Paragraph("We measure risk-adjusted performance with the Sharpe ratio, defined as", body),
        Paragraph("S = (R<sub>p</sub> - R<sub>f</sub>) / &#963;<sub>p</sub>", formula),
        Paragraph("where R<sub>p</sub> is the portfolio return, R<sub>f</sub> the risk-free rate and "
                  "&#963;<sub>p</sub> the standard deviation of excess returns. " + SAMPLE_FACTS["sharpe"], body),
        Paragraph("3 Governing Law", styles["Heading1"]),
        Paragraph(SAMPLE_FACTS["law"] + " Any dispute arising under this Agreement shall be resolved "
                  "exclusively in the state or federal courts located in Wilmington, Delaware.", body),
    ]
    doc = SimpleDocTemplate(str(path), pagesize=LETTER, title="Northwind Capital Holdings Annual Report 2025",
                            author="folioflow sample generator")
    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    return path


def write_scanned_copy(
    pdf_path: str | Path,
    out_path: str | Path,
    dpi: int = 200,
    rotate: int = 0,
    skew_degrees: float = 0.0,
) -> Path:
    """Render every page of ``pdf_path`` to an image-only copy at ``out_path``.

    The format follows the suffix: ``.tif``/``.tiff`` (all pages, multi-page TIFF), ``.png`` or
    ``.jpg`` (first page only) or ``.pdf`` (image-only PDF, all pages). ``rotate`` (0/90/180/270,
    clockwise) and ``skew_degrees`` (small angle, clockwise) simulate a badly fed scanner. The DPI
    is recorded in the image so page sizes in points stay right.
    """
    from PIL import Image

    from folioflow.ocr.render import open_document

    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    images: list[Image.Image] = []
    with open_document(Path(pdf_path)) as doc:
        for page in doc.pages():
            image = page.render(dpi=dpi).convert("L")
            if skew_degrees:
                image = image.rotate(-skew_degrees, expand=True, fillcolor=255, resample=Image.Resampling.BICUBIC)
            if rotate % 360:
                image = image.rotate(-(rotate % 360), expand=True)
            images.append(image)
    suffix = out_path.suffix.lower()
    if suffix in (".tif", ".tiff"):
        images[0].save(out_path, save_all=True, append_images=images[1:], dpi=(dpi, dpi), compression="tiff_deflate")
    elif suffix == ".pdf":
        images[0].save(out_path, save_all=True, append_images=images[1:], resolution=float(dpi))
    else:
        images[0].save(out_path, dpi=(dpi, dpi))
    return out_path


def write_encrypted_pdf(path: str | Path, password: str, title: str = "Encrypted Term Sheet",
                        lines: tuple[str, ...] = ("The facility bears interest at SOFR plus 225 basis points, payable quarterly.",),
                        ) -> Path:
    """Write a one-page born-digital PDF to ``path`` (parents created), encrypted with the user
    password ``password`` (reportlab's standard encryption: RC4, 128-bit key; the owner password is
    ``password + "-owner"``): ``title`` in 18 pt bold, then ``lines`` in 11 pt. Returns the path."""
    from reportlab.lib import pdfencrypt
    from reportlab.pdfgen import canvas

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    c = canvas.Canvas(str(path), encrypt=pdfencrypt.StandardEncryption(password, ownerPassword=password + "-owner"))
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, 720, title)
    c.setFont("Helvetica", 11)
    for i, line in enumerate(lines):
        c.drawString(72, 690 - 15 * i, line)
    c.save()
    return path
