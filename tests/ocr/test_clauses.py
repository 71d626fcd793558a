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
    FILING_SUBHEADINGS,
    write_contract_pdf,
    write_filing_pdf,
)
from folioflow.ocr.schema import BBox, Block, BlockType, Document, Page, SourceRef


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
    # lettered with capitals, titles run in (ORBSAT's strategic alliance, TRICITY's outsourcing agreement)
    ("D. EXECUTION. The execution, delivery and performance of this Agreement have been authorized.", "capital",
     "D. EXECUTION", True),
    ("B. Conversion Project Manager. M&I will provide a conversion project manager to the Customer.", "capital",
     "B. Conversion Project Manager", True),
    # a bold first line holding the title and the clause's first words (NEON's distributor agreement)
    ("Section 7.9 MODIFICATIONS. Licensee shall not make any modifications to or", "section",
     "Section 7.9 MODIFICATIONS", True),
    # "Inc." closes a name, not the title (Ulta Beauty's earnings release)
    ("Exhibit 2 Ulta Beauty, Inc. Consolidated Statements of Income (In thousands, except per share data)", "annex",
     "Exhibit 2 Ulta Beauty, Inc. Consolidated Statements of Income (In thousands, except per share data)", False),
    # the title glued to its letter (Verizon's transfer and servicing agreement)
    ("(d)Conditions for Transfers of Additional Receivables. The Depositor shall transfer each Receivable.", "letter",
     "(d) Conditions for Transfers of Additional Receivables", True),
    # a title in title case that ends with a stop: its lower-case words are connectors (NUVEEN's
    # remarketing agreement, Best Buy's 10-K)
    ("Section 2. Appointment and Obligations of the Remarketing Agent.", "section",
     "Section 2. Appointment and Obligations of the Remarketing Agent", False),
    ("Section 5. Resignation, Suspension and Removal of the Remarketing Agent.", "section",
     "Section 5. Resignation, Suspension and Removal of the Remarketing Agent", False),
    ("Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations.", "item",
     "Item 7. Management's Discussion and Analysis of Financial Condition and Results of Operations", False),
    ("IV. CONFIDENTIALITY", "roman", "IV. CONFIDENTIALITY", False),
    ("VIII. CONFIDENTIAL DATA", "roman", "VIII. CONFIDENTIAL DATA", False),  # ORBSAT's: no "CONFIDENTIAL" legend
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
    "P. O. Box 2511 Houston, Texas 77252-2511 Attention: Contract Administration",  # initials, not a title
    "B. ACME CORP. shall deliver the Products to the Customer within thirty days.",  # a party, not a title
    # WARNERCHILCOTT's development agreement: a defined term in quotes, and a notice address
    '1.8 "GALEN Information" means any information developed, made and/or generated by GALEN relating to it.',
    "Galen Holdings PLC Att. Chief Executive Officer 100 Enterprise Drive, Suite 280 Rockaway, New Jersey 07866 USA",
    "Att. CEO, President Industriparken 55 DK-2750 Ballerup Denmark and its copy to counsel",
    "CONFIDENTIAL",                                               # a legend, alone
    "Section 3. The Fund shall pay the fees of the Agent.",       # a sentence: "shall", "pay" are no connectors
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


