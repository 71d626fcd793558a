"""Hard inputs a tester found: a page the layout model calls one big figure, transparent PNGs, PDFs
padded after ``%%EOF``, HEIC photos, and usable text layers the quality gate refused."""

from __future__ import annotations

import pytest

from folioflow.flows.reliability.hostile import write_pdf
from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.postprocess.blocks import FIGURE_MARKDOWN, blocks_markdown, compose_blocks
from folioflow.ocr.postprocess.lines import OcrLine, OcrWord, Region
from folioflow.ocr.render import open_document
from folioflow.ocr.schema import BlockType

C = "C_scanned_multilang"


def _line(text: str, x: float, y: float, confidence: float = 0.95, height: float = 30.0) -> OcrLine:
    """A line of ``text`` at (x, y) in pixels, one 18 px-wide box per character, words split on spaces."""
    words, cursor = [], x
    for word in text.split():
        words.append(OcrWord(word, (cursor, y, cursor + 18 * len(word), y + height), confidence))
        cursor += 18 * (len(word) + 1)
    line = OcrLine.from_words(words)
    line.attrs["ink_height"] = height * 0.7
    return line


# -- 0. a page whose only text sits in the top margin ---------------------------------------------
def test_a_lone_line_near_the_top_is_the_page_body_not_a_header():
    lines = [_line("Bilevel marker persimmon 7070 agreement", 150, 100), _line("3", 1200, 3300)]
    blocks = compose_blocks(lines, 2480, 3508)
    markdown = blocks_markdown(blocks)
    assert "Bilevel marker persimmon 7070 agreement" in markdown, markdown
    assert [b.type for b in blocks if b.text == "3"] == [BlockType.PAGE_FOOTER]  # a page number stays furniture
    # with a body below it, the same line is a running header again
    body = [_line(f"Body paragraph line number {i} of the page", 150, 900 + 60 * i) for i in range(5)]
    blocks = compose_blocks(lines + body, 2480, 3508)
    assert [b.type for b in blocks if b.text.startswith("Bilevel")] == [BlockType.PAGE_HEADER]


def test_scanned_page_with_one_line_at_the_top_keeps_it(tmp_path):
    """A tester's 1-bit TIFF with a single line at y=100 converted to an empty page."""
    from PIL import Image, ImageDraw, ImageFont

    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import SourceRef

    image = Image.new("L", (1240, 1754), 255)
    font = ImageFont.load_default(size=40)
    ImageDraw.Draw(image).text((120, 100), "Bilevel marker persimmon 7070 agreement", fill=0, font=font)
    path = tmp_path / "one-line.tif"
    image.convert("1").save(path, compression="group4", dpi=(150, 150))
    converter = DocumentConverter(ConvertOptions(engine="ocr", cpu_engine="tesseract"))
    try:
        document = converter.convert(DocumentInput(path, SourceRef(uri=path.as_uri(), path=path.name)))
    finally:
        converter.close()
    assert "persimmon" in document.pages[0].markdown, document.pages[0].markdown


# -- 1. a page the layout model labels "figure" ------------------------------------------------------
LETTER = ["Robert Schneider AG Rue du Lac 1268", "Dear Ms. Rutschmann, we are billing you as follows.",
          "Garden work 28 hours at CHF 120.00 per hour", "Please pay the bill amount within 30 days."]


def test_text_inside_a_page_sized_figure_stays_text_in_reading_order():
    lines = [_line(text, 200, 300 + 200 * i) for i, text in enumerate(LETTER)]
    noise = _line("~ ; ' ,", 1500, 2900, confidence=0.12)  # specks in the picture, read as marks
    regions = [Region("figure", (10, 100, 2400, 3400), 0.95)]
    blocks = compose_blocks(lines + [noise], 2450, 3415, regions=regions)
    markdown = blocks_markdown(blocks)
    positions = [markdown.find(text) for text in LETTER]
    assert -1 not in positions and positions == sorted(positions), markdown
    figure = [b for b in blocks if b.type == BlockType.FIGURE]
    assert len(figure) == 1 and blocks[0] is figure[0]  # the figure keeps its block, before its text
    assert figure[0].attributes["text_in_blocks"] is True
    assert figure[0].attributes["text"] == noise.text  # illegible lines stay with the picture
    assert noise.text not in markdown


