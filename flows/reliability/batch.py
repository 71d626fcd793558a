"""The reliability batch: every malformed file of the corpus, generated hostile files, good files.

:func:`build_batch` writes one folder (copies, never links: a source may not reach outside its
root) holding:

* ``malformed/``: every PDF of ``<corpus>/E_malformed`` (broken xref or trailer, page-tree cycles,
  fuzzed files, corrupt images, 0-byte, zero-page, encrypted, huge pages and images, fonts without
  Unicode maps), with the passwords of ``PASSWORDS.tsv`` where it gives a usable one;
* ``hostile/``: generated files the corpus lacks: wrong extensions (a PDF named ``.png``, a PNG
  named ``.pdf``, a JPEG named ``.tif``), non-PDF bytes named ``.pdf`` (ZIP, HTML error page, plain
  text, GIF), truncated downloads of real PDFs (several cut points), a PDF without its header,
  decompression bombs (PDF images of 3.4 GiB and 5 GB decoded, a PNG declaring 2.5 gigapixels, a
  TIFF whose third page is over the pixel limit), encrypted PDFs with no, a wrong and the right
  password;
* ``good/``: the generated sample report and an image-only scan of it, plus real documents of the
  corpus (CUAD contracts, the smallest FinanceBench filing, scanned pages): every one of them must
  be indexed whatever else is in the folder.
"""

from __future__ import annotations

import csv
import io
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from folioflow.flows.reliability.hostile import (
    image_page,
    png_bomb,
    raw_pdf,
    text_page,
    tiff_with_huge_frame,
    truncated_copy,
)
from folioflow.ocr.samples import write_encrypted_pdf

__all__ = ["BatchFile", "Batch", "build_batch", "corpus_passwords"]


@dataclass(frozen=True)
class BatchFile:
    """One file of the batch: ``path`` relative to the batch folder; ``kind``: ``malformed``
    (from the corpus), ``hostile`` (generated) or ``good`` (must be indexed); ``origin``: where it
    comes from or what it is."""

    path: str
    kind: str
    origin: str


@dataclass
class Batch:
    """The batch folder, its files and the passwords to supply (file name -> password)."""

    folder: Path
    files: list[BatchFile] = field(default_factory=list)
    passwords: dict[str, str] = field(default_factory=dict)

    def add(self, path: Path, kind: str, origin: str) -> None:
        self.files.append(BatchFile(path.relative_to(self.folder).as_posix(), kind, origin))


def corpus_passwords(tsv: Path) -> dict[str, str]:
    """File name -> open password from the corpus's ``PASSWORDS.tsv`` (rows whose password column
    is a value, not a note such as ``(empty)``, ``?`` or ``unknown``; a note after the value in
    parentheses is dropped)."""
    out: dict[str, str] = {}
    with tsv.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            value = (row.get("user_or_open_password") or "").strip()
            if not value or value[0] in "(?" or value.split()[0].lower() in ("unknown", "see", "passwords"):
                continue
            out[Path(row["local_path"]).name] = value.split(" (")[0].strip()
    return out


