"""Retrieval profiles: inferred per collection from its documents' titles, or their text where a
title names no kind; overridable."""

from __future__ import annotations

import pytest

from folioflow.indexing.glossary import FINANCE, LEGAL
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.profiles import document_profile, infer_profile, profile_options, text_profile
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.store import StoreSettings, open_store

from .conftest import make_document

CONTRACTS = ["PareteumCorp_20191004_8-K_EX-10.1_11843221_EX-10.1_Maintenance Agreement.pdf",
             "ElPolloLocoHoldingsInc_20200306_10-K_EX-10.16_12041700_EX-10.16_Development Agreement.pdf",
             "VIVINT SOLAR, INC. - NON-COMPETITION AGREEMENT.PDF"]
FILINGS = ["3M_2018_10K.pdf", "AMCOR_2023Q2_10Q.pdf", "PEPSICO_2022_8K_dated-2022-10-12.pdf",
           "Netflix annual report 2017.pdf"]


def test_profiles_are_inferred_from_titles():
    assert infer_profile(CONTRACTS) == "legal"  # an agreement filed as a 10-K exhibit is a contract
    assert infer_profile(FILINGS) == "finance"
    assert infer_profile(CONTRACTS[:2] + FILINGS[:2]) == "general"  # no majority
    assert infer_profile(CONTRACTS[:2] + FILINGS[:3]) == "finance"
    assert infer_profile(["scan_0001.pdf", "scan_0002.pdf"]) == "general" and infer_profile([]) == "general"
    assert profile_options("legal") == {"glossary": LEGAL, "distinct_pages": False, "page_decay": 0.0,
                                        "demote_roles": True, "heading_weight": 1.0, "route_weight": 2.0,
                                        "glossary_sparse_weight": 1.5, "date_weight": 1.0, "fusion": "convex",
                                        "sentence_weight": 0.5, "query_adapter": "legal", "expansion_terms": 30}
    assert profile_options("finance")["fusion"] == profile_options("general")["fusion"] == "rrf"
    assert profile_options("finance")["route_weight"] > profile_options("legal")["route_weight"] > profile_options("general")["route_weight"] == 1.0
    assert profile_options("finance")["glossary"] is FINANCE
    assert profile_options("finance")["query_adapter"] is profile_options("general")["query_adapter"] is None
    assert profile_options("finance")["expansion_terms"] == profile_options("general")["expansion_terms"] == 0
    with pytest.raises(ValueError, match="unknown retrieval profile"):
        profile_options("medical")


def test_a_title_that_names_no_kind_counts_as_what_the_text_reads_as():
    assert document_profile("scan 0042", "legal") == "legal" and document_profile("scan 0042") == "general"
    assert document_profile(FILINGS[0], "legal") == "finance"  # the title names it: the title decides
    opaque = ["doc 1", "doc 2", "doc 3"]
    assert infer_profile(opaque) == "general"
    assert infer_profile(opaque, ["legal", "legal", None]) == "legal"
    assert infer_profile(opaque, ["legal", None, None]) == "general"  # no majority
    assert infer_profile(opaque, ["finance", "finance", "legal"]) == "finance"
    with pytest.raises(ValueError):
        infer_profile(opaque, ["legal"])  # one reading per title
    assert text_profile("") is None and text_profile("Dear Sir, thank you for your letter.") is None


#: Real documents' text layers and what they are: CUAD contracts, FinanceBench filings, and legal
#: or financial text that is neither a contract nor a filing (a court transcript, the Federal
#: Register, a one-page earnings table).
TEXTS = [("B_legal/cuad/pdfs/Part_II/Sponsorship/GAINSCOINC_01_21_2010-EX-10.41-SPONSORSHIP AGREEMENT.PDF", "legal"),
         ("B_legal/cuad/pdfs/Part_III/Manufacturing/Apollo Endosurgery - Manufacturing and Supply Agreement.PDF", "legal"),
         ("B_legal/cuad/pdfs/Part_II/Consulting_Agreements/DRIVENDELIVERIES,INC_05_22_2020-EX-10.4-CONSULTING AGREEMENT.PDF",
          "legal"),
         ("A_finance/financebench/pdfs/3M_2018_10K.pdf", "finance"),
         ("A_finance/financebench/pdfs/AMCOR_2023Q2_10Q.pdf", "finance"),
         ("A_finance/financebench/pdfs/VERIZON_2021_10K.pdf", "finance"),
         ("D_layout_math_tables/olmocr_bench/pdfs/earnings.pdf", "finance"),
         ("B_legal/misc/scotus-transcript-p1.pdf", None),
         ("B_legal/misc/federal-register-2020-17221.pdf", None)]


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "kind"), TEXTS)
def test_real_documents_text_reads_as_what_they_are(corpus, name, kind):
    import pypdfium2 as pdfium

    from folioflow.indexing.profiles import TEXT_PROFILE_CHARS

    path = corpus / name
    if not path.is_file():
        pytest.skip(f"not in the corpus: {path}")
    pdf = pdfium.PdfDocument(str(path))
    try:
        text = ""
        for page in pdf:
            text += page.get_textpage().get_text_range() + "\n\n"
            if len(text) >= TEXT_PROFILE_CHARS:
                break
    finally:
        pdf.close()
    assert text_profile(text) == kind


