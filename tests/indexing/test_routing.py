"""Document routing by title: which documents a question names, and its effect on a real ranking."""

from __future__ import annotations

import pytest

from folioflow.indexing.indexer import Indexer
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.routing import (
    TitleRouter,
    fuse_rankings,
    fuse_scores,
    parties_in,
    party_terms,
    question_periods,
    tickers_in,
    title_terms,
)
from folioflow.indexing.store import SearchHit, StoreSettings, open_store
from folioflow.ocr.schema import source_title

from .conftest import make_document

# File names as FinanceBench ships them, plus one that names nothing.
FILINGS = ["3M_2018_10K.pdf", "3M_2022_10K.pdf", "AMERICANWATERWORKS_2021_10K.pdf", "COCACOLA_2017_10K.pdf",
           "MGMRESORTS_2022Q4_EARNINGS.pdf", "JPMORGAN_2023Q2_10Q.pdf", "scan_0001.pdf"]


def test_titles_and_terms():
    assert source_title("s3://bucket/filings/3M_2018_10K.pdf") == "3M 2018 10K"
    assert source_title("deals/acme-msa.v2.pdf") == "acme msa.v2"
    assert source_title("x.pdf", "  Acme   Master Services Agreement ") == "Acme Master Services Agreement"
    assert title_terms("MGMRESORTS 2022Q4 EARNINGS") == {"mgmresorts", "2022q4", "2022", "earnings"}
    assert title_terms("scan 0001") == {"scan", "0001"}
    assert title_terms("Form 10 K") == {"form", "10"}  # one-character words are left out


def test_the_router_picks_the_documents_a_question_names():
    router = TitleRouter({name: source_title(name) for name in FILINGS})
    assert router.route("What is the FY2018 capital expenditure amount (in USD millions) for 3M?") == ["3M_2018_10K.pdf"]
    assert router.route("Is 3M a capital-intensive business?") == ["3M_2018_10K.pdf", "3M_2022_10K.pdf"]
    assert router.route("Does American Water Works have positive working capital in FY2021?") == [
        "AMERICANWATERWORKS_2021_10K.pdf"]  # words written together in the file name
    assert router.route("Coca-Cola's 2017 dividend payout ratio?") == ["COCACOLA_2017_10K.pdf"]
    assert router.route("Which region had the highest EBITDAR for MGM during FY2022?") == [
        "MGMRESORTS_2022Q4_EARNINGS.pdf"]  # an all-capitals word as a prefix
    assert router.route("What was JPM's CET1 ratio in 2023?") == ["JPMORGAN_2023Q2_10Q.pdf"]
    assert router.route("What was net income last year?") is None  # nothing that names a document
    assert router.route("Net income in the 10-K?") is None  # "10k" is in 4 of the 7 titles: it names none
    scores = router.scores("3M FY2022 10-K")
    assert scores["3M_2022_10K.pdf"] > scores["3M_2018_10K.pdf"] > 0 and "COCACOLA_2017_10K.pdf" not in scores
    assert "scan_0001.pdf" not in scores
    # a lowercase "mgm" or a short prefix does not match: "net" must not route to a NETFLIX filing
    assert TitleRouter({"a": "NETFLIX 2017 10K", "b": "ADOBE 2017 10K"}).route("net income in 2017") is None
    assert TitleRouter({"a": "NETFLIX 2017 10K", "b": "ADOBE 2017 10K"}, max_documents=1).route("the 2017 10-K") is None


def test_words_that_name_nothing_do_not_route():
    """Function words and terms most titles share, finance abbreviations in capitals, a question in
    capitals and amounts ("$3M") do not route (a reviewer's cases)."""
    titles = {n: source_title(n) for n in FILINGS + ["Minutes of the Board.pdf", "Report on the Audit.pdf",
                                                       "USBANCORP_2022_10K.pdf", "NETFLIX_2017_10K.pdf"]}
    router = TitleRouter(titles)
    assert router.route("What is the revenue of the company?") is None
    assert router.route("WHAT WAS NET INCOME IN 2017?") == ["COCACOLA_2017_10K.pdf", "NETFLIX_2017_10K.pdf"]  # the year only
    assert router.route("What were revenues in USD?") is None
    assert router.route("Did capex exceed $3M?") is None
    assert router.route("What did the Board minutes record?") == ["Minutes of the Board.pdf"]
    assert router.route("Netflix's 2017 content spend?") == ["NETFLIX_2017_10K.pdf"]
    common = TitleRouter({f"d{i}": f"ACME {2015 + i} 10K" for i in range(6)})
    assert all("10k" not in terms and "acme" not in terms for terms in common.terms.values())  # in every title
    assert common.route("ACME's 2018 10-K") == ["d3"]


