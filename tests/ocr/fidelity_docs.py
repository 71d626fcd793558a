"""Generated documents for the fidelity tests (issue 23's cases), written into pytest's tmp folders.

Every document states known text, so tests can check what reached the page, its status and its
reason: a newspaper page whose text layer is drawn in scrambled order, a text layer whose letters
do not match the glyphs shown, a multi-page TIFF with a corrupt frame, margin lines, a header-only
invoice number, a mixed image/text page, a ruled table with an empty column and a handwritten-like
letter.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

NEWS = ("The city council met on Tuesday evening to discuss the budget for the coming year. Members debated "
        "the cost of repairing the old bridge over the river, which engineers have warned is no longer safe for heavy "
        "traffic. The mayor said that the town would seek help from the state government before the winter. Residents "
        "who attended the meeting asked why the library hours had been reduced and whether the swimming pool would open "
        "again next summer. ")
LETTER = ("Dear Ms Whitfield, thank you for your letter of the fourth of March. We have reviewed the lease and "
          "agree that the tenant may sublet the second floor provided that the landlord is told in writing.")
INVOICE_NUMBER = "INV-2024-0117"
FRAMES = ["Quarterly rent for the warehouse was paid in full on the first day of April.",
          "The insurance certificate expired and must be renewed before the audit begins.",
          "Minutes of the board meeting record a vote to approve the new credit facility."]


def font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def text_image(lines: list[str], size: tuple[int, int] = (1700, 2200), px: int = 34, top: int = 200,
               left: int = 150) -> Image.Image:
    """A white grey-scale page with ``lines`` of black text (Pillow's bundled font)."""
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    f = font(px)
    for i, line in enumerate(lines):
        draw.text((left, top + i * int(px * 1.6)), line, font=f, fill=0)
    return image


def wrap(text: str, width: int = 60) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line] if line else lines


def newspaper_pdf(path: Path, unit: str = "char", seed: int = 1) -> Path:
    """Three columns of :data:`NEWS` (repeated) whose characters (``unit="char"``) or words are drawn
    in random order: the text layer's content order is scrambled, the page looks right."""
    from reportlab.pdfbase.pdfmetrics import stringWidth
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    items = []
    cols = [(40, 200), (220, 380), (400, 570)]
    col, y, x = 0, 740, cols[0][0]
    for word in (NEWS * 6).split():
        width = stringWidth(word, "Times-Roman", 9)
        if x + width > cols[col][1]:
            x, y = cols[col][0], y - 11
            if y < 60:
                col += 1
                if col == 3:
                    break
                x, y = cols[col][0], 740
        if unit == "word":
            items.append((x, y, word))
        else:
            cx = x
            for ch in word:
                items.append((cx, y, ch))
                cx += stringWidth(ch, "Times-Roman", 9)
        x += width + stringWidth(" ", "Times-Roman", 9)
    random.Random(seed).shuffle(items)
    c.setFont("Times-Roman", 9)
    for x, y, t in items:
        c.drawString(x, y, t)
    c.save()
    return path


def _shift(text: str) -> str:
    """Letters shifted by one (a -> b): what a broken ToUnicode map gives."""
    out = []
    for ch in text:
        if "a" <= ch <= "z":
            out.append(chr((ord(ch) - 97 + 1) % 26 + 97))
        elif "A" <= ch <= "Z":
            out.append(chr((ord(ch) - 65 + 1) % 26 + 65))
        else:
            out.append(ch)
    return "".join(out)


