"""Retrieval profiles: inferred per collection from its documents' titles, overridable."""

from __future__ import annotations

import pytest

from folioflow.indexing.glossary import FINANCE, LEGAL
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.profiles import infer_profile, profile_options
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
                                        "sentence_weight": 0.5}
    assert profile_options("finance")["fusion"] == profile_options("general")["fusion"] == "rrf"
    assert profile_options("finance")["route_weight"] > profile_options("legal")["route_weight"] > profile_options("general")["route_weight"] == 1.0
    assert profile_options("finance")["glossary"] is FINANCE
    with pytest.raises(ValueError, match="unknown retrieval profile"):
        profile_options("medical")


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