def test_fuse_rankings_is_reciprocal_rank_fusion():
    a = [SearchHit("x", 0.9, {}), SearchHit("y", 0.8, {})]
    b = [SearchHit("y", 0.5, {}), SearchHit("z", 0.4, {})]
    fused = fuse_rankings([a, b], k=60)
    assert [hit.id for hit, _ in fused] == ["y", "x", "z"]
    assert abs(fused[0][1] - (1 / 62 + 1 / 61)) < 1e-12 and fused[0][0].score == 0.8  # first-seen hit kept


def test_fuse_scores_is_a_convex_combination_of_max_normalised_scores():
    dense = [SearchHit("m1", 0.62, {}), SearchHit("m2", 0.60, {}), SearchHit("m3", 0.5, {}),
             SearchHit("clause", 0.31, {})]
    sparse = [SearchHit("clause", 18.0, {}), SearchHit("m2", 6.0, {}), SearchHit("m1", 5.0, {})]
    fused = fuse_scores([dense, sparse], weights=(0.7, 1.0))
    # far ahead in BM25 (18 against 6) outweighs being placed second and third in both
    assert [hit.id for hit, _ in fused] == ["clause", "m2", "m1", "m3"]
    assert abs(fused[0][1] - (0.7 * 0.31 / 0.62 + 1.0)) < 1e-12 and fused[0][0].score == 0.31  # first-seen hit
    assert [hit.id for hit, _ in fuse_rankings([dense, sparse])] == ["m1", "m2", "clause", "m3"]  # by places only
    scaled = fuse_scores([dense, sparse], weights=(0.7, 1.0), scale=0.5)
    assert [s for _, s in scaled] == [s * 0.5 for _, s in fused]
    assert fuse_scores([[SearchHit("a", 0.0, {})], []]) == [(SearchHit("a", 0.0, {}), 0.0)]  # no division by 0
    both = fuse_scores([[SearchHit("a", 0.5, {}), SearchHit("b", 0.49, {})],
                        [SearchHit("a", 3.0, {}), SearchHit("b", 2.9, {})]], weights=(5.0, 0.1))
    assert both[0][0].id == "a"  # first in both is first whatever the weights


def _statement(cogs_label: str, figure: str):
    """A statement page and a business page; neither names the company (as in most filings' pages)."""
    return [(["Item 8. Financial Statements"], "table",
             f"CONSOLIDATED STATEMENTS OF OPERATIONS (in millions)\nYears ended December 31 | 2018 | 2017\n"
             f"Net sales | $ 1,204 | $ 1,075\n{cogs_label} | {figure} | 724\nOperating income | 212 | 176", 52),
            (["Item 1. Business"], "text", "The Company designs and sells industrial equipment to customers in "
             " in North America and Europe through distributors and its own sales force.", 3)]


def test_routing_puts_the_named_filing_first(tmp_path, embedder):
    """Two filings with the same statement: the question names one company, whose statement words its
    line differently. Without routing the other filing's closer wording wins; with it, the named one."""
    store = open_store(StoreSettings(data_dir=tmp_path, backend="local"))
    try:
        indexer = Indexer(embedder, store)
        indexer.index(*make_document("INITECH_2018_10K.pdf", _statement("Cost of sales", "802")))
        indexer.index(*make_document("GLOBEX_2018_10K.pdf", _statement("Cost of revenue", "640")))
        query = "What was the 2018 cost of sales for Globex?"
        for mode in ("dense", "sparse", "hybrid"):
            plain = FolioRetriever(store=store, embedder=embedder, k=2, mode=mode, route_titles=False).invoke(query)
            routed = FolioRetriever(store=store, embedder=embedder, k=2, mode=mode).invoke(query)
            assert plain[0].metadata["path"] == "INITECH_2018_10K.pdf", mode
            assert routed[0].metadata["path"] == "GLOBEX_2018_10K.pdf" and "640" in routed[0].page_content, mode
            assert routed[0].metadata["search_score"] == next(d.metadata["score"] for d in plain if d.id == routed[0].id) \
                or routed[0].id not in {d.id for d in plain}, mode  # the mode's own score is kept aside
            scores = [d.metadata["score"] for d in routed]
            assert scores == sorted(scores, reverse=True), mode  # the score ranks: it follows the fused order
            assert all(d.metadata["search_score"] == d.metadata["score"] for d in plain), mode
        # a doc_ids restriction from the caller turns routing off
        initech = plain[0].metadata["doc_id"]
        only = FolioRetriever(store=store, embedder=embedder, k=2).invoke(query, doc_ids=[initech])
        assert {d.metadata["doc_id"] for d in only} == {initech}
    finally:
        store.close()