def test_capital_lettered_run_in_titles_nest_under_articles_and_stay_text_in_a_filing():
    """ORBSAT's strategic alliance agreement: "D. EXECUTION. The execution ..." under the Roman
    article "V. GENERAL PROVISIONS"; a filing's note "A. Basis of Presentation. The ..." is left
    as the filing sets it (filings keep Part > Item > Note)."""
    body = "The execution, delivery and performance of this Agreement have been duly authorized by each party."
    pages = [_page(["V. GENERAL PROVISIONS", _BODY_TEXT, f"D. EXECUTION. {body}", f"E. TIMELY APPRISALS. {body}"])]
    mark_clause_headings(pages)
    assert [b.text for b in pages[0].blocks if b.type == BlockType.HEADING] == [
        "## V. GENERAL PROVISIONS", "#### D. EXECUTION", "#### E. TIMELY APPRISALS"]
    assert any(b.text == f"D. EXECUTION. {body}" for b in pages[0].blocks)  # the text keeps its title
    ninth = [_page(["IX. MISCELLANEOUS", _BODY_TEXT, f"H. ADDRESSES OF PARTIES. {body}", f"I. NOTICES. {body}"])]
    mark_clause_headings(ninth)  # "I." after "H." is the ninth letter, its title run in
    assert [b.text for b in ninth[0].blocks if b.type == BlockType.HEADING] == [
        "## IX. MISCELLANEOUS", "#### H. ADDRESSES OF PARTIES", "#### I. NOTICES"]
    filing = [_page(["Item 8. Financial Statements and Supplementary Data",
                     f"A. Basis of Presentation. {body}",
                     "(a)Refer to Note 11 – Derivatives for further information on the hedges."])]  # a table's footnote
    mark_clause_headings(filing)
    assert [b.text for b in filing[0].blocks if b.type == BlockType.HEADING] == [
        "## Item 8. Financial Statements and Supplementary Data"]


def test_a_table_of_contents_makes_no_clause_headings():
    """TRICITY's outsourcing agreement lists its clauses after "TABLE OF CONTENTS" ("2. TERM 2.1
    Initial Term 2.2 Extensions"); IMAGEWARE's list, with dot leaders, was set as headings by
    typography. The listed titles are no clauses: only the body's titles become headings, and the
    preamble after the list keeps the document title's path. A heading that is no clause form after
    the list (GOOSEHEAD's "Goosehead Insurance Agency, LLC Franchise Agreement") is the body's title
    and stays; a page without such a title keeps titles that merely follow the word "Contents"."""
    preamble = ('This Outsourcing Agreement ("Agreement") is made as of the 16th day of February, 1998, by and '
                "between Tri City National Bank and M&I Data Services.")
    listing = ["OUTSOURCING AGREEMENT", "TABLE OF CONTENTS", "Page",
               "1. DEFINITIONS 1.1 Background 1.2 Definitions 1.3 References 1.4 Interpretation",
               "2. TERM 2.1 Initial Term 2.2 Extensions", "3. FEES 3.1 Fee Structure 3.2 Terms of Payment",
               "Schedules", "A RDS Agreement B ACH Authorization Agreement"]
    body = ["OUTSOURCING AGREEMENT", preamble, "1. DEFINITIONS", _BODY_TEXT, "2. TERM", _BODY_TEXT, "3. FEES", _BODY_TEXT]
    pages = [_page(listing + body)]
    mark_clause_headings(pages)
    headings = [b.text for b in pages[0].blocks if b.type == BlockType.HEADING]
    assert headings == ["# OUTSOURCING AGREEMENT", "### 1. DEFINITIONS", "### 2. TERM", "### 3. FEES"], headings
    assert "2. TERM 2.1 Initial Term 2.2 Extensions" in pages[0].markdown.split("\n\n")  # kept, as text

    typeset = _page(["MAINTENANCE AGREEMENT", "TABLE OF CONTENTS"] + body)
    leaders = [Block(type=BlockType.HEADING, level=3, text=f"### {n}. {t}{'.' * 40}{p}")
               for n, t, p in ((1, "Definitions", 3), (2, "Term of Agreement", 4), (3, "Charges", 5))]
    title = Block(type=BlockType.HEADING, level=2, text="## Goosehead Insurance Agency, LLC Franchise Agreement")
    typeset.blocks[2:2] = [*leaders, title]
    typeset.markdown = page_markdown(typeset.blocks)
    mark_clause_headings([typeset])
    headings = [b.text for b in typeset.blocks if b.type == BlockType.HEADING]
    assert headings == ["# MAINTENANCE AGREEMENT", "## Goosehead Insurance Agency, LLC Franchise Agreement",
                        "### 1. DEFINITIONS", "### 2. TERM", "### 3. FEES"], headings
    assert mark_clause_headings([typeset]) == mark_clause_headings([typeset])  # idempotent

    one = [_page(["Contents", "1. DEFINITIONS", _BODY_TEXT, "2. TERM", _BODY_TEXT])]  # no list: one entry at most
    mark_clause_headings(one)
    assert [b.text for b in one[0].blocks if b.type == BlockType.HEADING] == ["### 1. DEFINITIONS", "### 2. TERM"]


