"""Contract ranking on generated contracts (converted, chunked and indexed for real: text layer,
the chunker's roles, embedded Qdrant Edge, the MiniLM model): party, definitions and signature
chunks never outrank a substantive clause for a clause question, a question that asks for them
still finds them, and a clause title that matches the question lifts its clause."""

from __future__ import annotations

import pytest

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.roles import CONTENTS, DEFINITIONS, PARTIES, ROLE, SIGNATURE
from folioflow.chunking.tokens import default_counter
from folioflow.indexing.clause_ranking import (
    boilerplate_test,
    heading_ranking,
    leading_role,
    split_roles,
    wanted_roles,
)
from folioflow.indexing.glossary import LEGAL, Glossary
from folioflow.indexing.indexer import Indexer
from folioflow.indexing.registry import DocumentRecord
from folioflow.indexing.retriever import FolioRetriever
from folioflow.indexing.sparse import BM25Encoder
from folioflow.indexing.store import SearchFilter, StoreSettings, open_store
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.ids import sha256_text
from folioflow.ocr.sample_contracts import CONTRACT_STYLES, write_contract_pdf
from folioflow.ocr.schema import SourceRef

#: Clause questions as a lawyer asks them (none asks for the parties, definitions or signatures).
CLAUSE_QUESTIONS = [
    "Which state's law governs this agreement?",
    "When must the buyer pay invoices?",
    "How long does the agreement last?",
    "Must the parties keep each other's information confidential?",
    "What must the supplier deliver under the agreement?",
    "Can Acme Packaging or Birch Foods terminate the agreement?",
    "What obligations do Supplier and Buyer have toward each other under the agreement?",
]


@pytest.fixture(scope="module")
def contract_store(tmp_path_factory, embedder):
    """One store with the generated contracts (one per clause-title style, and under ``contents`` a
    decimal one that opens with a table of contents); yields (store, {style: doc_id}, {style: chunks})."""
    root = tmp_path_factory.mktemp("clause_ranking")
    store = open_store(StoreSettings(data_dir=root / "store", backend="edge"))
    indexer = Indexer(embedder, store)
    ids, chunks_of = {}, {}
    for style in (*CONTRACT_STYLES, "contents"):
        path = write_contract_pdf(root / f"AcmePackagingCorp_{style}_Master Supply Agreement.pdf",
                                  "decimal" if style == "contents" else style, contents=style == "contents")
        chunks = _chunk_pdf(path)
        _index(indexer, path, chunks)
        ids[style], chunks_of[style] = chunks[0].doc_id, chunks
    yield store, ids, chunks_of
    store.close()


def _chunk_pdf(path):
    """The chunks of the PDF at ``path``, converted from its text layer (no guard, no fidelity check)."""
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    return Chunker(default_counter()).chunk(
        converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name))))


def _index(indexer, path, chunks) -> None:
    """Index ``chunks`` of the file at ``path`` as one document of the source "contracts"."""
    indexer.index(DocumentRecord(doc_id=chunks[0].doc_id, uri=path.as_uri(), path=path.name, source="contracts",
                                 content_hash=sha256_text(path.name), pages=max(c.page_end for c in chunks)), chunks)


def _role(doc) -> str | None:
    return (doc.metadata.get("extra") or {}).get(ROLE)


def test_the_questions_ask_for_no_role_and_the_contracts_have_every_role(contract_store):
    _, _, chunks_of = contract_store
    assert all(not wanted_roles(q) for q in CLAUSE_QUESTIONS)
    for chunks in chunks_of.values():
        assert {c.metadata.get(ROLE) for c in chunks} >= {PARTIES, DEFINITIONS, SIGNATURE}
    assert [c.metadata.get(ROLE) for c in chunks_of["contents"] if "TABLE OF CONTENTS" in c.text] == [CONTENTS]
    assert not any(wanted_roles(q) for q in CLAUSE_QUESTIONS) and CONTENTS in wanted_roles("Show me the table of contents.")


def test_role_chunks_never_outrank_a_substantive_clause_for_a_clause_question(contract_store, embedder):
    store, ids, chunks_of = contract_store
    retriever = FolioRetriever(store=store, embedder=embedder)  # profile auto: the titles name agreements
    assert retriever.resolve_profile() == "legal"
    before = FolioRetriever(store=store, embedder=embedder, demote_roles=False, heading_weight=0.0)
    outranked_before = 0
    for style, doc_id in ids.items():
        everything = len(chunks_of[style])
        for question in CLAUSE_QUESTIONS:
            for mode in ("hybrid", "sparse"):
                docs = retriever.invoke(question, doc_ids=[doc_id], k=everything, mode=mode)
                roles = [_role(d) for d in docs]
                first_role = next((i for i, r in enumerate(roles) if r), len(roles))
                assert all(roles[first_role:]), (style, question, mode, roles)  # no clause after a role chunk
                scores = [d.metadata["score"] for d in docs]
                assert scores == sorted(scores, reverse=True)
                old = [_role(d) for d in before.invoke(question, doc_ids=[doc_id], k=everything, mode=mode)]
                outranked_before += any(r and not all(old[i:]) for i, r in enumerate(old))
    assert outranked_before  # without the rule, some role chunk ranked above some clause


def test_a_question_that_asks_for_a_role_keeps_that_role_where_it_ranked(contract_store, embedder):
    store, ids, chunks_of = contract_store
    demoting = FolioRetriever(store=store, embedder=embedder)
    plain = FolioRetriever(store=store, embedder=embedder, demote_roles=False, heading_weight=0.0)
    for style, doc_id in ids.items():
        k = len(chunks_of[style])
        for question, role in (("Who are the parties to this agreement?", PARTIES),
                               ("On what date was this agreement made?", PARTIES),
                               ("On what date was this agreement made?", SIGNATURE)):
            assert role in wanted_roles(question)
            new = [_role(d) for d in demoting.invoke(question, doc_ids=[doc_id], k=k)]
            old = [_role(d) for d in plain.invoke(question, doc_ids=[doc_id], k=k)]
            # at most one place lower: behind the party block, which such a question gets first
            assert role in new and new.index(role) <= old.index(role) + (role != PARTIES), (style, question, new, old)


