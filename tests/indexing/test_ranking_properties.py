"""Ranking properties of FolioRetriever on a real store (embedded Qdrant Edge, the MiniLM model):
agreement of dense and sparse search wins, page scoring is bounded, ``k`` results whatever the
page layout, and the same ranking in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest

from folioflow.indexing.glossary import Glossary
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.retriever import FolioRetriever, aggregate_pages
from folioflow.indexing.store import SearchFilter, StoreSettings, open_store

from .conftest import make_document

CLAUSE = ("This Agreement shall be governed by and construed in accordance with the laws of the State of "
          "Delaware, without giving effect to any choice of law or conflict of law rules.")

#: A supply agreement: page 1 holds many chunks that share the question's common words (agreement,
#: law, dispute, courts, State); page 4 holds the governing-law clause alone.
SUPPLY = [
    (["1. Definitions"], "text", "\"Agreement\" means this Supply Agreement and its schedules, as amended "
     "from time to time in accordance with its terms.", 1),
    (["1. Definitions"], "text", "\"Applicable Law\" means every law, statute and regulation of any State or "
     "governmental authority that applies to a party or to the Products.", 1),
    (["1. Definitions"], "text", "\"Dispute\" means any dispute arising out of or in connection with this "
     "Agreement, including its construction, validity or termination.", 1),
    (["1. Definitions"], "text", "\"Courts\" means the state and federal courts located in the State in which "
     "the Supplier has its principal place of business.", 1),
    (["1. Definitions"], "text", "\"Effective Date\" means the date on which this Agreement is signed by both "
     "parties, as shown in the signature block.", 1),
    (["2. Supply"], "text", "Supplier shall deliver the Products to the Buyer's facility within thirty days of "
     "each purchase order, in accordance with the specifications in Schedule A.", 2),
    (["3. Price"], "text", "Buyer shall pay each invoice within forty-five days. Prices are fixed for the first "
     "contract year and may then be adjusted once a year by no more than three percent.", 3),
    (["12. Governing Law"], "text", CLAUSE, 4),
]

#: A two-page services agreement with six chunks, each naming "this Agreement" (six sparse matches).
SHORT = [
    (["1. Services"], "text", "Under this Agreement, Consultant shall provide the advisory services of Exhibit A.", 1),
    (["2. Fees"], "text", "Client shall pay a monthly retainer of ten thousand dollars under this Agreement.", 1),
    (["3. Term"], "text", "This Agreement runs for one year and renews for further one-year terms.", 1),
    (["4. Termination"], "text", "Either party may terminate this Agreement on sixty days' written notice.", 2),
    (["5. Confidentiality"], "text", "Each party shall keep the other's confidential information secret during this Agreement.", 2),
    (["6. Governing Law"], "text", "This Agreement is governed by the laws of the State of New York.", 2),
]

#: A glossary that matches the question (it appends words the weak page-1 chunks share).
LEGAL_WORDS = Glossary([(r"\bgoverned\b", "applicable law courts dispute")], name="legal-words")


@pytest.fixture
def store(tmp_path, embedder):
    st = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    indexer = Indexer(embedder, st)
    for path, parts in (("AcmeCorp_Supply_Agreement.pdf", SUPPLY), ("Initech_Services_Agreement.pdf", SHORT)):
        indexer.index(*make_document(path, parts, source="contracts"))
    yield st
    st.close()


def test_a_chunk_first_in_dense_and_sparse_is_first_in_hybrid(store, embedder):
    retriever = FolioRetriever(store=store, embedder=embedder, k=5)
    for glossary in (None, LEGAL_WORDS):  # routing on (the default): the question names no document
        searched = glossary.expand(CLAUSE) if glossary else CLAUSE
        flt = SearchFilter()
        dense = store.search(embedder.encode_query(searched), mode="dense", k=3, filter=flt)
        sparse = store.search(sparse=retriever._encoder().encode_query(searched), mode="sparse", k=3, filter=flt)
        assert dense[0].id == sparse[0].id and dense[0].payload["page_content"] == CLAUSE  # both agree
        # page_decay=5: page 1's five definitions would outscore the clause's page on their sum
        for decay in (0.0, 0.3, 5.0):
            for distinct in (True, False):
                for fusion in ("rrf", "convex"):
                    docs = FolioRetriever(store=store, embedder=embedder, k=5, glossary=glossary).invoke(
                        CLAUSE, page_decay=decay, distinct_pages=distinct, fusion=fusion)
                    assert docs[0].id == dense[0].id, (glossary, decay, distinct, fusion)
                    scores = [d.metadata["score"] for d in docs]
                    assert scores == sorted(scores, reverse=True)


def test_without_the_agreement_rule_page_scoring_would_lose_the_clause(store, embedder):
    """The property is not vacuous here: summing page 1's chunks ranks page 1 above the clause."""
    retriever = FolioRetriever(store=store, embedder=embedder, k=40, distinct_pages=False, route_titles=False,
                               glossary=None)
    chunks = retriever.invoke(CLAUSE)
    ranked = [(SimpleNamespace(id=d.id, payload={"metadata": d.metadata}), d.metadata["score"]) for d in chunks]
    by_pages = aggregate_pages(ranked, 5.0)  # the cap still lets decay 5 lift a page up to 6x its best chunk
    assert chunks[0].metadata["page_start"] == 4 and by_pages[0][0].payload["metadata"]["page_start"] != 4


