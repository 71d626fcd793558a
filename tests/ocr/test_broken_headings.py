"""A heading that is only the first line of a sentence: a bold or large first line of a preamble or
of a party's description, judged a heading by its typography, is merged back into the block that
goes on with it (``folioflow.ocr.layout.blocks.join_broken_headings``), converted for real from a
generated text-layer PDF."""

from __future__ import annotations

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.finish import document_passes
from folioflow.ocr.layout.blocks import HEADING_FONT, breaks_off, join_broken_headings, page_markdown
from folioflow.ocr.schema import BBox, Block, BlockType, Page, SourceRef


def _write(path, rows):
    """``rows``: (bold, text) lines, 11 pt, a blank line's gap between rows."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    y = 720
    for bold, text in rows:
        pdf.setFont("Times-Bold" if bold else "Times-Roman", 11)
        pdf.drawString(72, y, text)
        y -= 28
    pdf.save()
    return path


def test_a_heading_that_breaks_off_a_sentence_joins_the_block_that_goes_on_with_it(tmp_path):
    """CUAD's Pizza Fusion form ("... (“Agreement”) is made this _____ day of" over "_________, 20___,
    by and between ...") and Profound Medical's party ("PHILIPS MEDICAL SYSTEMS NEDERLAND B.V., a
    company" over "incorporated under the laws of the Netherlands ..."): the bold first lines became
    headings, so the chunk lost the start of its sentence (and the blank date) to its heading path.
    Real headings stay: one followed by a capitalised sentence, and an Item heading whose next block
    is another column's text. Running the document passes again changes nothing."""
    path = _write(tmp_path / "nda.pdf", [
        (False, "NON-DISCLOSURE AGREEMENT"),
        (True, "THIS NON-DISCLOSURE AGREEMENT (\u201cAgreement\u201d) is made this _____ day of"),
        (False, "_________, 20___, by and between Acme Franchising LLC (the \u201cFranchisee\u201d) and the Member."),
        (True, "BETA MEDICAL SYSTEMS NEDERLAND B.V., a company"),
        (False, "incorporated under the laws of the Netherlands with its principal place of business in Best."),
        (True, "1. Confidential Information"),
        (False, "The Member shall not disclose any confidential information of the Franchisee to anyone."),
        (True, "Item 2. Unregistered Sales of Equity Securities and Use of"),
        (False, "proceeds: none during the quarter covered by this report."),
    ])
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    doc = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    blocks = doc.pages[0].blocks
    headings = [b.text for b in blocks if b.type == BlockType.HEADING]
    assert any("1. Confidential Information" in h for h in headings), headings
    assert any("Item 2." in h for h in headings), headings
    assert not any("day of" in h or "a company" in h for h in headings), headings
    texts = [b.text for b in blocks if b.type == BlockType.PARAGRAPH]
    assert any("is made this _____ day of _________, 20___, by and between" in t for t in texts), texts
    assert any(t.startswith("BETA MEDICAL SYSTEMS NEDERLAND B.V., a company incorporated under") for t in texts), texts
    before = [p.markdown for p in doc.pages]
    document_passes(doc)
    assert [p.markdown for p in doc.pages] == before


def test_what_breaks_off_a_sentence():
    assert breaks_off("THIS AGREEMENT (\u201cAgreement\u201d) is made this _____ day of", "_________, 20___, by and between")
    assert breaks_off("Servicer shall deliver to the", "trustee each report within ten days.")
    assert breaks_off("ACME B.V., a company", "incorporated under the laws of the Netherlands")
    assert not breaks_off("Derivative contracts", "netting agreement and limited to the net amount")  # a title
    assert not breaks_off("Item 2. Unregistered Sales of Equity Securities and Use of", "and procedures were effective")
    assert not breaks_off("Terms of the", "Agreement are set out below.")  # the next block starts a sentence
    assert not breaks_off("Definitions:", "the following terms apply")
    assert not breaks_off("Exhibit A to the", "supply agreement")  # a labelled heading
    assert breaks_off("Section covenants of the", "seller are set out below")  # "Section" without a number


def test_a_heading_is_not_joined_to_another_column_or_a_list_item():
    """A two-column filing: the block after a heading in reading order may open the other column
    ("Risks Related to Our Business and" on the left, "our industry ..." at the top right); a
    heading over a lettered list item ("a) the Licensee ...") keeps the list. Neither is joined."""
    def page(head_box, next_box, next_type=BlockType.PARAGRAPH, next_text="our industry are described below."):
        blocks = [Block(type=BlockType.HEADING, level=3, text="### Risks Related to Our Business and",
                        bbox=BBox(x0=head_box[0], y0=head_box[1], x1=head_box[2], y1=head_box[3]),
                        attributes={HEADING_FONT: {"size": 10.0, "bold": True, "lines": 1}}),
                  Block(type=next_type, text=next_text,
                        bbox=BBox(x0=next_box[0], y0=next_box[1], x1=next_box[2], y1=next_box[3]))]
        return Page(number=1, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks), engine="text")

    other_column = page((72, 100, 290, 112), (320, 90, 540, 300))
    list_item = page((72, 100, 290, 112), (72, 116, 540, 140), BlockType.LIST_ITEM, "a) the Licensee shall pay.")
    same_column = page((72, 100, 290, 112), (72, 116, 290, 300))
    assert join_broken_headings([other_column, list_item, same_column]) == 1
    assert [b.type for b in other_column.blocks] == [BlockType.HEADING, BlockType.PARAGRAPH]
    assert [b.type for b in list_item.blocks] == [BlockType.HEADING, BlockType.LIST_ITEM]
    assert [b.text for b in same_column.blocks] == ["Risks Related to Our Business and our industry are described below."]
    assert same_column.markdown == same_column.blocks[0].text
