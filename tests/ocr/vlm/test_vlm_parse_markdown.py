"""Generic Markdown answers split into blocks with markdown-it-py."""

from folioflow.ocr.schema import BlockType
from folioflow.ocr.vlm.parsers.markdown import parse_markdown

ANSWER = """```markdown
# Governing Law

This Agreement shall be governed by the laws of the State of Delaware.
Any dispute shall be resolved in Wilmington.

| Party | Role |
|-------|------|
| Northwind | Borrower |

$$
S = \\frac{R_p - R_f}{\\sigma_p}
$$

1. first
2. second

<table><tr><td rowspan="2">A</td></tr></table>

---

```python
print("code")
```
```"""


def test_fenced_answer_is_unwrapped_and_split():
    out = parse_markdown(ANSWER)
    assert [b.type for b in out.blocks] == [
        BlockType.HEADING,
        BlockType.PARAGRAPH,
        BlockType.TABLE,
        BlockType.FORMULA,
        BlockType.LIST_ITEM,
        BlockType.TABLE,
        BlockType.CODE,
    ]
    assert out.blocks[0].level == 1
    assert out.blocks[1].text == (
        "This Agreement shall be governed by the laws of the State of Delaware.\n"
        "Any dispute shall be resolved in Wilmington."
    )
    assert out.blocks[2].text.splitlines()[2] == "| Northwind | Borrower |"
    assert "```" not in out.blocks[0].text and out.blocks[-1].text.startswith("```python")


def test_markdown_is_the_blocks_joined():
    out = parse_markdown(ANSWER)
    assert out.markdown == "\n\n".join(b.text for b in out.blocks)


def test_plain_text_and_empty_answers():
    assert parse_markdown("just words").blocks[0].type is BlockType.PARAGRAPH
    assert parse_markdown("").blocks == []