def test_the_router_sees_only_the_callers_tenant(tmp_path, embedder):
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge", tenancy=True))
    try:
        indexer = Indexer(embedder, store)
        indexer.index(*make_document("GLOBEX_2018_10K.pdf", _statement("Cost of sales", "640"), tenant="globex"))
        indexer.index(*make_document("INITECH_2018_10K.pdf", _statement("Cost of sales", "802"), tenant="initech"))
        retriever = FolioRetriever(store=store, embedder=embedder, tenant="initech", k=5)
        docs = retriever.invoke("What was the 2018 cost of sales for Globex?")
        assert docs and {d.metadata["tenant"] for d in docs} == {"initech"}
        assert [t for terms in retriever._router("initech", None).terms.values() for t in terms if "globex" in t] == []
    finally:
        store.close()


def test_common_words_of_a_sentence_case_question_do_not_route():
    """A fresh user's case: "agreement" was in one contract's file name only ("...Agreement2" does
    not give the word), so the README's legal question went to that contract's recitals page."""
    titles = {n: source_title(n) for n in ["sample.pdf", "RgcResources Franchise Agreement.pdf",
                                            "Acme Maintenance Agreement2.pdf", "NETFLIX_2017_10K.pdf"]}
    router = TitleRouter(titles)
    assert router.route("Which state's law governs the agreement?") is None
    assert router.route("Which state's law governs the Franchise Agreement?") == ["RgcResources Franchise Agreement.pdf"]
    assert router.route("What was Netflix revenue in 2017?") == ["NETFLIX_2017_10K.pdf"]
    assert router.route("netflix revenue 2017") == ["NETFLIX_2017_10K.pdf"]  # search-box style: every word


#: File names as CUAD and EDGAR write them: legal forms glued to the name, CamelCase, capitals.
CUAD_NAMES = {
    "pareteum": "PareteumCorp_20191004_8-K_EX-10.1_11843221_EX-10.1_Maintenance Agreement.pdf",
    "pollo": "ElPolloLocoHoldingsInc_20200306_10-K_EX-10.16_12041700_EX-10.16_Development Agreement.pdf",
    "tuniu": "TUNIUCORP_03_06_2014-EX-10-COOPERATION AGREEMENT.PDF",
    "senmiao": "SENMIAOTECHNOLOGYLTD_02_19_2019-EX-10.5-Collaboration Agreement.PDF",
    "salesforce": "SalesforcecomInc_20171122_10-Q_EX-10.1_10961535_EX-10.1_Reseller Agreement.pdf",
    "pcquote": "PcquoteComInc_19990721_S-1A_EX-10.11_6377149_EX-10.11_Co-Branding Agreement2.pdf",
    "quaker": "Quaker Chemical Corporation - NON COMPETITION AND NON SOLICITATION AGREEMENT.PDF",
    "scansource": "ScansourceInc_20190822_10-K_EX-10.39_11793959_EX-10.39_Distributor Agreement.pdf",
    "verizon": "VerizonAbsLlc_20200123_8-K_EX-10.4_11952335_EX-10.4_Service Agreement.pdf",
}


@pytest.mark.parametrize(("question", "expected"), [
    ("Which state's law governs the Pareteum agreement?", "pareteum"),
    ("Can El Pollo Loco terminate the development agreement for convenience?", "pollo"),
    ("Who are the parties to the Tuniu cooperation agreement?", "tuniu"),
    ("Does Senmiao have a right of first refusal?", "senmiao"),
    ("What discounts does Salesforce give its reseller?", "salesforce"),
    ("Is PCQuote's co-branding agreement exclusive?", "pcquote"),
    ("What may Quaker Chemical employees not do after leaving?", "quaker"),
    ("ScanSource distributor agreement: governing law?", "scansource"),
    ("pareteum governing law", "pareteum"),
])
def test_routing_matches_names_as_people_write_them(question, expected):
    router = TitleRouter(CUAD_NAMES)
    assert router.route(question) == [expected]


