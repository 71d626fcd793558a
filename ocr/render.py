"""Open PDFs and images and render their pages (pypdfium2 and Pillow).

Formats are recognised by their bytes, never by the file name (the ``filetype`` package's
magic-number matchers, plus what it does not cover: ``%PDF-`` after offset 0, HEIF brands it does
not know, a PDF without its header): PDF, PNG (an animated PNG reads as its first frame), JPEG,
TIFF (single- and multi-page), HEIC/HEIF (phone photos; decoded by pillow-heif) and AVIF (decoded
by Pillow). Anything else raises :class:`~folioflow.ocr.errors.UnsupportedFormatError`, as does a
HEIC/HEIF/AVIF file when its decoder is missing (the reason names the format and the missing
decoder).

Thread safety: PDFium is not thread-safe, not even across different documents (pypdfium2's
documentation), so every PDFium call in folioflow runs under :data:`PDFIUM_LOCK`. Parallel rendering
uses processes (each opening the document itself), not threads. That includes the calls that free
PDFium objects: pypdfium2 frees a page, text page or bitmap from a finalizer when the Python object
is dropped, on whichever thread drops it, so folioflow closes them itself under the lock (bitmaps
right after use, pages in :meth:`PageHandle.close`, which also runs when a handle is dropped).
Before this, a retrieval benchmark converting two documents in-process on two threads died with a
SIGSEGV inside libpdfium; a finalizer freeing a page outside the lock is the likely cause (a test
shows a dropped page was freed while another thread held the lock).

Limits against decompression bombs and huge pages (:class:`RenderLimits`): a rendered page is never
larger than ``max_render_pixels`` (the scale is reduced to fit, and the page records it); a source
image above ``max_image_pixels`` (checked from its header, before any pixel is decoded) and a PDF
page holding an image above ``max_image_bytes`` decoded are refused with
:class:`~folioflow.ocr.errors.ResourceLimitError` ("page 3: image exceeds the pixel limit (...)").

Diagnosis (:mod:`folioflow.ocr.diagnose`): every refusal carries a specific one-line reason ("encrypted:
password required", "not a PDF or supported image: a ZIP archive ...", "corrupt PDF: truncated
...", "corrupt PDF: the document has zero pages ..."). A PDF that ends without ``%%EOF`` in its last
1024 bytes (where PDF readers look for it; NUL and white-space padding after the marker is set
aside first) is refused as truncated even when PDFium could recover part of it, unless
``RenderLimits.allow_truncated``: indexing part of an interrupted download as if it were the
whole document would lose pages silently (pdf.js's ``scan-bad.pdf`` is cut inside an image
stream, and PDFium opens it as a one-page document). One repair is made: a PDF whose
``%PDF-`` header is missing but whose body holds PDF objects is opened with the header restored
(:attr:`OpenedDocument.repairs` says so).
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import filetype
import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from PIL import Image

from folioflow.ocr.diagnose import (
    EOF_WINDOW,
    PDF_PADDING,
    describe_pdfium_error,
    format_bytes,
    headerless_pdf,
    heif_kind,
    is_encrypted,
    pdf_tail_problem,
)
from folioflow.ocr.errors import (
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
    "flatten_to_rgb",
    "open_document",
]

#: Serialises every PDFium call in the process (PDFium is not thread-safe).
PDFIUM_LOCK = threading.RLock()

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
HEIC = "image/heic"
HEIF = "image/heif"
AVIF = "image/avif"
_HEIF_MIME = {"heic": HEIC, "heif": HEIF, "avif": AVIF}
#: ``filetype`` MIME types folioflow reads, mapped to the type it records (APNG is read as PNG).
_SUPPORTED = {PDF: PDF, PNG: PNG, "image/apng": PNG, JPEG: JPEG, TIFF: TIFF, HEIC: HEIC, AVIF: AVIF}
_HEIF_LOCK = threading.Lock()
_heif_registered = False


@dataclass(frozen=True)
class RenderLimits:
    """Resource limits applied while opening and rendering.

    ``max_image_pixels``: largest source image accepted (pixels, width*height); default 200 MP.
    ``max_render_pixels``: largest bitmap a page is rendered to (pixels); the scale is lowered to fit.
    ``max_pages``: documents with more pages are refused (0 = no limit).
    ``max_image_bytes``: largest image inside a PDF page, decoded (width x height x bits per pixel
    / 8); default 2 GiB (a colour A0 scan at 600 dpi is 1.7 GB). A page holding a larger one is
    not rendered (PDFium would decode it, or silently drop it and render a blank page).
    ``allow_truncated``: open PDFs without ``%%EOF`` at their end (default: refused as truncated).
    """

    max_image_pixels: int = 200_000_000
    max_render_pixels: int = 40_000_000
    max_pages: int = 0
    max_image_bytes: int = 2 << 30
    allow_truncated: bool = False


def sniff_mime_type(head: bytes) -> str:
    """Return the MIME type of a document from its first bytes (at least 1024 recommended):
    ``application/pdf``, ``image/png``, ``image/jpeg``, ``image/tiff``, ``image/heic``,
    ``image/heif`` or ``image/avif``.

    Raises :class:`UnsupportedFormatError` with the leading bytes when the format is unknown, or
    ``"empty file"`` for zero bytes.
    """
    if not head:
        raise UnsupportedFormatError("empty file: 0 bytes")
    guessed = filetype.guess(head)
    if guessed is not None and guessed.mime in _SUPPORTED:
        return _SUPPORTED[guessed.mime]
    # Kept beside filetype, which matches PDF's signature at offset 0 only: PDF readers accept
    # %PDF- anywhere in the first 1024 bytes (PDF Reference 1.7, Appendix H, implementation note
    # 13), so a PDF behind a few bytes of junk (a mail or HTTP header saved with it) still opens.
    if b"%PDF-" in head[:1024]:
        return PDF
    # Kept too: filetype's HEIC/AVIF matchers know the major brands heic/avif (or mif1/msf1 listing
    # them); heif_kind also reads heix/hevc/... (camera HEIC), avis (AVIF sequences) and plain HEIF.
    kind = heif_kind(head)
    if kind is not None:
        return _HEIF_MIME[kind]
    from folioflow.ocr.diagnose import describe_format

    raise UnsupportedFormatError(f"not a PDF or supported image: {describe_format(head)}")


class PageHandle:
    """One page of an opened document.

    ``number`` is 1-based; ``width``/``height`` are in points in display space (``/Rotate`` applied);
    ``rotation`` is the PDF's ``/Rotate`` (0 for images). ``pdf_page`` is the pypdfium2 page for
    PDF pages (``None`` for images): use it only while holding :data:`PDFIUM_LOCK`, and only while
    the handle is alive (dropping the handle frees the page).
    """

    def __init__(self, doc: OpenedDocument, number: int):
        self.doc = doc
        self.number = number
        self._image: Image.Image | None = None
        self._images_checked = False
        self.pdf_page: pdfium.PdfPage | None = None
        if doc.mime_type == PDF:
            assert doc._pdf is not None  # a PDF document holds its PdfDocument until closed
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

    def close(self) -> None:
        """Free the PDFium page now, under :data:`PDFIUM_LOCK` (see the module docstring); the
        handle cannot be used afterwards. Idempotent; also run when the handle is dropped."""
        page, self.pdf_page = self.pdf_page, None
        if page is not None:
            with PDFIUM_LOCK:
                page.close()

    def __del__(self) -> None:
        try:  # noqa: SIM105 - not contextlib.suppress: at interpreter shutdown module globals may be gone
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to protect
            pass

    def render(self, dpi: float = 150.0, max_side: int | None = None, rotate: int = 0) -> Image.Image:
        """Render the page to an RGB image (transparent image pixels on white, see :func:`flatten_to_rgb`).

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
            self.check_images()
            try:
                with PDFIUM_LOCK:
                    bitmap = self.pdf_page.render(scale=scale, rotation=rotate % 360)
                    try:
                        image = bitmap.to_pil().convert("RGB")  # a copy: the bitmap can go
                    finally:
                        bitmap.close()
            except Exception as exc:  # pdfium raises PdfiumError / OSError on broken content
                raise CorruptDocumentError(f"page {self.number}: cannot render: {exc}") from exc
            return image
        assert self._image is not None
        image = flatten_to_rgb(self._image)
        target = (max(1, round(self.width * scale)), max(1, round(self.height * scale)))
        if target != image.size:
            image = image.resize(target, Image.Resampling.LANCZOS)
        if rotate % 360:
            image = image.rotate(-(rotate % 360), expand=True)
        return image


    def check_images(self) -> None:
        """Refuse a PDF page holding an image over ``limits.max_image_bytes`` decoded: raises
        :class:`ResourceLimitError` ("page N: image exceeds the pixel limit (...)"). Images in
        form XObjects count; an image PDFium declined to load (bits per pixel 0) counts as 8 bits
        per pixel. No-op for image documents (their frames are checked when opened)."""
        if self.pdf_page is None or self._images_checked:
            return
        limit = self.doc.limits.max_image_bytes
        with PDFIUM_LOCK:
            sizes = pdf_image_sizes(self.pdf_page)
        for width, height, bpp in sizes:
            decoded = width * height * (bpp or 8) // 8
            if decoded > limit:
                raise ResourceLimitError(
                    f"page {self.number}: image exceeds the pixel limit ({width:,} x {height:,} px at "
                    f"{bpp or 8} bits per pixel = {format_bytes(decoded)} decoded > {format_bytes(limit)})")
        self._images_checked = True


