"""folioflow.ocr.layout.clauses: clause titles read from the text become headings with levels, on
generated contracts and a generated filing converted by the text-layer engine."""

from __future__ import annotations

import pytest

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.layout.blocks import page_markdown, relevel_headings
from folioflow.ocr.layout.clauses import clause_title, mark_clause_headings
from folioflow.ocr.sample_contracts import (
    CONTRACT_CLAUSES,
    CONTRACT_STYLES,
    write_contract_pdf,
    write_filing_pdf,
)
from folioflow.ocr.schema import Block, BlockType, Document, Page, SourceRef


@pytest.mark.parametrize(("text", "kind", "title", "run_in"), [
    ("ARTICLE VIII", "article", "ARTICLE VIII", False),
    ("Section 5.02", "section", "Section 5.02", False),
    ("Section 5.02 Governing Law", "section", "Section 5.02 Governing Law", False),
    ("11. Choice Of Law. This Agreement shall be governed by the laws of Texas.", "number", "11. Choice Of Law", True),
    ("8.05 GOVERNING LAW. This Agreement shall be governed by Delaware law.", "number", "8.05 GOVERNING LAW", True),
    ("(a) Notices. All notices shall be in writing.", "letter", "(a) Notices", True),
    ("a. Term. This Agreement shall become effective on the date first written above.", "letter", "a. Term", True),
    ("Training. We will provide you with the initial training specified in the Manual.", "run_in", "Training", True),
    # a title line in capitals that the text layer joined to its paragraph (NETGEAR's distributor agreement)
    ("19. ENTIRE AGREEMENT, GOVERNING LAW This Agreement, including its attachment, constitutes the entire agreement.",
     "number", "19. ENTIRE AGREEMENT, GOVERNING LAW", True),
    ("18. ASSIGNMENT This Agreement may not be assigned by either party without consent.", "number", "18. ASSIGNMENT",
     True),
    ("IV. CONFIDENTIALITY", "roman", "IV. CONFIDENTIALITY", False),
    ("II - WORK BY LEO", "roman", "II - WORK BY LEO", False),  # WARNERCHILCOTT's development agreement
    ("RECITALS", "recitals", "RECITALS", False),
    ("EXHIBIT A", "annex", "EXHIBIT A", False),
    ("PART II", "part", "PART II", False),
    ("Item 8. Financial Statements and Supplementary Data", "item", "Item 8. Financial Statements and Supplementary Data", False),
])
def test_clause_titles_are_read_from_the_text(text, kind, title, run_in):
    found = clause_title(text)
    assert found is not None and (found.kind, found.title, found.run_in) == (kind, title, run_in)


