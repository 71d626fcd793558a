"""Specific one-line reasons for documents that cannot be opened.

PDFium reports only a handful of error codes (``FPDF_ERR_FORMAT`` "Data format error", ``FPDF_ERR_FILE``,
``FPDF_ERR_PASSWORD``, ``FPDF_ERR_SECURITY``, ``FPDF_ERR_PAGE`` and, when it refuses a document without
saying why, ``FPDF_ERR_SUCCESS``: fpdfview.h), and a file that is not a PDF at all has no PDFium
error. These helpers look at the bytes to say *what* is wrong, so a report reads "corrupt PDF:
truncated: ..." or "not a PDF or supported image: an HTML page ..." instead of "Data format error".

Rules, all from the bytes only (no parsing beyond a few markers; PDF 32000-1:2008 section 7.5):

* **format**: the ``filetype`` package's magic-number matchers (ZIP and OOXML, RTF, PostScript,
  GIF, BMP, WebP, JPEG 2000, gzip, 7-Zip, RAR and its other formats) name what the bytes are; what
  it does not match is checked here: an OLE2 compound file it cannot place (Outlook MSG), ISO media
  such as MP4 by the brands of their ``ftyp`` box (:func:`iso_brands`; HEIC/HEIF/AVIF brands
  ``filetype`` misses: :func:`heif_kind`), HTML, XML and plain text;
* **header missing**: ``N G obj`` near the start without ``%PDF-`` is a PDF body without its
  header (pdf.js opens those; :func:`folioflow.ocr.render.open_document` restores the header);
* **truncated**: no ``%%EOF`` in the last 1024 bytes (where Acrobat looks for it) once trailing
  padding is set aside: NUL bytes and PDF white-space (``\\0 \\t \\n \\f \\r`` and space, ISO
  32000-1 section 7.2.2) that copy tools, disk images and some writers append after ``%%EOF``.
  Measured on the 432 PDFs of the shared corpus: every sound file has ``%%EOF`` within 7 bytes of
  its end; a sound file padded with 4 KiB of NULs was refused as truncated before the padding was
  set aside;
* **empty page tree**: ``/Type /Pages`` with ``/Count 0``;
* **no objects**: a header and nothing that looks like an object.
"""

from __future__ import annotations

import re

import filetype

__all__ = ["EOF_WINDOW", "PDF_PADDING", "describe_format", "heif_kind", "iso_brands", "headerless_pdf", "pdf_tail_problem", "describe_pdfium_error", "is_encrypted", "format_bytes"]

_OBJ = re.compile(rb"(?m)^\s*\d+\s+\d+\s+obj\b")
#: Bytes a file may carry after its ``%%EOF`` without being damaged: NUL and PDF white-space.
PDF_PADDING = b"\x00\t\n\x0c\r "
#: Where readers look for ``%%EOF``: the last this many bytes before any padding.
EOF_WINDOW = 1024

#: What :func:`describe_format` calls formats that ``filetype`` recognises (by its MIME type); other
#: images read "a <NAME> image (unsupported: convert it to PNG)", anything else "a <EXT> file (<MIME>)".
_LABELS = {
    "application/zip": "a ZIP archive (DOCX, XLSX, PPTX or ZIP)",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "a ZIP archive: a Word document (DOCX)",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "a ZIP archive: an Excel workbook (XLSX)",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "a ZIP archive: a PowerPoint presentation (PPTX)",
    "application/epub+zip": "a ZIP archive: an EPUB e-book",
    "application/msword": "an OLE2 file: a Word document (DOC)",
    "application/vnd.ms-excel": "an OLE2 file: an Excel workbook (XLS)",
    "application/vnd.ms-powerpoint": "an OLE2 file: a PowerPoint presentation (PPT)",
    "application/rtf": "an RTF document",
    "application/postscript": "a PostScript file",
    "application/gzip": "a gzip archive",
    "application/x-7z-compressed": "a 7-Zip archive",
    "application/x-rar-compressed": "a RAR archive",
}
_IMAGE_NAMES = {"image/jpx": "JPEG 2000", "image/webp": "WebP", "image/apng": "animated PNG"}
#: The OLE2 compound file signature; ``filetype`` matches DOC/XLS/PPT only, not other OLE2 files.
_OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


#: ``ftyp`` brands of HEIF images with HEVC pictures (what phones save as .heic) and of generic HEIF.
_HEIC_BRANDS = {"heic", "heix", "heim", "heis", "hevc", "hevx", "hevm", "hevs"}
_HEIF_BRANDS = {"mif1", "mif2", "msf1"}
#: ``ftyp`` brands of AVIF images (HEIF with AV1 pictures).
_AVIF_BRANDS = {"avif", "avis"}


def iso_brands(head: bytes) -> list[str]:
    """The major and compatible brands (4-character strings) of an ISO base media file (ISO/IEC
    14496-12: HEIF, AVIF, MP4, MOV, 3GP), read from the ``ftyp`` box it starts with; ``[]`` when
    ``head`` does not start with one. ``head``: the file's first bytes (64 are plenty)."""
    if len(head) < 16 or head[4:8] != b"ftyp":
        return []
    end = min(len(head), max(16, int.from_bytes(head[:4], "big")))
    raw = [head[8:12]] + [head[i:i + 4] for i in range(16, end - 3, 4)]
    return [brand.decode("latin-1") for brand in raw]


