"""Body text inside the page margins is kept; real running headers and footers are not.

The text-layer engine labels lines in the top/bottom 7% of a page as page headers/footers, which
the chunker keeps out of the index. A paragraph that runs into that margin (EDGAR exhibits are
typeset with small margins) is body text: measured on 25 CUAD contracts and 3 FinanceBench filings,
105 clause lines were dropped from the index before the rule that margin lines flowing with the body
are body (``folioflow.ocr.layout.blocks._detached_margins``).
"""

from __future__ import annotations

from pathlib import Path

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.schema import BlockType, SourceRef

BODY = ["This clause begins high on the page, inside the top margin, and must be indexed as body text.",
        "The second line continues the same paragraph at the normal line spacing of the document.",
        "A third line closes the paragraph so that the block is unmistakably ordinary prose."]


def margin_pdf(path: Path) -> Path:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    for number in (1, 2):
        c.setFont("Helvetica", 9)
        c.drawString(72, 792 - 16, "NORTHWIND CAPITAL - CONFIDENTIAL")  # running header, 2.5 lines above the body
        c.setFont("Helvetica", 10)
        for i, line in enumerate(BODY):  # body starts at 48 pt from the top: inside the 55 pt margin
            c.drawString(72, 792 - 48 - 13 * i, line)
        for i in range(30):
            c.drawString(72, 792 - 100 - 13 * i, f"Ordinary body line {i} of page {number} in the middle of the page.")
        c.setFont("Helvetica", 9)
        c.drawString(290, 20, f"Page {number} of 2")
        c.showPage()
    c.save()
    return path


def convert(path: Path):
    conv = DocumentConverter(ConvertOptions(engine="text"))
    try:
        return conv.convert(DocumentInput(data=path, source=SourceRef(uri=path.resolve().as_uri(), path=path.name)))
    finally:
        conv.close()


def test_paragraph_in_the_margin_is_body_and_running_header_is_furniture(tmp_path):
    document = convert(margin_pdf(tmp_path / "margins.pdf"))
    for page in document.pages:
        kinds = {b.text: b.type for b in page.blocks}
        assert kinds["NORTHWIND CAPITAL - CONFIDENTIAL"] == BlockType.PAGE_HEADER
        assert kinds[f"Page {page.number} of 2"] == BlockType.PAGE_FOOTER
        assert BODY[0] in page.markdown and BODY[2] in page.markdown
        assert "NORTHWIND" not in page.markdown


def test_contract_clauses_at_page_tops_reach_the_markdown(corpus):
    path = next((corpus / "B_legal" / "cuad" / "pdfs").rglob("LeadersonlineInc_20000427_S-1A_EX-10.8*.pdf"))
    document = convert(path)
    text = " ".join(" ".join(p.markdown.split()) for p in document.pages)
    for clause in ("Effective Date (prorated for any partial quarters)",
                   "such revenue was received by LeadersOnline. Such payments shall be accompanied",
                   "shall take reasonable steps to mitigate damages arising out of such breach."):
        assert clause in text, clause


def test_page_words_leave_table_markup_out():
    """The page-accounting words of an HTML table block are its cells' words: a ``colspan="7"``
    is markup (a chunk that writes the table's rows as text has no "7" to match it; the batch
    test once reported that as a lost word), and entities are decoded on both sides."""
    from folioflow.flows.reliability.measure import _words

    table = '<table>\n<tr><td colspan="7">music. See your</td><td>That&#x27;s it</td></tr>\n</table><!-- figure -->'
    assert _words(table) == {"music", "see", "your", "that", "s", "it"}
    assert _words("music. See your / That's it") == _words(table)
    assert _words("a < b and c > d") == {"a", "b", "and", "c", "d"}  # comparisons are no tags