def test_glued_names_do_not_route_common_questions():
    router = TitleRouter(CUAD_NAMES)
    assert router.route("Which state's law governs this agreement?") is None
    assert router.route("Can either party terminate for convenience, and on how much notice?") is None


#: A 10-Q cover as the text layer reads it (3M's, FinanceBench 3M_2023Q2_10Q page 1): the ticker
#: column holds the common stock's symbol and notes' symbols with digits.
COVER_10Q = """3M COMPANY

Securities registered pursuant to Section 12(b) of the Act:

| Title of each class | Trading Symbol(s) | Name of each exchange on which registered |
|---|---|---|
| Common Stock, Par Value $.01 Per Share | MMM | New York Stock Exchange |
| | MMM | Chicago Stock Exchange, Inc. |
| 1.500% Notes due 2026 | MMM26 | New York Stock Exchange |
"""


def test_tickers_are_read_from_a_filings_cover():
    assert tickers_in(COVER_10Q) == ["MMM"]
    lines = "Title of each class\nTrading Symbol(s)\nName of each exchange\nCommon Stock\nKO\nNew York Stock Exchange"
    assert tickers_in(lines) == ["KO"]  # one cell a line, as plain text gives it
    # the column as folioflow's text layer makes it of 3M's 2022 10-K cover: a heading, then the symbols
    column = ("### Trading Symbol(s)\n\nMMM MMM MMM23 MMM26 MMM30\n\n### Name of each exchange on which registered"
              "\n\nNew York Stock Exchange Chicago Stock Exchange, Inc.\n\nNote: The common stock of the registrant is also "
              "traded on the SIX Swiss Exchange. Indicate by check mark if the registrant "
              "is a well-known seasoned issuer (WKSI)")
    assert tickers_in(column) == ["MMM"]
    assert tickers_in("MGM Resorts International (NYSE: MGM) today reported ...") == ["MGM"]
    assert tickers_in('listed on the Nasdaq Global Select Market under the symbol "NFLX".') == ["NFLX"]
    assert tickers_in("The Company shall pay the NYSE listing fee. GAAP net income rose.") == []


def test_a_ticker_printed_on_the_cover_routes_to_its_filings():
    """MMM and KO are not in the file names and do not start the names: only the covers tell."""
    router = TitleRouter({name: source_title(name) for name in FILINGS},
                         tickers={"3M_2022_10K.pdf": tickers_in(COVER_10Q), "COCACOLA_2017_10K.pdf": ["KO"]})
    assert router.route("What was MMM's capital expenditure in FY2022?") == ["3M_2022_10K.pdf"]
    assert "mmm" not in router.terms["JPMORGAN_2023Q2_10Q.pdf"] and "ko" not in router.terms["scan_0001.pdf"]
    assert router.route("Did KO raise its dividend in 2017?") == ["COCACOLA_2017_10K.pdf"]
    # without the covers, the tickers name nothing; a ticker that starts the name still matches
    bare = TitleRouter({name: source_title(name) for name in FILINGS})
    assert bare.route("What was MMM's capital expenditure?") is None
    assert router.route("What was MMM's capital expenditure?") == ["3M_2018_10K.pdf", "3M_2022_10K.pdf"]
    # the 2018 10-K's cover printed no symbol: it has 3M's from the 2022 one, so the year decides
    assert router.route("What was MMM's capital expenditure in FY2018?") == ["3M_2018_10K.pdf"]
    assert bare.route("What was JPM's CET1 ratio in 2023?") == ["JPMORGAN_2023Q2_10Q.pdf"]


def _ingested_store(path, data_dir, indexed: int):
    """``path`` (a file or folder) ingested by ``folioflow ingest`` with the text-layer engine into
    ``data_dir``, which must report ``indexed`` documents indexed; its store, opened (close it)."""
    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings

    settings = Settings(data_dir=data_dir, engine="text")
    report = run_ingest([str(path)], settings)
    assert report.count("indexed") == indexed, report
    return open_store(Pipeline.store_settings(settings))


