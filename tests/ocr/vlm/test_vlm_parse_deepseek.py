"""DeepSeek-OCR grounding answers (<|ref|>label<|/ref|><|det|>[[x1,y1,x2,y2]]<|/det|>, 0-999 grid)."""

import pytest

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.schema import BlockType
from folioflow.ocr.vlm.parsers.grounding import parse_grounding

# In DeepSeek-OCR's grounding format (prompt "<|grounding|>Convert the document to markdown."),
# as served by vLLM with skip_special_tokens=False (so the end-of-sentence token trails).
PAGE = """<|ref|>header<|/ref|><|det|>[[88, 30, 500, 48]]<|/det|>
Northwind Capital Holdings

<|ref|>title<|/ref|><|det|>[[160, 80, 838, 120]]<|/det|>
# Northwind Capital Holdings Annual Report 2025

<|ref|>sub_title<|/ref|><|det|>[[118, 140, 460, 165]]<|/det|>
## 2 Risk-Adjusted Return

<|ref|>text<|/ref|><|det|>[[118, 170, 880, 210]]<|/det|>
We measure risk-adjusted performance with the Sharpe ratio, where \\(R_p\\) is the portfolio return.

<|ref|>equation<|/ref|><|det|>[[300, 215, 700, 260]]<|/det|>
\\[S = \\frac{R_p - R_f}{\\sigma_p}\\]

<|ref|>table_caption<|/ref|><|det|>[[118, 270, 600, 290]]<|/det|>
Table 1: Fund returns

<|ref|>table<|/ref|><|det|>[[118, 295, 880, 420], [118, 420, 880, 450]]<|/det|>
<table><tr><td>Fund</td><td>Return</td></tr><tr><td colspan="2">n/a</td></tr></table>

<|ref|>image<|/ref|><|det|>[[200, 470, 800, 700]]<|/det|>


<|ref|>image_caption<|/ref|><|det|>[[200, 705, 800, 725]]<|/det|>
Figure 2: Drawdowns

<|ref|>text<|/ref|><|det|>[[118, 740, 880, 760]]<|/det|>
- first point

<|ref|>footer<|/ref|><|det|>[[118, 960, 880, 980]]<|/det|>
Annual Report 2025 - Page 2<｜end▁of▁sentence｜>"""


def test_labels_map_and_order_is_kept():
    out = parse_grounding(PAGE)
    assert [b.type for b in out.blocks] == [
        BlockType.PAGE_HEADER,
        BlockType.TITLE,
        BlockType.HEADING,
        BlockType.PARAGRAPH,
        BlockType.FORMULA,
        BlockType.CAPTION,
        BlockType.TABLE,
        BlockType.FIGURE,
        BlockType.CAPTION,
        BlockType.LIST_ITEM,
        BlockType.PAGE_FOOTER,
    ]
    assert out.blocks[1].level == 1 and out.blocks[2].level == 2


def test_boxes_on_the_999_grid_and_multi_box_union():
    out = parse_grounding(PAGE)
    title = out.blocks[1].bbox
    assert title.x0 == pytest.approx(160 / 999) and title.y1 == pytest.approx(120 / 999)
    table = out.blocks[6].bbox
    assert table.y0 == pytest.approx(295 / 999) and table.y1 == pytest.approx(450 / 999)


def test_math_delimiters_become_dollars_and_eos_is_removed():
    out = parse_grounding(PAGE)
    assert out.blocks[3].text.endswith("where $R_p$ is the portfolio return.")
    assert out.blocks[4].text == "$$\nS = \\frac{R_p - R_f}{\\sigma_p}\n$$"
    assert out.blocks[-1].text == "Annual Report 2025 - Page 2"
    assert "end▁of▁sentence" not in out.markdown


def test_table_html_and_empty_image_block():
    out = parse_grounding(PAGE)
    assert out.blocks[6].text.startswith("<table>") and 'colspan="2"' in out.blocks[6].text
    assert out.blocks[7].text == "" and out.blocks[7].bbox is not None


def test_heading_without_hash_marks_gets_them():
    out = parse_grounding("<|ref|>sub_title<|/ref|><|det|>[[1, 2, 300, 40]]<|/det|>\n3 Governing Law\n")
    assert out.blocks[0].text == "## 3 Governing Law" and out.blocks[0].level == 2


def test_unknown_label_and_bad_coordinates_are_kept_without_box():
    out = parse_grounding(
        "<|ref|>stamp<|/ref|><|det|>[[1, 2, oops]]<|/det|>\nAPPROVED\n"
        "<|ref|>text<|/ref|><|det|>__import__('os')<|/det|>\nno eval here\n"
    )
    assert [(b.type, b.text, b.bbox) for b in out.blocks] == [
        (BlockType.OTHER, "APPROVED", None),
        (BlockType.PARAGRAPH, "no eval here", None),
    ]


def test_text_before_the_first_tag_is_kept():
    out = parse_grounding("Preamble line\n<|ref|>text<|/ref|><|det|>[[0, 0, 999, 999]]<|/det|>\nBody")
    assert [b.text for b in out.blocks] == ["Preamble line", "Body"]
    assert out.blocks[1].bbox.x1 == 1.0


def test_truncated_answer_keeps_complete_blocks():
    cut = PAGE[: PAGE.index("<|ref|>table<|/ref|>") + 30]  # cut inside the table's <|det|>
    out = parse_grounding(cut)
    assert out.blocks[-1].type is BlockType.CAPTION and len(out.blocks) == 6


def test_answer_without_grounding_tags_is_unparsable():
    with pytest.raises(OutputValidationError, match="grounding"):
        parse_grounding("# Just markdown\n\nThe model answered in free OCR mode.")
    assert parse_grounding("<｜end▁of▁sentence｜>").blocks == []
