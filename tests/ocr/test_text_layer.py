"""The text-layer engine on generated and real born-digital pages."""

from __future__ import annotations

import re

import pytest

from folioflow.ocr.engines.text_layer import TextLayerEngine, assess_text_layer
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import SAMPLE_FACTS, SAMPLE_TABLE, write_sample_pdf
from folioflow.ocr.schema import BlockType, PageStatus
from tests.ocr import docs


@pytest.fixture(scope="module")
def sample_pages(tmp_path_factory):
    path = write_sample_pdf(tmp_path_factory.mktemp("text") / "sample.pdf")
    engine = TextLayerEngine()
    with open_document(path) as doc:
        return [engine.convert_page(doc.page(n)) for n in (1, 2)]


def _pipe_rows(markdown: str) -> list[list[str]]:
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows if not re.fullmatch(r"\|[-|: ]+\|", row)]


def test_headings_become_markdown_headings(sample_pages):
    page1, page2 = sample_pages
    assert "# Northwind Capital Holdings Annual Report 2025" in page1.markdown.splitlines()
    heading_lines = [ln for ln in (page1.markdown + "\n" + page2.markdown).splitlines() if ln.startswith("#")]
    assert any(ln.endswith("1 Financial Highlights") for ln in heading_lines)
    assert any(ln.endswith("2 Risk-Adjusted Return") for ln in heading_lines)
    assert any(ln.endswith("3 Governing Law") for ln in heading_lines)
    assert page1.blocks[0].type == BlockType.TITLE


def test_table_is_a_pipe_table_with_the_right_cells(sample_pages):
    table = [b for b in sample_pages[0].blocks if b.type == BlockType.TABLE]
    assert len(table) == 1
    assert _pipe_rows(table[0].text) == SAMPLE_TABLE
    assert table[0].text in sample_pages[0].markdown


def test_formula_and_paragraphs(sample_pages):
    page2 = sample_pages[1]
    formulas = [b for b in page2.blocks if b.type == BlockType.FORMULA]
    assert len(formulas) == 1
    assert formulas[0].text.startswith("$$") and formulas[0].text.endswith("$$")
    assert r"\sigma_{p}" in formulas[0].text and "R_{f}" in formulas[0].text
    assert SAMPLE_FACTS["law"] in page2.markdown
    assert SAMPLE_FACTS["revenue"] in sample_pages[0].markdown


def test_footer_is_labelled_and_kept_out_of_markdown(sample_pages):
    for page in sample_pages:
        footers = [b for b in page.blocks if b.type == BlockType.PAGE_FOOTER]
        assert footers and footers[0].text.startswith("Northwind Capital Holdings - Annual Report 2025")
        assert "Annual Report 2025 - Page" not in page.markdown


def test_bboxes_are_top_left_points(sample_pages):
    page1 = sample_pages[0]
    title = page1.blocks[0].bbox
    table = next(b for b in page1.blocks if b.type == BlockType.TABLE).bbox
    footer = next(b for b in page1.blocks if b.type == BlockType.PAGE_FOOTER).bbox
    assert 0 <= title.y0 < table.y0 < footer.y0 <= page1.height
    assert all(0 <= b.bbox.x0 < b.bbox.x1 <= page1.width for b in page1.blocks)


def test_rotated_page_boxes_are_in_display_space(tmp_path):
    path = docs.rotated_pdf(tmp_path)
    with open_document(path) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    assert (page.width, page.height) == (792, 612)
    title = next(b for b in page.blocks if b.type == BlockType.TITLE)
    # /Rotate 90 turns the top edge to the right: the title's line runs down the right side
    assert title.bbox.x0 > 600 and title.bbox.height > title.bbox.width


def test_two_columns_read_left_then_right(tmp_path):
    path = docs.two_column_pdf(tmp_path / "cols.pdf")
    with open_document(path) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    text = page.markdown
    assert text.startswith("# Columns Report")
    positions = [text.index(s) for s in docs.LEFT + docs.RIGHT]
    assert positions == sorted(positions)


def test_unusable_page_fails_with_reason(tmp_path):
    from folioflow.ocr.samples import write_scanned_copy

    scan = write_scanned_copy(write_sample_pdf(tmp_path / "s.pdf"), tmp_path / "scan.pdf", dpi=100)
    with open_document(scan) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    assert page.status == PageStatus.FAILED
    assert "no text layer" in page.errors[0]


