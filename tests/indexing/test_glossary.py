"""Query expansion: glossary matching, files, and its effect on a real ranking."""

from __future__ import annotations

import json

import pytest

from folioflow.indexing.glossary import FINANCE, Glossary, load_glossary
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import StoreSettings, open_store
from folioflow.ocr.errors import ConfigurationError

from .conftest import make_document


def test_finance_glossary_appends_filing_wording():
    q = "What is the FY2018 COGS for 3M? Use the P&L and the cash flow statement."
    expanded = FINANCE.expand(q)
    lines = expanded.split("\n")
    assert lines[0] == q  # the question itself is searched unchanged, wording appended after it
    assert lines[1].startswith("consolidated statements of operations")  # glossary order, not query order
    assert lines[2].startswith("consolidated statements of cash flows")
    assert lines[3] == "cost of sales cost of revenues"
    assert FINANCE.expand("Which law governs the agreement?") == "Which law governs the agreement?"
    assert FINANCE.matches("balance sheet and statement of financial position") == [FINANCE.entries[1].expansion]
    assert FINANCE.matches("cogsworth") == []  # whole words only
    # a metric is followed by the lines of its definition
    assert FINANCE.matches("What was the inventory turnover?") == ["cost of sales inventories"]
    assert FINANCE.matches("Is it a capital-intensive business with positive working capital?") == [
        "total current assets total current liabilities",
        "purchases of property, plant and equipment property, plant and equipment, net total assets net sales"]
    assert FINANCE.matches("What is the dividend retention ratio?") == ["dividends paid net income"]
    assert FINANCE.matches("gross profit margin") == ["gross profit net sales cost of sales"]  # not the net margin too
    assert FINANCE.matches("return on average shareholders\u2019 equity") == ["net income total shareholders equity"]
    assert FINANCE.matches("FCF") == FINANCE.matches("free cash flow") != []
    assert FINANCE.matches("Tier 1 leverage ratio") == []  # a bank's capital measure, not debt-to-equity


def test_glossary_files_and_specs(tmp_path):
    (tmp_path / "legal.json").write_text(json.dumps([{"pattern": r"\bNDA\b", "expansion": "non-disclosure agreement"}]))
    (tmp_path / "legal.yaml").write_text("- pattern: '\\bIP\\b'\n  expansion: intellectual property\n")
    assert load_glossary(tmp_path / "legal.json").expand("nda term?") == "nda term?\nnon-disclosure agreement"
    assert load_glossary(str(tmp_path / "legal.yaml")).matches("Who owns the IP?") == ["intellectual property"]
    assert load_glossary("finance") is FINANCE and load_glossary(None) is FINANCE and load_glossary("none") is None
    (tmp_path / "bad.json").write_text(json.dumps([{"pattern": "(unclosed", "expansion": "x"}]))
    with pytest.raises(ConfigurationError, match="bad pattern"):
        load_glossary(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match="cannot read glossary"):
        load_glossary(tmp_path / "missing.json")
    with pytest.raises(ConfigurationError, match="cannot read glossary"):
        Glossary.from_file((tmp_path / "legal.json").with_suffix(".txt"))  # no such file either