def test_the_pipeline_records_the_tickers_of_a_filings_cover(tmp_path):
    """Through a real ingest: a generated filing whose first page prints its ticker column."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    path = tmp_path / "docs" / "ACME_2023_10K.pdf"
    path.parent.mkdir()
    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    pdf.drawString(72, 720, "ACME CORPORATION")
    pdf.drawString(72, 700, "Securities registered pursuant to Section 12(b) of the Act:")
    for y, row in ((680, ("Title of each class", "Trading Symbol(s)", "Name of each exchange on which registered")),
                   (664, ("Common Stock, $0.01 par value", "ACMX", "New York Stock Exchange"))):
        for x, cell in zip((72, 260, 380), row, strict=True):  # the cover's three columns
            pdf.drawString(x, y, cell)
    pdf.drawString(72, 630, "Indicate by check mark whether the registrant is a well-known seasoned issuer. Yes No")
    pdf.save()
    store = _ingested_store(path, tmp_path / "data", indexed=1)
    try:
        records = store.list_documents()
        assert records[0].metadata["tickers"] == ["ACMX"]
        router = TitleRouter.from_records(records)
        assert "acmx" in router.terms[records[0].doc_id]
    finally:
        store.close()


def test_the_search_inside_routed_documents_leaves_their_names_out():
    """In a shared store of contracts the name picks the contract; searched inside it, the name
    would only favour the chunks that repeat it ("13.9 Bioamber Non-Compete Commitment" for every
    question naming Bioamber)."""
    router = TitleRouter(CUAD_NAMES)
    cases = [("In the Pareteum agreement: which state's law governs this agreement?",
              "In the agreement: which state's law governs this agreement?"),
             ("Can El Pollo Loco terminate the development agreement for convenience?",
              "Can terminate the development agreement for convenience?"),  # lower-case title words stay
             ("ScanSource distributor agreement: governing law?", "distributor agreement: governing law?"),
             ("pareteum governing law", "governing law")]
    for question, inner in cases:
        assert router.without_names(question, router.route(question)) == inner
    filings = TitleRouter({name: source_title(name) for name in FILINGS})
    question = "What was JPM's CET1 ratio in 2023?"  # a capitals prefix goes, the year stays
    assert filings.without_names(question, filings.route(question)) == "What was 's CET1 ratio in 2023?"
    assert router.without_names("Pareteum", ["pareteum"]) == "Pareteum"  # never the whole question


# Filings of one company over several periods, as FinanceBench names them, and two others.
PERIODS = ["LOCKHEEDMARTIN_2020_10K.pdf", "LOCKHEEDMARTIN_2021_10K.pdf", "LOCKHEEDMARTIN_2022_10K.pdf",
           "AMCOR_2023_10K.pdf", "AMCOR_2023Q2_10Q.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "VERIZON_2021_10K.pdf",
           "VERIZON_2022_10K.pdf", "BESTBUY_2024Q2_10Q.pdf", "NETFLIX_2020_10K.pdf"]


def test_the_period_a_question_names_chooses_among_the_filings_it_names():
    """FinanceBench's questions: the company picks the filings, then the period picks among them."""
    router = TitleRouter({name: source_title(name) for name in PERIODS})
    # several years: the latest that the company has a filing for (the 2022 10-K reports 2020 as a comparative;
    # 2020 alone is rarer among the titles and outweighed 2022 when every year counted)
    assert router.route("What is Lockheed Martin's 2 year total revenue CAGR from FY2020 to FY2022?") == [
        "LOCKHEEDMARTIN_2022_10K.pdf"]
    # a future year named in the question: no Verizon title has it, and a year alone never outweighs the name
    assert router.route("As of FY 2021, how much did Verizon expect to pay for its retirees in 2024?") == [
        "VERIZON_2021_10K.pdf"]
    # a quarter of the year, however it is written
    for question in ("What is the nature & purpose of AMCOR's restructuring liability as oF Q2 of FY2023 close?",
                     "Amcor's restructuring liability in Q22023?", "Amcor's net debt at FY2023 Q2?",
                     "Amcor's net debt at the end of the second quarter of fiscal 2023?", "Amcor's net debt in FY23 Q2?"):
        assert router.route(question) == ["AMCOR_2023Q2_10Q.pdf"], question
    # the year only: every filing of that year (the annual report and the year's fourth-quarter release alike)
    assert router.route("What Was AMCOR's Adjusted Non GAAP EBITDA for FY 2023") == [
        "AMCOR_2023Q2_10Q.pdf", "AMCOR_2023Q4_EARNINGS.pdf", "AMCOR_2023_10K.pdf"]
    assert router.route("What was Amcor's FY23 revenue?") == router.route("What was Amcor's FY2023 revenue?")
    # no name: the period alone, as before
    assert router.route("WHAT WAS NET INCOME IN 2020?") == ["LOCKHEEDMARTIN_2020_10K.pdf", "NETFLIX_2020_10K.pdf"]
    assert question_periods("Q2 of FY2023 compared to Q2 of FY2022") == ({2022, 2023}, {"2022q2", "2023q2"})
    assert question_periods("What was net income?") == (set(), set())