@pytest.mark.slow
@pytest.mark.corpus
def test_a_contract_under_an_opaque_name_is_searched_as_a_contract(corpus, tmp_path):
    """A CUAD contract ingested as ``doc-0001.pdf`` (an export by id): its record says it reads as a
    contract, the collection's profile is ``legal`` and its chunks get sentence vectors."""
    import shutil

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.queries import collection_profile
    from folioflow.flows.settings import Settings
    from folioflow.flows.sources import discover

    source = corpus / TEXTS[0][0]
    if not source.is_file():
        pytest.skip(f"not in the corpus: {source}")
    shutil.copyfile(source, tmp_path / "doc-0001.pdf")
    pipeline = Pipeline(Settings(data_dir=tmp_path / "data"))
    pipeline.warm_up()
    try:
        for file in discover([str(tmp_path / "doc-0001.pdf")]).files:
            document = pipeline.stages.convert(pipeline.stages.plan(file, pipeline.known(file)))
            pipeline.index(document, pipeline.stages.chunk(document))
        store = pipeline.store
        assert store is not None
        records = store.list_documents()
        assert [r.metadata.get("text_profile") for r in records] == ["legal"]
        assert collection_profile(records) == "legal"
        # a record indexed before ingest recorded the reading: read from its converted document
        old = [r.model_copy(update={"metadata": {k: v for k, v in r.metadata.items() if k != "text_profile"}})
               for r in records]
        assert collection_profile(old) == "general"
        assert collection_profile(old, pipeline.settings.documents_dir) == "legal"
        retriever = FolioRetriever(store=store, embedder=pipeline.embedder, k=5)
        assert retriever.resolve_profile() == "legal"
        hits = store.search(pipeline.embedder.encode_query("Which law governs this agreement?"), mode="sentences", k=5)
        assert hits and {h.payload["metadata"]["doc_id"] for h in hits} == {records[0].doc_id}
    finally:
        pipeline.close()


def test_a_contract_collection_ranks_with_the_legal_profile(tmp_path, embedder):
    parts = [(["1. Term"], "text", "This Agreement runs for two years from the Effective Date.", 1),
             (["2. Fees"], "text", "Licensee shall pay a royalty of five percent of net sales each quarter.", 1),
             (["3. Capital Expenditures"], "text", "Licensee bears all capital expenditures for the plant.", 1),
             (["9. Governing Law"], "text", "This Agreement is governed by the laws of the State of Texas.", 2)]
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        Indexer(embedder, store).index(*make_document(CONTRACTS[0], parts, source="contracts"))
        retriever = FolioRetriever(store=store, embedder=embedder, k=4)
        assert retriever.resolve_profile() == "legal"
        legal = retriever.invoke("What is the capex?")
        plain = FolioRetriever(store=store, embedder=embedder, k=4, glossary=None, distinct_pages=False,
                               page_decay=0.0).invoke("What is the capex?")
        assert [d.id for d in legal] == [d.id for d in plain]  # no finance glossary, plain chunk ranking
        assert not any(d.metadata["page_repeat"] for d in legal) and len({d.metadata["page_start"] for d in legal}) == 2
        finance = retriever.invoke("What is the capex?", profile="finance")  # overridden per call
        assert [d.metadata["page_repeat"] for d in finance] == [False, False, True, True]
        explicit = FolioRetriever(store=store, embedder=embedder, k=4, distinct_pages=True)  # explicit option wins
        assert [d.metadata["page_repeat"] for d in explicit.invoke("governing law")] == [False, False, True, True]
    finally:
        store.close()


def test_in_the_legal_profile_the_named_contract_fills_the_results(tmp_path, embedder):
    """A question naming a contract in a store of many: title routing searches inside it, and in
    the legal profile that search counts twice in the fusion with the unrestricted search, so the
    named contract's clauses fill the top k; with equal weights, another contract's best chunks for
    the same words took places in it (CUAD, shared store of 97 contracts)."""
    from .test_glossary import DISTRIBUTION_CLAUSES

    birch = [(["DISTRIBUTION AGREEMENT", title], "text", text, 1 + i // 3)
             for i, (title, text) in enumerate(DISTRIBUTION_CLAUSES)]
    venues = ["Delaware", "New York", "Texas", "Ohio", "Illinois", "Georgia", "Florida", "Nevada", "Oregon", "Utah"]
    cedar = []
    for i in range(30):
        state = venues[i % len(venues)]
        cedar.append(([f"TRANSPORTATION AGREEMENT SCHEDULE {i // 10 + 1}", f"{i + 1}. Disputes Under Lane {i + 1}"],
                      "text", f"Any dispute between the parties about shipments on lane {i + 1} shall be resolved by "
                              f"arbitration in {state} under the rules then in force, and judgment on the award may be "
                              f"entered in any court of {state}.", 1 + i // 4))
    store = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        indexer = Indexer(embedder, store)
        indexer.index(*make_document("Birch Foods - Distribution Agreement.pdf", birch, source="contracts"))
        indexer.index(*make_document("Cedar Logistics - Transportation Agreement.pdf", cedar, source="contracts"))
        retriever = FolioRetriever(store=store, embedder=embedder, k=5)
        assert retriever.resolve_profile() == "legal"
        question = "In the Birch Foods agreement: how are disputes between the parties resolved?"
        weighted = retriever.invoke(question)
        equal = retriever.invoke(question, route_weight=1.0)
        assert [d.metadata["path"] for d in weighted] == ["Birch Foods - Distribution Agreement.pdf"] * 5
        assert weighted[0].metadata["heading_path"][-1] == "12. Dispute Resolution"
        assert any(d.metadata["path"].startswith("Cedar") for d in equal)
        scores = [d.metadata["score"] for d in weighted]
        assert scores == sorted(scores, reverse=True)
    finally:
        store.close()