def test_a_glossary_file_with_example_questions_matches_by_meaning(tmp_path, embedder):
    """A user's glossary file may hold example questions (canonical question -> other wordings) and
    concepts: a question no pattern matches then takes the expansion of the closest example, as
    with the legal glossary; a file of patterns alone matches by keyword only."""
    (tmp_path / "lease.yaml").write_text(
        "entries:\n"
        "  - pattern: '\\bsubordinat\\w*'\n"
        "    expansion: subordination and non-disturbance; subordinate to any mortgage or deed of trust\n"
        "  - pattern: '\\bcommon area\\w*'\n"
        "    expansion: common area maintenance charges; CAM; operating expenses\n"
        "examples:\n"
        "  Is the lease subordinate to the landlord's mortgage?:\n"
        "    - Does the bank's loan on the building come ahead of the tenant's rights?\n"
        "  What are the common area charges?:\n"
        "    - How much does the tenant pay for upkeep of the lobby and parking lot?\n")
    glossary = load_glossary(tmp_path / "lease.yaml")
    assert glossary.semantic and len(glossary.examples) == 4
    question = "Does the tenant contribute to cleaning the shared hallways and car park?"
    assert glossary.matches(question) == []
    expanded = glossary.expand(question, embedder.encode_query(question), embedder.encode, "test-minilm")
    assert expanded.split("\n") == [question, "common area maintenance charges; CAM; operating expenses"]
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"pattern": r"\bCAM\b", "expansion": "common area maintenance"}]))
    assert not load_glossary(plain).semantic
    assert load_glossary(plain).expand(question, embedder.encode_query(question), embedder.encode) == question
    (tmp_path / "bad.yaml").write_text("entries: []\nexamples:\n  What is the rent?: How much is the rent?\n")
    with pytest.raises(ConfigurationError, match="needs a list of wordings"):
        load_glossary(tmp_path / "bad.yaml")


def test_an_abbreviation_finds_the_statement_only_with_the_glossary(tmp_path, embedder):
    item7, item8 = ["Item 7. Management's Discussion and Analysis"], ["Item 8. Financial Statements"]
    parts = [
        (item7 + ["Results of Operations"], "text",
         "Net sales increased 12% in 2018 to $1,204 million, driven by higher volumes in the Industrial segment and "
         "favourable pricing. Cost of sales grew more slowly than net sales, so gross margin improved by 80 basis "
         "points. Operating income rose to $212 million and net income to $150 million.", 31),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF EARNINGS (in millions)\n"
         "Years ended December 31 | 2018 | 2017\nNet sales | $ 1,204 | $ 1,075\nCost of sales | 802 | 724\n"
         "Selling and administrative expenses | 190 | 175\nOperating income | 212 | 176\nNet earnings | $ 150 | $ 121", 52),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF FINANCIAL CONDITION (in millions)\n"
         "December 31 | 2018 | 2017\nCash and equivalents | $ 140 | $ 98\nReceivables | 205 | 188\n"
         "Inventories | 160 | 151\nTotal current assets | 505 | 437\nTotal assets | $ 1,290 | $ 1,180", 53),
        (item8, "table",
         "NORTHWIND INDUSTRIES, INC. CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)\n"
         "Years ended December 31 | 2018 | 2017\nNet earnings | $ 150 | $ 121\nDepreciation | 64 | 60\n"
         "Additions to property and equipment | (75) | (70)\nDividends paid | (40) | (36)", 54),
    ]
    store = open_store(StoreSettings(data_dir=tmp_path, backend="local"))
    try:
        Indexer(embedder, store).index(*make_document("northwind-10k-2018.pdf", parts))
        query = "What was the FY2018 COGS for Northwind?"
        for mode in ("dense", "hybrid"):
            with_terms = FolioRetriever(store=store, embedder=embedder, k=1, mode=mode).invoke(query)
            without = FolioRetriever(store=store, embedder=embedder, k=1, mode=mode, glossary=None).invoke(query)
            assert with_terms[0].metadata["page_start"] == 52, mode  # the statement holding "Cost of sales"
            assert without[0].metadata["page_start"] != 52, mode
    finally:
        store.close()


