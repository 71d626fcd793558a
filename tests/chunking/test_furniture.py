"""Furniture by evidence (issue 23): running headers and footers are lines repeating in the same
band across pages, or page numbers; everything else at a page's edge is body text, and what is
taken as furniture stays in the chunks' metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.tokens import default_counter
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.schema import BlockType, Document, SourceRef
from tests.ocr import fidelity_docs as docs


@pytest.fixture(scope="module")
def converter():
    conv = DocumentConverter(ConvertOptions(engine="text"))
    yield conv
    conv.close()


@pytest.fixture(scope="module")
def chunker():
    return Chunker(default_counter())


def convert(converter, path: Path) -> Document:
    return converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))


def furniture(document: Document) -> dict[int, list[str]]:
    return {p.number: [b.text for b in p.blocks if b.type in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER)]
            for p in document.pages}


def test_one_page_title_near_the_top_is_body(converter, tmp_path):
    path = docs.margin_pdf(tmp_path / "memo.pdf", [[(32.0, "Memorandum on the Harbour Lease", 11.0),
                                                     *[(100.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(1))],
                                                     (770.0, "3", 9.0)]])
    document = convert(converter, path)
    assert "Memorandum on the Harbour Lease" in document.pages[0].markdown
    assert furniture(document) == {1: ["3"]}  # a page number is furniture even alone


def test_only_line_of_a_tall_page_is_body(converter, tmp_path):
    path = docs.margin_pdf(tmp_path / "tall.pdf", [[(40.0, "Borehole log BH-7 depth readings", 12.0)]],
                           size=(612, 20000))
    page = convert(converter, path).pages[0]
    assert page.markdown.strip() == "Borehole log BH-7 depth readings"


def test_top_lines_repeating_nowhere_are_body_and_running_headers_are_furniture(converter, chunker, tmp_path):
    pages = []
    for n in range(1, 4):
        lines = [(30.0, "ACME HOLDINGS - CONFIDENTIAL", 9.0),  # a running header
                 (48.0, f"Schedule {chr(64 + n)} to the credit agreement, section {n}", 9.0)]  # top, repeats nowhere
        lines += [(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(n))]
        lines.append((770.0, f"Page {n} of 3", 9.0))
        pages.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "schedules.pdf", pages))
    for page in document.pages:
        assert f"Schedule {chr(64 + page.number)} to the credit agreement" in page.markdown
        assert "ACME HOLDINGS" not in page.markdown
        assert furniture(document)[page.number] == ["ACME HOLDINGS - CONFIDENTIAL", f"Page {page.number} of 3"]
    chunks = chunker.chunk(document)
    assert all(c.metadata["page_headers"] == ["ACME HOLDINGS - CONFIDENTIAL"] for c in chunks)
    assert any("Schedule B to the credit agreement" in c.text for c in chunks)


def test_sentence_repeated_on_every_page_stays_in_the_body_once(converter, chunker, tmp_path):
    legend = ("[***] Certain information in this exhibit has been omitted and filed separately with the "
              "Securities and Exchange Commission.")
    pages = [[*[(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(n))], (760.0, legend, 8.0)] for n in (1, 2, 3)]
    document = convert(converter, docs.margin_pdf(tmp_path / "exhibit.pdf", pages))
    assert legend in document.pages[0].markdown
    assert all(legend not in p.markdown for p in document.pages[1:])
    chunks = chunker.chunk(document)
    assert sum(c.text.count("[***] Certain information") for c in chunks) == 1
    assert any(legend in c.metadata.get("page_footers", []) for c in chunks)


def test_furniture_pass_gives_the_whole_documents_answer_when_run_again(converter, tmp_path):
    from folioflow.ocr.finish import review_furniture

    document = convert(converter, docs.invoice_pdf(tmp_path / "invoice.pdf", pages=3))
    before = [p.model_dump() for p in document.pages]
    assert review_furniture(document.pages) == 0
    assert [p.model_dump() for p in document.pages] == before
    part = convert(converter, docs.invoice_pdf(tmp_path / "one.pdf", pages=1))
    assert f"Invoice {docs.INVOICE_NUMBER}" in part.pages[0].markdown  # one page: repeats nowhere, body


def test_header_only_invoice_number_reaches_chunk_metadata_and_the_sparse_text(converter, chunker, tmp_path):
    from folioflow.indexing.indexer import _sparse_text

    document = convert(converter, docs.invoice_pdf(tmp_path / "invoice.pdf"))
    assert all(docs.INVOICE_NUMBER not in p.markdown for p in document.pages)
    chunks = chunker.chunk(document)
    assert chunks and all(docs.INVOICE_NUMBER not in c.text for c in chunks)
    assert all(any(docs.INVOICE_NUMBER in h for h in c.metadata["page_headers"]) for c in chunks)
    assert all(docs.INVOICE_NUMBER in _sparse_text(c) for c in chunks)


def test_furniture_of_a_page_without_body_rides_on_a_neighbouring_chunk(converter, chunker, tmp_path):
    from folioflow.indexing.indexer import _sparse_text

    header = (30.0, "Northwind Legal LLP    Matter NW-20931", 9.0)
    pages = [[header, *[(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(n))], (770.0, str(n), 9.0)]
             for n in (1, 2)]
    pages.append([header, (770.0, "3", 9.0)])  # a blank page: its running header and page number only
    pages.append([header, *[(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(4))], (770.0, "4", 9.0)])
    document = convert(converter, docs.margin_pdf(tmp_path / "blank.pdf", pages))
    assert furniture(document)[3] == ["Northwind Legal LLP Matter NW-20931", "3"]
    chunks = chunker.chunk(document)
    assert not any(c.page_start <= 3 <= c.page_end for c in chunks)  # no body on page 3: in no chunk's span
    carriers = [c for c in chunks if 3 in c.metadata.get("furniture_pages", [])]
    assert len(carriers) == 1 and carriers[0].page_end == 2  # the last chunk before the page
    assert "3" in carriers[0].metadata["page_footers"] and "3" in _sparse_text(carriers[0]).split()
    assert all("furniture_pages" not in c.metadata for c in chunks if c is not carriers[0])


def test_a_line_repeating_at_page_ends_outside_one_band_is_body(converter, chunker, tmp_path):
    # a 10-K's short Items end in "None." on several pages, each at another height: that is text,
    # not a running footer (Netflix 2017 p36 lost "Item 9B ... None." to the footer test by position alone)
    pages = []
    for n, y in ((1, 300.0), (2, 430.0), (3, 560.0)):
        lines = [(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(n, 4))]
        lines += [(y - 40, f"Item {n + 8}B. Other Information", 11.0), (y, "None.", 11.0), (770.0, f"{n + 30}", 9.0)]
        pages.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "items.pdf", pages))
    chunks = chunker.chunk(document)
    for n in (1, 2, 3):
        on_page = [c for c in chunks if c.page_start <= n <= c.page_end]
        assert any("None." in c.text for c in on_page), n
        assert all("None." not in c.metadata.get("page_footers", []) for c in on_page)
        assert any(str(n + 30) in c.metadata.get("page_footers", []) for c in on_page)  # the page number still is


def test_a_heading_that_ends_its_page_is_in_the_span_of_the_chunk_it_opens(converter, chunker, tmp_path):
    # Corning 2022 p139 holds only "Exhibit B James B. Flaws"; its text starts on p140: the chunk
    # that heading opens spans both pages, so a search for the exhibit's title finds its page
    pages = [[*[(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(1))], (700.0, "ARTICLE 7", 16.0),
              (722.0, "INDEMNIFICATION AND INSURANCE", 16.0)],
             [(110.0 + 16 * i, t, 11.0) for i, t in enumerate(docs.body(2))]]
    document = convert(converter, docs.margin_pdf(tmp_path / "article.pdf", pages))
    chunks = chunker.chunk(document)
    opened = [c for c in chunks if any("INDEMNIFICATION" in h for h in c.heading_path)]
    assert opened, [(c.heading_path, c.text[:40]) for c in chunks]
    assert opened[0].page_start == 1 and opened[0].page_end == 2
    assert docs.body(2)[0] in opened[0].text
    assert all(c.page_start == 1 for c in chunks if docs.body(1)[0] in c.text)


def _clause(n: int) -> str:
    return (f"{n}.1 The Reseller shall market the Products in the Territory during the Term and shall keep complete "
            f"records of each sale made under this Agreement, which the Company may audit on ten days' notice "
            f"during business hours; such records shall be kept for three years after the sale to which they relate.")


def test_printed_page_numbers_inside_the_page_body_leave_the_chunk_text(chunker):
    """An exhibit printed from HTML (CUAD's WORLDWIDE STRATEGIES reseller agreement, PROFOUND MEDICAL's
    supply agreement): its printed page numbers ("2", "- 3 -", "Page 4") stand alone mid-page, where
    the printed pages ended, often mid-sentence. They go to the chunks' footer metadata; a clause
    number in a margin column ("3" above its title) and an amount alone on a line stay text."""
    from tests.chunking.helpers import make_doc

    pages = [
        f"# RESELLER AGREEMENT\n\n{_clause(1)}\n\n2\n\n{_clause(2)}\n\n250\n\n{_clause(3)}",
        f"{_clause(4)}\n\n- 3 -\n\nthe Company shall deliver the Products within thirty days.\n\n{_clause(5)}",
        f"{_clause(6)}\n\nPage 4\n\n{_clause(7)}\n\n5\n\nLicensee's Responsibilities\n\n{_clause(8)}",
        f"{_clause(9)}\n\n6\n\n{_clause(10)}",
    ]
    chunks = chunker.chunk(make_doc(*pages))
    lines = {line.strip() for c in chunks for line in c.text.splitlines()}
    assert not lines & {"2", "- 3 -", "Page 4", "6"}, sorted(lines)[:10]
    assert {"250", "5", "Licensee's Responsibilities"} <= lines  # an amount; a clause number above its title
    footers = [f for c in chunks for f in c.metadata.get("page_footers", [])]
    assert {"2", "- 3 -", "Page 4", "6"} <= set(footers), footers
    # the same numbers without text between them (a column of a table read as lines) are no page numbers
    column = chunker.chunk(make_doc("# RATES\n\n" + "\n\n".join(str(n) for n in range(1, 7)) + "\n\n" + _clause(1)))
    assert {"1", "2", "3", "4"} <= {line.strip() for c in column for line in c.text.splitlines()}


def test_a_sentence_cut_by_a_printed_page_number_is_one_sentence_again(chunker):
    """CUAD's NEON SYSTEMS distributor agreement, printed from HTML: "... license fee and" / "4" /
    "proposed delivery date for such order." The page number goes to the footers and the sentence
    is whole in one chunk, though the text after it fills a chunk of its own; a paragraph that ends
    its sentence stays apart, and so does a title. "5" above "Section 5.2 ABILITY TO PERFORM" is a
    page number, since that title carries its own number."""
    from tests.chunking.helpers import make_doc

    order = ("Section 4.1 ORDER AND DELIVERY. Licensee shall deliver to Licensor product orders in writing that "
             "are signed by an authorized representative of Licensee and that list the quantity, product name, "
             "number, version, license fee and")
    rest = ("proposed delivery date for such order. " + " ".join(
        f"Licensor shall ship the Licensed Products of order {n} in accordance with the product orders received "
        f"and accepted by Licensor, F.O.B. Licensor's place of business, within {n + 10} days." for n in range(9)))
    review = ("Section 2.5 REVIEW. Licensee shall not enter into any such agreement until it has been approved by "
              "Licensor. Within five")
    pages = [
        f"# DISTRIBUTOR AGREEMENT\n\n{_clause(1)}\n\n2\n\n{_clause(2)}\n\n{review}\n\n3\n\n"
        "(5) business days after its receipt of any such agreement, Licensor shall notify Licensee.",
        f"{_clause(3)}\n\n{order}\n\n4\n\n{rest}\n\n{_clause(4)}",
        f"{_clause(5)}\n\n5\n\n### Section 5.2 ABILITY TO PERFORM\n\n{_clause(6)}\n\nSchedule of prices for\n\n6\n\n"
        "the products that the Licensor lists for each year of the Term, in United States dollars.",
    ]
    chunks = chunker.chunk(make_doc(*pages))
    texts = [" ".join(c.text.split()) for c in chunks]
    assert any("license fee and proposed delivery date for such order." in t for t in texts), texts
    assert any("Within five (5) business days after its receipt" in t for t in texts), texts
    lines = {line.strip() for c in chunks for line in c.text.splitlines()}
    assert not lines & {"2", "3", "4", "5", "6"}, sorted(lines)[:10]
    footers = {f for c in chunks for f in c.metadata.get("page_footers", [])}
    assert {"4", "5", "6"} <= footers, footers
    # a clause that ends its sentence before a page number and the next clause stay two paragraphs,
    # and so does a line too short to be a sentence's start (a title)
    assert any(f"{_clause(1)}\n\n{_clause(2)}" in c.text for c in chunks), [c.text[:80] for c in chunks]
    assert any("Schedule of prices for\n\nthe products that" in c.text for c in chunks), [c.text[-80:] for c in chunks]


def test_a_sentence_cut_by_the_pdf_page_break_is_one_sentence_with_both_pages(chunker):
    """A sentence that runs from the foot of one PDF page onto the next (CUAD's ALAMOGORDO agency
    agreement: "... kept by the receiving party" / "in the ordinary course of its business") is one
    paragraph again; its chunk spans both pages, and a chunk of the next page's later sentences
    starts on that page. A page that ends its sentence stays apart from the next."""
    from tests.chunking.helpers import make_doc

    tail = " ".join(f"The Agent shall keep record {n} of each sale, which the Company may audit on ten days' notice."
                    for n in range(14))
    pages = [
        f"# AGENCY AGREEMENT\n\n{_clause(1)}\n\n(iii) is evidenced by tangible records kept by the receiving party",
        "in the ordinary course of its business, or\n\nsubject to the terms of this Agreement; (iv) is in the "
        f"public domain. {tail}\n\n{_clause(2)}",
        f"the Term of this Agreement begins on the Effective Date.\n\n{_clause(3)}",
    ]
    chunks = chunker.chunk(make_doc(*pages))
    # the next page's first paragraphs that go on with the sentence join it, up to the one that ends it
    whole = [c for c in chunks if "kept by the receiving party in the ordinary course of its business, or subject to "
             "the terms of this Agreement; (iv)" in c.text]
    assert whole and (whole[0].page_start, whole[0].page_end) == (1, 2), [(c.page_start, c.page_end, c.text[-60:])
                                                                          for c in chunks]
    assert all(b.page in (1, 2) for b in whole[0].bboxes)
    later = [c for c in chunks if "record 13 of each sale" in c.text and c is not whole[0]]
    assert later and later[0].page_start == 2, [(c.page_start, c.text[:40]) for c in chunks]
    # page 2 ends its sentence: page 3's first paragraph stays apart, though it opens in lower case
    assert not any(f"{_clause(2)} the Term" in c.text for c in chunks)
    assert any(c.text.startswith("the Term of this") or "\n\nthe Term of this" in c.text for c in chunks)
    # the option turns the join off: the halves stay two paragraphs
    from folioflow.chunking.chunker import ChunkerOptions
    apart = Chunker(default_counter(), ChunkerOptions(join_split_sentences=False)).chunk(make_doc(*pages))
    assert not any("receiving party in the ordinary course" in c.text for c in apart)
    assert any("business, or\n\nsubject to" in c.text for c in apart)
    assert any("receiving party" in c.text for c in apart)


def test_a_line_at_every_pages_foot_in_a_larger_font_than_the_body_is_a_footer(converter, chunker, tmp_path):
    """A filing agent's "Source: LEADERSONLINE INC, S-1/A, 4/27/2000" at the foot of each page of a
    CUAD contract, set larger than the body, was read as a level-2 heading: 80 of the contract's 87
    chunks had it as their heading path's root (a new user's trial). Repeated at the foot of three
    pages it is a running footer; the clause headings above it head the chunks."""
    pages = []
    for n in range(1, 4):
        lines = [(72.0, f"{n}. CLAUSE {n} TITLE", 12.0)]
        lines += [(100.0 + 14 * i, t, 8.0) for i, t in enumerate(docs.body(n))]
        lines.append((760.0, "Source: ACME HOLDINGS INC, S-1/A, 4/27/2000", 10.0))
        pages.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "contract.pdf", pages))
    assert furniture(document) == {n: ["Source: ACME HOLDINGS INC, S-1/A, 4/27/2000"] for n in (1, 2, 3)}
    chunks = chunker.chunk(document)
    assert chunks and not any("Source:" in " ".join(c.heading_path) for c in chunks), [c.heading_path for c in chunks]
    assert {c.heading_path[0] for c in chunks} >= {"1. CLAUSE 1 TITLE"}


def test_a_heading_repeated_at_the_top_of_three_pages_heads_once_and_its_repeats_are_a_running_head(
        converter, chunker, tmp_path):
    """Pfizer's 10-Q sets "PFIZER INC. AND SUBSIDIARY COMPANIES. NOTES TO CONDENSED CONSOLIDATED
    FINANCIAL STATEMENTS (UNAUDITED)" as a heading at the top of every notes page, at the notes'
    level: each repeat closed the note it stood in, so a note's second page had the running head,
    not the note, in its heading path. The first occurrence stays a heading; the repeats, word for
    word on three pages or more, are a running header (kept in the chunks' metadata), and the
    note's heading heads its pages. Headings at the top that differ in a number ("EXHIBIT 1",
    "EXHIBIT 2", ...) or repeat pages apart (a section of each of several exhibits) are sections of
    their own and stay headings."""
    running = "ACME HOLDINGS INC. NOTES TO CONSOLIDATED FINANCIAL STATEMENTS"
    pages = []
    for n in range(1, 5):
        lines = [(60.0, running, 14.0)]
        if n in (1, 3):
            lines.append((100.0, f"Note {n}. {'Basis of Presentation' if n == 1 else 'Income Taxes'}", 11.0))
        lines += [(125.0 + 14 * i, t, 8.0) for i, t in enumerate(docs.body(n))]
        pages.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "notes.pdf", pages))
    assert furniture(document) == {1: [], 2: [running], 3: [running], 4: [running]}
    chunks = chunker.chunk(document)
    paths = [c.heading_path for c in chunks]
    on_page_2 = [c.heading_path for c in chunks if "by day 20." in c.text]  # docs.body(2)'s first sentence
    on_page_4 = [c.heading_path for c in chunks if "by day 40." in c.text]
    assert on_page_2 and on_page_2[0][-1] == "Note 1. Basis of Presentation", paths
    assert on_page_4 and on_page_4[0][-1] == "Note 3. Income Taxes", paths
    assert not any(p[-1] == running for p in paths[1:]), paths

    exhibits = []
    for n in range(1, 4):
        lines = [(60.0, f"EXHIBIT {n}", 14.0)]
        lines += [(100.0 + 14 * i, t, 8.0) for i, t in enumerate(docs.body(n))]
        exhibits.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "exhibits.pdf", exhibits))
    assert furniture(document) == {1: [], 2: [], 3: []}
    assert [c.heading_path[-1] for c in chunker.chunk(document)] == ["EXHIBIT 1", "EXHIBIT 2", "EXHIBIT 3"]

    # Microsoft's "PART II Item 8" above every page of its statements: a running head, not split
    # into a Part and an Item heading on each page
    statements = []
    for n in range(1, 4):
        lines = [(60.0, "PART II Item 8", 14.0)]
        lines += [(100.0 + 14 * i, t, 8.0) for i, t in enumerate(docs.body(n))]
        statements.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "statements.pdf", statements))
    assert furniture(document) == {1: [], 2: ["PART II Item 8"], 3: ["PART II Item 8"]}
    assert {tuple(c.heading_path) for c in chunker.chunk(document)} == {("PART II Item 8",)}

    # 3M's award agreements each have a "Notifications" section at the top of a page, pages apart
    sections = []
    for n in range(1, 8):
        lines = [(60.0, "Notifications", 14.0)] if n in (1, 4, 7) else []
        lines += [(100.0 + 14 * i, t, 8.0) for i, t in enumerate(docs.body(n))]
        sections.append(lines)
    document = convert(converter, docs.margin_pdf(tmp_path / "awards.pdf", sections))
    assert not any(furniture(document).values())