#: Questions that ask for the party block: who the parties are, when the agreement was made, when it takes effect.
PREAMBLE_QUESTIONS = ["Who are the parties to this agreement?", "On what date was this agreement made?",
                      "When does this agreement take effect?", "Between whom was this contract entered into?",
                      "What is the effective date?"]


def test_a_question_that_asks_for_the_parties_or_the_date_gets_the_party_block_first(contract_store, embedder):
    store, ids, chunks_of = contract_store
    retriever = FolioRetriever(store=store, embedder=embedder)  # profile auto: legal
    assert all(leading_role(wanted_roles(q)) == PARTIES for q in PREAMBLE_QUESTIONS)
    assert not any(leading_role(wanted_roles(q)) for q in CLAUSE_QUESTIONS)
    for style, doc_id in ids.items():
        preamble = next(c.text for c in chunks_of[style] if c.metadata.get(ROLE) == PARTIES)
        for question in PREAMBLE_QUESTIONS:
            for k in (1, 5):
                docs = retriever.invoke(question, doc_ids=[doc_id], k=k)
                assert len(docs) == k and docs[0].page_content == preamble, (style, question, k, _role(docs[0]))
                scores = [d.metadata["score"] for d in docs]
                assert scores == sorted(scores, reverse=True)
    # the whole store: some contract's party block, found by a search of party blocks alone
    assert all(_role(retriever.invoke(q)[0]) == PARTIES for q in PREAMBLE_QUESTIONS)
    flt = SearchFilter(roles=[PARTIES])
    found = store.search(sparse=BM25Encoder().encode_query("agreement between"), mode="sparse", k=20, filter=flt)
    assert len(found) == len(ids) and all(h.payload["metadata"]["extra"][ROLE] == PARTIES for h in found)


#: Questions that name the agreement's date or its parties in another sense: another date (the end
#: of the term, a payment's), a deal made with someone else, a person who is not a party.
OTHER_SENSE_QUESTIONS = ["What is the expiration date of this agreement?", "On what date does the agreement expire?",
                         "What is the end date of the term?", "What is the termination date?",
                         "On what date does the original term of this agreement come to an end?",
                         "What date does the initial term run out?",
                         "By what date must the first milestone payment be made?",
                         "What is the payment due date for invoices?",
                         "Must the company offer the opportunity to the other party before a deal is made with others?",
                         "Does the agreement give rights to anyone who is not a party?",
                         "Does the agreement restrict the parties to exclusive dealing?"]


def test_a_question_about_another_date_or_another_party_asks_for_no_role(contract_store, embedder):
    """"What is the expiration date?" named a date and got the party block (the date of signing)
    first; "before a deal is made with others" read as "when was it made", "who is not a party" as
    "who is a party". They ask for no role and no date of making; questions that do still do, in
    other words too."""
    from folioflow.indexing.clause_ranking import OTHER_DATE, asks_date

    for question in OTHER_SENSE_QUESTIONS:
        assert not wanted_roles(question) and not asks_date(question), question
    assert OTHER_DATE.search("What is the end date of the term?") and not OTHER_DATE.search(
        "What is the date of this contract and when does it end?")
    assert asks_date("What is the date of this contract and when does it end?")
    for question in ("Which entities entered into this contract?", "Name the contracting parties.",
                     "Who is a party to the agreement?", "Who are the two parties to this contract?",
                     "Which companies signed this contract?", "Who are the companies signing this agreement?"):
        assert leading_role(wanted_roles(question)) == PARTIES, question
    for question in ("When was it signed?", "What date was this contract entered into?",
                     "When was the agreement executed?"):
        assert asks_date(question) and PARTIES in wanted_roles(question), question
    store, ids, chunks_of = contract_store
    retriever = FolioRetriever(store=store, embedder=embedder)  # profile auto: legal
    for style, doc_id in ids.items():
        docs = retriever.invoke("What is the expiration date of this agreement?", doc_ids=[doc_id], k=3)
        assert _role(docs[0]) != PARTIES and "continue for three years" in docs[0].page_content, \
            (style, [d.page_content[:60] for d in docs])


def test_clause_titles_that_match_the_question_come_first(contract_store, embedder):
    store, ids, chunks_of = contract_store
    encoder = BM25Encoder()

    def terms(text):
        return encoder.encode_query(text).indices

    class Hit:
        def __init__(self, i, path):
            self.id, self.payload = i, {"metadata": {"heading_path": path}}

    hits = [Hit(0, ["ARTICLE II GENERAL TERMS", "Section 2.01 Term"]), Hit(1, ["8.05 GOVERNING LAW"]),
            Hit(2, ["11. Choice Of Law"]), Hit(3, []), Hit(4, ["This Agreement"])]
    # "governs" and "Governing" share their stem; "law" twice beats once; "agreement" matches nothing
    assert [h.id for h in heading_ranking(hits, "Which state's law governs this agreement?", terms)] == [1, 2]
    assert heading_ranking(hits, "What does this agreement say?", terms) == []
    retriever = FolioRetriever(store=store, embedder=embedder, k=1, heading_weight=2.0)
    for style, doc_id in ids.items():
        title = next(c.heading_path[-1] for c in chunks_of[style] if "governed by the laws" in c.text)
        for question in ("What law governs this agreement?", "Which court's law applies (choice of law)?"):
            top = retriever.invoke(question, doc_ids=[doc_id])[0]
            assert top.metadata["heading_path"][-1] == title, (style, question, top.metadata["heading_path"])