def test_legal_glossary_appends_drafting_wording_to_clause_questions():
    from folioflow.indexing.glossary import LEGAL

    assert load_glossary("legal") is LEGAL
    q = "What must the parties still do after the agreement ends?"
    lines = LEGAL.expand(q).split("\n")
    assert lines[0] == q and "upon termination or expiration" in lines[1]
    # the concept, however the question words it
    for question in ("What obligations continue once the contract is terminated?", "Which clauses survive?"):
        assert any("upon termination" in m for m in LEGAL.matches(question)), question
    assert any("contest" in m for m in LEGAL.matches("May the distributor challenge the supplier's trademarks?"))
    assert any("aggregate liability" in m for m in LEGAL.matches("Is there a cap on liability?"))
    assert any("aggregate liability" in m for m in LEGAL.matches("Is either party's liability limited?"))
    assert LEGAL.matches("Who are the parties to this agreement?") == []  # the party block has its own rule
    # when a contract takes effect: a definition or a term clause answers as often as the preamble
    for question in ("When does the agreement become effective?", "When does this agreement take effect?",
                     "When does the term commence?"):
        assert any("shall become effective on" in m for m in LEGAL.matches(question)), question
    assert LEGAL.matches("On what date was this agreement made?") == []  # a date question: the date rule
    # the license granted, and a minimum to buy, sell or pay, however the question words them
    for question in ("What license does the agreement grant, and to whom?", "What is the scope of the license granted?",
                     "What rights to use the software does the customer get?"):
        assert any("hereby grants" in m for m in LEGAL.matches(question)), question
    for question in ("Is there a minimum purchase commitment?", "Must the distributor buy at least 500 units a year?",
                     "Is there a minimum annual royalty?", "Is it a take-or-pay contract?"):
        assert any("a minimum of" in m for m in LEGAL.matches(question)), question
    assert not any("a minimum of" in m for m in LEGAL.matches("What is the minimum insurance coverage?"))
    assert any("perpetual" in m for m in LEGAL.matches("Is the license granted in perpetuity?"))
    assert any("sole and exclusive" in m for m in LEGAL.matches(
        "Is the reseller prevented from working with other suppliers?"))
    # the words lawyers also use for exclusivity, assignment, hiring away staff, a license for good
    # (found in a later wording set's questions: each concept, asked otherwise)
    for question, words in (("Must the distributor deal only with the supplier?", "sole and exclusive"),
                            ("Is the buyer barred from buying from anyone else?", "sole and exclusive"),
                            ("Can a party transfer its rights under the contract without the other's approval?",
                             "may not assign"),
                            ("Can either party assign the agreement without permission?", "may not assign"),
                            ("Is either side barred from poaching the other's personnel?", "shall not solicit, recruit"),
                            ("May the vendor recruit the customer's staff?", "shall not solicit, recruit"),
                            ("Is the license granted permanently?", "perpetual, irrevocable"),
                            ("Can the licensor revoke the license?", "perpetual, irrevocable"),
                            ("May the licensee grant sub-licences?", "non-sublicensable")):
        assert any(words in m for m in LEGAL.matches(question)), question
    for question in ("Who may the supplier sell to?", "Must the parties keep the terms confidential?",
                     "Can the customer hire consultants?", "Is there a permanent establishment clause?"):
        assert not any(words in m for m in LEGAL.matches(question) for words in
                       ("sole and exclusive", "may not assign", "shall not solicit, recruit")), question
    assert LEGAL.matches("What was the FY2018 COGS for 3M?") == []
    assert FINANCE.matches("Is a party restricted from competing with the other?") == []



