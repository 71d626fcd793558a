"""Malformed inputs: each file is converted or refused with a specific reason; nothing crashes.

Fast checks run the converter in-process with the text-layer engine (every page either converted
or failed with its reason, no OCR); the whole batch through ``folioflow ingest`` (OCR included,
good files mixed in, figures from :mod:`folioflow.flows.reliability`) is the slow test at the end.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from folioflow.flows.reliability import build_batch, corpus_passwords, run_batch
from folioflow.flows.reliability.hostile import (
    image_page,
    png_bomb,
    raw_pdf,
    text_page,
    tiff_with_huge_frame,
    truncated_copy,
)
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.errors import (
    CorruptDocumentError,
    EncryptedDocumentError,
    ResourceLimitError,
    SourceError,
    UnsupportedFormatError,
)
from folioflow.ocr.samples import write_sample_pdf
from folioflow.ocr.schema import PageStatus, SourceRef

#: Reasons too vague to act on: a refusal must say what is wrong.
VAGUE = re.compile(r"^(corrupt PDF: Failed to load|internal error|task failed|error)|PDFium: Success", re.I)

#: What each refused corpus file must be refused for (``E_malformed``-relative path -> pattern).
EXPECTED_REFUSALS = {
    "derived/zero_pages_from_pdfjs_empty.pdf": r"^corrupt PDF: the document has zero pages",
    "ocrmypdf/invalid.pdf": r"^corrupt PDF: no PDF objects after the header",
    "pdfjs/REDHAT-1531897-0.pdf": r"^corrupt PDF: broken cross-reference table",
    "pdfjs/bug1020226.pdf": r"^corrupt PDF: truncated: no %%EOF",
    "pdfjs/bug1980958.pdf": r"^corrupt PDF: truncated: no %%EOF",
    "pdfjs/poppler-742-0-fuzzed.pdf": r"^corrupt PDF: broken cross-reference table",
    "pdfjs/print_protection.pdf": r"^encrypted: password required$",
    "pdfjs/scan-bad.pdf": r"^corrupt PDF: truncated: no %%EOF",
    "pdfplumber/empty.pdf": r"^empty file: 0 bytes$",
    "pypdf_samples/unreadablemetadata.pdf": r"^corrupt PDF: broken cross-reference table",
}


@pytest.fixture(scope="module")
def converter():
    conv = DocumentConverter(ConvertOptions(engine="text"))
    yield conv
    conv.close()


def convert(converter, path: Path, password: str | None = None):
    return converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.resolve().as_uri(), path=path.name),
                                           password=password))


def test_every_corpus_malformed_file_is_converted_or_refused_specifically(corpus, converter):
    root = corpus / "E_malformed"
    passwords = corpus_passwords(root / "PASSWORDS.tsv")
    converted, refused = 0, {}
    for path in sorted(root.rglob("*.pdf")):
        rel = path.relative_to(root).as_posix()
        try:
            document = convert(converter, path, passwords.get(path.name))
        except SourceError as exc:
            refused[rel] = str(exc)
            assert "\n" not in str(exc) and not VAGUE.search(str(exc)), (rel, str(exc))
            continue
        converted += 1
        assert [p.number for p in document.pages] == list(range(1, document.page_count + 1)), rel
        for page in document.pages:  # text engine: a page without a usable text layer fails with its reason
            assert page.status == PageStatus.OK or (page.errors and not VAGUE.search(page.errors[0])), (rel, page.errors)
    assert set(refused) == set(EXPECTED_REFUSALS), sorted(refused)
    for rel, pattern in EXPECTED_REFUSALS.items():
        assert re.search(pattern, refused[rel]), (rel, refused[rel])
    assert converted == len(list(root.rglob("*.pdf"))) - len(EXPECTED_REFUSALS)


def test_encrypted_files_open_with_the_supplied_passwords(corpus, converter):
    root = corpus / "E_malformed"
    passwords = corpus_passwords(root / "PASSWORDS.tsv")
    assert passwords["issue6010_2.pdf"] == "æøå" and passwords["health_protected.pdf"] == "userpass"
    opened = 0
    for name, password in sorted(passwords.items()):
        matches = list(root.rglob(name))
        if not matches:
            continue  # PASSWORDS.tsv lists files the snapshot lacks
        with pytest.raises(EncryptedDocumentError, match="^encrypted: password required$"):
            convert(converter, matches[0])
        with pytest.raises(EncryptedDocumentError, match="^encrypted: wrong password$"):
            convert(converter, matches[0], password + "-wrong")
        assert convert(converter, matches[0], password).page_count >= 1, name
        opened += 1
    assert opened >= 9


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    sample = write_sample_pdf(folder / "sample.pdf")
    (folder / "zip.pdf").write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(40))
    (folder / "html.pdf").write_bytes(b"<!DOCTYPE html><html><body>Not found</body></html>")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "headerless.pdf").write_bytes(sample.read_bytes().split(b"\n", 1)[1])
    (folder / "pdf-named.png").write_bytes(sample.read_bytes())
    for fraction in (0.1, 0.5, 0.9, 0.99):
        truncated_copy(sample, folder / f"cut-{int(fraction * 100)}.pdf", fraction)
    raw_pdf(folder / "bomb-page-2.pdf", [text_page("Cover", "The cover page text is fine."), image_page(60_000, 60_000)])
    png_bomb(folder / "bomb.png", 50_000, 50_000)
    tiff_with_huge_frame(folder / "huge.tif")
    return folder


def test_hostile_files_get_specific_reasons(hostile, converter):
    cases = {
        "zip.pdf": (UnsupportedFormatError, r"^not a PDF or supported image: a ZIP archive"),
        "html.pdf": (UnsupportedFormatError, r"^not a PDF or supported image: an HTML page"),
        "empty.pdf": (UnsupportedFormatError, r"^empty file: 0 bytes$"),
        "cut-10.pdf": (CorruptDocumentError, r"^corrupt PDF: truncated: no %%EOF"),
        "cut-50.pdf": (CorruptDocumentError, r"^corrupt PDF: truncated: no %%EOF"),
        "cut-90.pdf": (CorruptDocumentError, r"^corrupt PDF: truncated: no %%EOF"),
        "cut-99.pdf": (CorruptDocumentError, r"^corrupt PDF: truncated: no %%EOF"),
        "bomb.png": (ResourceLimitError, r"^page 1: image exceeds the pixel limit \(50,000 x 50,000"),
    }
    for name, (cls, pattern) in cases.items():
        with pytest.raises(cls, match=pattern):
            convert(converter, hostile / name)


def test_repairable_and_misnamed_files_are_converted(hostile, converter):
    repaired = convert(converter, hostile / "headerless.pdf")
    assert repaired.metadata["repairs"] == ["added the missing %PDF- header"]
    assert all(p.status == PageStatus.OK for p in repaired.pages) and repaired.page_count == 2
    misnamed = convert(converter, hostile / "pdf-named.png")
    assert misnamed.mime_type == "application/pdf" and misnamed.page_count == 2


def test_a_bomb_page_fails_alone_with_the_reason(hostile):
    conv = DocumentConverter(ConvertOptions(engine="ocr"))
    try:
        document = convert(conv, hostile / "bomb-page-2.pdf")
        frames = convert(conv, hostile / "huge.tif")
    finally:
        conv.close()
    first, second = document.pages
    assert first.status == PageStatus.OK and "cover page" in first.markdown.lower()
    assert second.status == PageStatus.FAILED
    assert second.errors == ["page 2: image exceeds the pixel limit (60,000 x 60,000 px at 8 bits per pixel = "
                             "3.4 GiB decoded > 2.0 GiB)"]
    assert [p.status for p in frames.pages] == [PageStatus.OK, PageStatus.OK, PageStatus.FAILED]
    assert frames.pages[2].errors[-1].startswith("page 3: image exceeds the pixel limit (15,000 x 15,000")


@pytest.mark.slow
def test_whole_batch_through_ingest(corpus, tmp_path, prefect_harness):
    """Every malformed corpus file, the generated hostile files and 8 good files, mixed in one
    folder, through ``folioflow ingest`` (about 5 minutes): no crash, no page lost, every point
    right, every good file indexed, every refusal specific."""
    batch = build_batch(tmp_path / "batch", corpus, good=6)
    figures = run_batch(batch, tmp_path / "run")
    assert figures.crashed == 0, [f for f in figures.files if f.outcome == "crashed"]
    assert figures.pages_lost == 0, [(f.path, f.page_reasons) for f in figures.files if f.pages_lost]
    assert figures.documents_with_wrong_points == 0
    assert figures.good_indexed == figures.good == 8
    assert figures.exit_code == 0 and figures.passed
    for f in figures.files:
        if f.outcome == "rejected":
            assert f.reason and not VAGUE.search(f.reason), (f.path, f.reason)
    outcome = {f.path: f for f in figures.files}
    for rel, pattern in EXPECTED_REFUSALS.items():
        assert re.search(pattern, outcome[f"malformed/{rel}"].reason or ""), rel
    assert outcome["hostile/encrypted-right-password.pdf"].outcome == "ingested"
    assert outcome["hostile/encrypted-wrong-password.pdf"].reason == "encrypted: wrong password"
    assert outcome["hostile/bomb-page-2.pdf"].outcome == "ingested" and outcome["hostile/bomb-page-2.pdf"].pages_failed == 1
