"""Parsing every engine's Markdown habits into blocks, tables into rows, headings into paths."""

from __future__ import annotations

from folioflow.chunking.headers import mark_furniture, normalise_furniture
from folioflow.chunking.parse import parse_markdown
from folioflow.chunking.sections import build_sections, fit_heading_path, numbering_depth
from folioflow.chunking.sentences import sentence_spans
from folioflow.chunking.tables import merge_continued, parse_table, row_as_key_values
from folioflow.chunking.tokens import default_counter


def kinds(md: str) -> list[str]:
    return [b.kind for b in parse_markdown(md).blocks]


def test_block_kinds_and_exact_text():
    md = ("---\nprimary_language: en\nis_table: false\n---\n"  # olmOCR front matter
          "# Title\n\nA paragraph.\n\n- one\n- two\n\n```\ncode\n```\n\n$$\nx = 1\n$$\n\n"
          "\\[\nE = mc^2\n\\]\n\n\\begin{align}\na &= b\n\\end{align}\n\n![A chart of revenue](chart.png)\n\n"
          "Table 2: Segment results\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<!-- image -->\n\n---\n\n> quoted")
    page = parse_markdown(md)
    assert page.front_matter.startswith("primary_language")
    assert [b.kind for b in page.blocks] == ["heading", "paragraph", "list", "code", "formula", "formula", "formula",
                                             "figure", "caption", "table", "figure", "quote"]
    for b in page.blocks:
        assert md[b.start:b.end] == b.text  # exact source slices
    assert page.blocks[7].alt == "A chart of revenue" and page.blocks[10].alt == ""
    assert [page.blocks[2].text[s:e] for s, e in page.blocks[2].items] == ["- one", "- two"]


def test_html_table_with_blank_lines_and_mathml_stay_one_block():
    md = ("Before.\n\n<table>\n<tr><th>A</th><th>B</th></tr>\n\n<tr><td rowspan=\"2\">x</td><td>1</td></tr>\n\n"
          "<tr><td>2</td></tr>\n</table>\n\n<math display=\"block\">\n<mi>x</mi>\n\n<mo>=</mo>\n</math>\n\nAfter.")
    blocks = parse_markdown(md).blocks
    assert [b.kind for b in blocks] == ["paragraph", "table", "formula", "paragraph"]
    assert blocks[1].text.endswith("</table>") and blocks[2].text.endswith("</math>")


def test_html_table_rows_groups_and_header_with_spans():
    html = ("<table><thead><tr><th rowspan=\"2\">Compound</th><th colspan=\"2\">Recovery</th></tr>"
            "<tr><th>Soxtec</th><th>PLE</th></tr></thead><tbody>"
            "<tr><td rowspan=\"2\">NAP</td><td>68.3</td><td>60.0</td></tr><tr><td>65.6</td><td>61.2</td></tr>"
            "<tr><td>ACY</td><td>61.5</td><td>66.4</td></tr></tbody></table>")
    t = parse_table(html)
    assert t.ncols == 3 and len(t.head) == 2 and len(t.rows) == 3
    assert t.groups == [(0, 2), (2, 3)]
    assert t.head_cells == ["Compound", "Recovery / Soxtec", "Recovery / PLE"]
    assert t.cells[1] == ["NAP", "65.6", "61.2"]  # the rowspan value is repeated into the rows it covers
    part = t.render(2, 3)
    assert part.startswith("<table>") and "<thead>" in part and "ACY" in part and "NAP" not in part
    assert row_as_key_values(t, 1) == ["Compound: NAP", "Recovery / Soxtec: 65.6", "Recovery / PLE: 61.2"]


def test_continued_tables_merge_by_columns():
    first = parse_table("| Item | 2025 |\n|---|---|\n| Cash | 10 |", page=1)
    repeated = parse_table("| Item | 2025 |\n|---|---|\n| Debt | 20 |", page=2)
    unrepeated = parse_table("| Debt | 20 |\n|---|---|\n| Equity | 30 |", page=2)
    other = parse_table("| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |", page=2)
    assert merge_continued(first, repeated).render() == "| Item | 2025 |\n|---|---|\n| Cash | 10 |\n| Debt | 20 |"
    merged = merge_continued(first, unrepeated)
    assert merged.rows == ["| Cash | 10 |", "| Debt | 20 |", "| Equity | 30 |"] and merged.row_pages == [1, 2, 2]
    assert merge_continued(first, other) is None


def test_numbering_depth_and_heading_levels():
    assert [numbering_depth(t) for t in ["3.1.2 Results", "2.9. Removal", "Item 7. MD&A", "2023 Annual Report",
                                         "Overview"]] == [3, 2, 1, None, None]
    blocks = parse_markdown("# 3. Results\n\ntext\n\n# 3.1. Detail\n\ntext\n\n# 4. End\n\ntext").blocks
    assert [s.path for s in build_sections(blocks)] == [["3. Results"], ["3. Results", "3.1. Detail"], ["4. End"]]
    mixed = parse_markdown("# A\n\n## 1.1 B\n\ntext\n\n## 2 C\n\ntext").blocks  # levels as written
    assert [s.path for s in build_sections(mixed)][-1] == ["A", "2 C"]


def test_fit_heading_path_keeps_the_deepest_title():
    counter = default_counter()

    def content(t):
        return counter.count(t) - 2

    path = ["Consolidated statements of comprehensive income and shareholders equity"] * 3 + ["Leases"]
    fitted = fit_heading_path(path, 20, content)
    assert fitted[0] == "…" and fitted[-1] == "Leases" and content("\n".join(fitted)) <= 20
    long = ["Leases " * 50]
    cut = fit_heading_path(long, 10, content)
    assert cut[0].endswith("…") and content(cut[0]) <= 10


def test_running_headers_and_page_numbers_are_found():
    bodies = ["Revenue grew in every segment.", "Margins fell as costs rose.", "The board declared a dividend."]
    pages = [parse_markdown(f"ACME Corp 10-K\n\n## Part {i}\n\n{bodies[i - 1]}\n\nPage {i} of 3", page=i) for i in (1, 2, 3)]
    mark_furniture(pages)
    assert [[b.furniture for b in p.blocks] for p in pages] == [["header", None, None, "footer"]] * 3
    assert normalise_furniture("Page 12 of 340") == normalise_furniture("Page 3 of 340")


def test_sentences_respect_abbreviations_currency_and_inline_math():
    text = "Mr. Smith paid $4,210 million in fiscal 2025. The ratio $ s = y. z $ held. U.S. sales rose."
    spans = [text[s:e].strip() for s, e in sentence_spans(text)]
    assert spans == ["Mr. Smith paid $4,210 million in fiscal 2025.", "The ratio $ s = y. z $ held.", "U.S. sales rose."]