def test_the_legal_glossary_matches_clause_concepts_by_meaning(embedder):
    """Questions worded so that no keyword pattern fires still get their clause's drafting words,
    through the entry closest in meaning (the retriever's own model); questions that name no
    clause concept (parties, dates, finance) stay as asked."""
    from folioflow.indexing.glossary import LEGAL

    def expand(question: str) -> str:
        return LEGAL.expand(question, embedder.encode_query(question), embedder.encode, "test-minilm")

    assert LEGAL.semantic and not FINANCE.semantic
    reworded = {
        "Can the reseller transfer this contract to a buyer of its business?": "without prior written consent",
        "What coverage must the vendor maintain, and in what amounts?": "certificates of insurance",
        "Which jurisdiction's rules control the interpretation of the deal?": "governed by and construed",
        "Can the licensor look at the licensee's accounting records?": "books, records and accounts",
        "Is the vendor barred from selling rival goods?": "engage in any business that competes",
        "Who holds title to the inventions made during the project?": "sole property of",
    }
    for question, drafting in reworded.items():
        assert LEGAL.matches(question) == [], question  # not the keyword patterns
        lines = expand(question).split("\n")
        assert lines[0] == question and len(lines) == 2 and drafting in lines[1], (question, lines)
    for question in ("Who are the parties?", "Who are the parties to this agreement?", "What is the agreement date?",
                     "What is the address for notices?",
                     "What is the purchase price?", "Summarize this document.",
                     "What was Apple's net revenue in fiscal 2022?", "What was 3M's capital expenditure in FY2018?",
                     "How much cash did the company generate from operations in 2021?"):
        assert expand(question) == question, question
    # keyword matches come alone; without a vector, or for the finance glossary, no meaning match
    assert expand("Which clauses survive?").count("\n") == 1
    assert LEGAL.expand("Who holds title to the inventions made during the project?") == \
        "Who holds title to the inventions made during the project?"
    q = "Is the vendor barred from selling rival goods?"
    assert FINANCE.expand(q, embedder.encode_query(q), embedder.encode) == q

def test_the_legal_glossary_expands_a_question_like_its_closest_example_question(embedder):
    """A question that no pattern matches takes the expansions that the patterns give the canonical
    wording of the example question closest to it in meaning; a question closest to an example that
    the patterns expand to nothing (who the parties are) stays as asked, and the concepts are not
    consulted for it; a glossary without examples falls back to the concepts."""
    from folioflow.indexing.glossary import LEGAL, Glossary
    from folioflow.indexing.glossary_examples import LEGAL_EXAMPLES

    def vector(question: str):
        return embedder.encode_query(question)

    # every canonical question either matches a pattern or is one of the two that expand nothing
    assert [q for q in LEGAL_EXAMPLES if not LEGAL.matches(q)] == [
        "Who are the parties to this agreement?", "On what date was this agreement made?"]
    assert len(LEGAL.examples) == sum(1 + len(set(w) - {q}) for q, w in LEGAL_EXAMPLES.items())
    for question, drafting in {"Can either side hire away the other's people?": "shall not solicit",
                               "Is there a ceiling on what either side can be made to pay in damages?":
                                   "limitation of liability",
                               "Can the licensee pass its rights on to someone else?": "non-transferable"}.items():
        assert LEGAL.matches(question) == [], question
        example = LEGAL.closest_example(vector(question), embedder.encode, "test-minilm")
        assert example is not None and LEGAL.matches(example.canonical) == list(example.expansions)
        expansions = example.expansions
        assert len(expansions) == 1 and drafting in expansions[0], (question, expansions)
        lines = LEGAL.expand(question, vector(question), embedder.encode, "test-minilm").split("\n")
        assert lines == [question, *expansions]
    # a category the patterns give two entries: both expansions
    keep = LEGAL.closest_example(vector("Who gets to keep the inventions?"), embedder.encode, "test-minilm").expansions
    assert len(keep) == 2 and "sole property of" in keep[0] and "jointly owned" in keep[1]
    poach = "Can either side hire away the other's people?"
    # closest to a parties question: the example decides, and it expands nothing
    signed = "Which businesses entered into this contract with each other?"
    parties = LEGAL.closest_example(vector(signed), embedder.encode, "test-minilm")
    assert LEGAL.matches(signed) == [] and parties is not None and parties.expansions == ()
    assert parties.canonical == "Who are the parties to this agreement?"
    assert LEGAL.expand(signed, vector(signed), embedder.encode, "test-minilm") == signed
    concepts_only = Glossary([(e.pattern.pattern, e.expansion, e.concept) for e in LEGAL.entries],
                             semantic_threshold=LEGAL.semantic_threshold, semantic_margin=LEGAL.semantic_margin)
    assert concepts_only.examples == [] and concepts_only.closest_example(vector(poach), embedder.encode) is None
    # far from every example (below the threshold): no example decides
    weather = "What will the weather be in Lisbon tomorrow?"
    assert LEGAL.closest_example(vector(weather), embedder.encode, "test-minilm") is None