@pytest.mark.parametrize("text", [
    "1) The Company shall pay the fee within thirty days.",      # a numbered sentence, not a title
    "(i) displaying prominent identification of the Sponsor",    # a lettered list item
    "Exhibit 10.41",                                              # an EDGAR exhibit number
    "Schedule 4 of the Escrow Agreement shall be signed by both.",
    "Section 14 hereof, the term of this Agreement",
    "2020 was a year of growth for the Company.",
    "345 Park Avenue, San Jose, California 95110-2704",          # an address, not clause 345
    "John S. D'Orazio, President and Chief Executive Officer of the Company",  # an initial, not a title
    "Mr. Parmelee brings over 25 years of technology industry experience to the board.",
    "A. Club owns and operates the National Football League team in Jacksonville.",  # a lettered recital
    "2. IBM Products are warranted for ninety days from delivery to the customer.",  # a short name in capitals
    "3. NETGEAR shall pay every invoice within thirty days of its date.",  # capitals, then no capitalised word
    "I. Introduction",                                            # a Roman number takes a title in capitals
    "VI. VII. VIII. IX.",                                         # a column of Roman numbers, no title
    "C. POLICY CANCELLATION",                                     # a capital letter, not C = 100
])
def test_sentences_and_references_are_no_titles(text):
    assert clause_title(text) is None


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Each generated contract style and the filing, converted by the text layer."""
    root = tmp_path_factory.mktemp("contracts")
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    paths = {s: write_contract_pdf(root / f"{s}.pdf", s) for s in CONTRACT_STYLES}
    paths["filing"] = write_filing_pdf(root / "filing.pdf")
    return {name: converter.convert(DocumentInput(data=p, source=SourceRef(uri=p.as_uri(), path=p.name)))
            for name, p in paths.items()}


def _headings(document: Document) -> list[tuple[int, str]]:
    return [(b.level or 0, b.text.lstrip("#").strip()) for p in document.pages for b in p.blocks
            if b.type in (BlockType.HEADING, BlockType.TITLE)]


@pytest.mark.parametrize("style", CONTRACT_STYLES)
def test_every_clause_title_is_a_heading_and_its_text_stays_whole(converted, style):
    document = converted[style]
    headings = _headings(document)
    titles = [t for _, t in headings]
    markdown = "\n\n".join(p.markdown for p in document.pages)
    for title, opening in CONTRACT_CLAUSES[style]:
        assert title in titles, (title, titles)
        assert opening in markdown
    if style in ("run_in", "decimal"):  # run-in: the paragraph keeps its number and title
        for title, opening in CONTRACT_CLAUSES[style]:
            assert any(ln.startswith(title + ".") and opening in ln for ln in markdown.splitlines()), title
    assert headings[0] == (1, "MASTER SUPPLY AGREEMENT")
    assert any(t == "Recitals" for t in titles) and any(t.startswith("EXHIBIT A") for t in titles)


def test_article_section_and_sub_clause_levels_nest(converted):
    levels = dict((t, lvl) for lvl, t in _headings(converted["article"]))
    assert levels["ARTICLE II GENERAL TERMS"] == 2
    assert levels["Section 2.03 Payment"] == 3
    assert levels["(a) Late Payment"] == 4
    assert levels["EXHIBIT A Product Specifications"] == 2
    assert levels["Recitals"] == 2  # the top clause level: recitals close before Article I


def test_unnumbered_and_roman_titles_in_capitals_are_top_level_clauses(converted):
    """CENTRACK's hosting agreement sets "TERM AND TERMINATION" alone on its line, WARNERCHILCOTT's
    development agreement "IV - INDEMNIFICATION": clause titles with no number, or a Roman one. The
    signature block's roles and party names in capitals ("SUPPLIER", "ACME PACKAGING CORP.") stay text."""
    capitals = dict((t, lvl) for lvl, t in _headings(converted["capitals"]))
    assert capitals["DEFINITIONS"] == capitals["CHOICE OF LAW"] == 3
    assert not {"SUPPLIER", "BUYER", "ACME PACKAGING CORP.", "BIRCH FOODS INC."} & set(capitals), capitals
    roman = dict((t, lvl) for lvl, t in _headings(converted["roman"]))
    assert roman["I. DEFINITIONS"] == roman["V. CONFIDENTIALITY"] == roman["EXHIBIT A Product Specifications"] == 2
    assert roman["Recitals"] == 2


def _page(texts: list[str]) -> Page:
    blocks = [Block(type=BlockType.PARAGRAPH, text=t) for t in texts]
    return Page(number=1, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))


_BODY_TEXT = "The parties shall perform their obligations under this section in good faith and on time."


def test_lines_in_capitals_become_headings_only_as_a_document_pattern():
    """Fewer than three distinct titles in capitals, or one text repeated as a signature block's
    label ("MEMBER" above each signatory), or a line not followed by a body paragraph, stay text."""
    two = [_page(["PAYMENT TERMS", _BODY_TEXT, "GOVERNING LAW", _BODY_TEXT])]
    assert mark_clause_headings(two) == 0
    labels = [_page(["MEMBER", _BODY_TEXT, "MEMBER", _BODY_TEXT, "MEMBER", _BODY_TEXT, "FRANCHISEE", "By: ____",
                     "TERM", _BODY_TEXT, "PAYMENT TERMS", _BODY_TEXT, "GOVERNING LAW", _BODY_TEXT])]
    mark_clause_headings(labels)
    headings = [b.text for b in labels[0].blocks if b.type == BlockType.HEADING]
    assert headings == ["### TERM", "### PAYMENT TERMS", "### GOVERNING LAW"], headings


