"""chandra answers (HTML layout blocks, 0-1024 boxes) -> Markdown + blocks."""

import pytest

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.schema import BlockType
from folioflow.ocr.vlm.parsers.html_layout import make_html_layout_parser

# Written in chandra's documented format for the project's sample page 1 (chandra/prompts.py).
PAGE = """<div data-bbox="[87, 52, 937, 81]" data-label="Page-Header"><p>Northwind Capital Holdings</p></div>
<div data-bbox="[160, 92, 864, 130]" data-label="Section-Header"><h1>Northwind Capital Holdings Annual Report 2025</h1></div>
<div data-bbox="[120, 150, 560, 178]" data-label="Section-Header"><h2>1 Financial Highlights</h2></div>
<div data-bbox="[120, 185, 904, 262]" data-label="Text"><p>Total revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees. Net new assets under management reached $38 billion.</p></div>
<div data-bbox="[120, 300, 720, 520]" data-label="Table"><table><thead><tr><th>Line item</th><th>FY2025</th><th>FY2024</th><th>Change</th></tr></thead><tbody><tr><td rowspan="2">Advisory fees</td><td>2,150</td><td>1,830</td><td>17%</td></tr><tr><td colspan="3">restated</td></tr></tbody></table></div>
<div data-bbox="[300, 540, 700, 580]" data-label="Equation-Block"><math display="block">S = \\frac{R_p - R_f}{\\sigma_p}</math></div>
<div data-bbox="[120, 600, 900, 640]" data-label="Text"><p>where <math>R_p</math> is the portfolio return.</p></div>
<div data-bbox="[120, 650, 900, 720]" data-label="List-Group"><ul><li>Advisory</li><li>Trading</li></ul></div>
<div data-bbox="[200, 730, 800, 900]" data-label="Figure"><img alt="Bar chart of revenue by segment, 2021-2025"/></div>
<div data-bbox="[120, 905, 900, 925]" data-label="Caption"><p>Figure 1: Revenue by segment</p></div>
<div data-bbox="[120, 930, 900, 950]" data-label="Footnote"><p><sup>1</sup> Unaudited.</p></div>
<div data-bbox="[120, 960, 900, 990]" data-label="Page-Footer"><p>Annual Report 2025 - Page 1</p></div>"""


def parse(text):
    return make_html_layout_parser(1024)(text)


def test_labels_map_to_block_types_in_reading_order():
    out = parse(PAGE)
    assert [b.type for b in out.blocks] == [
        BlockType.PAGE_HEADER,
        BlockType.HEADING,
        BlockType.HEADING,
        BlockType.PARAGRAPH,
        BlockType.TABLE,
        BlockType.FORMULA,
        BlockType.PARAGRAPH,
        BlockType.LIST_ITEM,
        BlockType.FIGURE,
        BlockType.CAPTION,
        BlockType.FOOTNOTE,
        BlockType.PAGE_FOOTER,
    ]
    assert [b.attributes["label"] for b in out.blocks][:3] == [
        "Page-Header",
        "Section-Header",
        "Section-Header",
    ]


def test_headings_keep_levels_and_markdown():
    out = parse(PAGE)
    assert (
        out.blocks[1].text == "# Northwind Capital Holdings Annual Report 2025" and out.blocks[1].level == 1
    )
    assert out.blocks[2].text == "## 1 Financial Highlights" and out.blocks[2].level == 2


def test_text_is_kept_verbatim_including_dollar_amounts():
    out = parse(PAGE)
    assert (
        "Total revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees."
        in out.blocks[3].text
    )


def test_table_stays_html_with_spans():
    table = parse(PAGE).blocks[4].text
    assert table.startswith("<table>") and table.endswith("</table>")
    assert 'rowspan="2"' in table and 'colspan="3"' in table and "<th>FY2025</th>" in table


def test_math_becomes_dollars():
    out = parse(PAGE)
    assert out.blocks[5].text == "$$\nS = \\frac{R_p - R_f}{\\sigma_p}\n$$"
    assert out.blocks[6].text == "where $R_p$ is the portfolio return."


def test_list_figure_and_markdown_join():
    out = parse(PAGE)
    assert out.blocks[7].text == "- Advisory\n- Trading"
    assert out.blocks[8].text == "![Bar chart of revenue by segment, 2021-2025]()"
    assert out.markdown.split("\n\n")[0] == "Northwind Capital Holdings"
    assert "## 1 Financial Highlights\n\nTotal revenue grew" in out.markdown


def test_boxes_are_normalised_from_the_1024_grid():
    box = parse(PAGE).blocks[4].bbox
    assert box.x0 == pytest.approx(120 / 1024) and box.y0 == pytest.approx(300 / 1024)
    assert box.x1 == pytest.approx(720 / 1024) and box.y1 == pytest.approx(520 / 1024)


def test_first_release_grid_of_1000_is_a_parameter():
    box = (
        make_html_layout_parser(1000)('<div data-bbox="[0, 0, 500, 1000]" data-label="Text"><p>x</p></div>')
        .blocks[0]
        .bbox
    )
    assert (box.x1, box.y1) == (0.5, 1.0)


def test_malformed_boxes_keep_the_block_without_a_box():
    text = (
        '<div data-bbox="[10, 20, oops]" data-label="Text"><p>kept one</p></div>'
        '<div data-bbox="[500, 500, 500, 500]" data-label="Text"><p>kept two</p></div>'
        '<div data-bbox="200 300 100 400" data-label="Text"><p>swapped</p></div>'
        '<div data-label="Unknown-Label"><p>odd label</p></div>'
    )
    out = parse(text)
    assert [b.text for b in out.blocks] == ["kept one", "kept two", "swapped", "odd label"]
    assert out.blocks[0].bbox is None and out.blocks[1].bbox is None
    assert out.blocks[2].bbox.x0 == pytest.approx(100 / 1024)  # corners reordered
    assert out.blocks[3].type is BlockType.OTHER


def test_text_outside_layout_divs_is_not_dropped():
    out = parse(
        '<div data-bbox="[0,0,10,10]" data-label="Text"><p>inside</p></div>\nstray words\n<p>stray paragraph</p>'
    )
    assert [b.text for b in out.blocks] == ["inside", "stray words", "stray paragraph"]


def test_truncated_answer_parses_what_arrived():
    # finish_reason="length" makes the page invalid before parsing; the parser itself must not crash.
    out = parse(PAGE[:700])
    assert out.blocks[0].type is BlockType.PAGE_HEADER and len(out.blocks) >= 3


def test_answer_without_layout_blocks_is_unparsable():
    with pytest.raises(OutputValidationError, match="no <div data-label"):
        parse("<p>The model ignored the layout instructions.</p>")
    with pytest.raises(OutputValidationError):
        parse("plain text, no html at all")


def test_empty_answer_is_an_empty_page():
    out = parse("   ")
    assert out.blocks == [] and out.markdown == ""
