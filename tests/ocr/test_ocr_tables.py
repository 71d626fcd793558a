"""Tables in scans: ruled grids with merged cells (HTML with spans), borderless tables (layout
region + column alignment), and a real scanned table from the corpus."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import write_scanned_copy
from folioflow.ocr.schema import BlockType

from .test_cpu_ocr import pipe_table_rows

SPANNED = [
    ["Region", "Revenue", "", "Margin"],
    ["", "FY2025", "FY2024", ""],
    ["North America", "1,200", "1,100", "18%"],
    ["Europe", "900", "850", "15%"],
]
BORDERLESS = [
    ["Segment", "Revenue", "Operating income", "Margin"],
    ["Advisory", "2,150", "602", "28%"],
    ["Asset management", "1,420", "312", "22%"],
    ["Trading", "640", "96", "15%"],
]


class _Cells(HTMLParser):
    """(text, rowspan, colspan) per <td>, row by row."""

    def __init__(self):
        super().__init__()
        self.rows, self._attrs, self._text = [], None, ""

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._attrs, self._text = dict(attrs), ""

    def handle_data(self, data):
        if self._attrs is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "td":
            a = self._attrs
            self.rows[-1].append((self._text.strip(), int(a.get("rowspan", 1)), int(a.get("colspan", 1))))
            self._attrs = None


def table_pdf(path, data, spans=(), grid=True):
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import inch
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    table = Table(data, colWidths=[2.0 * inch, 1.2 * inch, 1.5 * inch, 1.0 * inch], hAlign="LEFT")
    style = [("FONTSIZE", (0, 0), (-1, -1), 11), ("BOTTOMPADDING", (0, 0), (-1, -1), 6)]
    if grid:
        style.append(("GRID", (0, 0), (-1, -1), 0.75, colors.black))
    style += [("SPAN", a, b) for a, b in spans]
    table.setStyle(TableStyle(style))
    story = [Paragraph("Segment results", styles["Heading1"]),
             Paragraph("The table below shows the results by segment for the fiscal year.", styles["BodyText"]),
             Spacer(1, 12), table]
    SimpleDocTemplate(str(path), pagesize=LETTER).build(story)
    return path


@pytest.fixture(scope="module")
def tesseract():
    engine = get_cpu_engine("tesseract", ["eng"])
    engine.warm_up()
    return engine


def ocr_first_page(engine, path):
    with open_document(path) as doc:
        return next(iter(engine.convert_pages(doc, [1])))


def test_merged_cells_become_an_html_table_with_spans(tesseract, tmp_path):
    pdf = table_pdf(tmp_path / "spans.pdf", SPANNED, spans=[((1, 0), (2, 0)), ((0, 0), (0, 1)), ((3, 0), (3, 1))])
    page = ocr_first_page(tesseract, write_scanned_copy(pdf, tmp_path / "spans.png", dpi=200))
    table = next(b for b in page.blocks if b.type == BlockType.TABLE)
    assert table.text.startswith("<table>")
    parser = _Cells()
    parser.feed(table.text)
    assert parser.rows == [
        [("Region", 2, 1), ("Revenue", 1, 2), ("Margin", 2, 1)],
        [("FY2025", 1, 1), ("FY2024", 1, 1)],
        [("North America", 1, 1), ("1,200", 1, 1), ("1,100", 1, 1), ("18%", 1, 1)],
        [("Europe", 1, 1), ("900", 1, 1), ("850", 1, 1), ("15%", 1, 1)],
    ]
    assert page.markdown.index("# Segment results") < page.markdown.index("<table>")


def test_borderless_table_from_layout_region(tesseract, tmp_path):
    pdf = table_pdf(tmp_path / "borderless.pdf", BORDERLESS, grid=False)
    page = ocr_first_page(tesseract, write_scanned_copy(pdf, tmp_path / "borderless.png", dpi=200))
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1 and tables[0].attributes["ruled"] is False
    assert pipe_table_rows(tables[0].text) == BORDERLESS


def test_corpus_scanned_table_with_merged_cells(tesseract, corpus):
    """unstructured's table image: shaded two-row header with a "Results" span, lone digits."""
    path = corpus / "C_scanned_multilang" / "unstructured" / "table-multi-row-column-cells.png"
    page = ocr_first_page(tesseract, path)
    tables = [b for b in page.blocks if b.type == BlockType.TABLE]
    assert len(tables) == 1 and (tables[0].attributes["rows"], tables[0].attributes["cols"]) == (6, 6)
    parser = _Cells()
    parser.feed(tables[0].text)
    assert parser.rows[0] == [("Disability Category", 2, 1), ("Participants", 2, 1), ("Ballots Completed", 2, 1),
                              ("Ballots Incomplete/ Terminated", 2, 1), ("Results", 1, 2)]
    assert parser.rows[1] == [("Accuracy", 1, 1), ("Time to complete", 1, 1)]
    assert [c[0] for c in parser.rows[2]] == ["Blind", "5", "1", "4", "34.5%, n=1", "1199 sec, n=1"]
    assert [c[0] for c in parser.rows[5]] == ["Mobility", "3", "3", "0", "95.4%, n=3", "1416 sec, n=3"]