def test_general_provisions_come_after_the_clauses_unless_the_question_names_them():
    """Short "Counterparts" / "Entire Agreement" / "Relationship of the Parties" clauses share a
    question's common words ("party", "agreement", "other") and answer none of its substance (CUAD:
    they ranked first for exclusivity and non-compete questions)."""
    encoder = BM25Encoder()

    def terms(text):
        return encoder.encode_query(text).indices

    class Hit:
        def __init__(self, title):
            self.id, self.payload = title, {"metadata": {"heading_path": ["SUPPLY AGREEMENT", title]}}

    titles = ["6. Counterparts", "10.4 ENTIRE AGREEMENT", "9.3 Relationship of Parties", "10.9 SECTION HEADINGS; CONSTRUCTION",
              "Section 9.02 Notices", "5. Exclusivity", "19. ENTIRE AGREEMENT, GOVERNING LAW",
              "12. Entire Agreement; Amendment and Waiver; Confidentiality", "8. Survival"]
    hits = [(Hit(t), 1.0 - i / 100) for i, t in enumerate(titles)]
    question = "Is the arrangement exclusive, or may a party deal with others?"
    keep, demoted = split_roles(hits, wanted_roles(question), boilerplate_test(question, terms))
    assert [h.id for h, _ in demoted] == titles[:5]  # every part of the title is a general provision
    assert [h.id for h, _ in keep] == titles[5:]  # a title with a substantive part stays
    asked = "Can this agreement be signed in counterparts, and how are notices given?"
    keep, demoted = split_roles(hits, wanted_roles(asked), boilerplate_test(asked, terms))
    assert {"6. Counterparts", "Section 9.02 Notices"} <= {h.id for h, _ in keep}  # named by the question


def test_a_definitions_chunk_that_defines_nothing_is_ranked_as_a_clause():
    """The chunker marks every block of a "Definitions" section; when the clause titles after it
    are not recognised as headings, the section runs on over substantive clauses (CUAD: "12.2 IN NO
    EVENT WILL EITHER PARTY BE LIABLE ..." under "2. Certain Definitions"). Such a chunk defines no
    term and is not demoted; a chunk that defines terms still is."""
    from folioflow.indexing.clause_ranking import chunk_role

    def hit(name, text):
        class Hit:
            id, payload = name, {"page_content": text, "metadata": {"heading_path": ["SPONSORSHIP AGREEMENT",
                                                                                     "2. Certain Definitions"],
                                                                    "extra": {ROLE: DEFINITIONS}}}
        return Hit()

    defines = [hit("terms", "2.1 “Affiliate” shall mean any entity controlling, controlled by or under common control "
                            "with a Party.\n\n2.2 “Marks” means the trademarks listed in Exhibit A."),
               hit("meaning", 'Capitalised terms used and not defined herein have the meaning set forth in the '
                              'Master Agreement. "Territory" has the meaning given in Section 3.'),
               hit("as used", "As used in this Agreement, the following terms have the following meanings:")]
    runs_on = [hit("cap", "12.2 EXCEPTING ONLY CLAIMS MADE PURSUANT TO SECTION 12.1, IN NO EVENT WILL EITHER PARTY "
                          "BE LIABLE FOR ANY INDIRECT, SPECIAL OR CONSEQUENTIAL DAMAGES, AND IN NO EVENT SHALL EITHER "
                          "PARTY'S AGGREGATE LIABILITY EXCEED THE SPONSORSHIP FEES PAID."),
               hit("covenants", "9. Certain Material Covenants of Allied 9.1 Allied shall organize and host events, both "
                                "online and at the Venue, at its sole cost and expense.")]
    assert [chunk_role(h.payload) for h in defines] == [DEFINITIONS] * 3
    assert [chunk_role(h.payload) for h in runs_on] == [None, None]
    question = "Is either party's liability limited, and to what amount?"
    ranked = [(h, 1.0 - i / 10) for i, h in enumerate(defines + runs_on)]
    keep, demoted = split_roles(ranked, wanted_roles(question))
    assert [h.id for h, _ in keep] == ["cap", "covenants"] and [h.id for h, _ in demoted] == ["terms", "meaning",
                                                                                               "as used"]


def test_the_glossary_sparse_weight_weighs_bm25_for_a_question_the_glossary_expanded(contract_store, embedder):
    """``glossary_sparse_weight`` (legal profile 1.5) is the weight of the BM25 ranking in the
    retriever's Reciprocal Rank Fusion of a question the glossary expanded: a weight that dwarfs the
    dense ranking's 1 puts BM25's first chunk first, a tiny one the dense search's; a question the
    glossary leaves as asked is ranked the same whatever the weight. The re-ranking rules and the
    sentence search are off here, and so is the learned expansion of the hybrid search's BM25 query
    (``expansion_terms``), so the fusion of the same two searches is seen alone."""
    from folioflow.indexing.glossary import LEGAL

    store, ids, _ = contract_store
    plain = dict(store=store, embedder=embedder, k=3, profile="legal", glossary=LEGAL, route_titles=False,
                 demote_roles=False, heading_weight=0.0, sentence_weight=0.0, expansion_terms=0)
    heavy = FolioRetriever(**plain, glossary_sparse_weight=1000.0)
    light = FolioRetriever(**plain, glossary_sparse_weight=0.001)
    expanded = [q for q in CLAUSE_QUESTIONS + ["Can a party assign this agreement without the other party's consent?",
                                               "What insurance must a party carry?"] if LEGAL.matches(q)]
    model = str(getattr(embedder, "model_name", ""))  # left as asked by the keyword patterns and by meaning
    as_asked = [q for q in CLAUSE_QUESTIONS if LEGAL.expand(q, embedder.encode_query(q), embedder.encode, model) == q]
    assert len(expanded) >= 3 and len(as_asked) >= 3
    differ = 0
    for doc_id in ids.values():
        for question in expanded:
            by_sparse = FolioRetriever(**plain, mode="sparse").invoke(question, doc_ids=[doc_id])
            by_dense = FolioRetriever(**plain, mode="dense").invoke(question, doc_ids=[doc_id])
            assert heavy.invoke(question, doc_ids=[doc_id])[0].id == by_sparse[0].id, question
            assert light.invoke(question, doc_ids=[doc_id])[0].id == by_dense[0].id, question
            differ += by_sparse[0].id != by_dense[0].id
        for question in as_asked:
            assert [d.id for d in heavy.invoke(question, doc_ids=[doc_id])] == \
                [d.id for d in light.invoke(question, doc_ids=[doc_id])], question
    assert differ  # some questions where the two searches disagree on the best chunk


