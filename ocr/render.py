"""Open PDFs and images and render their pages (pypdfium2 and Pillow).

Formats are recognised by their bytes, never by the file name: PDF (``%PDF-`` in the first 1024
bytes, as PDF readers accept), PNG, JPEG and TIFF (single- and multi-page). Anything else raises
:class:`~ocr.errors.UnsupportedFormatError`.

Thread safety: PDFium is not thread-safe, not even across different documents (pypdfium2's
documentation), so every PDFium call in folioflow runs under :data:`PDFIUM_LOCK`. Parallel rendering
uses processes (each opening the document itself), not threads.

Limits against decompression bombs and huge pages (:class:`RenderLimits`): a rendered page is never
larger than ``max_render_pixels`` (the scale is reduced to fit, and the page records it); a source
image above ``max_image_pixels`` is refused with :class:`~ocr.errors.ResourceLimitError`.
"""

from __future__ import annotations

import io
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pypdfium2 as pdfium
from PIL import Image, ImageSequence

from ocr.errors import (
    CorruptDocumentError,
    EncryptedDocumentError,
    ResourceLimitError,
    SourceError,
    UnsupportedFormatError,
)

__all__ = [
    "PDFIUM_LOCK",
    "RenderLimits",
    "sniff_mime_type",
    "OpenedDocument",
    "PageHandle",
    "open_document",
]

#: Serialises every PDFium call in the process (PDFium is not thread-safe).
PDFIUM_LOCK = threading.RLock()

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"


@dataclass(frozen=True)
class RenderLimits:
    """Resource limits applied while opening and rendering.

    ``max_image_pixels``: largest source image accepted (pixels, width*height); default 200 MP.
    ``max_render_pixels``: largest bitmap a page is rendered to (pixels); the scale is lowered to fit.
    ``max_pages``: documents with more pages are refused (0 = no limit).
    """

    max_image_pixels: int = 200_000_000
    max_render_pixels: int = 40_000_000
    max_pages: int = 0


def sniff_mime_type(head: bytes) -> str:
    """Return the MIME type of a document from its first bytes (at least 1024 recommended).

    Raises :class:`UnsupportedFormatError` with the leading bytes when the format is unknown, or
    ``"empty file"`` for zero bytes.
    """
    if not head:
        raise UnsupportedFormatError("empty file: 0 bytes")
    if b"%PDF-" in head[:1024]:
        return PDF
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if head.startswith(b"\xff\xd8\xff"):
        return JPEG
    if head.startswith(b"II*\x00") or head.startswith(b"MM\x00*"):
        return TIFF
    raise UnsupportedFormatError(f"not a PDF or supported image: starts with {head[:8]!r}")


class PageHandle:
    """One page of an opened document.

    ``number`` is 1-based; ``width``/``height`` are in points in display space (``/Rotate`` applied);
    ``rotation`` is the PDF's ``/Rotate`` (0 for images). ``pdf_page`` is the pypdfium2 page for
    PDF pages (``None`` for images): use it only while holding :data:`PDFIUM_LOCK`.
    """

    def __init__(self, doc: "OpenedDocument", number: int):
        self.doc = doc
        self.number = number
        self._image: Image.Image | None = None
        self.pdf_page: pdfium.PdfPage | None = None
        if doc.mime_type == PDF:
            with PDFIUM_LOCK:
                self.pdf_page = doc._pdf[number - 1]
                self.width, self.height = self.pdf_page.get_size()
                self.rotation = int(self.pdf_page.get_rotation())
        else:
            image = doc._frame(number - 1)
            dpi = _image_dpi(image)
            self.width = image.width * 72.0 / dpi
            self.height = image.height * 72.0 / dpi
            self.rotation = 0
            self._image = image

    @property
    def is_pdf(self) -> bool:
        return self.pdf_page is not None

    def render(self, dpi: float = 150.0, max_side: int | None = None, rotate: int = 0) -> Image.Image:
        """Render the page to an RGB image.

        ``dpi``: target resolution (PDF pages; images are resampled from their own DPI).
        ``max_side``: cap on the longer side in pixels. ``rotate``: extra clockwise rotation in
        degrees (0, 90, 180, 270), e.g. to correct a detected orientation. The pixel count is
        always capped at ``limits.max_render_pixels``. Raises :class:`CorruptDocumentError` if
        PDFium cannot render the page.
        """
        scale = dpi / 72.0
        if max_side:
            scale = min(scale, max_side / max(self.width, self.height, 1e-6))
        limit = self.doc.limits.max_render_pixels
        if self.width * self.height * scale * scale > limit:
            scale = (limit / max(self.width * self.height, 1e-6)) ** 0.5
        if self.pdf_page is not None:
            try:
                with PDFIUM_LOCK:
                    bitmap = self.pdf_page.render(scale=scale, rotation=rotate % 360)
                    image = bitmap.to_pil().convert("RGB")
            except Exception as exc:  # pdfium raises PdfiumError / OSError on broken content
                raise CorruptDocumentError(f"page {self.number}: cannot render: {exc}") from exc
            return image
        assert self._image is not None
        image = self._image.convert("RGB")
        target = (max(1, round(self.width * scale)), max(1, round(self.height * scale)))
        if target != image.size:
            image = image.resize(target, Image.Resampling.LANCZOS)
        if rotate % 360:
            image = image.rotate(-(rotate % 360), expand=True)
        return image


