"""Generated contracts and a filing excerpt: fixtures for clause headings and chunk roles.

:func:`write_contract_pdf` writes a born-digital contract in one of the clause-title styles of
:data:`CONTRACT_STYLES`, all set at body size so only the text marks the titles:

* ``article``: ``ARTICLE I`` on its own line with its title on the next, ``Section 1.01 Title`` lines,
  titled sub-clauses ``(a) Title. Text``;
* ``run_in``: ``1. Term. Text ...`` with the title in bold, ``2. Choice Of Law. Text`` underlined;
* ``decimal``: ``8.05 GOVERNING LAW. Text ...`` run-ins in capitals;
* ``standalone``: ``11. Choice Of Law`` alone on its line above its text; clause ``1)`` style numbers;
* ``capitals``: unnumbered titles in capitals alone on their line (``CHOICE OF LAW``), the signature
  block's party names under their roles in capitals (``SUPPLIER``);
* ``roman``: ``IV. CONFIDENTIALITY`` alone on its line: Roman numbers, titles in capitals.

Every contract has a title, a party block ("This ... Agreement is made ... by and between ..."),
recitals (``WHEREAS``), a definitions clause, a signature block (``IN WITNESS WHEREOF``, ``By:`` /
``Name:`` / ``Title:``) and ``EXHIBIT A``. :data:`CONTRACT_CLAUSES` lists, per style, each clause's
title as the heading path should name it and the opening words of its text.

:func:`write_filing_pdf` writes a 10-K excerpt whose ``PART II`` / ``Item 8.`` / note headings are
bold body-size lines over three pages, each note with a sub-heading set like the note's heading.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONTRACT_CLAUSES", "CONTRACT_STYLES", "FILING_NOTES", "FILING_SUBHEADINGS", "write_contract_pdf",
           "write_filing_pdf"]

CONTRACT_STYLES = ("article", "run_in", "decimal", "standalone", "capitals", "roman")

_BODY = [
    ("Term", "The term of this Agreement shall commence on the Effective Date and continue for three years unless "
             "terminated earlier as provided herein."),
    ("Supply Of Products", "Supplier shall manufacture and deliver the Products to Buyer in the quantities set out "
                           "in each purchase order accepted by Supplier in writing."),
    ("Payment", "Buyer shall pay each invoice within forty-five days of receipt, in United States dollars, by wire "
                "transfer to the account designated by Supplier."),
    ("Confidentiality", "Each party shall hold the Confidential Information of the other party in strict confidence "
                        "and use it only to perform this Agreement."),
    ("Choice Of Law", "This Agreement shall be governed by the laws of the State of New York, without regard to its "
                      "conflict of laws principles."),
]
_DEFINITION_TEXT = ['"Affiliate" means any entity that controls, is controlled by, or is under common control with a party.',
                    '"Products" means the packaging components described in Exhibit A.',
                    '"Effective Date" means the date first written above.']
_FILLER = (" The parties acknowledge that this provision was negotiated at arm's length and that each party had the "
           "opportunity to consult counsel of its choice before signing.")


def _numbers(style: str) -> list[str]:
    if style == "article":
        return [f"Section 2.0{i}" for i in range(1, 6)]
    if style == "decimal":
        return [f"8.0{i}" for i in range(1, 6)]
    if style == "standalone":
        return [f"{i})" if i == 2 else f"{10 + i}." for i in range(1, 6)]
    if style == "capitals":
        return [""] * 5
    if style == "roman":
        return ["II.", "III.", "IV.", "V.", "VI."]
    return [f"{i + 1}." for i in range(1, 6)]


def _title(style: str, number: str, title: str) -> str:
    return f"{number} {title.upper() if style in ('decimal', 'capitals', 'roman') else title}".strip()


#: Per style: (the clause's title as its heading should read, the opening words of its text).
CONTRACT_CLAUSES: dict[str, list[tuple[str, str]]] = {
    style: [(_title(style, n, t), text.split(",")[0][:40]) for n, (t, text) in zip(_numbers(style), _BODY, strict=True)]
    for style in CONTRACT_STYLES}

#: Filing note titles under "PART II" > "Item 8." (one per page after the first).
FILING_NOTES = ["Note 1 - Summary of Significant Accounting Policies", "Note 2 - Revenue Recognition"]
#: Each note's sub-heading, set like the note's own heading (a bold line at body size).
FILING_SUBHEADINGS = ["Principles of Consolidation", "Performance Obligations"]


def write_contract_pdf(path: str | Path, style: str = "run_in", contents: bool = False) -> Path:
    """Write a 2-3 page contract in clause-title ``style`` (one of :data:`CONTRACT_STYLES`) to
    ``path`` (parents created); returns the path. With ``contents``, a first page lists the clauses
    under "TABLE OF CONTENTS" (titles, dot leaders, page numbers) and the contract starts on page 2.
    Raises ``ValueError`` for an unknown style."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

    if style not in CONTRACT_STYLES:
        raise ValueError(f"unknown contract style {style!r}; expected one of {CONTRACT_STYLES}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    styles = getSampleStyleSheet()
    body = ParagraphStyle("body", parent=styles["BodyText"], fontName="Times-Roman", fontSize=11, leading=14,
                          spaceAfter=6)
    centre = ParagraphStyle("centre", parent=body, alignment=1)
    numbers = _numbers(style)
    listing: list = []
    if contents:
        listing = [Paragraph("MASTER SUPPLY AGREEMENT", centre), Paragraph("TABLE OF CONTENTS", centre),
                   Paragraph("Page", body)]
        listing += [Paragraph(f"{_title(style, n, t)} {'.' * 30} {2 + i // 3}", body)
                    for i, (n, (t, _)) in enumerate(zip(numbers, _BODY, strict=True))]
        listing.append(PageBreak())
    story: list = [
        *listing,
        Paragraph("MASTER SUPPLY AGREEMENT", centre),
        Paragraph("This Master Supply Agreement (the \"Agreement\") is made and entered into as of March 1, 2024 by and "
                  "between Acme Packaging Corp., a Delaware corporation (\"Supplier\"), and Birch Foods Inc., an Ohio "
                  "corporation (\"Buyer\").", body),
        Paragraph("WHEREAS, Supplier manufactures packaging components; and", body),
        Paragraph("WHEREAS, Buyer wishes to purchase such components from Supplier on the terms set out below.", body),
        Paragraph("NOW, THEREFORE, in consideration of the mutual covenants herein, the parties agree as follows:", body),
    ]
    if style == "article":
        story += [Paragraph("ARTICLE I", centre), Paragraph("DEFINITIONS", centre)]
        story += [Paragraph(f"1.0{i + 1} {d}", body) for i, d in enumerate(_DEFINITION_TEXT)]
        story += [Paragraph("ARTICLE II", centre), Paragraph("GENERAL TERMS", centre)]
    elif style in ("capitals", "roman"):
        story.append(Paragraph("DEFINITIONS" if style == "capitals" else "I. DEFINITIONS", body))
        story += [Paragraph(d, body) for d in _DEFINITION_TEXT]
    else:
        first = {"run_in": "1.", "decimal": "8.00", "standalone": "10."}[style]
        story.append(Paragraph(f"{first} Definitions. The following terms have the meanings set out below.", body))
        story += [Paragraph(d, body) for d in _DEFINITION_TEXT]
    for i, (number, (title, text)) in enumerate(zip(numbers, _BODY, strict=True)):
        heading = _title(style, number, title)
        if style == "article":
            story.append(Paragraph(heading, body))
            story.append(Paragraph(text + _FILLER, body))
            if i == 2:
                story.append(Paragraph("(a) Late Payment. Amounts not paid when due bear interest at one percent per "
                                       "month." + _FILLER, body))
        elif style in ("standalone", "capitals", "roman"):
            story += [Paragraph(heading, body), Paragraph(text + _FILLER, body)]
        else:
            words = title.upper() if style == "decimal" else title
            mark = ("<b>", "</b>") if style == "run_in" and i % 2 == 0 else ("<u>", "</u>") if style == "run_in" else ("", "")
            story.append(Paragraph(f"{number} {mark[0]}{words}.{mark[1]} {text}{_FILLER}", body))
        if i == 2:
            story.append(PageBreak())
    story += [
        Spacer(1, 12),
        Paragraph("IN WITNESS WHEREOF, the parties have executed this Agreement as of the date first written above.", body),
        *([Paragraph("SUPPLIER", body)] if style == "capitals" else []),
        Paragraph("ACME PACKAGING CORP.", body),
        Paragraph("By: ______________________", body),
        Paragraph("Name: Jane Smith", body),
        Paragraph("Title: Chief Executive Officer", body),
        *([Paragraph("BUYER", body)] if style == "capitals" else []),
        Paragraph("BIRCH FOODS INC.", body),
        Paragraph("By: ______________________", body),
        Paragraph("Name: Robert Jones", body),
        Paragraph("Title: President", body),
        PageBreak(),
        Paragraph("EXHIBIT A", centre),
        Paragraph("Product Specifications", centre),
        Paragraph("Folding cartons of 350 gsm board, printed in four colours, delivered on pallets of 500 units.", body),
    ]
    SimpleDocTemplate(str(path), pagesize=LETTER, title="Master Supply Agreement").build(story)
    return path


def write_filing_pdf(path: str | Path) -> Path:
    """Write a three-page 10-K excerpt to ``path`` (parents created): page 1 "PART II" and "Item 8.
    Financial Statements and Supplementary Data" and a paragraph, pages 2 and 3 one note each
    (:data:`FILING_NOTES`), each with a paragraph, a sub-heading (:data:`FILING_SUBHEADINGS`) and a
    paragraph; every heading a bold line at body size. Returns the path."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    styles = getSampleStyleSheet()
    body = ParagraphStyle("body", parent=styles["BodyText"], fontName="Times-Roman", fontSize=10, leading=13)
    bold = ParagraphStyle("bold", parent=body, fontName="Times-Bold")
    text = ("The consolidated financial statements include the accounts of the Company and its wholly owned "
            "subsidiaries. All intercompany balances and transactions have been eliminated in consolidation. ")
    story: list = [Paragraph("PART II", bold), Paragraph("Item 8. Financial Statements and Supplementary Data", bold),
                   Paragraph(text * 3, body)]
    for note, sub in zip(FILING_NOTES, FILING_SUBHEADINGS, strict=True):
        story += [PageBreak(), Paragraph(note, bold), Paragraph(text * 4, body), Paragraph(sub, bold),
                  Paragraph(text * 2, body)]
    SimpleDocTemplate(str(path), pagesize=LETTER, title="Form 10-K excerpt").build(story)
    return path