def test_a_small_figure_still_keeps_its_labels_out_of_the_body():
    body = [_line("A paragraph of body text above the chart on this page.", 200, 200 + 40 * i) for i in range(3)]
    labels = [_line("Revenue", 700, 900), _line("2024", 900, 1500)]
    regions = [Region("figure", (600, 800, 1800, 1600), 0.9)]  # 12% of the page
    blocks = compose_blocks(body + labels, 2450, 3415, regions=regions)
    figure = next(b for b in blocks if b.type == BlockType.FIGURE)
    assert figure.text == FIGURE_MARKDOWN and figure.attributes["text"] == "Revenue\n2024"
    assert "text_in_blocks" not in figure.attributes
    assert "Revenue" not in blocks_markdown(blocks)


@pytest.mark.parametrize("name, expected", [
    ("docling_ocr/qr_bill_example.jpg", ["Rutschmann", "Garden work", "Bill amount", "Acceptance point"]),
    ("ocrmypdf/baiona.png", ["Mugerre", "Trenbideak"]),
])
def test_corpus_pages_labelled_figure_keep_their_text(corpus, name, expected):
    path = corpus / C / name
    if not path.is_file():
        pytest.skip(f"corpus file absent: {path}")
    with open_document(path) as doc:
        page = next(iter(get_cpu_engine("tesseract", ["eng"]).convert_pages(doc, [1])))
    assert "figure" in page.attributes["layout_regions"]
    for text in expected:
        assert text in page.markdown, page.markdown