def _require_decoder(mime_type: str) -> None:
    """Make sure Pillow can decode ``mime_type``: registers pillow-heif's opener for HEIC/HEIF
    (once per process). Raises :class:`UnsupportedFormatError` naming the format and the missing
    decoder when it cannot (pillow-heif not installed; a Pillow built without AVIF)."""
    global _heif_registered
    if mime_type in (HEIC, HEIF):
        with _HEIF_LOCK:
            if not _heif_registered:
                try:
                    from pillow_heif import register_heif_opener
                except ImportError:
                    raise UnsupportedFormatError(
                        f"not a PDF or supported image: a {'HEIC' if mime_type == HEIC else 'HEIF'} image "
                        "(as phones save photos) and its decoder, the pillow-heif package, is not installed "
                        "(re-run infra/setup.sh, or convert the image to JPEG or PNG)") from None
                register_heif_opener()
                _heif_registered = True
    elif mime_type == AVIF:
        from PIL import features

        if not features.check("avif"):
            raise UnsupportedFormatError("not a PDF or supported image: an AVIF image and this Pillow build "
                                         "has no AVIF decoder (Pillow 11.3+ wheels have one; or convert it to PNG)")


def flatten_to_rgb(image: Image.Image) -> Image.Image:
    """An RGB copy of ``image`` with any transparency composited onto white.

    Images with an alpha channel (RGBA, LA, PA, premultiplied RGBa/La) or a transparent colour key
    (palette or grey/RGB PNGs with ``tRNS``: ``info["transparency"]``) are laid on a white page, as
    a viewer shows them; a plain ``convert("RGB")`` drops the alpha and leaves what is under it,
    which for black text on a transparent background is black on black (nothing to OCR).
    """
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def pdf_image_sizes(pdf_page: pdfium.PdfPage) -> list[tuple[int, int, int]]:
    """``(width, height, bits_per_pixel)`` of every image object on ``pdf_page``, form XObjects
    included (pixels as the image dictionary declares them; bits 0 when PDFium cannot load the
    image). Caller holds :data:`PDFIUM_LOCK`."""
    out = []
    for obj in pdf_page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=15):
        try:
            width, height = obj.get_px_size()
        except pdfium.PdfiumError:  # no usable dictionary; nothing will be decoded
            continue
        try:
            bpp = int(obj.get_metadata().bits_per_pixel)
        except pdfium.PdfiumError:
            bpp = 0
        out.append((int(width), int(height), bpp))
    return out