def heif_kind(head: bytes) -> str | None:
    """``"avif"``, ``"heic"`` or ``"heif"`` (generic HEIF) for a file whose ``ftyp`` box names one
    of those brands (major or compatible), else ``None`` (other ISO media, or not ISO media)."""
    brands = set(iso_brands(head))
    if brands & _AVIF_BRANDS:  # AVIF files list mif1 as compatible too: AV1 decides
        return "avif"
    if brands & _HEIC_BRANDS:
        return "heic"
    if brands & _HEIF_BRANDS:
        return "heif"
    return None


def format_bytes(n: int) -> str:
    """``n`` bytes as a short human figure in binary units (``"3.4 GiB"``, ``"512 B"``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def describe_format(head: bytes) -> str:
    """What ``head`` (the first bytes of a file that is neither PDF nor PNG/JPEG/TIFF) looks like,
    ending with the leading bytes, e.g. ``"an HTML page (an error page saved as the document?);
    starts with b'<!DOCTYPE html>'"``."""
    start = head.lstrip()[:512].lower()
    what: str | None = None
    kind = filetype.guess(head) if head else None
    brands = iso_brands(head)
    if brands and (kind is None or not kind.mime.startswith("image/")):
        what = f"an ISO media file (MP4/MOV/3GP video or audio; brand {brands[0]!r})"
    elif kind is not None and kind.mime in _LABELS:
        what = _LABELS[kind.mime]
    elif kind is not None and kind.mime.startswith("image/"):
        name = _IMAGE_NAMES.get(kind.mime, kind.extension.upper())
        what = f"a {name} image (unsupported: convert it to PNG)"
    elif kind is not None:
        what = f"a {kind.extension.upper()} file ({kind.mime})"
    elif head.startswith(_OLE2):
        what = "an OLE2 file (legacy Word/Excel/Outlook: DOC, XLS, MSG)"
    if what is None and (start.startswith((b"<!doctype html", b"<html")) or b"<html" in start[:256]):
        what = "an HTML page (an error page saved as the document?)"
    if what is None and start.startswith(b"<?xml"):
        what = "an XML file"
    if what is None and headerless_pdf(head):
        what = "a PDF body without its %PDF- header"
    if what is None:
        sample = head[:512]
        try:
            sample.decode("utf-8")
            printable = all(32 <= b < 127 or b in b"\t\r\n" for b in sample) or bool(sample)
        except UnicodeDecodeError:
            printable = False
        what = "plain text" if printable and sample else "unknown binary data"
    return f"{what}; starts with {head[:16]!r}"


def headerless_pdf(head: bytes) -> bool:
    """True when ``head`` holds PDF objects (``N G obj``) within its first 1024 bytes but no
    ``%PDF-`` header: a PDF whose header was lost."""
    return b"%PDF-" not in head[:1024] and _OBJ.search(head[:1024]) is not None


def pdf_tail_problem(tail: bytes, size: int) -> str | None:
    """``"truncated: ..."`` when the end of a PDF holds no ``%%EOF`` marker, else ``None``.

    ``tail``: the last bytes of the file, at least :data:`EOF_WINDOW` of them before any trailing
    padding (:data:`PDF_PADDING` bytes are stripped here first, so a marker followed by NULs or
    blank lines counts). ``size``: the file size in bytes (quoted in the reason)."""
    if b"%%EOF" in tail.rstrip(PDF_PADDING)[-EOF_WINDOW:]:
        return None
    return (f"truncated: no %%EOF marker at the end of its {size:,} bytes "
            "(an interrupted download or copy?)")


def describe_pdfium_error(message: str, data: bytes) -> str:
    """A specific reason for PDFium's refusal ``message`` (``str(PdfiumError)``) of the PDF
    ``data``. PDFium's error code is process-global and not reset by a successful load, so after
    an encrypted file a zero-page file reports "Incorrect password" (measured with pypdfium2 5.15):
    the code is only a hint here, the bytes decide. Encryption is handled by the caller (see
    :func:`is_encrypted`). The page count comes from pdfminer.six (pure Python; the page tree may
    sit in a compressed object stream)."""
    head = data[: 1 << 20]
    if not _OBJ.search(head):
        return f"no PDF objects after the header ({len(data):,} bytes in all)"
    count = _declared_page_count(data)
    if count == 0:
        return "the document has zero pages (empty page tree)"
    code = message.rsplit("PDFium:", 1)[-1].strip(" .)") if "PDFium:" in message else message.strip()
    if "Security" in code and is_encrypted(data):
        return "encrypted with an unsupported security handler"
    if count is None:
        has_xref = b"xref" in head or b"/XRef" in data[-(1 << 16):]
        what = ("broken cross-reference table, trailer or catalog" if has_xref
                else "no cross-reference table or trailer found")
        return f"{what} (PDFium: {code})"
    return f"unreadable although it declares {count} page(s) (PDFium: {code})"


def is_encrypted(data: bytes) -> bool:
    """True when ``data`` has an ``/Encrypt`` entry (trailer or cross-reference stream dictionaries
    are never compressed, so the key is visible in the raw bytes)."""
    return b"/Encrypt" in data


def _declared_page_count(data: bytes) -> int | None:
    """``/Count`` of the catalog's page tree as pdfminer.six reads it, or ``None``."""
    import io
    import logging

    try:
        from pdfminer.pdfdocument import PDFDocument
        from pdfminer.pdfparser import PDFParser
        from pdfminer.pdftypes import resolve1

        logging.getLogger("pdfminer").setLevel(logging.ERROR)
        document = PDFDocument(PDFParser(io.BytesIO(data)))
        pages = resolve1(document.catalog.get("Pages"))
        return int(resolve1(pages.get("Count"))) if isinstance(pages, dict) else None
    except Exception:  # noqa: BLE001 - pdfminer raises many types on broken files; refused: no opinion
        return None