JPM_COVER = """Title of each class

Common stock

Trading Symbol(s)

JPM

Depositary Shares, each representing a one-four hundredth interest in a share of 5.75% Non-Cumulative Preferred Stock, Series DD

Depositary Shares, each representing a one-four hundredth interest in a share of 4.55% Non-Cumulative Preferred Stock, Series JJ

JPM PR D

JPM PR J

The New York Stock Exchange

Indicate by check mark whether the registrant (1) has filed all reports"""


def test_preferred_series_and_single_letters_are_not_tickers():
    """JPMorgan's 10-Q cover lists its preferred series ("Series JJ", "JPM PR D"): read as tickers,
    "D&A" in a question about AMD routed to JPMorgan, and "J&J" would have."""
    assert tickers_in(JPM_COVER) == ["JPM"]
    router = TitleRouter({name: source_title(name) for name in FILINGS + ["AMD_2015_10K.pdf"]},
                         tickers={"JPMORGAN_2023Q2_10Q.pdf": ["JPM", "D", "J"], "AMD_2015_10K.pdf": ["AMD"]})
    assert router.route("What is the FY2015 D&A margin for AMD?") == ["AMD_2015_10K.pdf"]
    assert "d" not in router.terms["JPMORGAN_2023Q2_10Q.pdf"] and "jpm" in router.terms["JPMORGAN_2023Q2_10Q.pdf"]


def _restructuring(wording: str, period: str):
    """One filing's restructuring note and a cover page; the note says nothing of the company's name."""
    return [(["Notes to Financial Statements", "Restructuring"], "text",
             f"Restructuring liability {period}. {wording}", 14),
            (["Cover"], "text", "Indicate by check mark whether the registrant has filed all reports.", 1)]


def test_the_quarter_a_question_names_routes_to_that_quarters_filing(tmp_path, embedder):
    """A real store of one company's three 2023 filings: the annual report's note matches the
    question's words best, but the question asks about the second quarter; the finance profile
    ranks the 10-Q's note first, unrouted search the 10-K's."""
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        indexer = Indexer(embedder, store)
        indexer.index(*make_document("AMCOR_2023_10K.pdf", _restructuring(
            "The restructuring liability relates to the 2019 Bemis integration plan and the 2022 Russia exit: "
            "employee termination benefits, facility closure and other costs, expected to be paid within a year.",
            "at June 30, 2023")))
        indexer.index(*make_document("AMCOR_2023Q2_10Q.pdf", _restructuring(
            "Accrued costs of the Bemis plan and exiting Russia: severance owed to employees and closing sites.",
            "at December 31, 2022")))
        indexer.index(*make_document("AMCOR_2023Q4_EARNINGS.pdf", _restructuring(
            "Restructuring and related expenses of the quarter were $30 million.", "fourth quarter")))
        query = "What is the nature and purpose of Amcor's restructuring liability as of Q2 of FY2023?"
        plain = FolioRetriever(store=store, embedder=embedder, k=3, route_titles=False).invoke(query)
        routed = FolioRetriever(store=store, embedder=embedder, k=3)
        assert routed.resolve_profile() == "finance"
        docs = routed.invoke(query)
        assert plain[0].metadata["path"] == "AMCOR_2023_10K.pdf"
        assert docs[0].metadata["path"] == "AMCOR_2023Q2_10Q.pdf" and "severance" in docs[0].page_content
        scores = [d.metadata["score"] for d in docs]
        assert scores == sorted(scores, reverse=True)
    finally:
        store.close()


