"""folioflow.ocr.layout.notes: a filing's numbered notes hold the headings up to the next note."""

from __future__ import annotations

import pytest

from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.layout.blocks import page_markdown
from folioflow.ocr.layout.notes import NOTE_HEADING, nest_note_headings
from folioflow.ocr.schema import Block, BlockType, Page, SourceRef

_TEXT = "The Company recognizes revenue when control of the promised goods transfers to its customers."


def _heading(text: str, level: int = 3) -> Block:
    return Block(type=BlockType.HEADING, text="#" * level + " " + text, level=level)


def _page(number: int, blocks: list[Block]) -> Page:
    return Page(number=number, width=612, height=792, blocks=blocks, markdown=page_markdown(blocks))


def _levels(pages: list[Page]) -> list[tuple[int, str]]:
    return [(b.level, b.text.lstrip("# ")) for p in pages for b in p.blocks if b.type == BlockType.HEADING]


def _body() -> Block:
    return Block(type=BlockType.PARAGRAPH, text=_TEXT)


@pytest.mark.parametrize(("text", "number"), [
    ("Note 4 – Derivative instruments", 4), ("NOTE 12 — INCOME TAXES", 12), ("Note 1: Summary of Policies", 1),
    ("Note 3. Leases", 3), ("Note 7 Goodwill", 7), ("Note 9", 9)])
def test_note_headings_are_read_with_their_numbers(text, number):
    m = NOTE_HEADING.match(text)
    assert m is not None and int(m.group(1)) == number


@pytest.mark.parametrize("text", ["Notes to Consolidated Financial Statements", "Note that the Company",
                                  "Noteholders' rights", "Note 2019 amounts"])
def test_other_headings_are_no_note_headings(text):
    assert NOTE_HEADING.match(text) is None


def test_sub_headings_nest_under_their_note_across_pages_and_keep_their_own_levels():
    """JPMorgan's 10-Q sets "Note 2 – Fair value measurement" and "Level 3 inputs" in one size: the
    sub-headings (and a deeper one under them) move below the note, up to the next note; the last
    note's sub-heading stays (its span has no marked end)."""
    pages = [_page(1, [_heading("Note 1 – Basis of presentation"), _body(), _heading("Consolidation"), _body()]),
             _page(2, [_heading("Note 2 – Fair value measurement"), _body(), _heading("Level 3 inputs"), _body(),
                       _heading("Transfers between levels", 4), _body()]),
             _page(3, [_body(), _heading("Credit adjustments"), _body()]),
             _page(4, [_heading("Note 3 – Fair value option"), _body(), _heading("Changes in fair value"), _body()])]
    assert nest_note_headings(pages) == 4
    assert _levels(pages) == [(3, "Note 1 – Basis of presentation"), (4, "Consolidation"),
                              (3, "Note 2 – Fair value measurement"), (4, "Level 3 inputs"),
                              (5, "Transfers between levels"), (4, "Credit adjustments"),
                              (3, "Note 3 – Fair value option"), (3, "Changes in fair value")]
    assert "#### Credit adjustments" in pages[2].markdown  # a changed page's Markdown follows its blocks
    before = [p.model_copy(deep=True) for p in pages]
    nest_note_headings(pages)
    assert [p.markdown for p in pages] == [p.markdown for p in before]  # idempotent


def test_the_last_note_ends_at_the_first_heading_after_the_notes():
    """Boeing's last note ("Note 23 – Segment and Revenue Information") has sub-headings ("Backlog"),
    then the auditor's report; Pfizer's is followed by a heading above the notes' level. The last
    note holds what comes before such a heading; the heading keeps its level."""
    report = [_page(1, [_heading("Note 22 – Derivatives"), _body(), _heading("Note 23 – Segment and Revenue Information"),
                        _body(), _heading("Backlog"), _body()]),
              _page(2, [_heading("Report of Independent Registered Public Accounting Firm"), _body(),
                        _heading("Opinion on the Financial Statements"), _body()])]
    assert nest_note_headings(report) == 1
    assert _levels(report)[2:] == [(4, "Backlog"), (3, "Report of Independent Registered Public Accounting Firm"),
                                   (3, "Opinion on the Financial Statements")]
    above = [_page(1, [_heading("Note 16 – Leases"), _body(), _heading("Note 17 – Segments"), _body(),
                       _heading("Geographic information"), _body(), _heading("Selected Quarterly Financial Data", 2),
                       _heading("First quarter")])]
    assert nest_note_headings(above) == 1
    assert _levels(above)[2:] == [(4, "Geographic information"), (2, "Selected Quarterly Financial Data"),
                                  (3, "First quarter")]


def test_a_span_with_an_item_or_a_restart_of_numbering_is_left_alone():
    """An Item heading between two notes (a 10-Q's notes end, Item 2 begins) and numbering that
    starts again (the parent company's own statements) mark no note's span."""
    item = [_page(1, [_heading("Note 5 – Debt"), _body(), _heading("Item 2. Management's Discussion", 2), _body(),
                      _heading("Overview"), _body(), _heading("Note 6 – Leases"), _body()])]
    assert nest_note_headings(item) == 0
    restart = [_page(1, [_heading("Note 14 – Subsequent events"), _body(), _heading("Schedule I"), _body(),
                         _heading("Note 1 – Basis of presentation"), _body()])]
    assert nest_note_headings(restart) == 0


def test_pages_whose_markdown_is_the_models_are_left_alone():
    blocks = [_heading("Note 1 – Basis"), _body(), _heading("Consolidation"), _body(), _heading("Note 2 – Revenue")]
    vlm = Page(number=1, width=612, height=792, blocks=blocks, markdown="## Note 1 – Basis\n\nmodel output")
    assert nest_note_headings([vlm]) == 0 and vlm.markdown == "## Note 1 – Basis\n\nmodel output"


def test_a_real_10k_notes_sub_headings_sit_under_note_1_in_the_chunks_paths(corpus):
    """Boeing's 2018 10-K sets "Note 1 – Summary of Significant Accounting Policies" and its
    sub-headings ("Revenue and Related Cost Recognition") in one size; with Note 2 on page 70 the
    chunks of pages 57-58 have Note 1 in their heading path."""
    path = corpus / "A_finance/financebench/pdfs/BOEING_2018_10K.pdf"
    if not path.is_file():
        pytest.skip(f"FinanceBench filing not in the corpus: {path}")
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter

    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False, page_range="57-58,70"))
    document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
    chunks = Chunker(default_counter()).chunk(document)
    revenue = [c for c in chunks if c.heading_path and c.heading_path[-1] == "Revenue and Related Cost Recognition"]
    assert revenue, [c.heading_path for c in chunks]
    assert all("Note 1 – Summary of Significant Accounting Policies" in c.heading_path for c in revenue)
    assert all(c.heading_path.index("Note 1 – Summary of Significant Accounting Policies") == len(c.heading_path) - 2
               for c in revenue)