class OpenedDocument:
    """An opened PDF or image document. Use :func:`open_document` as a context manager.

    ``source`` (the bytes or path it was opened from; the repaired bytes after a repair) and
    ``password`` are kept so that other processes can open the same document themselves (parallel
    rendering, see :mod:`folioflow.ocr.vlm.render_pool`). ``repairs``: what was fixed to open it (one line
    each; empty for sound files).
    """

    def __init__(self, data: bytes | Path, mime_type: str, password: str | None, limits: RenderLimits,
                 repairs: list[str] | None = None):
        self.mime_type = mime_type
        self.limits = limits
        self.source: bytes | Path = data if isinstance(data, bytes) else Path(data)
        self.password = password
        self.repairs: list[str] = list(repairs or [])
        self.metadata: dict[str, str] = {}
        self._pdf: pdfium.PdfDocument | None = None
        self._image: Image.Image | None = None
        self._bad_frames: dict[int, str] = {}  # frame index -> why it does not decode (see _frame)
        self._decoded_frame = -1  # the frame whose pixels Pillow holds
        if mime_type == PDF:
            self._open_pdf(data, password)
        else:
            self._open_image(data)
        if limits.max_pages and self.page_count > limits.max_pages:
            self.close()
            raise ResourceLimitError(f"too many pages: {self.page_count} > limit {limits.max_pages}")

    def _open_pdf(self, data: bytes | Path, password: str | None) -> None:
        truncated = None if self.limits.allow_truncated else pdf_tail_problem(_tail(data, EOF_WINDOW), _size(data))
        try:
            with PDFIUM_LOCK:
                self._pdf = pdfium.PdfDocument(data if isinstance(data, bytes) else str(data), password=password)
                self.page_count = len(self._pdf)
                try:
                    self.metadata = {k: v for k, v in self._pdf.get_metadata_dict(skip_empty=True).items()}
                except Exception:  # noqa: BLE001 - metadata is optional; broken Info dicts (bad encodings too) must not fail the document
                    self.metadata = {}
        except pdfium.PdfiumError as exc:
            text = str(exc)
            whole = data if isinstance(data, bytes) else _read(Path(data))
            if "password" in text.lower() and is_encrypted(whole):  # the code alone can be stale
                reason = "wrong password" if password else "password required"
                raise EncryptedDocumentError(f"encrypted: {reason}") from exc
            if truncated:
                raise CorruptDocumentError(f"corrupt PDF: {truncated}") from exc
            raise CorruptDocumentError(f"corrupt PDF: {describe_pdfium_error(text, whole)}") from exc
        if truncated:
            self.close()
            raise CorruptDocumentError(f"corrupt PDF: {truncated} ({self.page_count} page(s) recoverable; the "
                                       "allow_truncated setting indexes them)")
        if self.page_count == 0:
            self.close()
            raise CorruptDocumentError("corrupt PDF: the document has zero pages (empty page tree)")

    def _open_image(self, data: bytes | Path) -> None:
        _require_decoder(self.mime_type)
        Image.MAX_IMAGE_PIXELS = None  # we apply our own limit below, per frame, with a clear error
        try:
            self._image = Image.open(io.BytesIO(data) if isinstance(data, bytes) else str(data))
            self.page_count = getattr(self._image, "n_frames", 1)
            pixels = self._image.width * self._image.height
        except Exception as exc:
            raise CorruptDocumentError(f"corrupt image: {exc}") from exc
        if pixels > self.limits.max_image_pixels:
            raise ResourceLimitError(
                f"page 1: image exceeds the pixel limit ({self._image.width:,} x {self._image.height:,} = "
                f"{pixels:,} > {self.limits.max_image_pixels:,} pixels)"
            )

    def _frame(self, index: int) -> Image.Image:
        """Frame ``index`` (0-based) decoded on its own. A frame that failed to decode fails every
        time it is asked for: after a decoder error Pillow keeps the previous frame's pixels and
        an empty tile list, so a second ``load()`` would "succeed" with another page's image (a
        multi-page TIFF whose second frame is corrupt was indexed with frame 1's text as page 2)."""
        assert self._image is not None
        known = self._bad_frames.get(index)
        if known is not None:
            raise CorruptDocumentError(known)
        try:
            self._image.seek(index)
            width, height = self._image.size  # from the frame's header: nothing decoded yet
        except Exception as exc:
            self._bad_frames[index] = f"page {index + 1}: corrupt image: {exc}"
            raise CorruptDocumentError(self._bad_frames[index]) from exc
        if width * height > self.limits.max_image_pixels:
            raise ResourceLimitError(
                f"page {index + 1}: image exceeds the pixel limit "
                f"({width:,} x {height:,} = {width * height:,} > {self.limits.max_image_pixels:,} pixels)"
            )
        if self.mime_type == TIFF and not getattr(self._image, "tile", None) and index != self._decoded_frame:
            # nothing left to decode for this frame: its pixels would be whatever was decoded last
            self._bad_frames[index] = f"page {index + 1}: corrupt image: frame {index + 1} has no image data to decode"
            raise CorruptDocumentError(self._bad_frames[index])
        try:
            frame = self._image.copy()
            frame.load()
        except Exception as exc:
            self._bad_frames[index] = f"page {index + 1}: corrupt image: {exc}"
            raise CorruptDocumentError(self._bad_frames[index]) from exc
        self._decoded_frame = index
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
        """Free the document (and any page still open) under :data:`PDFIUM_LOCK`. Idempotent;
        also run when the document is dropped unclosed."""
        with PDFIUM_LOCK:
            if self._pdf is not None:
                self._pdf.close()
                self._pdf = None
        if self._image is not None:
            self._image.close()
            self._image = None

    def __del__(self) -> None:
        try:  # noqa: SIM105 - not contextlib.suppress: at interpreter shutdown module globals may be gone
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown, or __init__ failed before the fields existed
            pass


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
    repairs: list[str] = []
    try:
        mime_type = sniff_mime_type(head)
    except UnsupportedFormatError:
        # No signature library recognises a PDF whose header was lost (there is no magic number
        # left); its objects do, and restoring the header lets PDFium open it as pdf.js does.
        if not headerless_pdf(head):
            raise
        source = b"%PDF-1.7\n" + (source if isinstance(source, bytes) else _read(source))
        mime_type, repairs = PDF, ["added the missing %PDF- header"]
    doc = OpenedDocument(source, mime_type, password, limits or RenderLimits(), repairs)
    try:
        yield doc
    finally:
        doc.close()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read {path.name}: {exc.strerror or exc}") from exc