def test_fuse_rankings_weights():
    a = [SearchHit("x", 0.9, {}), SearchHit("y", 0.8, {})]
    b = [SearchHit("y", 0.5, {}), SearchHit("z", 0.4, {})]
    fused = fuse_rankings([a, b], k=60, weights=(1.0, 5.0))
    assert [hit.id for hit, _ in fused] == ["y", "z", "x"]
    assert abs(fused[1][1] - 5 / 62) < 1e-12


def test_a_store_indexed_before_tickers_were_recorded_reads_them_from_its_converted_documents(tmp_path, embedder):
    """Registry records written before ingest recorded ``tickers`` have no such key: the router reads
    the cover from ``<data_dir>/documents/<doc_id>.json``, the converted document ingest keeps."""
    import json

    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        indexer = Indexer(embedder, store)
        record, chunks = make_document("3M_2022_10K.pdf", _statement("Cost of sales", "802"))
        assert "tickers" not in record.metadata
        indexer.index(record, chunks)
        indexer.index(*make_document("COCACOLA_2022_10K.pdf", _statement("Cost of goods sold", "640")))
        (tmp_path / "documents").mkdir()
        (tmp_path / "documents" / f"{record.doc_id}.json").write_text(json.dumps(
            {"doc_id": record.doc_id, "pages": [{"number": 1, "markdown": COVER_10Q}, {"number": 2, "markdown": ""}]}))
        retriever = FolioRetriever(store=store, embedder=embedder, k=2)
        router = retriever._router(None, None)
        assert "mmm" in router.terms[record.doc_id]
        assert router.route("What was MMM's cost of sales in FY2022?") == [record.doc_id]
        docs = retriever.invoke("What was MMM's cost of sales in FY2022?")
        assert docs[0].metadata["path"] == "3M_2022_10K.pdf"
        # a record that has the key keeps what ingest found, even an empty list
        record.metadata["tickers"] = []
        assert "mmm" not in TitleRouter.from_records([record], documents_dir=tmp_path / "documents").terms[record.doc_id]
    finally:
        store.close()


#: Preambles as contracts write them (the drafting of CUAD's endorsement, supply and reseller agreements).
PREAMBLES = [
    ("THIS AGREEMENT, made and entered into as of this 1st day of January, 2000, by and between MOSSIMO, INC., "
     "2450 White Road, 2nd Floor, Irvine, California 92614 (\"Company\"), and DAVID DUVAL ENTERPRISES, INC. c/o "
     "International Management, Inc., IMG Center, Cleveland, Ohio 44114 (\"Licensor\"):",
     ["MOSSIMO", "DAVID DUVAL ENTERPRISES", "International Management"]),
    ("This Agreement is entered into effective as of the 24th day of August 2018, by and among ALPS Distributors, "
     "Inc., a Colorado corporation (the \u201cDistributor\u201d) and S2K Financial LLC, a Delaware limited liability "
     "company (\u201cS2K\u201d).", ["ALPS Distributors", "S2K Financial"]),
    ("This Distribution Agreement is entered into by and between American Express Incentive Services, L.L.C., a "
     "Missouri limited liability company (\"AEIS\"), and its Reseller, Schoolpop, Inc., a Delaware corporation.",
     ["American Express Incentive Services", "Schoolpop"]),
    ("MASTER SUPPLY AGREEMENT dated November 1, 2019 between REYNOLDS CONSUMER PRODUCTS LLC, a Delaware limited "
     "liability company (\u201cSeller\u201d), and PACTIV LLC (\u201cBuyer\u201d). WHEREAS, the Company, a Delaware "
     "Corporation, sells products to Bank of America, N.A. under the Investment Company Act.",
     ["REYNOLDS CONSUMER PRODUCTS", "PACTIV", "Bank of America"]),
    ("This Agreement is made between the Company and the Employee, an individual.", []),
]


def test_parties_in_reads_the_companies_a_preamble_names():
    for text, names in PREAMBLES:
        assert parties_in(text) == names, text
    # only the start is read: a name past PARTY_CHARS (a signature block of a long contract) is not
    assert parties_in("x " * 3000 + "by and between Acme Corp. and Initech LLC") == []


def test_party_names_match_as_people_and_file_names_write_them():
    assert party_terms("Cyberian Outpost") == {"cyberian", "outpost", "cyberianoutpost"}
    assert {"salesforce", "com", "salesforcecom"} <= party_terms("Salesforce.com")
    assert "gooseheadinsurance" in party_terms("Goosehead Insurance Agency")


