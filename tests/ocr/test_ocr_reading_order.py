"""Reading order of scanned multi-column pages, and the XY-cut on plain boxes."""

from __future__ import annotations

import pytest

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.postprocess.reading_order import xy_cut
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import write_scanned_copy

LEFT = ("Alpha column opens the report. " * 6).strip()
RIGHT = ("Omega column closes the report. " * 6).strip()


def two_column_pdf(path):
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import inch
    from reportlab.platypus import BaseDocTemplate, Frame, FrameBreak, PageTemplate, Paragraph

    styles = getSampleStyleSheet()
    width, height = LETTER
    title = Frame(inch, height - 1.8 * inch, width - 2 * inch, 0.8 * inch, id="title")
    left = Frame(inch, inch, (width - 2 * inch) / 2 - 12, height - 3 * inch, id="left")
    right = Frame(width / 2 + 12, inch, (width - 2 * inch) / 2 - 12, height - 3 * inch, id="right")
    doc = BaseDocTemplate(str(path), pagesize=LETTER, pageTemplates=[PageTemplate(frames=[title, left, right])])
    story = [Paragraph("Two Column Brief", styles["Title"]), FrameBreak()]
    story += [Paragraph(f"{LEFT} Paragraph {i}.", styles["BodyText"]) for i in (1, 2, 3)]
    story.append(FrameBreak())
    story += [Paragraph(f"{RIGHT} Paragraph {i}.", styles["BodyText"]) for i in (4, 5, 6)]
    doc.build(story)
    return path


def test_two_columns_read_column_by_column(tmp_path):
    engine = get_cpu_engine("tesseract", ["eng"])
    scan = write_scanned_copy(two_column_pdf(tmp_path / "cols.pdf"), tmp_path / "cols.png", dpi=200)
    with open_document(scan) as doc:
        page = next(iter(engine.convert_pages(doc, [1])))
    md = page.markdown
    assert md.startswith("# Two Column Brief")
    positions = [md.index(f"Paragraph {i}.") for i in range(1, 7)]
    assert positions == sorted(positions), md
    paragraphs = [p for p in md.split("\n\n") if "column" in p]
    assert len(paragraphs) == 6
    assert all(("Alpha" in p) != ("Omega" in p) for p in paragraphs)  # no paragraph mixes columns


def test_xy_cut_title_then_columns_then_footer():
    boxes = [
        (100, 50, 500, 80),  # 0 title, full width
        (100, 100, 290, 110), (100, 115, 290, 125), (100, 130, 290, 140),  # 1-3 left column
        (310, 100, 500, 110), (310, 115, 500, 125), (310, 130, 500, 140),  # 4-6 right column
        (100, 300, 500, 310),  # 7 full-width line below
    ]
    order = [i for leaf in xy_cut(boxes, min_col_gap=12, min_row_gap=8) for i in leaf]
    assert order == [0, 1, 2, 3, 4, 5, 6, 7]


def test_xy_cut_keeps_label_value_rows_together():
    """A two-column form (short label left, value right) reads across, not down."""
    boxes = [(100, 100 + 20 * i, 160, 110 + 20 * i) for i in range(4)] + [(300, 100 + 20 * i, 340, 110 + 20 * i) for i in range(4)]
    order = [i for leaf in xy_cut(boxes, min_col_gap=12, min_row_gap=8, prose=[False] * 8) for i in leaf]
    assert order == [0, 4, 1, 5, 2, 6, 3, 7]


@pytest.mark.parametrize("boxes", [[], [(0, 0, 10, 10)]])
def test_xy_cut_trivial(boxes):
    assert [i for leaf in xy_cut(boxes, 5, 5) for i in leaf] == list(range(len(boxes)))