def _size(data: bytes | Path) -> int:
    return len(data) if isinstance(data, bytes) else Path(data).stat().st_size


def _tail(data: bytes | Path, n: int, chunk: int = 1 << 16) -> bytes:
    """The last ``n`` bytes of ``data`` before its trailing padding (:data:`~folioflow.ocr.diagnose.PDF_PADDING`:
    NULs and white-space after ``%%EOF``), read backwards ``chunk`` bytes at a time; padding of
    any length is skipped without reading the whole file into memory."""
    if isinstance(data, bytes):
        return data.rstrip(PDF_PADDING)[-n:]
    with open(data, "rb") as fh:
        end = fh.seek(0, 2)
        kept = b""
        while end > 0 and len(kept) < n:
            start = max(0, end - chunk)
            fh.seek(start)
            block = fh.read(end - start)
            kept = (block + kept) if kept else block.rstrip(PDF_PADDING)
            end = start
        return kept[-n:]


def _image_dpi(image: Image.Image) -> float:
    dpi = image.info.get("dpi")
    try:
        value = float(dpi[0]) if dpi else 0.0
    except (TypeError, ValueError, IndexError):
        value = 0.0
    if abs(value - round(value)) < 0.05:  # PNG stores pixels per metre: 200 dpi reads back as 199.9996
        value = float(round(value))
    return value if 36.0 <= value <= 2400.0 else 72.0