def test_a_clause_number_indented_in_its_paragraphs_first_line_joins_it():
    """TRICITY's "21.10" is indented in the first line of "Affiliates. All processing ...", whose
    further lines start at the left margin, so the paragraph's box reaches left of the number: the
    number opens that paragraph and names its clause ("21.10 Affiliates", not a sub-clause of 21.9).
    A figure in a table row's box ("0.7" amid "0.2 $ 3.6 $ 0.2") stays where it is."""
    def block(text, x0, y0, x1, y1):
        return Block(type=BlockType.PARAGRAPH, text=text, bbox=BBox(x0=x0, y0=y0, x1=x1, y1=y1))

    blocks = [block("21.9 IRS Filing. Customer shall comply with all TIN requirements of the Internal Revenue Service.",
                    13.4, 20.0, 327.1, 83.2),
              block("21.10", 34.9, 93.04, 56.3, 98.7),
              block("Affiliates. All processing for Customer and Customer's subsidiaries and Affiliates which M&I "
                    "does shall be included in the fees.", 13.4, 93.0, 335.7, 168.3),
              block("0.7", 200.0, 180.0, 215.0, 186.0),
              block("0.2 $ 3.6 $ 0.2", 13.4, 180.0, 335.7, 186.0)]
    page = Page(number=1, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))
    mark_clause_headings([page])
    texts = [b.text for b in page.blocks]
    assert "### 21.10 Affiliates" in texts, texts  # a sibling of 21.9
    assert any(t.startswith("21.10 Affiliates. All processing") for t in texts) and "21.10" not in texts
    assert "0.7" in texts and "0.2 $ 3.6 $ 0.2" in texts  # a table row's figures are not joined


def test_a_heading_that_holds_a_run_in_title_and_the_clauses_first_words_becomes_its_paragraph():
    """NEON's "Section 7.9 MODIFICATIONS. Licensee shall not make any modifications to or" is a bold
    first line that typography made a heading: the heading names the clause, and the words after the
    title stay text of the clause, before the rest of its sentence ("derivations of ...")."""
    first = "Section 7.9 MODIFICATIONS. Licensee shall not make any modifications to or"
    rest = "derivations of the Licensed Products without the prior written consent of Licensor."
    blocks = [Block(type=BlockType.HEADING, level=3, text=f"### {first}"), Block(type=BlockType.PARAGRAPH, text=rest)]
    page = Page(number=1, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))
    mark_clause_headings([page])
    assert [b.text for b in page.blocks] == ["### Section 7.9 MODIFICATIONS", first, rest]
    assert mark_clause_headings([page]) and [b.text for b in page.blocks] == ["### Section 7.9 MODIFICATIONS", first, rest]


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


def _heading(text: str, level: int = 3) -> Block:
    return Block(type=BlockType.HEADING, text="#" * level + " " + text, level=level)


