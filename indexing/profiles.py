"""Retrieval profiles: ranking defaults per kind of collection (``finance``, ``legal``, ``general``).

A profile sets the retriever options whose best value depends on the documents (see
docs/retrieval.md for the measurements behind each choice):

==========  ================  ===============  ===========================  ============  ============================  =============================  ============================
profile     glossary          distinct pages   page scoring (``page_decay``)  demote roles  heading weight                route weight                   sparse weight
==========  ================  ===============  ===========================  ============  ============================  =============================  ============================
finance     :data:`FINANCE`   yes              :data:`PAGE_DECAY`             no            0                             :data:`FINANCE_ROUTE_WEIGHT`   1
legal       :data:`LEGAL`     no               off (plain chunk ranking)      yes           :data:`LEGAL_HEADING_WEIGHT`  :data:`LEGAL_ROUTE_WEIGHT`     :data:`LEGAL_SPARSE_WEIGHT`
general     none              yes              :data:`PAGE_DECAY`             yes           0                             1                              1
==========  ================  ===============  ===========================  ============  ============================  =============================  ============================

The sparse weight (``glossary_sparse_weight``) is the weight of the BM25 ranking in the hybrid
fusion of a question the profile's glossary expanded (the dense ranking weighs 1; a question left
as asked is fused with equal weights).

Sentence search (``sentence_weight``, :data:`LEGAL_SENTENCE_WEIGHT` in the legal profile, 0 in the
others): a third ranking in hybrid fusion, the question against each chunk's best sentence, for
collections whose contracts were indexed with sentence vectors (the indexer's ``sentence_vectors``:
by default the documents whose title reads as a contract).

Hybrid fusion (``fusion``): ``convex`` in the legal profile, ``rrf`` in the others (retriever
docstring). In a contract, the clause a question asks for is often far ahead in one search (BM25 on
its drafting words) and unplaced in the other; rank fusion counts only places, so chunks placed
moderately in both passed it. FinanceBench was not measured with convex fusion.

The route weight is the weight of the search inside the documents a question names
(title routing) in its fusion with the unrestricted search: in a store of filings, a question
naming a company and a fiscal year is answered by that filing, and above about 1.7 the named
filings' candidates come before any other filing's.

``PAGE_DECAY`` is :data:`folioflow.indexing.retriever.PAGE_DECAY`. Role demotion and the clause-title
weight are :mod:`folioflow.indexing.clause_ranking`'s: role chunks (a contract's party block,
definitions, signatures) and general provisions ("Counterparts", "Entire Agreement", ...) after
every substantive chunk for a question that does not ask for them, the party block first for a
question that does (retriever options ``demote_boilerplate`` and ``lead_roles``, on by default,
act with role demotion), and a bonus for chunks whose clause title matches the question. The finance profile keeps neither
(FinanceBench was not measured with them).

Filings answer a question from a statement page whose table is cut into several chunks: pages
ranked by their chunks together, one chunk per page, and the finance glossary help there. A
contract answers a clause question from one clause chunk: page scoring lets a page of several
weaker chunks pass it, distinct pages show another chunk of the clause's page, and the finance
glossary expands no clause question. Title routing stays on in every profile.

The profile of a collection is inferred from what was ingested (:func:`infer_profile`, on the
documents' titles, i.e. their file names) unless the caller names one (``FolioRetriever(profile=...)``,
``folioflow query --profile``); options given explicitly to the retriever win over the profile's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from folioflow.indexing.glossary import FINANCE, LEGAL

__all__ = ["PROFILES", "PROFILE_NAMES", "infer_profile", "profile_options"]

#: Profile names accepted by the retriever and the CLI (``auto``: inferred per collection).
PROFILE_NAMES = ("auto", "finance", "legal", "general")
#: Legal instruments' words in titles (``..._Supply Agreement.pdf``, ``NON-COMPETITION AGREEMENT``).
_LEGAL = re.compile(r"agreement|contract|licen[cs]e|lease|amendment|addendum|indenture|covenant|memorandum of "
                    r"understanding|terms (and|&) conditions|\bnda\b|\bmou\b", re.IGNORECASE)
#: Financial reports' words in titles (``3M_2018_10K.pdf``, ``annual report``, ``Q3 earnings``).
_FINANCE = re.compile(r"(?<![a-z])(10-?k|10-?q|20-?f|40-?f|8-?k)(?![a-z0-9]|\.\d)|annual[ _-]?report|earnings|"
                      r"financial[ _-]?statements?|interim[ _-]?report|quarterly[ _-]?report", re.IGNORECASE)


def profile_options(name: str) -> dict[str, Any]:
    """The retriever options of profile ``name`` (``finance``, ``legal`` or ``general``): ``glossary``,
    ``distinct_pages``, ``page_decay``, ``demote_roles``, ``heading_weight``, ``route_weight``,
    ``glossary_sparse_weight``, ``date_weight``, ``fusion``, ``sentence_weight``. Raises ``ValueError`` for another name."""
    from folioflow.indexing.retriever import PAGE_DECAY

    table: dict[str, dict[str, Any]] = {
        "finance": {"glossary": FINANCE, "distinct_pages": True, "page_decay": PAGE_DECAY, "demote_roles": False,
                    "heading_weight": 0.0, "route_weight": FINANCE_ROUTE_WEIGHT, "glossary_sparse_weight": 1.0,
                    "date_weight": 0.0, "fusion": "rrf", "sentence_weight": 0.0},
        "legal": {"glossary": LEGAL, "distinct_pages": False, "page_decay": 0.0, "demote_roles": True,
                  "heading_weight": LEGAL_HEADING_WEIGHT, "route_weight": LEGAL_ROUTE_WEIGHT,
                  "glossary_sparse_weight": LEGAL_SPARSE_WEIGHT, "date_weight": LEGAL_DATE_WEIGHT,
                  "fusion": "convex", "sentence_weight": LEGAL_SENTENCE_WEIGHT},
        "general": {"glossary": None, "distinct_pages": True, "page_decay": PAGE_DECAY, "demote_roles": True,
                    "heading_weight": 0.0, "route_weight": 1.0, "glossary_sparse_weight": 1.0,
                    "date_weight": 0.0, "fusion": "rrf", "sentence_weight": 0.0}}
    if name not in table:
        raise ValueError(f"unknown retrieval profile {name!r}: use one of {', '.join(PROFILE_NAMES)}")
    return table[name]


PROFILES = ("finance", "legal", "general")
#: Weight of the clause-title match in the legal profile (:mod:`folioflow.indexing.clause_ranking`).
LEGAL_HEADING_WEIGHT = 1.0
#: Weight of the search inside the routed filings in the finance profile (retriever ``route_weight``):
#: chosen on the tuning half of the FinanceBench questions (docs/benchmarks.md).
FINANCE_ROUTE_WEIGHT = 5.0
#: Weight of the search inside the documents a question names (title routing) in the legal profile
#: (retriever ``route_weight``): "In the Pareteum agreement: ..." wants Pareteum's clauses, and other
#: contracts' best chunks for the same words otherwise took places in its top 5. Chosen on the tuning
#: half of the legal benchmark (docs/benchmarks.md).
LEGAL_ROUTE_WEIGHT = 2.0
#: Weight of the sparse (BM25) ranking in the hybrid fusion of a question the legal glossary
#: expanded, in the legal profile (retriever ``glossary_sparse_weight``; the dense ranking weighs
#: 1): the expansion is drafting language ("may not assign ... without prior written consent"),
#: which BM25 matches word for word in the clause; where the two searches disagreed on a contract's
#: best chunk, BM25's was the clause more often. Applied to every question instead, it cost
#: questions worded unlike the drafting (the benchmark's ``--wordings alt``). Chosen on the tuning
#: half of the legal benchmark, both wordings (docs/benchmarks.md): 1.5 and 2 score alike there.
LEGAL_SPARSE_WEIGHT = 1.5
#: Weight of the ranking of the candidates that hold a calendar date, for a question that asks for a
#: date, in the legal profile (retriever ``date_weight``; :func:`~folioflow.indexing.clause_ranking.asks_date`):
#: "On what date was this agreement made?" shares no word with "dated November 28, 2001". With it,
#: the party block leads such a question only when it holds a date (an exhibit's blank template,
#: "made effective on [date]", had outranked the agreement's own preamble). Chosen on the tuning
#: half of the legal benchmark (docs/benchmarks.md): 0.5, 1 and 2 score alike there.
LEGAL_DATE_WEIGHT = 1.0
#: Weight of the search of each chunk's best sentence in the hybrid fusion of the legal profile
#: (retriever ``sentence_weight``; the dense chunk ranking weighs
#: :data:`~folioflow.indexing.retriever.CONVEX_DENSE_WEIGHT`): a clause question is often answered
#: by one sentence of a chunk that holds several clauses, whose chunk vector is about all of them.
#: Chosen on the tuning half of the legal benchmark, main wording (0.3 to 0.7 alike, 1 lower; docs/benchmarks.md).
LEGAL_SENTENCE_WEIGHT = 0.5


def infer_profile(titles: Iterable[str]) -> str:
    """``legal`` when most titles name a legal instrument (a title naming both, like CUAD's
    ``..._10-K_EX-10.16_..._Development Agreement.pdf``, an agreement filed with a 10-K, counts as
    legal), ``finance`` when most name a financial report, else ``general`` (no titles, a mix
    without a majority, opaque names)."""
    titles = list(titles)
    if not titles:
        return "general"
    legal = sum(bool(_LEGAL.search(t)) for t in titles)
    finance = sum(bool(_FINANCE.search(t)) and not _LEGAL.search(t) for t in titles)
    if legal * 2 > len(titles):
        return "legal"
    if finance * 2 > len(titles):
        return "finance"
    return "general"