#: A distribution agreement's clauses, drafted as such agreements are: [(clause title, text)].
DISTRIBUTION_CLAUSES = [
    ("1. Appointment", "Supplier appoints Distributor as a distributor of the Products in the Territory for the Term. "
     "Distributor may appoint sub-distributors in the Territory with Supplier's prior written approval."),
    ("4. Intellectual Property Notices", "Distributor shall display Supplier's trademark and patent notices on all "
     "packaging, labels and promotional materials for the Products, in the form Supplier prescribes from time to time."),
    ("7. Effect of Termination", "Upon termination or expiration of this Agreement, Distributor shall cease to use the "
     "Marks, return or destroy all Confidential Information of Supplier, and may sell off its remaining inventory of "
     "Products for ninety days."),
    ("9. Protection of Marks", "Distributor shall not contest or dispute the validity of the Marks or Supplier's "
     "ownership of them, nor assist any third party in doing so, during the Term or thereafter."),
    ("10. Restrictive Covenants", "During the Term and for one year thereafter, Distributor shall not, directly or "
     "indirectly, manufacture, sell or promote any products that compete with the Products in the Territory."),
    ("11. Ownership of Developments", "All inventions, improvements and work product made by Distributor relating to "
     "the Products shall vest in and be the sole property of Supplier, and Distributor hereby assigns them to Supplier."),
    ("12. Dispute Resolution", "Any dispute between the parties arising out of this Agreement shall be settled by "
     "arbitration in Chicago, Illinois, and each party shall bear its own costs of the arbitration."),
    ("13. Relationship", "The parties are independent contractors. Neither party may bind the other or incur any "
     "obligation on the other party's behalf, and nothing here creates a partnership or joint venture."),
    ("14. Term", "This Agreement begins on the Effective Date and ends on December 31, 2027, unless the parties extend "
     "it in writing. The parties shall meet each year to review the other party's performance."),
]


def test_the_legal_glossary_finds_clauses_drafted_in_other_words(tmp_path, embedder):
    """A lawyer's question names the concept (competing, challenging the other's IP, what happens
    after the agreement ends, who owns what is created); the clause uses drafting words (compete
    with the Products, contest the validity of the Marks, upon termination, vest in and be the
    sole property of). The legal profile's glossary finds each clause first in hybrid search."""
    parts = [(["DISTRIBUTION AGREEMENT", title], "text", text, 1 + i // 3)
             for i, (title, text) in enumerate(DISTRIBUTION_CLAUSES)]
    store = open_store(StoreSettings(data_dir=tmp_path, backend="local"))
    try:
        Indexer(embedder, store).index(*make_document("Birch Foods - Distribution Agreement.pdf", parts))
        questions = {
            "Is a party barred from challenging the other's intellectual property?": "9. Protection of Marks",
            "What must the parties still do after the agreement ends?": "7. Effect of Termination",
            "Who owns the inventions a party makes under this contract?": "11. Ownership of Developments",
            "Is the distributor restricted from competing with the supplier?": "10. Restrictive Covenants",
        }
        legal = FolioRetriever(store=store, embedder=embedder, k=3)  # profile auto: the title names an agreement
        assert legal.resolve_profile() == "legal"
        plain = FolioRetriever(store=store, embedder=embedder, k=3, glossary=None)
        missed_without = 0
        for question, title in questions.items():
            assert legal.invoke(question)[0].metadata["heading_path"][-1] == title, question
            missed_without += plain.invoke(question)[0].metadata["heading_path"][-1] != title
        assert missed_without  # without the glossary, some clause was not first
    finally:
        store.close()