def test_signing_parties_set_as_headings_are_text_of_their_signature_block():
    """ORBSAT's strategic alliance agreement sets its parties' names in bold above their signature
    lines ("UTEK CORPORATION", "WORLD ENERGY SOLUTIONS", then "By: /s/ ..."; on the term sheet the
    name, the signer's name and title, then "Date:"): typography made them headings, so the last
    clause's path ended in a party's name. They become paragraphs; a heading followed by a clause's
    text, or a filing's "SIGNATURES" section, stays a heading."""
    blocks = [_heading("L. ATTORNEY'S FEES", 2), Block(type=BlockType.PARAGRAPH, text=_BODY_TEXT),
              Block(type=BlockType.PARAGRAPH, text="APPROVED AND AGREED:"), _heading("UTEK CORPORATION"),
              _heading("WORLD ENERGY SOLUTIONS"), Block(type=BlockType.PARAGRAPH, text="By: /s/ Clifford M. Gross"),
              Block(type=BlockType.PARAGRAPH, text="Clifford M. Gross, Ph.D. Chief Executive Officer"),
              _heading("UTEK Corporation"), Block(type=BlockType.PARAGRAPH, text="Clifford M. Gross, Ph.D. Chief Executive Officer"),
              _heading("World Energy Solutions"), Block(type=BlockType.PARAGRAPH, text="Benjamin C. Croxton Chief Executive Officer"),
              Block(type=BlockType.PARAGRAPH, text="Date: September 9, 2005"),
              # LUCID's signature page, read by OCR: its labels without their colons, set large
              _heading("By"), Block(type=BlockType.PARAGRAPH, text="Marcy K. Davis-McHugh"), _heading("SIGNATURE"),
              _heading("DATE [*]")]
    page = Page(number=6, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))
    assert mark_clause_headings([page]) >= 7
    assert [b.text for b in page.blocks if b.type == BlockType.HEADING] == ["## L. ATTORNEY'S FEES"]
    assert "\nUTEK CORPORATION\n" in page.markdown and "# UTEK" not in page.markdown
    before = page.markdown
    mark_clause_headings([page])
    assert page.markdown == before  # idempotent

    kept = [_heading("SIGNATURES"), Block(type=BlockType.PARAGRAPH, text="Pursuant to the requirements of Section 13 or "
                                          "15(d) of the Securities Exchange Act of 1934, the registrant has duly caused this "
                                          "report to be signed on its behalf."),
            Block(type=BlockType.PARAGRAPH, text="By: /s/ Doug McMillon"),
            # SENMIAO's last article, its parties' signatures run into its text; CERES' list of agreements
            _heading("Article VII [Miscellaneous]"),
            Block(type=BlockType.PARAGRAPH, text="This Agreement is an appendix to the Cooperation agreement. Party A: "
                                                 "Didi Chuxing Technology Co., Ltd. /s/ Didi Chuxing Technology Co., Ltd."),
            _heading("EXISTING AGREEMENTS"),
            Block(type=BlockType.PARAGRAPH, text="Title: Defra project NF 0426 ‘The genetic improvement of miscanthus "
                                                 "for biomass’"),
            Block(type=BlockType.PARAGRAPH, text="Duration: 1/4/04 — 31/3/09")]
    other = Page(number=1, width=612, height=792, blocks=kept, markdown=page_markdown(kept))
    mark_clause_headings([other])
    assert [b.text.lstrip("# ") for b in other.blocks if b.type == BlockType.HEADING] == \
        ["SIGNATURES", "Article VII [Miscellaneous]", "EXISTING AGREEMENTS"]


def test_filing_part_item_and_notes_keep_their_levels_across_pages(converted):
    """Part > Item > Note across three pages; the first note's sub-heading, set like the note's
    heading, nests under the note (the last note's span has no marked end: left as set)."""
    headings = _headings(converted["filing"])
    assert headings[:2] == [(1, "PART II"), (2, "Item 8. Financial Statements and Supplementary Data")]
    assert [lvl for lvl, t in headings if t.startswith("Note ")] == [3, 3]
    assert (4, FILING_SUBHEADINGS[0]) in headings and (3, FILING_SUBHEADINGS[1]) in headings