def test_lettered_titles_in_capitals_hold_their_numbered_clauses_and_i_after_h_is_a_letter():
    """American Physicians' agency agreement: sections "A." to "I." in capitals hold numbered
    clauses ("1. Other Programs"), so they sit above them; "I. MISCELLANEOUS" after "H." is the ninth
    letter, not Roman one; "F. TERMINATION OF AGREEMENT" is followed by a numbered clause, not a
    long paragraph."""
    pages = [_page(["A. AUTHORITY OF AGENCY", _BODY_TEXT, "F. TERMINATION OF AGREEMENT",
                    "1. This agreement shall terminate:", "H. POTENTIAL OPPORTUNITIES",
                    "1. Other Programs. The Agency may place business with other programs of the Company.",
                    "I. MISCELLANEOUS", "1. Amendment. This Agreement may be amended only in a writing signed by both."])]
    mark_clause_headings(pages)
    headings = [b.text for b in pages[0].blocks if b.type == BlockType.HEADING]
    assert headings == ["## A. AUTHORITY OF AGENCY", "## F. TERMINATION OF AGREEMENT", "## H. POTENTIAL OPPORTUNITIES",
                        "### 1. Other Programs", "## I. MISCELLANEOUS", "### 1. Amendment"], headings
    roman = [_page(["I. ENGAGEMENT", _BODY_TEXT, "II. SERVICES", _BODY_TEXT])]
    mark_clause_headings(roman)
    assert [b.text for b in roman[0].blocks if b.type == BlockType.HEADING] == ["## I. ENGAGEMENT", "## II. SERVICES"]


def test_titles_in_capitals_with_irregular_spacing_are_read_like_any_other():
    """A text layer's double spaces inside a title ("TERM  AND TERMINATION") are no other title."""
    pages = [_page(["TERM  AND TERMINATION", _BODY_TEXT, "FEES", _BODY_TEXT, "NOTICES", _BODY_TEXT,
                    "TERM AND  TERMINATION", _BODY_TEXT])]
    assert mark_clause_headings(pages) == 4
    assert [b.level for b in pages[0].blocks if b.type == BlockType.HEADING] == [3, 3, 3, 3]


def test_titles_in_capitals_nest_under_numbered_clauses():
    """Mrs. Fields' franchise agreement numbers its clauses ("1.", "2.") and sets their parts'
    titles in capitals on their own ("TERRITORIAL RIGHTS."): those nest one level below the
    numbered clauses, as an unnumbered run-in title does."""
    pages = [_page(["1. GRANT OF FRANCHISE", _BODY_TEXT, "TERRITORIAL RIGHTS.", _BODY_TEXT,
                    "RESERVATION OF RIGHTS.", _BODY_TEXT, "2. FEES", _BODY_TEXT, "INITIAL FRANCHISE FEE.", _BODY_TEXT])]
    mark_clause_headings(pages)
    headings = [b.text for b in pages[0].blocks if b.type == BlockType.HEADING]
    assert headings == ["### 1. GRANT OF FRANCHISE", "#### TERRITORIAL RIGHTS.", "#### RESERVATION OF RIGHTS.",
                        "### 2. FEES", "#### INITIAL FRANCHISE FEE."], headings


def test_filing_part_item_and_notes_keep_their_levels_across_pages(converted):
    headings = _headings(converted["filing"])
    assert headings[:2] == [(1, "PART II"), (2, "Item 8. Financial Statements and Supplementary Data")]
    assert [lvl for lvl, t in headings if t.startswith("Note ")] == [3, 3]


def test_the_pass_is_idempotent_and_survives_relevel(converted):
    document = converted["run_in"].model_copy(deep=True)
    before = [p.markdown for p in document.pages]
    relevel_headings(document.pages)
    mark_clause_headings(document.pages)
    assert [p.markdown for p in document.pages] == before