def _hostile(batch: Batch, sample: Path, contract: Path | None) -> None:
    from PIL import Image, ImageDraw

    out = batch.folder / "hostile"
    out.mkdir(parents=True, exist_ok=True)

    def add(name: str, data: bytes, what: str) -> None:
        (out / name).write_bytes(data)
        batch.add(out / name, "hostile", what)

    add("empty.pdf", b"", "0-byte file")
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document/>")
    add("word-document.pdf", zipped.getvalue(), "DOCX (ZIP) bytes named .pdf")
    add("download-error.pdf", b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>"
        b"<body><h1>Forbidden</h1></body></html>\n", "HTML error page named .pdf")
    add("notes.pdf", b"Quarterly notes\nRevenue up 4% on the year.\n", "plain text named .pdf")
    gif = io.BytesIO()
    Image.new("RGB", (64, 32), "white").save(gif, "GIF")
    add("animation.pdf", gif.getvalue(), "GIF named .pdf")
    page = Image.new("L", (1275, 650), 255)
    draw = ImageDraw.Draw(page)
    draw.text((80, 120), "Board Minutes", fill=0, font_size=64)
    draw.text((80, 260), "The board approved the audited accounts for 2025.", fill=0, font_size=40)
    png = io.BytesIO()
    page.save(png, "PNG", dpi=(150, 150))
    add("minutes-scan.pdf", png.getvalue(), "PNG named .pdf (readable: should be ingested)")
    add("report-named.png", sample.read_bytes(), "PDF named .png (readable: should be ingested)")
    jpeg = io.BytesIO()
    page.save(jpeg, "JPEG", dpi=(150, 150))
    add("minutes-photo.tif", jpeg.getvalue(), "JPEG named .tif (readable: should be ingested)")
    add("headerless.pdf", sample.read_bytes().split(b"\n", 1)[1], "PDF whose %PDF- header was lost (repairable)")
    for fraction in (0.3, 0.7, 0.99):
        target = truncated_copy(sample, out / f"truncated-sample-{int(fraction * 100)}pct.pdf", fraction)
        batch.add(target, "hostile", f"truncated download: first {fraction:.0%} of the sample report")
    if contract is not None:
        for fraction in (0.5, 0.995):
            target = truncated_copy(contract, out / f"truncated-contract-{fraction * 100:g}pct.pdf", fraction)
            batch.add(target, "hostile", f"truncated download: first {fraction:.1%} of {contract.name}")
    batch.add(raw_pdf(out / "bomb-gray-60k.pdf", [image_page(60_000, 60_000)]), "hostile",
              "decompression bomb: 60,000 x 60,000 grey image (3.4 GiB decoded) in 3.5 MB")
    batch.add(raw_pdf(out / "bomb-mono-200k.pdf", [image_page(200_000, 200_000, 1)]), "hostile",
              "decompression bomb: 200,000 x 200,000 bilevel image (5 GB decoded)")
    batch.add(raw_pdf(out / "bomb-page-2.pdf", [text_page("Cover", "This cover page is fine and must be indexed."),
                                                image_page(60_000, 60_000)]), "hostile",
              "page 1 readable, page 2 a decompression bomb")
    batch.add(png_bomb(out / "bomb.png", 50_000, 50_000), "hostile", "PNG declaring 50,000 x 50,000 pixels")
    batch.add(tiff_with_huge_frame(out / "huge-third-page.tif"), "hostile", "TIFF whose page 3 exceeds the pixel limit")
    batch.add(write_encrypted_pdf(out / "encrypted-no-password.pdf", "a-password-nobody-has"), "hostile",
              "encrypted, no password supplied")
    batch.add(write_encrypted_pdf(out / "encrypted-wrong-password.pdf", "the-real-password"), "hostile",
              "encrypted, a wrong password supplied")
    batch.passwords["encrypted-wrong-password.pdf"] = "a-wrong-guess"
    batch.add(write_encrypted_pdf(out / "encrypted-right-password.pdf", "open-sesame-2025"), "hostile",
              "encrypted, the right password supplied (should be ingested)")
    batch.passwords["encrypted-right-password.pdf"] = "open-sesame-2025"


def _good(batch: Batch, corpus: Path | None, sample: Path, count: int) -> Path | None:
    from folioflow.ocr.samples import write_scanned_copy

    out = batch.folder / "good"
    out.mkdir(parents=True, exist_ok=True)
    batch.add(sample, "good", "generated sample report (born-digital, 2 pages)")
    batch.add(write_scanned_copy(sample, out / "sample-report-scan.tif", dpi=200), "good",
              "image-only scan of the sample report (multi-page TIFF)")
    if corpus is None:
        return None
    picks: list[Path] = []
    contracts = sorted((corpus / "B_legal" / "cuad" / "pdfs").rglob("*.pdf"))
    picks += contracts[: max(0, count - 2)]
    filings = sorted((corpus / "A_finance" / "financebench" / "pdfs").glob("*.pdf"), key=lambda p: p.stat().st_size)
    picks += filings[:1]
    scans = sorted(p for p in (corpus / "C_scanned_multilang").rglob("*") if p.suffix.lower() in (".pdf", ".png", ".jpg"))
    picks += scans[:1]
    for src in picks:
        target = out / src.name
        shutil.copyfile(src, target)
        batch.add(target, "good", str(src.relative_to(corpus)))
    return contracts[0] if contracts else None


def build_batch(folder: Path, corpus: Path | None, good: int = 6) -> Batch:
    """Write the batch into ``folder`` (created; must be empty or absent) and return it.
    ``corpus``: the shared corpus root (``None``: generated files only); ``good``: how many good
    corpus files to mix in (contracts, the smallest filing and a scan)."""
    from folioflow.ocr.samples import write_sample_pdf

    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty")
    batch = Batch(folder=folder)
    sample = write_sample_pdf(folder / "good" / "sample-report.pdf")
    contract = _good(batch, corpus, sample, good)
    if corpus is not None and (corpus / "E_malformed").is_dir():
        root = corpus / "E_malformed"
        for src in sorted(root.rglob("*.pdf")):
            target = folder / "malformed" / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            batch.add(target, "malformed", f"E_malformed/{src.relative_to(root).as_posix()}")
        if (root / "PASSWORDS.tsv").is_file():
            batch.passwords.update(corpus_passwords(root / "PASSWORDS.tsv"))
    _hostile(batch, sample, contract)
    return batch