def test_a_part_heading_that_holds_its_first_item_gives_the_item_its_own_heading():
    """A text layer joins a 10-Q's Part title to its first Item's ("Part I - Financial Information
    Item 1. Financial Statements (unaudited)", Amcor; "Part I. FINANCIAL INFORMATION Item 1." above
    "Financial Statements", MGM): the block becomes a Part heading and an Item heading, so Item 2
    is Item 1's sibling under Part I instead of nesting under a heading that names Item 1. A
    sentence that refers to a Part and an Item stays a paragraph; a bare Item label takes in only a
    heading on its own last line as its title."""
    body = Block(type=BlockType.PARAGRAPH, text=_BODY_TEXT)
    blocks = [_heading("Part I - Financial Information Item 1. Financial Statements (unaudited)", 1), body,
              _heading("Note 1 - Nature of Operations and Basis of Presentation"), body,
              Block(type=BlockType.PARAGRAPH, text="Item 2. Management's Discussion and Analysis of Financial "
                                                   "Condition and Results of Operations"), body,
              # MGM's: the Item's title is a heading on the label's last line, right of "Item 1."
              Block(type=BlockType.PARAGRAPH, text="Part II. OTHER INFORMATION Item 1.",
                    bbox=BBox(x0=18, y0=62, x1=164, y1=83)),
              Block(type=BlockType.HEADING, text="### Legal Proceedings", level=3, bbox=BBox(x0=65, y0=73, x1=146, y1=83)),
              # Microsoft's running head over a page of its notes: the note's title is a paragraph below
              Block(type=BlockType.PARAGRAPH, text="PART II Item 8", bbox=BBox(x0=72, y0=300, x1=300, y1=315)),
              Block(type=BlockType.PARAGRAPH, text="NOTE 4 — INVESTMENTS", bbox=BBox(x0=72, y0=323, x1=200, y1=332)),
              Block(type=BlockType.PARAGRAPH, text="See Part II, Item 7 of our Annual Report on Form 10-K for the "
                                                   "year ended December 31, 2022 for a discussion of these risks.")]
    page = Page(number=5, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))
    mark_clause_headings([page])
    assert [b.text for b in page.blocks if b.type == BlockType.HEADING] == [
        "# Part I - Financial Information", "## Item 1. Financial Statements (unaudited)",
        "### Note 1 - Nature of Operations and Basis of Presentation",
        "## Item 2. Management's Discussion and Analysis of Financial Condition and Results of Operations",
        "# Part II. OTHER INFORMATION", "## Item 1. Legal Proceedings", "# PART II", "## Item 8"]
    assert "\nNOTE 4 — INVESTMENTS\n" in page.markdown
    assert page.blocks[-1].type == BlockType.PARAGRAPH and page.blocks[-1].text.startswith("See Part II, Item 7")
    before = page.markdown
    mark_clause_headings([page])
    assert page.markdown == before  # idempotent


def test_a_real_10q_gives_item_2_the_path_part_i_then_item_2(corpus):
    """Amcor's 2023 Q2 10-Q: "Part I - Financial Information" and "Item 1. Financial Statements
    (unaudited)" are two lines of one text-layer block on page 5; MD&A's chunks on page 33 sit under
    Part I > Item 2, not under a Part heading that names Item 1."""
    path = corpus / "A_finance/financebench/pdfs/AMCOR_2023Q2_10Q.pdf"
    if not path.is_file():
        pytest.skip(f"FinanceBench filing not in the corpus: {path}")
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter

    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False, page_range="5,33"))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    assert _headings(document)[:2] == [(1, "Part I - Financial Information"),
                                       (2, "Item 1. Financial Statements (unaudited)")]
    chunks = Chunker(default_counter()).chunk(document)
    mdna = [c for c in chunks if c.page_start == 33]
    assert mdna and all(c.heading_path[:2] == ["Part I - Financial Information", "Item 2. Management's Discussion and "
                                               "Analysis of Financial Condition and Results of Operations"] for c in mdna)


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