# ---------------------------------------------------------------------------------- real corpus

BORN_DIGITAL = [
    ("A_finance/financebench/pdfs/AMAZON_2017_10K.pdf", 38),
    ("A_finance/financebench/pdfs/3M_2022_10K.pdf", 25),
    ("A_finance/financebench/pdfs/BOEING_2018_10K.pdf", 52),
    ("A_finance/financebench/pdfs/NIKE_2023_10K.pdf", 30),
]

UNUSABLE = {
    "E_malformed/ocrmypdf/truetype_font_nomapping.pdf": "garbage",
    "E_malformed/ocrmypdf/type3_font_nomapping.pdf": "garbage",
    "C_scanned_multilang/pdfjs_fonts_scripts/arial_unicode_ab_cidfont.pdf": "garbage",
    "E_malformed/docling/invisible_text_layer.pdf": "invisible",
    "C_scanned_multilang/unstructured/pdf-with-ocr-text.pdf": "invisible",
    "C_scanned_multilang/unstructured/a1977-backus-p21.pdf": "invisible",
    "C_scanned_multilang/docling_ocr/ocr_test.pdf": "no text layer",
    "E_malformed/ocrmypdf/vector.pdf": "no text layer",
}


@pytest.mark.corpus
@pytest.mark.parametrize("rel,page", BORN_DIGITAL)
def test_financebench_pages_are_usable(corpus, rel, page):
    with open_document(corpus / rel) as doc:
        assessment = assess_text_layer(doc.page(page))
    assert assessment.usable, assessment.reason
    assert assessment.visible_chars > 500