def test_weak_chunks_cannot_outnumber_a_strong_one():
    def hit(doc, page, name):
        return SimpleNamespace(id=name, payload={"metadata": {"doc_id": doc, "page_start": page}})

    strong = [(hit("a", 4, "clause"), 0.0328)]
    weak = [(hit("a", 1, f"w{i}"), 0.0240 - i * 1e-4) for i in range(30)]  # 30 chunks, each below 0.0328 / 1.3
    for decay in (0.1, 0.3, 0.3 - 1e-9):
        pages = aggregate_pages(strong + weak, decay)
        assert pages[0][0].id == "clause" and pages[1][1] <= (1 + decay) * 0.0240
    # a page whose best chunk is close to the strong one may still pass it with one more good chunk
    close = [(hit("a", 2, "c1"), 0.0320), (hit("a", 2, "c2"), 0.0310)]
    assert aggregate_pages(strong + close, 0.3)[0][0].id == "c1"


def test_page_scores_are_bounded_on_a_real_store(store, embedder):
    retriever = FolioRetriever(store=store, embedder=embedder, k=40, route_titles=False, glossary=None,
                               distinct_pages=True)
    query = "Which courts decide disputes under the agreement, and which law applies?"
    chunks = retriever.invoke(query, distinct_pages=False)
    best: dict = {}
    for d in chunks:
        best.setdefault((d.metadata["doc_id"], d.metadata["page_start"]), d.metadata["score"])
    for decay in (0.3, 1.0):
        pages = [d for d in retriever.invoke(query, page_decay=decay) if not d.metadata["page_repeat"]]
        for d in pages:
            top = best[(d.metadata["doc_id"], d.metadata["page_start"])]
            assert top <= d.metadata["score"] <= (1 + decay) * top + 1e-12


def test_k_results_whatever_the_page_layout(store, embedder):
    retriever = FolioRetriever(store=store, embedder=embedder, k=5, route_titles=False, distinct_pages=True)
    initech = store.list_documents()[1 if store.list_documents()[0].path.startswith("Acme") else 0].doc_id
    for mode in ("dense", "sparse", "hybrid"):
        query = "Can either party terminate this agreement, and on how much notice?"
        docs = retriever.invoke(query, mode=mode, doc_ids=[initech])
        assert len(docs) == 5, mode  # two pages, six chunks: both pages, then three more of their chunks
        assert [d.metadata["page_repeat"] for d in docs] == [False, False, True, True, True], mode
        assert len({(d.metadata["page_start"]) for d in docs[:2]}) == 2 and len({d.id for d in docs}) == 5
        scores = [d.metadata["score"] for d in docs]
        assert scores == sorted(scores, reverse=True), mode
        everything = retriever.invoke("This agreement: termination notice", mode=mode, doc_ids=[initech], k=10)
        assert len(everything) == 6, mode  # all there is (every chunk says "agreement" or matches densely)
    assert len(retriever.invoke("termination notice", doc_ids=[initech], distinct_pages=False)) == 5