#: A contract's first page under an opaque name: the text reads as a contract (drafting cues), its
#: preamble names the parties, one clause answers the question.
CONTRACT_PAGE = """{title}

This {title} (this "Agreement") is made and entered into as of March 1, 2019, by and between {party}, a
Delaware corporation ("Company"), and {other}, a New York limited liability company ("Supplier").

WHEREAS, Company wishes to buy, and Supplier wishes to sell, the products described herein; NOW, THEREFORE,
the parties hereto agree as follows:

1. Supply. Supplier shall deliver the products hereunder within thirty days of each order.

2. Governing Law. This Agreement shall be governed by the laws of the State of {state}.

IN WITNESS WHEREOF, the parties hereto have executed this Agreement as of the date first written above.
"""


def test_a_question_naming_a_party_is_routed_to_its_contract_under_an_opaque_file_name(tmp_path, embedder):
    """Through a real ingest: two supply agreements stored as ``scan_0001.pdf`` and
    ``scan_0002.pdf``; the question names one of their parties, the file names name nobody."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    folder = tmp_path / "docs"
    folder.mkdir()
    for name, party, other, state in (("scan_0001.pdf", "Pareteum Corporation", "Artilium Group LLC", "Delaware"),
                                      ("scan_0002.pdf", "Bioamber Inc.", "Cargill Supply LLC", "Minnesota")):
        pdf = canvas.Canvas(str(folder / name), pagesize=LETTER)
        text = pdf.beginText(72, 720)
        for line in CONTRACT_PAGE.format(title="SUPPLY AGREEMENT", party=party, other=other, state=state).splitlines():
            text.textLine(line)
        pdf.drawText(text)
        pdf.save()
    store = _ingested_store(folder, tmp_path / "data", indexed=2)
    try:
        records = {r.path.rsplit("/", 1)[-1]: r for r in store.list_documents()}
        assert records["scan_0001.pdf"].metadata["parties"] == ["Pareteum", "Artilium Group"]
        assert records["scan_0002.pdf"].metadata["parties"] == ["Bioamber", "Cargill Supply"]
        retriever = FolioRetriever(store=store, embedder=embedder, k=1)
        assert retriever.resolve_profile() == "legal"  # read from the text: the names say nothing
        router = retriever._router(None, None)
        for question, file in (("In the Pareteum agreement: which state's law governs it?", "scan_0001.pdf"),
                               ("In the Bioamber agreement: which state's law governs it?", "scan_0002.pdf"),
                               ("Which law governs the Cargill supply agreement?", "scan_0002.pdf")):
            assert router.route(question) == [records[file].doc_id], question
            docs = retriever.invoke(question)
            assert docs[0].metadata["doc_id"] == records[file].doc_id, question
    finally:
        store.close()


def test_contracts_indexed_before_parties_were_recorded_are_read_from_their_converted_documents(tmp_path):
    """A registry record without a ``parties`` key (indexed before ingest recorded them): the router
    reads the preamble from ``<data_dir>/documents/<doc_id>.json``, for a document that reads as a
    contract only."""
    import json

    contract, _ = make_document("scan_0003.pdf", [])
    filing, _ = make_document("scan_0004.pdf", [])
    pages = {contract.doc_id: CONTRACT_PAGE.format(title="SUPPLY AGREEMENT", party="Pareteum Corporation",
                                                   other="Artilium Group LLC", state="Delaware"),
             filing.doc_id: "Annual report. Net income, revenues and cash flows of Acme Corp. for the year ended "
                            "December 31, 2022; consolidated balance sheets; earnings per share."}
    documents = tmp_path / "documents"
    documents.mkdir()
    for doc_id, markdown in pages.items():
        (documents / f"{doc_id}.json").write_text(json.dumps({"doc_id": doc_id, "pages": [{"markdown": markdown}]}))
    router = TitleRouter.from_records([contract, filing], documents_dir=documents)
    assert {"pareteum", "artilium"} <= router.terms[contract.doc_id]
    assert "acme" not in router.terms[filing.doc_id]  # not a contract: its names are not parties
    contract.metadata["parties"] = []  # a record that has the key keeps what ingest found
    assert "pareteum" not in TitleRouter.from_records([contract, filing], documents_dir=documents).terms[contract.doc_id]