@pytest.mark.corpus
def test_cuad_contract_pages_are_usable(corpus):
    contracts = sorted((corpus / "B_legal/cuad/pdfs").rglob("*.[pP][dD][fF]"))[:12]
    assert contracts
    for path in contracts:
        with open_document(path) as doc:
            for number in sorted({1, doc.page_count // 2 or 1, doc.page_count}):
                assessment = assess_text_layer(doc.page(number))
                assert assessment.usable, f"{path.name} p.{number}: {assessment.reason}"


@pytest.mark.corpus
@pytest.mark.parametrize("rel,kind", sorted(UNUSABLE.items()))
def test_bad_text_layers_are_rejected(corpus, rel, kind):
    with open_document(corpus / rel) as doc:
        assessment = assess_text_layer(doc.page(1))
    assert not assessment.usable
    assert kind in assessment.reason


@pytest.mark.corpus
def test_financebench_statement_table(corpus):
    with open_document(corpus / "A_finance/financebench/pdfs/AMAZON_2017_10K.pdf") as doc:
        page = TextLayerEngine().convert_page(doc.page(38))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1
    rows = _pipe_rows(tables[0].text)
    assert rows[0][1:] == ["2015", "2016", "2017"]
    assert ["Total net sales", "107,006", "135,987", "177,866"] in rows
    assert ["Net income", "$596", "$2,371", "$3,033"] in rows


BALANCE = [("Cash and equivalents", "4,466", "4,249"), ("Short-term investments", "197", "996"),
           ("Accounts receivable, net", "4,272", "3,498"), ("Inventories", "5,622", "5,261"),
           ("Prepaid expenses and other current assets", "1,968", "1,130"),
           ("Total current assets", "16,525", "15,134"), ("Goodwill", "154", "154"),
           ("Deferred income taxes and other assets", "2,011", "2,509"), ("TOTAL ASSETS", "23,717", "22,536")]


def _statement_canvas(path, title: str, left: float, top: float, years: dict[float, str]):
    """A letter-size reportlab canvas with a financial statement's heading: ``title`` in bold at
    y=720, then "(Dollars in millions)" at ``left`` and each year right-aligned at its x, both at
    ``top`` (PDF points, origin bottom left). The caller draws the rows and saves."""
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    c.setFont("Helvetica-Bold", 10)
    c.drawString(left, 720, title)
    c.setFont("Helvetica", 9)
    c.drawString(left, top, "(Dollars in millions)")
    for x, year in years.items():
        c.drawRightString(x, top, year)
    return c


def shaded_column_pdf(path):
    """A balance sheet whose current-year column is shaded with one filled rectangle per cell
    (dollar sign and figure), as EDGAR filings draw it: to pdfplumber the shading is a ruled
    table of its own."""
    top = 690
    c = _statement_canvas(path, "CONSOLIDATED BALANCE SHEETS", 72, top, {450: "2019", 530: "2018"})
    for i, (label, now, before) in enumerate(BALANCE, 1):
        y = top - 14 * i
        c.setFillGray(0.85)
        c.rect(380, y - 4, 14, 14, stroke=0, fill=1)  # the "$" cell
        c.rect(394, y - 4, 62, 14, stroke=0, fill=1)  # the figure's cell
        c.setFillGray(0)
        c.drawString(72, y, label)
        if i == 1:
            c.drawString(383, y, "$")
        c.drawRightString(450, y, now)
        c.drawRightString(530, y, before)
    c.save()
    return path


def test_a_shaded_column_stays_in_its_table(tmp_path):
    with open_document(shaded_column_pdf(tmp_path / "shaded.pdf")) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1, [t.text for t in tables]
    rows = _pipe_rows(tables[0].text)
    for label, now, before in BALANCE[1:]:
        assert [label, now, before] in rows


@pytest.mark.corpus
def test_financebench_shaded_current_year_column(corpus):
    """NIKE_2019_10K p.54: the 2019 column is shaded; it used to come out as a second table of
    bare numbers, leaving the balance sheet's 2019 cells empty."""
    with open_document(corpus / "A_finance/financebench/pdfs/NIKE_2019_10K.pdf") as doc:
        page = TextLayerEngine().convert_page(doc.page(54))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1
    rows = _pipe_rows(tables[0].text)
    assert ["Total current assets", "16,525", "15,134"] in rows
    assert ["Inventories", "5,622", "5,261"] in rows


@pytest.mark.corpus
def test_astral_math_letters_and_latex_formula(corpus):
    """PDFium splits 𝑥 (U+1D465) into UTF-16 surrogates; they must come back as one character."""
    with open_document(corpus / "D_layout_math_tables/pdfjs/bug1937438_af_from_latex.pdf") as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    assert page.status == PageStatus.OK
    assert "let 𝑥 and 𝑦 satisfy 𝑥 > 𝑦" in page.markdown
    formulas = [b.text for b in page.blocks if b.type == BlockType.FORMULA]
    assert formulas == ["$$\\sqrt x^{2}= |x|$$"]


CASH_FLOWS = [  # (label lines, figures drawn as one string per row or one per column)
    (["Cash provided (used) by operations:"], None),
    (["Net income"], ["$ 5,070", "$ 6,046", "$ 5,727"]),
    (["Adjustments to reconcile net income to net cash provided (used) by operations:"], None),
    (["Depreciation"], ["703", "717", "744"]),
    (["(Increase) decrease in accounts receivable"], ["489", "(504)", "(1,606)"]),
    (["(Increase) decrease in prepaid expenses, operating lease right-of-use",
      "assets and other current and non-current assets"], ["(644)", "(845)", "(182)"]),
    (["Cash provided (used) by operations"], ["5,841", "5,188", "6,657"]),
]


def cash_flow_pdf(path, joined: bool):
    """A statement of cash flows laid out as EDGAR filings are: captions and wrapped labels alone
    on their rows, and (``joined``) each row's figures written in one text object with a real
    space character after each, which makes the line builder keep two figures less than three em
    apart on one line."""
    rights = (436, 486, 536)
    y = 700
    c = _statement_canvas(path, "CONSOLIDATED STATEMENTS OF CASH FLOWS", 56, y, dict(zip(rights, ("2023", "2022", "2021"), strict=True)))
    for labels, figures in CASH_FLOWS:
        for label in labels:
            y -= 12
            c.drawString(56 if figures is None else 62, y, label)
        if figures is None:
            continue
        if not joined:
            for x, figure in zip(rights, figures, strict=True):
                c.drawRightString(x, y, figure)
            continue
        # one text object per row, each figure followed by a real space character
        text = c.beginText()
        text.setFont("Helvetica", 9)
        for x, figure in zip(rights, figures, strict=True):
            text.setTextOrigin(x - c.stringWidth(figure, "Helvetica", 9), y)
            text.textOut(figure + " ")
        c.drawText(text)
    c.save()
    return path


@pytest.mark.parametrize("joined", [False, True])
def test_statement_with_captions_wrapped_labels_and_joined_figures_is_one_table(tmp_path, joined):
    """Rows of a statement stay in one table across captions and wrapped labels, and figures
    joined into one line are split into their columns (NIKE_2023_10K p.62 used to become seven
    fragments, one of them a bare "6,657")."""
    with open_document(cash_flow_pdf(tmp_path / "cash.pdf", joined)) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1, page.markdown
    rows = _pipe_rows(tables[0].text)
    assert rows[0] == ["(Dollars in millions)", "2023", "2022", "2021"]
    assert ["Depreciation", "703", "717", "744"] in rows
    assert ["(Increase) decrease in accounts receivable", "489", "(504)", "(1,606)"] in rows
    assert ["Cash provided (used) by operations", "5,841", "5,188", "6,657"] in rows
    assert ["(Increase) decrease in prepaid expenses, operating lease right-of-use assets and other current "
            "and non-current assets", "(644)", "(845)", "(182)"] in rows
    assert ["Cash provided (used) by operations:", "", "", ""] in rows
    assert rows[2][0] == "Net income" and [c.replace(" ", "") for c in rows[2][1:]] == ["$5,070", "$6,046", "$5,727"]


@pytest.mark.corpus
def test_financebench_cash_flow_statement_with_joined_figures(corpus):
    with open_document(corpus / "A_finance/financebench/pdfs/NIKE_2023_10K.pdf") as doc:
        page = TextLayerEngine().convert_page(doc.page(62))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1
    rows = _pipe_rows(tables[0].text)
    assert ["Cash provided (used) by operations", "5,841", "5,188", "6,657"] in rows
    assert ["(Increase) decrease in inventories", "(133)", "(1,676)", "507"] in rows
    assert ["Cash provided (used) by investing activities", "564", "(1,524)", "(3,800)"] in rows
    assert ["Dividends — common and preferred", "(2,012)", "(1,837)", "(1,638)"] in rows


# -- headings judged over the whole document ----------------------------------------------------------

def _filing_pdf(path):
    """Three pages typeset like an EDGAR filing: prose at 10 pt with bold 10 pt note headings, and a
    statement page whose table is set at 7 pt under a bold 10 pt three-line title and a plain 10 pt
    lead-in sentence. Page 3 has a note heading at body size."""
    from reportlab.pdfgen import canvas

    prose = "The Company reviews its estimates every quarter and records changes in the period they occur."
    c = canvas.Canvas(str(path), pagesize=(612, 792))

    def note_page(heading: str) -> None:
        c.setFont("Helvetica-Bold", 10)
        c.drawString(72, 700, heading)
        c.setFont("Helvetica", 10)
        for i in range(30):
            c.drawString(72, 680 - 14 * i, prose)
        c.showPage()

    note_page("NOTE 1 - ORGANIZATION")
    c.setFont("Helvetica-Bold", 10)
    for i, line in enumerate(["NORTHWIND HOLDINGS AND SUBSIDIARIES", "CONSOLIDATED STATEMENTS OF CASH FLOWS",
                              "(In thousands)"]):
        c.drawCentredString(306, 720 - 13 * i, line)
    c.setFont("Helvetica", 10)
    c.drawString(72, 670, "Our reported results are affected by the following items in each year:")
    c.setFont("Helvetica", 7)
    for i in range(45):
        c.drawString(72, 640 - 10 * i, f"Cash flow line item number {i} for the operating segment")
        c.drawRightString(460, 640 - 10 * i, f"{1000 + 37 * i:,}")
        c.drawRightString(540, 640 - 10 * i, f"{900 + 29 * i:,}")
    c.showPage()
    note_page("NOTE 2 - LEASES")
    c.save()
    return path


def test_reads_as_sentence_tells_lead_ins_from_titles():
    from folioflow.ocr.layout.blocks import reads_as_sentence

    assert reads_as_sentence("The change in the book value of intangible assets is as follows:")
    assert reads_as_sentence("Goodwill:")
    assert reads_as_sentence("See accompanying notes to consolidated financial statements.")
    assert not reads_as_sentence("ADVANCED MICRO DEVICES, INC.")
    assert not reads_as_sentence("Pfizer Inc.")
    assert not reads_as_sentence("Item 7. Management's Discussion and Analysis")
    assert not reads_as_sentence("Consolidated Statement of Cash Flows")


def test_statement_page_headings_are_judged_against_the_document_body_size(tmp_path):
    """On the statement page alone the body is 7 pt, so the plain 10 pt lead-in sentence is 1.43x
    the body. Judged per page it was a level-2 heading that the later level-3 note heading could
    not close, so it sat in the heading path of page 3's chunks. Over the document (body 10 pt) it
    is a paragraph, the bold statement title is a level-3 heading beside the notes (then, standing
    between NOTE 1 and NOTE 2, nested under NOTE 1 by the notes pass), and page 3's path is its own
    note only."""
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.layout.blocks import relevel_headings
    from folioflow.ocr.layout.notes import NOTE_LEVEL, nest_note_headings
    from folioflow.ocr.schema import SourceRef

    path = _filing_pdf(tmp_path / "filing.pdf")
    engine = TextLayerEngine()
    with open_document(path) as doc:
        alone = engine.convert_page(doc.page(2))
    lead_in = [b for b in alone.blocks if "affected by the following items" in b.text]
    assert lead_in and lead_in[0].type == BlockType.PARAGRAPH  # a lead-in sentence is never a heading
    title = [b for b in alone.blocks if "CONSOLIDATED STATEMENTS OF CASH FLOWS" in b.text]
    assert title and title[0].type == BlockType.HEADING and title[0].level == 2  # 10/7 pt: level 2 on its own page

    converter = DocumentConverter(ConvertOptions())
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    headings = [(p.number, b.level, b.text) for p in document.pages for b in p.blocks if b.type == BlockType.HEADING]
    # the title is level 3 against the document's body, beside the notes; standing between NOTE 1
    # and NOTE 2, the notes pass then puts it under NOTE 1 (folioflow.ocr.layout.notes)
    assert [(n, level) for n, level, _ in headings] == [(1, 3), (2, 4), (3, 3)]
    title = [b for b in document.pages[1].blocks if b.type == BlockType.HEADING][0]
    assert "CONSOLIDATED STATEMENTS OF CASH FLOWS" in title.text and title.attributes[NOTE_LEVEL] == {"from": 3, "to": 4}
    chunks = Chunker(default_counter()).chunk(document)
    paths = {tuple(c.heading_path) for c in chunks if c.page_start == 3}
    assert paths == {("NOTE 2 - LEASES",)}
    # computed from the typography, not the current level: a second pass, or a pass over one page
    # followed by one over all pages, gives the same document (the notes pass nesting it again)
    before = [p.markdown for p in document.pages]
    assert relevel_headings(document.pages) == 1  # back to its typography's level 3
    relevel_headings(document.pages[1:2])
    relevel_headings(document.pages)
    nest_note_headings(document.pages)
    assert [p.markdown for p in document.pages] == before


def test_filing_statement_titles_are_headings_that_close(corpus):
    """MGM Resorts 2018 10-K: the statement pages' titles are level-3 headings beside the notes, so
    "NOTE 1" closes the last statement and no statement title is in a note's heading path."""
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import SourceRef

    path = corpus / "A_finance/financebench/pdfs/MGMRESORTS_2018_10K.pdf"
    converter = DocumentConverter(ConvertOptions(page_range="55-64"))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    chunks = Chunker(default_counter()).chunk(document)
    cash = [c for c in chunks if c.page_start == 60]
    assert cash and all("CONSOLIDATED STATEMENTS OF CASH FLOWS" in c.heading_path[-1] for c in cash)
    # the notes' title lines at the top of page 62 repeat on no other page: they are body text now
    # (issue 23: furniture by evidence), indexed with the text that comes before NOTE 1
    title = [c for c in chunks if "NOTES TO CONSOLIDATED FINANCIAL STATEMENTS" in c.text]
    assert [c.page_start for c in title] == [62]
    notes = [c for c in chunks if c.page_start >= 62 and c not in title]
    assert notes and all(c.heading_path[0].startswith("NOTE ") for c in notes)


def test_chinese_lines_meet_with_no_space(corpus):
    """pdfplumber's issue-71 page, Chinese prose: a space was put where each line breaks ("监测工 作",
    "开挖进 尺", a breaking trial's finding); Chinese is written without spaces, as the OCR engines'
    output already joins it."""
    path = corpus / "E_malformed/pdfplumber/issue-71-duplicate-chars.pdf"
    if not path.is_file():
        pytest.skip(f"corpus file absent: {path}")
    with open_document(path) as doc:
        page = TextLayerEngine().convert_page(doc.page(1))
    assert "监测工作" in page.markdown and "开挖进尺" in page.markdown, page.markdown[:400]