def test_a_real_filing_keeps_part_and_item_above_its_statements(corpus):
    """Amazon's 2017 10-K sets "Item 8." and its title apart (two blocks) and "PART II" at body size:
    the item label takes its title in, and the audit report's headings sit under Part II > Item 8."""
    path = corpus / "A_finance/financebench/pdfs/AMAZON_2017_10K.pdf"
    if not path.is_file():
        pytest.skip(f"FinanceBench filing not in the corpus: {path}")
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter

    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False, page_range="17,35-36"))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    headings = _headings(document)
    assert (1, "PART II") in headings
    assert (2, "Item 8. Financial Statements and Supplementary Data") in headings
    chunks = Chunker(default_counter()).chunk(document)
    opinion = [c for c in chunks if c.heading_path[-1:] == ["Opinion on the Financial Statements"]]
    assert opinion and opinion[0].heading_path[:2] == ["PART II", "Item 8. Financial Statements and Supplementary Data"]


def _top_margin_contract(path):
    """A three-page contract whose pages 2 and 3 open high in the top margin: page 2 with a clause
    number ("5.4") in a column of its own left of its text, page 3 with an exhibit label
    ("EXHIBIT 1") alone, its title two lines below. Both read as running heads when the page is
    read, until the furniture review finds that no other page repeats them."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen.canvas import Canvas

    canvas = Canvas(str(path), pagesize=LETTER)
    top = LETTER[1]

    def lines(x: float, y: float, texts: list[str]) -> None:
        canvas.setFont("Times-Roman", 11)
        for i, text in enumerate(texts):
            canvas.drawString(x, y - 14 * i, text)

    lines(72, top - 72, ["MASTER SERVICES AGREEMENT", "",
                         "This Master Services Agreement is made as of March 1, 2024 by and between Acme Corp., a",
                         "Delaware corporation, and Birch Inc., an Ohio corporation.", "",
                         "5.3 Fees. Customer shall pay the fees set out in each order within thirty days of invoice."])
    canvas.showPage()
    lines(72, top - 30, ["5.4"])
    lines(108, top - 30, ["This Section 5 shall survive the termination of this Agreement for a period of five",
                          "years after its end, and the parties shall keep their records for that time."])
    canvas.showPage()
    lines(72, top - 30, ["EXHIBIT 1"])
    lines(72, top - 62, ["SERVICE LEVELS", "",
                         "Supplier shall keep the hosted service available 99.9 percent of each calendar month."])
    canvas.showPage()
    canvas.save()
    return path


def test_titles_and_numbers_in_a_top_margin_that_are_not_running_heads_are_clause_structure(tmp_path):
    """The clause pass reads blocks the furniture review keeps in the body: a clause number or an
    exhibit label set alone at the top of a page is a page-header candidate when the page is read,
    and body text once no other page repeats it."""
    path = _top_margin_contract(tmp_path / "margins.pdf")
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    markdown = "\n\n".join(p.markdown for p in document.pages)
    assert "5.4 This Section 5 shall survive" in markdown, markdown  # the number stays with its text
    titles = [t for _, t in _headings(document)]
    assert "EXHIBIT 1 SERVICE LEVELS" in titles, titles
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter

    chunks = Chunker(counter=default_counter()).chunk(document)
    uptime = [c for c in chunks if "99.9 percent" in c.text]
    assert uptime and uptime[0].heading_path[-1] == "EXHIBIT 1 SERVICE LEVELS", [c.heading_path for c in uptime]


def test_page_ranges_merged_read_the_top_margin_clause_structure_as_one_conversion(tmp_path):
    """A parallel conversion (``flows.convert_pool``: page ranges converted apart, then merged and
    the document passes run over the whole) gives the same pages as one converter, clause numbers
    and exhibit labels in the top margin included."""
    import time

    from folioflow.flows.convert_pool import merge

    path = _top_margin_contract(tmp_path / "margins.pdf")
    item = DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name))
    whole = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False)).convert(item)
    parts = [DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False, page_range=r)).convert(item)
             for r in ("1-2", "3")]
    merged = merge(parts, time.perf_counter(), item)
    assert [p.markdown for p in merged.pages] == [p.markdown for p in whole.pages]
    assert "## EXHIBIT 1 SERVICE LEVELS" in merged.pages[2].markdown
