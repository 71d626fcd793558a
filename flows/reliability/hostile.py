"""Hostile and broken documents, generated on demand (for the reliability batch and the tests;
nothing is checked in).

* :func:`raw_pdf`: a hand-written PDF (PDF 32000-1:2008 section 7.5: header, objects, xref table,
  trailer) whose pages hold a line of Helvetica text or one Flate-compressed grey image of any
  declared size. The image stream is zlib of zero rows written in slices, so a 45,000 x 45,000
  image (2.0 GB decoded) costs 2 MB on disk and a few MB of memory to write: a decompression bomb.
* :func:`truncated_copy`: the first ``fraction`` of a file's bytes (an interrupted download).
* :func:`png_bomb`: a PNG whose header declares ``width x height`` pixels, followed by a tiny
  (invalid) IDAT: Pillow reads the size from the header, so only a check before decoding saves
  the process.
* :func:`tiff_with_huge_frame`: a multi-page TIFF whose last frame exceeds the pixel limit.
* :func:`long_pdf`: a text PDF of ``pages`` pages (thousands in a second), each page with a
  heading and two lines naming its number.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

__all__ = ["raw_pdf", "write_pdf", "text_page", "image_page", "truncated_copy", "png_bomb", "tiff_with_huge_frame", "long_pdf"]


def text_page(*lines: str) -> dict:
    """A page with ``lines`` of Helvetica text (the first one larger, as a heading)."""
    return {"text": list(lines)}


def image_page(width: int, height: int, bits: int = 8) -> dict:
    return {"image": (width, height, bits)}


def _image_stream(width: int, height: int, bits: int) -> bytes:
    row = (width * bits + 7) // 8
    packer = zlib.compressobj(9)
    slab = bytes(row * max(1, min(height, (1 << 24) // max(row, 1))))
    rows_per_slab = len(slab) // row
    parts, left = [], height
    while left > 0:
        n = min(left, rows_per_slab)
        parts.append(packer.compress(slab[: n * row]))
        left -= n
    parts.append(packer.flush())
    return b"".join(parts)


def raw_pdf(path: Path, pages: list[dict], *, uri: str | None = None) -> Path:
    """Write a PDF whose pages are :func:`text_page` / :func:`image_page` specs. ``uri``: add a
    link annotation pointing there on the first page (a URL that must never be fetched)."""
    objects: list[bytes] = [b"", b""]  # 1: catalog, 2: page tree (filled in last)
    font = len(objects) + 1
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for index, spec in enumerate(pages):
        resources = f"/Font << /F1 {font} 0 R >>".encode()
        if "image" in spec:
            width, height, bits = spec["image"]
            data = _image_stream(width, height, bits)
            objects.append(b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
                           b"/BitsPerComponent %d /Filter /FlateDecode /Length %d >>\nstream\n" % (width, height, bits, len(data))
                           + data + b"\nendstream")
            resources += b" /XObject << /Im0 %d 0 R >>" % len(objects)
            content = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
        else:
            shown = []
            for i, line in enumerate(spec["text"]):
                text = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")
                size = 20 if i == 0 else 11
                shown.append(b"BT /F1 %d Tf 72 %d Td (" % (size, 720 - 24 * i) + text + b") Tj ET")
            content = b"\n".join(shown)
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        contents = len(objects)
        annots = b""
        if uri and index == 0:
            objects.append(b"<< /Type /Annot /Subtype /Link /Rect [72 690 300 720] /Border [0 0 0] "
                           b"/A << /S /URI /URI (" + uri.encode() + b") >> >>")
            annots = b" /Annots [%d 0 R]" % len(objects)
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << " + resources
                       + b" >> /Contents %d 0 R" % contents + annots + b" >>")
        kids.append(len(objects))
    objects[0] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[1] = b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % k for k in kids) + b"] /Count %d >>" % len(kids)
    return write_pdf(path, objects)


def write_pdf(path: Path, objects: list[bytes]) -> Path:
    """Write ``objects`` (the bodies of objects 1..N, object 1 the catalog) to ``path`` as a
    PDF 1.7 file with a binary comment line, a classic cross-reference table and a trailer (ISO
    32000-1, 7.5); parent folders are created. Returns ``path``."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def truncated_copy(source: Path, target: Path, fraction: float) -> Path:
    """The first ``fraction`` (0..1) of ``source``'s bytes, written to ``target``."""
    data = source.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data[: int(len(data) * fraction)])
    return target


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png_bomb(path: Path, width: int, height: int) -> Path:
    """A PNG whose IHDR declares ``width`` x ``height`` 8-bit grey pixels (see module docstring)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(bytes(1024))) + _chunk(b"IEND", b"")
    path.write_bytes(data)
    return path


def tiff_with_huge_frame(path: Path, side: int = 15_000) -> Path:
    """A 3-page TIFF: two small pages with text, then a ``side`` x ``side`` bilevel page (G4)."""
    from PIL import Image, ImageDraw

    small = []
    for i in (1, 2):
        page = Image.new("L", (1200, 400), 255)
        ImageDraw.Draw(page).text((40, 150), f"Small page {i}", fill=0, font_size=60)
        small.append(page.convert("1"))
    huge = Image.new("1", (side, side), 1)
    small[0].save(path, save_all=True, append_images=[small[1], huge], compression="group4", dpi=(200, 200))
    return path


def long_pdf(path: Path, pages: int) -> Path:
    """A ``pages``-page text PDF (:func:`raw_pdf`; 3,000 pages in well under a second)."""
    specs = [text_page(f"Section {n}", f"Page {n} states that the balance of account {n:05d} is {n * 7} dollars.",
                       "The figures are audited and reported in thousands of dollars.")
             for n in range(1, pages + 1)]
    return raw_pdf(path, specs)