class OpenedDocument:
    """An opened PDF or image document. Use :func:`open_document` as a context manager.

    ``source`` (the bytes or path it was opened from) and ``password`` are kept so that other
    processes can open the same document themselves (parallel rendering, see :mod:`ocr.vlm.render_pool`).
    """

    def __init__(self, data: bytes | Path, mime_type: str, password: str | None, limits: RenderLimits):
        self.mime_type = mime_type
        self.limits = limits
        self.source: bytes | Path = data if isinstance(data, bytes) else Path(data)
        self.password = password
        self.metadata: dict[str, str] = {}
        self._pdf: pdfium.PdfDocument | None = None
        self._image: Image.Image | None = None
        if mime_type == PDF:
            self._open_pdf(data, password)
        else:
            self._open_image(data)
        if limits.max_pages and self.page_count > limits.max_pages:
            self.close()
            raise ResourceLimitError(f"too many pages: {self.page_count} > limit {limits.max_pages}")

    def _open_pdf(self, data: bytes | Path, password: str | None) -> None:
        try:
            with PDFIUM_LOCK:
                self._pdf = pdfium.PdfDocument(data if isinstance(data, bytes) else str(data), password=password)
                self.page_count = len(self._pdf)
                try:
                    self.metadata = {k: v for k, v in self._pdf.get_metadata_dict(skip_empty=True).items()}
                except Exception:  # metadata is optional; broken Info dicts must not fail the document
                    self.metadata = {}
        except pdfium.PdfiumError as exc:
            text = str(exc)
            if "password" in text.lower():
                reason = "wrong password" if password else "password required"
                raise EncryptedDocumentError(f"encrypted: {reason}") from exc
            raise CorruptDocumentError(f"corrupt PDF: {text}") from exc
        if self.page_count == 0:
            self.close()
            raise CorruptDocumentError("corrupt PDF: document has zero pages")

    def _open_image(self, data: bytes | Path) -> None:
        Image.MAX_IMAGE_PIXELS = None  # we apply our own limit below, per frame, with a clear error
        try:
            self._image = Image.open(io.BytesIO(data) if isinstance(data, bytes) else str(data))
            self.page_count = getattr(self._image, "n_frames", 1)
            pixels = self._image.width * self._image.height
        except Exception as exc:
            raise CorruptDocumentError(f"corrupt image: {exc}") from exc
        if pixels > self.limits.max_image_pixels:
            raise ResourceLimitError(
                f"page 1: image exceeds the pixel limit ({pixels:,} > {self.limits.max_image_pixels:,} pixels)"
            )

    def _frame(self, index: int) -> Image.Image:
        assert self._image is not None
        try:
            self._image.seek(index)
            frame = self._image.copy()
            frame.load()
        except Exception as exc:
            raise CorruptDocumentError(f"page {index + 1}: corrupt image: {exc}") from exc
        if frame.width * frame.height > self.limits.max_image_pixels:
            raise ResourceLimitError(
                f"page {index + 1}: image exceeds the pixel limit "
                f"({frame.width * frame.height:,} > {self.limits.max_image_pixels:,} pixels)"
            )
        frame.info.setdefault("dpi", self._image.info.get("dpi"))
        return frame

    def page(self, number: int) -> PageHandle:
        """Return page ``number`` (1-based). Raises ``IndexError`` outside ``1..page_count``."""
        if not 1 <= number <= self.page_count:
            raise IndexError(f"page {number} outside 1..{self.page_count}")
        return PageHandle(self, number)

    def pages(self) -> Iterator[PageHandle]:
        """Iterate over pages lazily (one page handle alive at a time if the caller drops them)."""
        for number in range(1, self.page_count + 1):
            yield self.page(number)

    def close(self) -> None:
        with PDFIUM_LOCK:
            if self._pdf is not None:
                self._pdf.close()
                self._pdf = None
        if self._image is not None:
            self._image.close()
            self._image = None


@contextmanager
def open_document(
    data: bytes | str | Path,
    password: str | None = None,
    limits: RenderLimits | None = None,
) -> Iterator[OpenedDocument]:
    """Open a PDF or image from bytes or a local path.

    Raises :class:`UnsupportedFormatError`, :class:`EncryptedDocumentError`,
    :class:`CorruptDocumentError` or :class:`ResourceLimitError` (all :class:`SourceError`) with a
    one-line reason.
    """
    if isinstance(data, (str, Path)):
        path = Path(data)
        try:
            with open(path, "rb") as fh:
                head = fh.read(1024)
        except OSError as exc:
            raise SourceError(f"cannot read {path.name}: {exc.strerror or exc}") from exc
        source: bytes | Path = path
    else:
        head = data[:1024]
        source = data
    mime_type = sniff_mime_type(head)
    doc = OpenedDocument(source, mime_type, password, limits or RenderLimits())
    try:
        yield doc
    finally:
        doc.close()


def _image_dpi(image: Image.Image) -> float:
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    if abs(value - round(value)) < 0.05:  # PNG stores pixels per metre: 200 dpi reads back as 199.9996
        value = float(round(value))
    return value if 36.0 <= value <= 2400.0 else 72.0