def wrong_layer_pdf(path: Path) -> Path:
    """A page whose picture shows :data:`LETTER` and whose (visible, white) text layer says the same
    letters shifted by one: a layer that passes every character check but is not what the page shows."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    lines = wrap(LETTER * 2, 55)
    image = text_image(lines, size=(1700, 2200), px=36, top=300)
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.drawImage(ImageReader(image.convert("RGB")), 0, 0, width=612, height=792)
    c.setFillColorRGB(1, 1, 1)
    c.setFont("Helvetica", 12)
    for i, line in enumerate(lines):
        c.drawString(54, 792 - (300 + i * 57.6) * 792 / 2200 - 10, _shift(line))
    c.save()
    return path


def corrupt_tiff(path: Path) -> Path:
    """A three-frame TIFF (:data:`FRAMES`, one sentence per frame) whose second frame's compressed
    data is corrupt: Pillow raises a decoder error on it."""
    images = [text_image(wrap(t, 40) * 3, size=(1275, 1650), px=30, top=150) for t in FRAMES]
    buf = io.BytesIO()
    images[0].save(buf, format="TIFF", save_all=True, append_images=images[1:], compression="tiff_deflate",
                   dpi=(150, 150))
    data = bytearray(buf.getvalue())
    probe = Image.open(io.BytesIO(bytes(data)))
    probe.seek(1)
    for offset, count in zip(probe.tag_v2[273], probe.tag_v2[279], strict=True):
        for k in range(offset + 4, offset + count - 4):
            data[k] = (data[k] * 7 + 13) & 0xFF
    path.write_bytes(bytes(data))
    return path


def margin_pdf(path: Path, pages: list[list[tuple[float, str, float]]], size: tuple[float, float] = (612, 792)) -> Path:
    """A PDF of ``pages``, each a list of ``(y from the top in points, text, font size)`` lines."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=size)
    for lines in pages:
        for y, text, points in lines:
            c.setFont("Helvetica", points)
            c.drawString(72, size[1] - y, text)
        c.showPage()
    c.save()
    return path


def body(seed: int, n: int = 8) -> list[str]:
    """``n`` distinct body sentences."""
    rng = random.Random(seed)
    subjects = ["The tenant", "The landlord", "The borrower", "The agent", "The trustee", "The auditor"]
    verbs = ["shall deliver", "may request", "must approve", "will review", "has received", "agrees to sign"]
    objects = ["the quarterly report", "a notice of default", "the updated schedule", "the escrow statement",
               "a copy of the lease", "the insurance certificate"]
    return [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} by day {seed * 10 + i}." for i in range(n)]


def invoice_pdf(path: Path, pages: int = 3) -> Path:
    """A ``pages``-page invoice whose number (:data:`INVOICE_NUMBER`) is printed only in the running
    header; a page number in the footer."""
    lines = []
    for p in range(1, pages + 1):
        page = [(30.0, f"Northwind Legal LLP    Invoice {INVOICE_NUMBER}", 9.0)]
        page += [(120.0 + 16 * i, text, 11.0) for i, text in enumerate(body(p, 10))]
        page.append((770.0, f"Page {p} of {pages}", 9.0))
        lines.append(page)
    return margin_pdf(path, lines)


def mixed_pdf(path: Path) -> Path:
    """A page with a one-line text layer (a caption) and a large picture that holds the page's
    real text (a pasted scan of :data:`LETTER`)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    image = text_image(wrap(LETTER, 48), size=(1500, 1300), px=40, top=80, left=80)
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Helvetica-Bold", 14)
    c.drawString(72, 740, "Exhibit B: scanned correspondence")
    c.drawImage(ImageReader(image.convert("RGB")), 72, 180, width=468, height=406)
    c.setFont("Helvetica", 9)
    c.drawString(72, 160, "Figure 1. Letter received by the landlord, filed with the lease.")
    c.save()
    return path


RULED_ROWS = [["Matter", "Client", "Notes", "Hours", "Fees"],
              ["M-1001", "Acme Corp", "", "12.5", "4,375"],
              ["M-1002", "Globex", "", "8.0", "2,800"],
              ["M-1003", "Initech", "", "20.0", "7,000"]]


def ruled_table_pdf(path: Path) -> Path:
    """A fully ruled 5-column table whose "Notes" column is empty below its header."""
    from reportlab.lib import colors
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    table = Table(RULED_ROWS, colWidths=[80, 100, 90, 60, 70])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black),
                               ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold")]))
    SimpleDocTemplate(str(path)).build([Paragraph("Billing summary", getSampleStyleSheet()["Heading1"]), table])
    return path


def handwritten_png(path: Path, seed: int = 3) -> Path:
    """A letter page: a printed letterhead, then 18 lines of cursive-like strokes (connected random
    loops of pen width 4 px, as handwriting looks to OCR) filling the page."""
    rng = random.Random(seed)
    image = Image.new("L", (1700, 2200), 255)
    draw = ImageDraw.Draw(image)
    draw.text((150, 120), "HARGREAVE & DAUGHTERS SOLICITORS", font=font(44), fill=0)
    draw.text((150, 185), "12 Quay Street, Bristol", font=font(30), fill=0)
    for row in range(18):
        y = 380 + row * 95
        x = 150
        while x < 1500:
            word = rng.randint(80, 260)
            points = []
            for k in range(0, word, 9):
                points.append((x + k, y + rng.randint(-28, 28) * (1 if k % 2 else -1)))
            draw.line(points, fill=0, width=4, joint="curve")
            x += word + rng.randint(25, 55)
    image.save(path, dpi=(200, 200))
    return path


DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
CHECK_LINES = ("If an emerging growth company, indicate by check mark if the registrant has elected not to use the",
               "extended transition period for complying with any new or revised financial accounting standards.")


def check_box_pdf(path: Path) -> Path:
    """A 10-K cover's check-box question (CVS Health 2022, page 1): two lines set 8 points apart
    in 8-point Times and a 10-point check box (DejaVu Sans "☐", font box 11.6 points tall) whose
    centre lies in the first line's band and whose box reaches below the second line's centre."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("DejaVuSans", str(DEJAVU / "DejaVuSans.ttf")))
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Times-Roman", 8)
    c.drawString(40, 500, CHECK_LINES[0])
    c.drawString(40, 492, CHECK_LINES[1])
    c.setFont("DejaVuSans", 10)
    c.drawString(560, 495.5, "\u2610")
    for i, line in enumerate(wrap(NEWS, 90)):
        c.setFont("Times-Roman", 8)
        c.drawString(40, 460 - 10 * i, line)
    c.save()
    return path


