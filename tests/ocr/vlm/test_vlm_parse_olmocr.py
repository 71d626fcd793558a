"""olmOCR answers: YAML front matter + Markdown (allenai/olmocr's v4 YAML prompt)."""

import pytest

from folioflow.ocr.errors import OutputValidationError
from folioflow.ocr.schema import BlockType
from folioflow.ocr.vlm.parsers.front_matter import parse_front_matter

PAGE = """---
primary_language: en
is_rotation_valid: True
rotation_correction: 0
is_table: False
is_diagram: False
---
# Northwind Capital Holdings Annual Report 2025

## 1 Financial Highlights

Total revenue grew 12% to $4,210 million in fiscal 2025, driven by advisory fees.

<table>
<tr><th>Line item</th><th>FY2025</th></tr>
<tr><td>Advisory fees</td><td>2,150</td></tr>
</table>

The Sharpe ratio is \\(S\\), defined as

\\[
S = \\frac{R_p - R_f}{\\sigma_p}
\\]

![Bar chart of revenue by segment](page_100_400_300_200.png)
"""


def test_front_matter_fields_become_attributes():
    out = parse_front_matter(PAGE)
    assert out.attributes == {
        "primary_language": "en",
        "is_rotation_valid": True,
        "rotation_correction": 0,
        "is_table": False,
        "is_diagram": False,
    }
    assert out.rotation_correction == 0


def test_body_becomes_markdown_blocks():
    out = parse_front_matter(PAGE)
    assert [b.type for b in out.blocks] == [
        BlockType.HEADING,
        BlockType.HEADING,
        BlockType.PARAGRAPH,
        BlockType.TABLE,
        BlockType.PARAGRAPH,
        BlockType.FORMULA,
        BlockType.FIGURE,
    ]
    assert out.blocks[4].text == "The Sharpe ratio is $S$, defined as"
    assert out.blocks[5].text == "$$\nS = \\frac{R_p - R_f}{\\sigma_p}\n$$"
    assert out.markdown.startswith(
        "# Northwind Capital Holdings Annual Report 2025\n\n## 1 Financial Highlights"
    )
    assert all(b.bbox is None for b in out.blocks)


@pytest.mark.parametrize("reported, clockwise", [(90, 270), (180, 180), (270, 90)])
def test_rotation_correction_is_turned_into_a_clockwise_turn(reported, clockwise):
    text = PAGE.replace("is_rotation_valid: True", "is_rotation_valid: False").replace(
        "rotation_correction: 0", f"rotation_correction: {reported}"
    )
    out = parse_front_matter(text)
    assert out.rotation_correction == clockwise and out.attributes["rotation_correction"] == reported


def test_valid_rotation_ignores_a_stray_correction():
    out = parse_front_matter(PAGE.replace("rotation_correction: 0", "rotation_correction: 90"))
    assert out.rotation_correction == 0


def test_norwegian_is_not_false_and_null_language():
    assert (
        parse_front_matter(PAGE.replace("primary_language: en", "primary_language: no")).attributes[
            "primary_language"
        ]
        == "no"
    )
    assert (
        parse_front_matter(PAGE.replace("primary_language: en", "primary_language: null")).attributes[
            "primary_language"
        ]
        is None
    )


def test_lowercase_booleans_and_quoted_strings():
    text = PAGE.replace("is_table: False", "is_table: 'true'").replace(
        "is_diagram: False", "is_diagram: false"
    )
    out = parse_front_matter(text)
    assert out.attributes["is_table"] is True and out.attributes["is_diagram"] is False


def test_empty_page_has_front_matter_only():
    out = parse_front_matter(
        "---\nprimary_language: null\nis_rotation_valid: true\nrotation_correction: 0\n"
        "is_table: false\nis_diagram: false\n---"
    )
    assert out.blocks == [] and out.markdown == ""


@pytest.mark.parametrize(
    "text, reason",
    [
        ("# No front matter at all", "no YAML front matter"),
        (
            "---\nprimary_language: en\nis_rotation_valid: True\n",
            "not closed",
        ),  # truncated inside the front matter
        (PAGE.replace("is_diagram: False\n", ""), "lacks is_diagram"),
        (PAGE.replace("rotation_correction: 0", "rotation_correction: 45"), "not 0, 90, 180 or 270"),
        (PAGE.replace("is_table: False", "is_table: maybe"), "not a boolean"),
        (PAGE.replace("primary_language: en", "primary_language: [unclosed"), "not YAML"),
    ],
)
def test_malformed_front_matter_is_unparsable(text, reason):
    with pytest.raises(OutputValidationError, match=reason):
        parse_front_matter(text)