# -- 2. transparent PNGs --------------------------------------------------------------------------------
def _transparent_png(tmp_path, mode: str):
    """The plain memo page as black ink on a transparent background, in PNG ``mode``: ``RGBA``,
    ``LA`` or ``P`` (palette with a transparent index)."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageOps

    from tests.ocr import docs

    pdf = pdfium.PdfDocument(str(docs.plain_pdf(tmp_path / "memo.pdf")))
    try:
        gray = pdf[0].render(scale=200 / 72).to_pil().convert("L")
    finally:
        pdf.close()
    ink = ImageOps.invert(gray)  # opacity: 255 where the text is
    if mode == "P":
        image = Image.new("P", gray.size, 0)
        image.putpalette([0, 0, 0, 0, 0, 0])  # index 0 transparent black, index 1 opaque black
        image.paste(1, mask=ink.point(lambda v: 255 if v > 127 else 0))
        image.info["transparency"] = 0
    else:
        black = Image.new("L" if mode == "LA" else "RGB", gray.size, 0)
        image = black.convert(mode[:-1]) if mode == "RGBA" else black
        image.putalpha(ink)
    path = tmp_path / f"memo-{mode}.png"
    image.save(path, dpi=(200, 200), **({"transparency": 0} if mode == "P" else {}))
    return path


@pytest.mark.parametrize("mode", ["RGBA", "LA", "P"])
def test_transparent_png_is_read_as_black_text_on_white(tmp_path, mode):
    path = _transparent_png(tmp_path, mode)
    with open_document(path) as doc:
        rendered = doc.page(1).render(dpi=200)
        page = next(iter(get_cpu_engine("tesseract", ["eng"]).convert_pages(doc, [1])))
    corner = rendered.getpixel((5, 5))
    assert corner == (255, 255, 255)  # the transparent background is white, not black
    assert "Plain Memo" in page.markdown and page.markdown.count("prose") >= 10, page.markdown


def test_flatten_keeps_opaque_images_and_whitens_transparent_ones():
    from PIL import Image

    from folioflow.ocr.render import flatten_to_rgb

    assert flatten_to_rgb(Image.new("RGBA", (4, 4), (0, 0, 0, 0))).getpixel((0, 0)) == (255, 255, 255)
    assert flatten_to_rgb(Image.new("LA", (4, 4), (0, 128))).getpixel((0, 0)) == (127, 127, 127)
    assert flatten_to_rgb(Image.new("L", (4, 4), 0)).getpixel((0, 0)) == (0, 0, 0)  # no alpha: untouched


# -- 3. PDFs padded after %%EOF ----------------------------------------------------------------------
@pytest.mark.parametrize("padding", [bytes(4096), b"\r\n \n" * 300, bytes(200_000)],
                         ids=["4KiB-NUL", "whitespace", "200KB-NUL"])
def test_pdf_padded_after_eof_converts(tmp_path, padding):
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.samples import write_sample_pdf
    from folioflow.ocr.schema import DocumentStatus, SourceRef

    sample = write_sample_pdf(tmp_path / "sample.pdf")
    padded = tmp_path / "padded.pdf"
    padded.write_bytes(sample.read_bytes() + padding)
    converter = DocumentConverter(ConvertOptions(engine="text"))  # the guard worker opens it too
    try:
        for data in (padded, padded.read_bytes()):
            document = converter.convert(DocumentInput(data, SourceRef(uri=padded.as_uri(), path=padded.name)))
            assert document.status == DocumentStatus.SUCCESS and document.page_count == 2
            assert "Northwind Capital Holdings" in document.pages[0].markdown
    finally:
        converter.close()


def test_pdf_cut_short_is_still_refused_as_truncated_despite_trailing_nuls(tmp_path):
    from folioflow.ocr.errors import CorruptDocumentError
    from folioflow.ocr.samples import write_sample_pdf

    data = write_sample_pdf(tmp_path / "sample.pdf").read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 2] + bytes(4096))  # an interrupted download, zero-filled
    with pytest.raises(CorruptDocumentError, match=r"^corrupt PDF: truncated: no %%EOF"), open_document(cut):
        pass


# -- 4. HEIC / HEIF / AVIF ------------------------------------------------------------------------------
def _memo_image(tmp_path):
    import pypdfium2 as pdfium

    from tests.ocr import docs

    pdf = pdfium.PdfDocument(str(docs.plain_pdf(tmp_path / "memo.pdf")))
    try:
        return pdf[0].render(scale=150 / 72).to_pil().convert("RGB")
    finally:
        pdf.close()


def test_iso_media_files_are_told_apart_by_their_ftyp_brands():
    from folioflow.ocr.diagnose import describe_format, heif_kind
    from folioflow.ocr.render import sniff_mime_type

    def ftyp(major: bytes, *compatible: bytes) -> bytes:
        body = b"ftyp" + major + b"\x00\x00\x00\x00" + b"".join(compatible)
        return (len(body) + 4).to_bytes(4, "big") + body + b"\x00\x00\x00\x08meta"

    assert sniff_mime_type(ftyp(b"heic", b"mif1", b"heic")) == "image/heic"
    assert sniff_mime_type(ftyp(b"mif1", b"mif1", b"heic")) == "image/heic"
    assert sniff_mime_type(ftyp(b"mif1", b"mif1")) == "image/heif"
    assert sniff_mime_type(ftyp(b"avif", b"avif", b"mif1", b"miaf")) == "image/avif"
    assert heif_kind(ftyp(b"isom", b"isom", b"mp41")) is None
    assert describe_format(ftyp(b"isom", b"isom", b"mp41")).startswith("an ISO media file (MP4/MOV/3GP video")


def test_heic_photo_is_converted(tmp_path):
    pillow_heif = pytest.importorskip("pillow_heif", reason="pillow-heif (a dependency) is not installed: re-run infra/setup.sh")
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import DocumentStatus, SourceRef

    path = tmp_path / "memo.heic"
    pillow_heif.from_pillow(_memo_image(tmp_path)).save(str(path), quality=90)
    converter = DocumentConverter(ConvertOptions(engine="ocr", cpu_engine="tesseract"))  # guard worker opens it too
    try:
        document = converter.convert(DocumentInput(path, SourceRef(uri=path.as_uri(), path=path.name)))
    finally:
        converter.close()
    assert document.mime_type == "image/heic" and document.status == DocumentStatus.SUCCESS
    assert "Plain Memo" in document.pages[0].markdown and document.pages[0].markdown.count("prose") >= 10


def test_avif_image_is_converted(tmp_path):
    from PIL import features

    if not features.check("avif"):
        pytest.skip("this Pillow build has no AVIF codec")
    path = tmp_path / "memo.avif"
    _memo_image(tmp_path).save(path, "AVIF", quality=90)
    with open_document(path) as doc:
        assert doc.mime_type == "image/avif"
        page = next(iter(get_cpu_engine("tesseract", ["eng"]).convert_pages(doc, [1])))
    assert "Plain Memo" in page.markdown and page.markdown.count("prose") >= 10


def test_heic_without_its_decoder_is_refused_by_name(tmp_path):
    """Without pillow-heif (blocked in a fresh interpreter), a HEIC file gets a reason naming the
    format and the missing package, not "unknown binary data"."""
    import subprocess
    import sys

    head = (24).to_bytes(4, "big") + b"ftypheic\x00\x00\x00\x00mif1heic" + bytes(64)
    path = tmp_path / "photo.heic"
    path.write_bytes(head)
    code = ("import sys; sys.modules['pillow_heif'] = None\n"
            "from folioflow.ocr.render import open_document\n"
            "from folioflow.ocr.errors import UnsupportedFormatError\n"
            "try:\n    open_document(sys.argv[1]).__enter__()\n"
            "except UnsupportedFormatError as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout
    assert out.startswith("not a PDF or supported image: a HEIC image") and "pillow-heif" in out, out


def test_corpus_heic_page_is_read(corpus):
    pytest.importorskip("pillow_heif", reason="pillow-heif (a dependency) is not installed: re-run infra/setup.sh")
    path = corpus / C / "unstructured" / "DA-1p.heic"
    if not path.is_file():
        pytest.skip(f"corpus file absent: {path}")
    with open_document(path) as doc:
        page = next(iter(get_cpu_engine("tesseract", ["eng"]).convert_pages(doc, [1])))
    assert "Arcane Horror" in page.markdown and "abominations" in page.markdown


# -- 5. short or odd text layers the gate refused ---------------------------------------------------------
RIGHT_COLUMN, LEFT_COLUMN = "あいうえお", "日本語"


def _vertical_cjk_pdf(path, image: bool = False):
    """A 250 x 320 pt page of Japanese vertical writing: two columns of 10 pt characters, read top
    to bottom, the right column first, plus a hairline rule. The font is Helvetica with a
    ToUnicode map from A-H to the CJK characters (no CJK font is needed to extract the text).
    ``image``: also draw a 100 x 100 pt grey image."""
    chars = LEFT_COLUMN + RIGHT_COLUMN
    codes = {ch: chr(ord("A") + i) for i, ch in enumerate(chars)}
    cmap = ("/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Vert def "
            "1 begincodespacerange <00> <FF> endcodespacerange "
            f"{len(chars)} beginbfchar "
            + " ".join(f"<{ord(codes[ch]):02X}> <{ord(ch):04X}>" for ch in chars)
            + " endbfchar endcmap CMapName currentdict /CMap defineresource pop end end").encode()
    shown = [b"0 0 0 RG 0.5 w 0 1 m 250 1 l S"]
    for x, column in ((214, LEFT_COLUMN), (229, RIGHT_COLUMN)):  # content order: left column first
        for i, ch in enumerate(column):
            shown.append(b"BT /F1 10 Tf %d %d Td (%s) Tj ET" % (x, 280 - 10 * i, codes[ch].encode()))
    resources = b"/Font << /F1 3 0 R >>"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [6 0 R] /Count 1 >>",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 4 0 R >>",
               b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream"]
    if image:
        shown.append(b"q 100 0 0 100 20 20 cm /Im0 Do Q")
        resources += b" /XObject << /Im0 7 0 R >>"
    content = b"\n".join(shown)
    objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 250 320] /Resources << " + resources
                   + b" >> /Contents 5 0 R >>")
    if image:
        objects.append(b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray "
                       b"/BitsPerComponent 8 /Length 4 >>\nstream\n\x80\x80\x80\x80\nendstream")
    return write_pdf(path, objects)


def test_short_vertical_japanese_text_layer_is_used_and_read_in_column_order(tmp_path):
    from folioflow.ocr.engines.text_layer import TextLayerEngine, analyze_text_layer

    with open_document(_vertical_cjk_pdf(tmp_path / "vertical.pdf")) as doc:
        analysis = analyze_text_layer(doc.page(1))
        page = TextLayerEngine().convert_page(doc.page(1), analysis)
    assert analysis.assessment.usable, analysis.assessment.reason  # 8 characters, nothing else to OCR
    assert analysis.assessment.text_angle == 90  # text runs downwards
    assert page.markdown == f"{RIGHT_COLUMN}\n\n{LEFT_COLUMN}", page.markdown  # columns right to left
    right = page.blocks[0].bbox
    assert right.x0 >= 228 and right.x1 <= 240 and right.y1 - right.y0 > 40  # a tall, narrow column


def test_short_text_layer_beside_an_image_still_goes_to_ocr(tmp_path):
    from folioflow.ocr.engines.text_layer import assess_text_layer

    with open_document(_vertical_cjk_pdf(tmp_path / "vertical-image.pdf", image=True)) as doc:
        assessment = assess_text_layer(doc.page(1))
    assert not assessment.usable and assessment.reason.startswith("too little text: 8 visible characters")


def test_corpus_vertical_japanese_page_uses_its_text_layer(corpus):
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import SourceRef

    path = corpus / C / "pdfjs_fonts_scripts" / "vertical.pdf"
    if not path.is_file():
        pytest.skip(f"corpus file absent: {path}")
    converter = DocumentConverter(ConvertOptions(page_range="1"))
    try:
        document = converter.convert(DocumentInput(path, SourceRef(uri=path.as_uri(), path=path.name)))
    finally:
        converter.close()
    page = document.pages[0]
    assert page.attributes["route"] == "text", page.attributes.get("route_reason")
    assert page.markdown == f"{RIGHT_COLUMN}\n\n{LEFT_COLUMN}", page.markdown


def _image_bytes(fmt: str, **params) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(out, fmt, **params)
    return out.getvalue()


def test_sniffing_by_filetype_and_the_cases_it_leaves_to_folioflow():
    """filetype names the formats; folioflow keeps %PDF- after junk, camera HEIC brands filetype
    does not know, and the headerless-PDF diagnosis."""
    import io
    import zipfile

    from PIL import Image

    from folioflow.ocr.diagnose import describe_format
    from folioflow.ocr.errors import UnsupportedFormatError
    from folioflow.ocr.render import sniff_mime_type

    assert sniff_mime_type(_image_bytes("PNG")) == "image/png"
    apng = _image_bytes("PNG", save_all=True, append_images=[Image.new("RGB", (8, 8), "red")])
    assert sniff_mime_type(apng) == "image/png"  # filetype says image/apng; Pillow reads frame 1
    assert sniff_mime_type(_image_bytes("JPEG")) == "image/jpeg"
    assert sniff_mime_type(_image_bytes("TIFF")) == "image/tiff"
    assert sniff_mime_type(b"%PDF-1.7\n1 0 obj\n") == "application/pdf"
    assert sniff_mime_type(b"Content-Type: application/pdf\r\n\r\n%PDF-1.4\n") == "application/pdf"
    camera_heic = (24).to_bytes(4, "big") + b"ftypheix\x00\x00\x00\x00mif1heix" + bytes(64)
    assert sniff_mime_type(camera_heic) == "image/heic"
    for fmt, name in (("GIF", "a GIF image"), ("BMP", "a BMP image"), ("WEBP", "a WebP image"),
                      ("JPEG2000", "a JPEG 2000 image")):
        with pytest.raises(UnsupportedFormatError, match=f"^not a PDF or supported image: {name} \\(unsupported"):
            sniff_mime_type(_image_bytes(fmt))
    docx = io.BytesIO()
    with zipfile.ZipFile(docx, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    assert describe_format(docx.getvalue()).startswith("a ZIP archive: a Word document (DOCX)")
    assert describe_format(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)).startswith("an OLE2 file")
    assert describe_format(b"7 0 obj\n<< /Type /Page >>\nendobj\n").startswith("a PDF body without its %PDF- header")
    assert describe_format(b"Quarterly notes\n").startswith("plain text")


def test_every_corpus_document_is_sniffed_as_its_extension_says(corpus):
    from folioflow.ocr.render import sniff_mime_type

    expected = {".pdf": "application/pdf", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
                ".tif": "image/tiff", ".tiff": "image/tiff"}
    checked = 0
    for path in sorted(corpus.rglob("*")):
        suffix = path.suffix.lower()
        if suffix not in expected or "E_malformed" in path.parts or not path.is_file():
            continue
        with open(path, "rb") as fh:
            assert sniff_mime_type(fh.read(1024)) == expected[suffix], path
        checked += 1
    assert checked >= 100