def test_a_date_question_gets_the_party_block_that_holds_a_date(tmp_path, embedder):
    """A contract whose exhibit holds a blank form of another agreement ("made on [date] by and
    between [Party A] ..."): that form shares the question's words ("agreement", "made", "date")
    and, as a party block too, outranked the contract's own preamble, which is dated ("entered into
    as of March 1, 2024"). A question that asks for a date gets the dated party block first."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    from folioflow.indexing.clause_ranking import DATE, asks_date

    assert asks_date("On what date was this agreement made?") and asks_date("What is the date of this contract?")
    assert not asks_date("Which state's law governs this agreement?")
    assert not asks_date("When does this agreement take effect?")  # a provision as often as a date
    assert DATE.search("THIS AGREEMENT is made this 1st day of April, 2007") and DATE.search("Date: 1/27/2020")
    assert not DATE.search("made on [date]") and not DATE.search("this ____ day of __________, 20__")

    body = getSampleStyleSheet()["BodyText"]
    path = tmp_path / "BirchFoods_Distribution Agreement.pdf"
    story = [Paragraph("DISTRIBUTION AGREEMENT", body),
             Paragraph("This Distribution Agreement is entered into as of March 1, 2024 by and between Birch Foods "
                       "Inc., an Ohio corporation (\"Birch\"), and Cedar Retail LLC, a Texas limited liability company "
                       "(\"Distributor\").", body)]
    for n, (title, text) in enumerate([
            ("Appointment", "Birch appoints Distributor as its non-exclusive distributor of the products in Texas."),
            ("Orders", "Distributor shall place purchase orders in writing at least thirty days before delivery."),
            ("Payment", "Distributor shall pay each invoice within forty-five days of its receipt."),
            ("Governing Law", "This Agreement is governed by the laws of the State of Ohio.")], start=1):
        story.append(Paragraph(f"{n}. {title}. {text} " + "The parties shall act in good faith. " * 12, body))
    story += [PageBreak(), Paragraph("EXHIBIT A FORM OF SUB-DISTRIBUTION AGREEMENT", body),
              Paragraph("This Sub-Distribution Agreement is made on [date] (the \"Agreement Date\") by and between "
                        "[Distributor], a [state] [entity], and [Sub-Distributor], a [state] [entity]; this agreement "
                        "was made on the date first written above.", body)]
    SimpleDocTemplate(str(path), pagesize=LETTER).build(story)
    chunks = _chunk_pdf(path)
    blocks = [c.text for c in chunks if c.metadata.get(ROLE) == PARTIES]
    assert len(blocks) == 2 and "March 1, 2024" in blocks[0] and "[date]" in blocks[1], blocks
    store = open_store(StoreSettings(data_dir=tmp_path / "store", backend="edge"))
    try:
        _index(Indexer(embedder, store), path, chunks)
        question = "On what date was this agreement made?"
        dated = FolioRetriever(store=store, embedder=embedder, profile="legal").invoke(question, k=3)
        # the case the rule is for, without the query adapter (which finds the dated preamble here too)
        undated = FolioRetriever(store=store, embedder=embedder, profile="legal", date_weight=0.0,
                                 query_adapter=None).invoke(question, k=3)
    finally:
        store.close()
    assert "March 1, 2024" in dated[0].page_content, [d.page_content[:80] for d in dated]
    assert "[date]" in undated[0].page_content  # the blank form led before the rule


def _text_hit(text: str):
    """A hit whose payload holds only ``text`` (its id: the text's start)."""
    class Hit:
        id, payload = text[:30], {"page_content": text}
    return Hit()


def test_the_glossary_wording_names_a_general_provision_and_a_defined_term():
    """CUAD: "Can anyone other than the parties enforce this agreement?" shares no term with a
    "5. Third-Party Beneficiary" title, but the legal glossary's drafting words ("third party
    beneficiaries") do, so the clause is not demoted as a general provision; and a definitions chunk
    that defines a term the expanded question names (``"Effective Date" shall mean December 5,
    2014``) stays with the clauses, while one that defines other terms is still demoted."""
    from folioflow.indexing.clause_ranking import defines_named_term
    from folioflow.indexing.glossary import LEGAL

    encoder = BM25Encoder()

    def terms(text):
        return encoder.encode_query(text).indices

    class Hit:
        def __init__(self, name, title, text="", role=None):
            self.id = name
            self.payload = {"page_content": text, "metadata": {"heading_path": ["FRANCHISE AGREEMENT", title],
                                                               "extra": {ROLE: role} if role else {}}}

    question = "Can anyone other than the parties enforce this agreement?"
    beneficiary = Hit("tpb", "5. Third-Party Beneficiary", "Franchisor is an intended third-party beneficiary.")
    assert boilerplate_test(question, terms)(beneficiary)  # by the question's own words: a general provision
    assert not boilerplate_test(LEGAL.expand(question), terms)(beneficiary)

    effect = "When does this agreement take effect?"
    asked = LEGAL.expand(effect)
    assert asked != effect and "Effective Date" in asked
    named = Hit("eff", "1. DEFINITIONS", "1.3 “Current Good Manufacturing Practices” shall mean the FDA's standards. "
                                         "1.4“Effective Date” shall mean December 5, 2014.", DEFINITIONS)
    other = Hit("other", "1. DEFINITIONS", "1.5 “Territory” means the United States. 1.6 “Products” means the "
                                           "devices listed in Exhibit A.", DEFINITIONS)
    clause = Hit("term", "2. TERM", "This Agreement shall commence on the Effective Date and run for five years.")
    ranked = [(other, 0.9), (named, 0.8), (clause, 0.7)]
    keep, demoted = split_roles(ranked, wanted_roles(effect), asked=asked)
    assert [h.id for h, _ in keep] == ["eff", "term"] and [h.id for h, _ in demoted] == ["other"]
    keep, demoted = split_roles(ranked, wanted_roles(effect))  # without the expanded question: both demoted
    assert [h.id for h, _ in keep] == ["term"]
    assert not defines_named_term('“Term” means the Initial Term and every Renewal Term.', "What is the term?")


def test_a_take_effect_question_leads_with_a_party_block_only_when_it_dates_itself():
    """"When does this agreement take effect?": a preamble that is dated, or says it is entered
    into effective (even on a blank date, which CUAD annotates as the answer), answers it; one that
    is entered into "as of the Effective Date (as defined below)" or "as of this day of , 20" does
    not, and the fused ranking stands (CUAD tuning half: the party block led 4 such questions whose
    answer was a definition or a term clause)."""
    from folioflow.indexing.clause_ranking import asks_effect, effective_blocks

    assert asks_effect("When does this agreement take effect?") and asks_effect("When does the term commence?")
    assert asks_effect("What is the effective date?") and asks_effect("When does it come into force?")
    assert not asks_effect("On what date was this agreement made?") and not asks_effect("Who are the parties?")

    answers = [_text_hit("This Agreement is entered into on April 15th, 2010 by and between Cargill and Bioamber."),
               _text_hit("THIS ENDORSEMENT AGREEMENT is made and entered into effective this day of ________, 19__, by and "
                   "between SPORT-HALEY, INC. and the Professional."),
               _text_hit("This Reseller Agreement is made as of this 14 day of SEPTEMBER, 200_ (the \"Effective Date\"), "
                   "by and between TouchStar and Reseller.")]
    others = [_text_hit("This Manufacturing and Supply Agreement is entered into as of the Effective Date (as defined "
                  "below) by and between Apollo and the Establishment."),
              _text_hit("Agreement, made as of this day of , 20 between Nationwide Fund Management LLC and the Trust.")]
    assert effective_blocks(others + answers) == answers


def test_a_clause_that_dates_the_agreements_start_answers_when_it_takes_effect():
    """A term clause that says when the agreement begins ("will begin on February 1, 1998") answers
    "when does it take effect?" more exactly than the preamble's date of signing (CUAD: "dated as of
    January 26, 1998"), so the retriever puts it first among the first fused chunks; a clause that
    starts on "the Effective Date" without a date, or a preamble's date, is not one."""
    from folioflow.indexing.clause_ranking import effect_clauses

    dating = [_text_hit("4. Term and Termination. The term of this Agreement (the \"Term\") will begin on February 1, 1998 "
                  "and end on the first anniversary of the date of this Agreement."),
              _text_hit("5. Term. The term of this Agreement shall commence on December 1, 2001, which date shall be deemed "
                  "the effective date of this Agreement."),
              _text_hit("Signed and effective this 25th day of May, 1999."),
              _text_hit("1.7“Effective Date” shall mean December 5, 2014.")]
    others = [_text_hit("This Promotion Agreement is dated as of January 26, 1998 between CNET, Inc. and the Company."),
              _text_hit("2.1 Term. This Agreement shall commence on the Effective Date and shall be valid for five years."),
              _text_hit("The licence commences on delivery. Payment is due on March 3, 2020."),
              # the date an end word or a renewal dates
              _text_hit("1. Term. The term of this Agreement shall commence on the Effective Date and conclude on "
                        "October 31, 2010, unless terminated earlier."),
              _text_hit("8.1 The Company may renew this Agreement for one additional five year period that shall begin "
                        "on January 1, 2005 and end on December 31, 2009.")]
    assert effect_clauses(others + dating) == dating


def test_a_question_for_the_effective_or_commencement_date_is_a_take_effect_question():
    """"What is the effective date?" and "the commencement date" ask when the agreement starts (a
    term clause or the preamble, :func:`asks_effect`), not when it was signed (:func:`asks_date`);
    they still ask for the party block."""
    from folioflow.indexing.clause_ranking import asks_date, asks_effect

    for question in ("What is the effective date of this agreement?", "What is the commencement date of the agreement?",
                     "What is the start date of the contract?", "From what date does this agreement take effect?"):
        assert asks_effect(question) and not asks_date(question), question
        assert leading_role(wanted_roles(question)) == PARTIES, question
    assert asks_date("What is the date of this agreement?") and not asks_effect("What is the date of this agreement?")



def test_a_question_for_when_the_agreement_starts_or_becomes_binding_is_a_take_effect_question():
    """"When does the contract begin?", "When does this contract become binding?": the agreement itself
    starting is its taking effect (party block first, the effective-date glossary words); a period's
    start, a renewal, and "binding on" someone are not. The rules and the legal glossary read one
    pattern (``STARTS_QUESTION``), so they agree on every question."""
    from folioflow.indexing.clause_ranking import asks_date, asks_effect
    from folioflow.indexing.glossary import LEGAL

    effective = next(e.expansion for e in LEGAL.entries if e.pattern.search("When does this agreement take effect?"))
    for question in ("When does the agreement start?", "When does the contract begin?", "On which day does the agreement begin?",
                     "When does this contract become binding?", "When does the agreement become valid?",
                     "When do the contract's terms begin to apply?",
                     "As of what date does the contract become enforceable?"):
        assert asks_effect(question) and not asks_date(question), question
        assert leading_role(wanted_roles(question)) == PARTIES, question
        assert effective in LEGAL.matches(question), question
    for question in ("When does the contract begin a renewal term?", "When does the notice period start?",
                     "When does the warranty period begin?", "Can the agreement be terminated before it starts?",
                     "Is the agreement binding on affiliates?", "Who is the agreement binding on?"):
        assert not asks_effect(question) and PARTIES not in wanted_roles(question), question
        assert effective not in LEGAL.matches(question), question


def test_a_question_for_when_a_contract_is_in_force_is_a_take_effect_question():
    """"From what date is the contract in force?" asks when it takes effect, not when it was signed;
    BM25 alone matched its "force" to the Force Majeure clause, so the legal glossary appends the
    effective-date wording. "How long does it remain in force?" asks for the term: neither."""
    from folioflow.indexing.clause_ranking import asks_date, asks_effect
    from folioflow.indexing.glossary import LEGAL

    effective = next(e.expansion for e in LEGAL.entries if e.pattern.search("When does this agreement take effect?"))
    for question in ("From what date is the contract in force?", "When does the agreement enter into force?",
                     "As of when is this contract in effect?", "Since when has the agreement been in force?"):
        assert asks_effect(question) and not asks_date(question), question
        assert leading_role(wanted_roles(question)) == PARTIES, question
        assert effective in LEGAL.matches(question), question
    for question in ("How long does the agreement remain in force?", "Does the license stay in effect after termination?",
                     "Which provisions are in force during the renewal term?"):
        assert not asks_effect(question) and PARTIES not in wanted_roles(question), question
        assert effective not in LEGAL.matches(question), question


def test_a_date_question_without_a_dated_party_block_gets_the_one_whose_date_is_blank():
    """CUAD annotates a preamble's blank date as a form's agreement date ("made as of this day of ,
    20"); a template's "[date]" and an undated preamble are not blank dates."""
    from folioflow.indexing.clause_ranking import BLANK_DATE, blank_dated

    blanks = [_text_hit("Agreement, made as of this day of , 20 between Nationwide Fund Management LLC and the Trust."),
              _text_hit("THIS ENDORSEMENT AGREEMENT is made and entered into effective this day of ___________________, "
                  "19__, by and between SPORT-HALEY, INC. and the Professional."),
              _text_hit("This Reseller Agreement is made as of this 14 day of SEPTEMBER, 200_ by and between TouchStar.")]
    others = [_text_hit("This Sub-Distribution Agreement is made on [date] by and between [Distributor] and [Sub]."),
              _text_hit("THIS CONTRACT is entered into by and between Enterprise Transportation Company and Shipper."),
              _text_hit("THIS AGREEMENT is made this 1st day of April, 2007 by and between the Bank and the Employee.")]
    assert blank_dated(others + blanks) == blanks
    assert not BLANK_DATE.search("the first day of the month following delivery")


def test_a_chunk_both_searches_rank_first_is_not_demoted_for_its_title(tmp_path, embedder):
    """The ranking property "a chunk ranked first by both dense and sparse search is ranked first by
    hybrid" holds against the general-provision demotion too: CUAD's endorsement agreement keeps its
    insurance obligation under "6. INDEPENDENT CONTRACTOR", a general-provision title, and both
    searches rank that chunk first for "What insurance must a party carry?"."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    body = getSampleStyleSheet()["BodyText"]
    path = tmp_path / "SquareTwoGolf_Endorsement Agreement.pdf"
    clauses = [("Endorsement Services", "The Professional shall appear at four promotional events each year and "
                                        "endorse the Company's golf clubs in advertising."),
               ("Compensation", "The Company shall pay the Professional a base fee of thirty-six thousand dollars "
                                "per year, in quarterly instalments."),
               ("Independent Contractor", "The Professional is an independent contractor and not an employee of the "
                                          "Company. The Professional agrees to maintain at all times during the Term "
                                          "such insurance, including health insurance, workers' compensation, "
                                          "automobile and general comprehensive liability coverage, as is customary. "
                                          "The Company may require the Professional to provide insurance certificates "
                                          "evidencing the same."),
               ("Termination", "Either party may terminate this Agreement on thirty days' written notice if the "
                               "other party breaches it."),
               ("Governing Law", "This Agreement is governed by the laws of the State of New Jersey.")]
    story = [Paragraph("ENDORSEMENT AGREEMENT", body),
             Paragraph("This Endorsement Agreement is made as of October 13, 1999 by and between Square Two Golf Inc. "
                       "(the \"Company\") and Jane Doe (the \"Professional\").", body)]
    story += [Paragraph(f"{n}. {title.upper()}. {text}", body) for n, (title, text) in enumerate(clauses, start=1)]
    SimpleDocTemplate(str(path), pagesize=LETTER).build(story)
    chunks = _chunk_pdf(path)
    store = open_store(StoreSettings(data_dir=tmp_path / "store", backend="edge"))
    question = "What insurance must a party carry?"
    try:
        _index(Indexer(embedder, store), path, chunks)
        common = dict(store=store, embedder=embedder, profile="legal", k=3)
        raw = dict(common, demote_roles=False, heading_weight=0.0)  # each search's own ranking (of the expanded question)
        by_dense = FolioRetriever(**raw, mode="dense").invoke(question)
        by_sparse = FolioRetriever(**raw, mode="sparse").invoke(question)
        hybrid = FolioRetriever(**common).invoke(question)
    finally:
        store.close()
    assert by_dense[0].id == by_sparse[0].id and "insurance certificates" in by_dense[0].page_content
    assert by_dense[0].metadata["heading_path"][-1] == "3. INDEPENDENT CONTRACTOR"
    encoder = BM25Encoder()
    from folioflow.indexing.glossary import LEGAL

    class Hit:
        payload = {"metadata": {"heading_path": by_dense[0].metadata["heading_path"]}}

    assert boilerplate_test(LEGAL.expand(question), lambda text: encoder.encode_query(text).indices)(Hit())
    assert hybrid[0].id == by_dense[0].id, [d.page_content[:60] for d in hybrid]


class _CountingGlossary(Glossary):
    """The legal glossary's entries, counting how often a question is matched by meaning."""

    def __init__(self):
        super().__init__([(e.pattern.pattern, e.expansion, e.concept) for e in LEGAL.entries], name="counting",
                         semantic_threshold=LEGAL.semantic_threshold, semantic_margin=LEGAL.semantic_margin)
        self.by_meaning = 0

    def closest(self, query_vector, encode, model=""):
        self.by_meaning += 1
        return super().closest(query_vector, encode, model)


def test_a_question_for_the_parties_or_the_date_is_not_expanded_by_meaning(contract_store, embedder):
    """Matched by meaning, "What is the date of this contract?" drew the term clause's drafting
    words (the closest concept), which pulled term clauses above the preamble; a question that
    asks for a role keeps to the glossary's keyword patterns, a clause question is still matched
    by meaning."""
    store, ids, _ = contract_store
    glossary = _CountingGlossary()
    question = "What is the date of this contract?"
    assert glossary.closest(embedder.encode_query(question), embedder.encode, "test-minilm") is not None
    retriever = FolioRetriever(store=store, embedder=embedder, glossary=glossary)  # profile auto: legal
    glossary.by_meaning = 0
    for q in (question, "Who are the parties to this agreement?", "Which companies signed this contract?"):
        assert wanted_roles(q)
        retriever.invoke(q, doc_ids=[ids["run_in"]], k=3)
    assert glossary.by_meaning == 0
    retriever.invoke("Which jurisdiction's rules control the interpretation of the deal?", doc_ids=[ids["run_in"]], k=3)
    assert glossary.by_meaning == 1
    # with role demotion off (another profile's settings), the question is matched by meaning as before
    FolioRetriever(store=store, embedder=embedder, glossary=glossary, demote_roles=False).invoke(question, k=3)
    assert glossary.by_meaning == 2


def test_a_question_no_rule_reads_is_read_by_its_closest_example_questions(contract_store, embedder):
    """"When does the deal kick in?" matches no rule and no glossary pattern; its closest example
    questions are the signing-date and the take-effect questions, which both ask for the party block:
    it comes first. With a glossary without example questions, the question is a clause question and
    the party block goes after every clause."""
    from folioflow.indexing.clause_ranking import asks_date, asks_effect

    store, ids, chunks_of = contract_store
    question = "When does the deal kick in?"
    assert not wanted_roles(question) and not asks_date(question) and not asks_effect(question)
    assert not LEGAL.matches(question)
    near = LEGAL.near_examples(embedder.encode_query(question), embedder.encode, "test-minilm")
    assert {e.canonical for e in near} == {"On what date was this agreement made?", "When does this agreement take effect?"}
    without = Glossary([(e.pattern.pattern, e.expansion, e.concept) for e in LEGAL.entries],
                       semantic_threshold=LEGAL.semantic_threshold, semantic_margin=LEGAL.semantic_margin)
    for style, doc_id in ids.items():
        preamble = next(c.text for c in chunks_of[style] if c.metadata.get(ROLE) == PARTIES)
        docs = FolioRetriever(store=store, embedder=embedder).invoke(question, doc_ids=[doc_id], k=5)
        assert docs[0].page_content == preamble, (style, _role(docs[0]))
        plain = FolioRetriever(store=store, embedder=embedder, glossary=without).invoke(question, doc_ids=[doc_id], k=5)
        # the party block after every clause among the results (a clause question demotes roles)
        at = [d.page_content for d in plain].index(preamble) if preamble in [d.page_content for d in plain] else len(plain)
        assert at > 0 and all(_role(d) is not None for d in plain[at:]), (style, [_role(d) for d in plain])


def test_a_smaller_k_is_a_prefix_of_the_ranking_and_a_larger_k_extends_it(contract_store, embedder):
    """The legal profile's searches fetch ``k`` candidates each, so before, ``k=3`` was not the first
    three of ``k=5`` and ``k=8`` reordered the top 5 (a user trial). Now a smaller ``k`` is the
    first results of ``k=5`` (``STABLE_K``), and a larger one keeps its clauses ahead of its first
    role chunk and adds after them, role chunks still after every clause, scores never rising."""
    store, _, _ = contract_store
    retriever = FolioRetriever(store=store, embedder=embedder)  # profile auto: legal
    assert retriever.resolve_profile() == "legal"
    extended = 0
    for question in CLAUSE_QUESTIONS:
        ranked = {k: retriever.invoke(question, k=k) for k in (1, 2, 3, 4, 5, 6, 8, 12, 30)}
        five = [d.id for d in ranked[5]]
        stand = next((i for i, d in enumerate(ranked[5]) if _role(d)), 5)  # no question asks for a role
        assert len(five) == 5
        for k, docs in ranked.items():
            ids = [d.id for d in docs]
            assert len(ids) == k and len(set(ids)) == k, (question, k)
            assert ids[:k] == five[:k] if k <= 5 else ids[:stand] == five[:stand], (question, k)
            roles = [_role(d) for d in docs]
            first_role = next((i for i, r in enumerate(roles) if r), len(roles))
            assert all(roles[first_role:]), (question, k, roles)  # no clause after a role chunk
            scores = [d.metadata["score"] for d in docs]
            assert scores == sorted(scores, reverse=True), (question, k)
        extended += stand == 5 and [d.id for d in ranked[8]][:5] == five
    assert extended  # some top 5 of k=8 is the top 5 of k=5 whole


def test_a_term_question_keeps_the_definition_or_preamble_that_states_the_term():
    """"When does this agreement expire, and how long is its initial term?" is answered in many
    contracts by a definition (``"Term" shall mean the period commencing on the Effective Date and
    terminating on the eighth anniversary ...``) or by the preamble ("... and shall terminate on July
    31, 2009"), both role chunks that role demotion put after every clause (CUAD: three contracts
    whose term is defined, one whose preamble states it). A role chunk that states when the term
    ends stays with the clauses for a term question, and only for one; other definitions are still
    demoted, and a renewal's end is not the term's."""
    from folioflow.indexing.clause_ranking import asks_term, states_term

    term_q = "When does this agreement expire, and how long is its initial term?"
    assert asks_term(term_q) and asks_term("What is the term of this agreement?")
    assert asks_term("How long does the contract run?") and asks_term("When does the agreement end?")
    assert not asks_term("What must the parties still do after the agreement ends?")
    assert not asks_term("How long do the warranties last?") and not asks_term("When does this agreement take effect?")
    assert asks_term("What is the contract term?") and asks_term("When does this contract terminate?")
    for other in ("When do the warranties expire?", "What is the expiration date of the payment obligation?",
                  "How long does it take to deliver the products?", "How long does the supplier have to cure it?"):
        assert not asks_term(other), other
    assert states_term('"Term" shall mean the period commencing on the Effective Date and terminating on the eighth '
                       'anniversary of the Commencement Date, unless extended.')
    assert states_term("1.20. Term shall mean the Effective Date through June 15, 2001 and any Renewal Term.")
    assert not states_term("This Agreement may be extended for one additional year ending December 31, 2005.")
    assert not states_term('"Affiliate" means any entity that controls a party.')
    for other in ('"Fiscal Year" means each twelve month period ending December 31, 2005.',  # not the agreement's
                  '"Royalty Term" means the period expiring on the tenth anniversary of the first sale.',
                  '"Exclusivity Period" means the period until December 31, 2010.'):
        assert not states_term(other), other

    def hit(name, text, role):
        class Hit:
            id, payload = name, {"page_content": text, "metadata": {"heading_path": ["OUTSOURCING AGREEMENT"],
                                                                    "extra": {ROLE: role} if role else {}}}
        return Hit()

    defined = hit("defined", '"Taxes" shall mean any sales or use tax. "Term" shall mean the period commencing on the '
                             'Effective Date and terminating on the eighth anniversary of the Commencement Date.',
                  DEFINITIONS)
    other = hit("other", '"Affiliate" means any entity that controls a party. "Services" means the data processing '
                         'services listed in Exhibit A.', DEFINITIONS)
    preamble = hit("preamble", "This Reseller Agreement is entered into by and between AEIS and Schoolpop, Inc. This "
                               "Agreement is effective as of August 1, 2004 and shall terminate on July 31, 2009.",
                   PARTIES)
    clause = hit("renewal", "2.2 Extensions. At least eighteen months before the expiration of the Term, M&I shall "
                            "submit a proposal to extend the Term.", None)
    ranked = [(clause, 0.9), (other, 0.8), (defined, 0.7), (preamble, 0.6)]
    keep, demoted = split_roles(ranked, wanted_roles(term_q), question=term_q)
    assert [h.id for h, _ in keep] == ["renewal", "defined", "preamble"] and [h.id for h, _ in demoted] == ["other"]
    for question in ("Which state's law governs this agreement?", None):  # another question: all role chunks after
        keep, demoted = split_roles(ranked, wanted_roles(question or ""), question=question)
        assert [h.id for h, _ in keep] == ["renewal"]

    effect = "When does this agreement take effect?"
    period = hit("period", '(a) "Contract Period" shall mean that period of time commencing on January 1, 2000 and '
                           'concluding December 31, 2003. (b) "Contract Year" shall mean each twelve month period.',
                 DEFINITIONS)
    keep, demoted = split_roles([(other, 0.9), (period, 0.8)], wanted_roles(effect), question=effect)
    assert [h.id for h, _ in keep] == ["period"] and [h.id for h, _ in demoted] == ["other"]


def test_a_term_question_finds_the_term_defined_among_the_definitions(tmp_path, embedder):
    """A generated contract whose initial term is stated only in its definitions ("“Term” shall
    mean the period commencing on the Effective Date and ending on February 28, 2027"), with more
    substantive clauses than results asked, most of them naming the term or its expiration: the
    definitions chunk is among the top 5 for a term question (before the rule it came after the
    clauses), and still after them for another question."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    body = getSampleStyleSheet()["BodyText"]
    path = tmp_path / "LarchData_Services Agreement.pdf"
    story = [Paragraph("<b>SERVICES AGREEMENT</b>", body),
             Paragraph("This Services Agreement is entered into as of March 1, 2024 by and between Larch Data Inc., a "
                       "Delaware corporation (\"Larch\"), and Maple Bank, N.A. (\"Bank\").", body),
             Paragraph("<b>1. Definitions.</b>", body),
             Paragraph("1.1 “Affiliate” means any entity that controls, is controlled by or is under common control "
                       "with a party. 1.2 “Services” means the data processing services listed in Exhibit A. 1.3 "
                       "“Term” shall mean the period commencing on the Effective Date and ending on February 28, "
                       "2027. 1.4 “Fees” means the charges set out in Exhibit B.", body)]
    for n, (title, text) in enumerate([
            ("Services", "Larch shall perform the Services for the Bank during the term of this Agreement."),
            ("Fees", "The Bank shall pay the Fees monthly within thirty days of each invoice."),
            ("Termination", "Either party may terminate this Agreement upon ninety days' written notice if the other "
                            "party materially breaches it and fails to cure the breach."),
            ("Transition", "Upon expiration or termination of this Agreement, Larch shall return all Bank data."),
            ("Confidentiality", "Each party shall keep the other's information confidential during the term and for "
                                "three years after termination."),
            ("Renewal", "The parties may renew this Agreement by mutual written agreement before its expiration."),
            ("Records", "Larch shall keep accurate records during the term and for two years after expiration."),
            ("Insurance", "Larch shall maintain insurance throughout the term of this Agreement."),
            ("Governing Law", "This Agreement is governed by the laws of the State of New York.")], start=2):
        story += [Paragraph(f"<b>{n}. {title}.</b>", body), Paragraph(f"{n}.1 {text}", body)]
    SimpleDocTemplate(str(path), pagesize=LETTER).build(story)
    chunks = _chunk_pdf(path)
    assert [c.metadata.get(ROLE) for c in chunks if "February 28, 2027" in c.text] == [DEFINITIONS]
    store = open_store(StoreSettings(data_dir=tmp_path / "store", backend="edge"))
    try:
        _index(Indexer(embedder, store), path, chunks)
        retriever = FolioRetriever(store=store, embedder=embedder, profile="legal")
        term = retriever.invoke("When does this agreement expire, and how long is its initial term?", k=5)
        law = retriever.invoke("Which state's law governs this agreement?", k=10)
    finally:
        store.close()
    assert any("February 28, 2027" in d.page_content for d in term), [d.page_content[:60] for d in term]
    clauses = [d for d in law if _role(d) is None]
    assert len(clauses) >= 5 and all("February 28, 2027" not in d.page_content for d in clauses)