SIGNATURE_TITLE = "Senior Vice President, Finance \u2013 Controller and Chief Accounting Officer"


def italic_weight_pdf(path: Path) -> Path:
    """A filing's signature block (Best Buy 10-Q, 2024 Q2, page 26): the signer's title in an
    italic font ("DejaVuSerif-Italic") whose descriptor says /FontWeight 700, as the 10-Q's
    "Arial-ItalicMT" has a /StemV that PDFium turns into weight 610. The name says italic, not bold."""
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("DejaVuSerif-Italic", str(DEJAVU / "DejaVuSerif-Italic.ttf")))
    c = canvas.Canvas(str(path), pagesize=(612, 792), pageCompression=0)
    c.setFont("Times-Roman", 9)
    y = 740
    for line in wrap(NEWS, 100):
        c.drawString(40, y, line)
        y -= 12
    c.drawString(250, y - 20, "/s/ MATHEW R. WATSON")
    c.drawString(250, y - 32, "Mathew R. Watson")
    c.setFont("DejaVuSerif-Italic", 9)
    c.drawString(250, y - 44, SIGNATURE_TITLE)
    c.save()
    data = path.read_bytes()
    # an explicit weight in the italic font's descriptor (PDF 32000-1:2008, table 122); PDFium
    # rebuilds the cross-reference table the longer object shifts
    assert b"/Type /FontDescriptor" in data
    path.write_bytes(data.replace(b"/Type /FontDescriptor", b"/FontWeight 700 /Type /FontDescriptor"))
    return path


def ocr_layer_scan_pdf(path: Path, faint_half: bool = False) -> Path:
    """A scan (one page image) under an invisible OCR layer (render mode 3) holding :data:`LETTER`
    twice. With ``faint_half`` the image prints only the first copy legibly: the second is a light
    grey no recogniser reads, as a table a layout model took for a picture is never read."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    first, second = wrap(LETTER, 55), wrap(LETTER, 55)
    image = text_image(first, size=(1700, 2200), px=40, top=250)
    draw = ImageDraw.Draw(image)
    f = font(40)
    top = 250 + (len(first) + 2) * 64
    for i, line in enumerate(second):
        draw.text((150, top + i * 64), line, font=f, fill=248 if faint_half else 0)
    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.drawImage(ImageReader(image.convert("RGB")), 0, 0, width=612, height=792)
    text = c.beginText()
    text.setTextRenderMode(3)
    text.setFont("Helvetica", 12)
    for i, line in enumerate([*first, "", *second]):
        text.setTextOrigin(54, 792 - (250 + i * 64) * 792 / 2200 - 12)
        text.textOut(line)
    c.drawText(text)
    c.save()
    return path
