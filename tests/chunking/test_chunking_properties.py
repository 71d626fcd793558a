"""Property-based tests: generated multi-page Markdown with nested headings, long pipe tables,
HTML tables with row spans, display and inline formulas, lists and prose. Whatever hypothesis
draws, every promise checked by :func:`tests.chunking.invariants.check_chunks` holds: within the
limit (MiniLM's real tokenizer), tables cut only between rows with the header repeated and parts
numbered, formulas whole, every word on a chunk covering its page, heading paths as written."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from folioflow.chunking.chunker import Chunker, ChunkerOptions
from folioflow.chunking.invariants import check_chunks, path_failures
from folioflow.chunking.tokens import default_counter
from tests.chunking.helpers import SENTENCES, make_doc

WORDS = ["revenue", "margin", "liquidity", "covenant", "lessee", "derivative", "goodwill", "impairment",
         "dividend", "tranche", "collateral", "indemnity", "warranty", "arbitration", "escrow", "accrual"]
TITLES = ["Overview", "Results of Operations", "Liquidity", "Risk Factors", "Governing Law", "Definitions",
          "Segment Information", "Income Taxes", "Leases", "Subsequent Events"]

sentence = st.sampled_from(SENTENCES)
word = st.sampled_from(WORDS)
number = st.integers(0, 99_999).map(lambda n: f"{n:,}")


@st.composite
def paragraph(draw) -> str:
    parts = draw(st.lists(sentence, min_size=1, max_size=14))
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), "The spread $ s = y - r_f. $ was stable.")
    return " ".join(parts)


@st.composite
def bullet_list(draw) -> str:
    items = draw(st.lists(st.lists(sentence, min_size=1, max_size=4), min_size=2, max_size=10))
    marker = draw(st.sampled_from(["- ", "* ", "1. "]))
    return "\n".join(marker + " ".join(item) for item in items)


@st.composite
def pipe_table(draw) -> str:
    cols = draw(st.integers(2, 6))
    rows = draw(st.integers(1, 45))
    head = "| " + " | ".join(draw(word).title() + f" {c}" for c in range(cols)) + " |"
    body = [f"| {draw(word)} row{r} | " + " | ".join(draw(number) for _ in range(cols - 1)) + " |" for r in range(rows)]
    return "\n".join([head, "|" + "---|" * cols, *body])


@st.composite
def html_table(draw) -> str:
    groups = draw(st.lists(st.integers(1, 3), min_size=1, max_size=14))
    out = ["<table>", "<thead>", "<tr><th>Region</th><th>Quarter</th><th>Amount</th></tr>", "</thead>", "<tbody>"]
    for g, span in enumerate(groups):
        for k in range(span):
            lead = (f'<td rowspan="{span}">{draw(word)} {g}</td>' if span > 1 else f"<td>{draw(word)} {g}</td>") if k == 0 else ""
            out.append(f"<tr>{lead}<td>Q{k + 1}</td><td>{draw(number)}</td></tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


@st.composite
def formula(draw) -> str:
    terms = draw(st.lists(st.sampled_from(["\\alpha_{i}", "\\beta^{2}", "\\frac{a}{b}", "\\sum_{j=1}^{n} x_j",
                                           "\\int_0^1 f(t)\\,dt", "\\sigma_p"]), min_size=1, max_size=60))
    body = " + ".join(terms)
    return draw(st.sampled_from([f"$$\n{body}\n$$", f"\\[\n{body}\n\\]", f"$${body}$$"]))


@st.composite
def heading(draw) -> str:
    return "#" * draw(st.integers(1, 4)) + " " + draw(st.sampled_from(TITLES)) + f" {draw(st.integers(1, 99))}"


element = st.one_of(paragraph(), paragraph(), bullet_list(), pipe_table(), html_table(), formula(), heading(), heading())


@st.composite
def documents(draw) -> list[str]:
    pages = draw(st.lists(st.lists(element, min_size=1, max_size=7), min_size=1, max_size=4))
    return ["\n\n".join(page) for page in pages]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pages=documents(), max_tokens=st.sampled_from([64, 128, 256]), overlap=st.sampled_from([0, 0, 24]))
def test_generated_documents_keep_every_promise(pages, max_tokens, overlap):
    counter = default_counter()
    doc = make_doc(*pages)
    # generated pages repeat sentences at their edges by chance: repetition-based header/footer
    # detection is tested on real documents instead
    options = ChunkerOptions(max_tokens=max_tokens, overlap_tokens=overlap, infer_heading_levels=False,
                             furniture_min_pages=0)
    chunks = Chunker(counter, options).chunk(doc)
    assert check_chunks(doc, chunks, counter, max_tokens) == []
    assert path_failures(doc, chunks) == []