_QUERY_SCRIPT = textwrap.dedent("""
    import json, sys
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.indexing.store import StoreSettings, open_store
    store = open_store(StoreSettings(data_dir=sys.argv[1], backend="edge"))
    embedder = Embedder(device="cpu")
    out = []
    for query in json.loads(sys.argv[2]):
        for mode, fusion in (("dense", "rrf"), ("sparse", "rrf"), ("hybrid", "rrf"), ("hybrid", "convex")):
            docs = FolioRetriever(store=store, embedder=embedder, k=6, mode=mode, fusion=fusion).invoke(query)
            out.append([[d.id, d.metadata["score"]] for d in docs])
    store.close()
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_the_same_query_ranks_the_same_in_fresh_processes(store, embedder, tmp_path):
    """Two fresh interpreters (different hash seeds, one of them having embedded a batch of other
    texts first would not matter: queries are embedded alone in fp32) give identical ids and scores."""
    data_dir = store.settings.data_dir
    store.close()  # embedded Qdrant: one process per data dir
    queries = ["Which state's law governs this agreement?", "termination notice", CLAUSE,
               "What does the Buyer pay and when? Can prices change?", "Initech confidentiality"]
    runs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-c", _QUERY_SCRIPT, str(data_dir), json.dumps(queries)],
                             capture_output=True, text=True, env=env, timeout=300, check=True)
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    assert runs[0] == runs[1]
    assert all(runs[0]) and all(len(r) == 6 for r in runs[0][2::4] + runs[0][3::4])  # found chunks; hybrid: k


def test_convex_fusion_scores_candidates_with_each_search_below_its_top(store, embedder):
    """Convex fusion's candidates are each search's top ``fetch_k``; a candidate is scored with its
    score in the other search too when that search placed it lower (down to CONVEX_SCORE_DEPTH),
    not 0."""
    from folioflow.indexing.retriever import CONVEX_DENSE_WEIGHT, CONVEX_SCORE_DEPTH, RRF_K

    query = "Which courts decide disputes under the agreement, and which law applies?"
    retriever = FolioRetriever(store=store, embedder=embedder, k=2, profile="general", fusion="convex",
                               glossary=None, route_titles=False, demote_roles=False, distinct_pages=False,
                               page_decay=0.0)
    flt = SearchFilter()
    dense = store.search(embedder.encode_query(query), mode="dense", k=CONVEX_SCORE_DEPTH, filter=flt)
    sparse = store.search(sparse=retriever._encoder().encode_query(query), mode="sparse", k=CONVEX_SCORE_DEPTH,
                          filter=flt)
    d_score, s_score = {h.id: h.score for h in dense}, {h.id: h.score for h in sparse}
    candidates = {h.id for h in dense[:2]} | {h.id for h in sparse[:2]}
    # not vacuous: some candidate is below the other search's top 2 yet in its top CONVEX_SCORE_DEPTH
    assert any((i in d_score and i not in {h.id for h in dense[:2]}) or
               (i in s_score and i not in {h.id for h in sparse[:2]}) for i in candidates)
    expected = sorted(((i, (CONVEX_DENSE_WEIGHT * d_score.get(i, 0.0) / dense[0].score
                            + s_score.get(i, 0.0) / sparse[0].score) / (RRF_K + 1)) for i in candidates),
                      key=lambda pair: -pair[1])
    docs = retriever.invoke(query)
    assert [d.id for d in docs] == [i for i, _ in expected[:2]]
    assert [d.metadata["score"] for d in docs] == pytest.approx([s for _, s in expected[:2]], rel=1e-6)


#: A consulting agreement in which the dense and the sparse search disagree on the governing-law
#: question: BM25 prefers a filing schedule that repeats its words, the dense search the clause.
GLOBEX = [
    (["1. Services"], "text", "Consultant shall provide the advisory services described in Exhibit A to Client.", 1),
    (["2. Fees"], "text", "Client shall pay a monthly retainer of ten thousand dollars.", 1),
    (["3. Schedule B"], "text", "Schedule B: State filing rules. Client shall give effect to each State rule on "
     "construed filings, in accordance with the State laws without conflict, and shall choose the filing office.", 2),
    (["9. Applicable Law"], "text", "Delaware statutes and case law control how this contract is read and enforced, "
     "whatever another jurisdiction's principles would say.", 2),
]


def test_agreement_over_the_store_puts_no_other_documents_chunk_first_when_the_question_names_one(tmp_path, embedder):
    """A question that names a document ("In the Globex agreement: ...") is answered from it: a
    chunk of another document that both searches over the whole store rank first (Acme's clause,
    worded as the question) is not put first when the searches inside the named document disagree
    (CUAD: NUVEEN's "Section 14. Governing Law" came first for Loyaltypoint's question)."""
    st = open_store(StoreSettings(data_dir=tmp_path, backend="edge"))
    try:
        indexer = Indexer(embedder, st)
        for path, parts in (("AcmeCorp_Supply_Agreement.pdf", SUPPLY), ("Globex_Consulting_Agreement.pdf", GLOBEX)):
            indexer.index(*make_document(path, parts, source="contracts"))
        question = f"In the Globex agreement: {CLAUSE}"
        retriever = FolioRetriever(store=st, embedder=embedder, k=5)
        routed = retriever._router(None, None).route(question)
        assert routed is not None and len(routed) == 1
        for flt, first in ((SearchFilter(), CLAUSE), (SearchFilter(doc_ids=routed), None)):
            dense = st.search(embedder.encode_query(question), mode="dense", k=3, filter=flt)
            sparse = st.search(sparse=retriever._encoder().encode_query(question), mode="sparse", k=3, filter=flt)
            if first:  # over the store, both searches agree on Acme's clause
                assert dense[0].id == sparse[0].id and dense[0].payload["page_content"] == first
            else:  # inside Globex they disagree: no agreement there to put first
                assert dense[0].id != sparse[0].id
        for fusion in ("rrf", "convex"):
            for weight in (0.2, 1.0, 2.0):
                docs = retriever.invoke(question, fusion=fusion, route_weight=weight, distinct_pages=False)
                assert docs[0].metadata["path"] == "Globex_Consulting_Agreement.pdf", (fusion, weight, docs[0].page_content)
    finally:
        st.close()
