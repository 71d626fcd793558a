"""Hanging-indent lists in a text layer: a clause number, sub-clause letter or bullet set apart from
its text by a tab reads with the text of its own row, not as a column of labels read first, and
not as the tail of the line above (GRIDIRON's supply agreement: "3." and "4." were read at the top
of the page and "A." ended the clause title "2. Term and Termination."; 10-K bullet lists read as
"• • • ..." before their items)."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.schema import SourceRef

LONG = ("Gridiron and affiliated parties shall indemnify and hold Shi Farms harmless from any claims, losses, "
        "actions, damages, liabilities, taxes, obligations, fines, proceedings and costs resulting from any breach.")


def _write(path: Path) -> Path:
    canvas = pytest.importorskip("reportlab.pdfgen.canvas")
    pdf = canvas.Canvas(str(path), pagesize=(612, 792))
    y = 720.0

    def row(*cells: tuple[float, str, str]) -> None:
        nonlocal y
        for x, font, text in cells:
            pdf.setFont(font, 10)
            pdf.drawString(x, y, text)
        y -= 13

    row((80, "Times-Bold", "2. Term and Termination."))
    row((97, "Times-Bold", "A."), (114, "Times-Roman", "Termination. Either Party may terminate this Agreement at any "
                                                         "time prior to delivery."))
    row((80, "Times-Bold", "3."), (97, "Times-Roman", "Indemnification. " + LONG[:78]))
    row((80, "Times-Roman", LONG[78:170]))
    row((80, "Times-Roman", LONG[170:]))
    row((80, "Times-Bold", "4."), (97, "Times-Roman", "Notices. All notices under this Agreement must be in writing and "
                                                       "delivered by email."))
    y -= 13
    row((80, "Times-Roman", "Our revenue comes from these categories of products:"))
    for item in ("Consumer Electronics - home theater, digital imaging and portable audio;",
                 "Computing and Mobile Phones - computing, networking, tablets and mobile phones;",
                 "Appliances - major and small appliances; and", "Other - snacks, beverages and sundry items."):
        row((84, "Times-Roman", "\u2022"), (100, "Times-Roman", item))
    pdf.showPage()
    pdf.save()
    return path


def _paragraphs(path: Path, page: int = 1) -> list[str]:
    path = path.resolve()
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    return document.pages[page - 1].markdown.split("\n\n")


@pytest.mark.corpus
def test_a_supply_agreements_clause_numbers_and_letters_stay_with_their_clauses(corpus):
    """GRIDIRON's clause numbers and letters are set in a column of their own, a tab left of their text."""
    [path] = list((corpus / "B_legal/cuad/pdfs").glob("*/*/GRIDIRONBIONUTRIENTS*"))
    paragraphs = _paragraphs(path, 2)
    assert paragraphs[:2] == ["### 2. Term and Termination.", "#### A. Termination"]  # no "3.", "4." read first
    assert "A. Termination. Either Party may terminate this Agreement at any time prior to delivery of the Product." \
        in paragraphs
    assert [p for p in paragraphs if p.startswith("### ")] == [
        "### 2. Term and Termination.", "### 3. Indemnification", "### 4. Notices", "### 5. Entire Agreement."]
    law = next(p for p in paragraphs if p.startswith("B. Governing Law. This Agreement"))
    assert "laws of the State of Colorado" in law and "B." not in paragraphs


@pytest.mark.corpus
def test_a_10k_bullet_list_reads_item_by_item(corpus):
    """Best Buy's 2017 10-K sets its bullets a tab left of the items: they read as "• • • •" first."""
    paragraphs = _paragraphs(corpus / "A_finance/financebench/pdfs/BESTBUY_2017_10K.pdf", 5)
    items = [p for p in paragraphs if p.startswith("- ")]
    assert len(items) == 6 and items[0].startswith("- Consumer Electronics - home theater")
    assert items[-1] == "- Other - snacks, beverages and other sundry items."
    assert not any(set(p) <= {"•", " "} for p in paragraphs)


def test_labels_read_with_the_text_of_their_row(tmp_path):
    paragraphs = _paragraphs(_write(tmp_path / "hanging.pdf"))
    assert "A." not in paragraphs and "3." not in paragraphs and not any(p.endswith(" A.") for p in paragraphs)
    assert "A. Termination. Either Party may terminate this Agreement at any time prior to delivery." in paragraphs
    indemnity = next(p for p in paragraphs if p.startswith("3. Indemnification."))
    assert indemnity.endswith("resulting from any breach.")  # its wrapped lines stay with it
    assert paragraphs.index(indemnity) < next(i for i, p in enumerate(paragraphs) if p.startswith("4. Notices."))
    assert [p for p in paragraphs if p.startswith("- ")] == [
        "- Consumer Electronics - home theater, digital imaging and portable audio;",
        "- Computing and Mobile Phones - computing, networking, tablets and mobile phones;",
        "- Appliances - major and small appliances; and", "- Other - snacks, beverages and sundry items."]
