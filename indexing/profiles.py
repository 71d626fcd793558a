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
by default the documents that read as a contract, :func:`document_profile`).

Query adapter (``query_adapter``, :data:`LEGAL_QUERY_ADAPTER` in the legal profile, none in the
others): a learned map of the question's dense vector toward the clauses of its kind, for the
default embedding model only (:mod:`folioflow.indexing.query_adapter`). Its learned term expansion
(``expansion_terms``, :data:`LEGAL_EXPANSION_TERMS` in the legal profile, 0 in the others) adds the
drafting words of the clause a question asks for to its BM25 query.

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

The profile of a collection is inferred from what was ingested (:func:`infer_profile`: each
document counts as what its title, i.e. its file name, names, and a document whose title names no
kind, like ``scan_0042.pdf`` or an object store's opaque key, as what its own text reads as,
:func:`text_profile`, recorded at ingest as ``metadata["text_profile"]``) unless the caller names one
(``FolioRetriever(profile=...)``, ``folioflow query --profile``); options given explicitly to the
retriever win over the profile's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import takewhile
from pathlib import Path
from typing import Any, Protocol

from folioflow.indexing.glossary import FINANCE, LEGAL

__all__ = ["PROFILES", "PROFILE_NAMES", "collection_profile", "document_profile", "infer_profile", "profile_options",
           "markdown_head", "record_text_profile", "record_title", "stored_text_profile", "text_profile", "title_profile"]

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
    ``glossary_sparse_weight``, ``date_weight``, ``fusion``, ``sentence_weight``, ``query_adapter``,
    ``expansion_terms``. Raises ``ValueError`` for another name."""
    from folioflow.indexing.retriever import PAGE_DECAY

    table: dict[str, dict[str, Any]] = {
        "finance": {"glossary": FINANCE, "distinct_pages": True, "page_decay": PAGE_DECAY, "demote_roles": False,
                    "heading_weight": 0.0, "route_weight": FINANCE_ROUTE_WEIGHT, "glossary_sparse_weight": 1.0,
                    "date_weight": 0.0, "fusion": "rrf", "sentence_weight": 0.0, "query_adapter": None,
                    "expansion_terms": 0},
        "legal": {"glossary": LEGAL, "distinct_pages": False, "page_decay": 0.0, "demote_roles": True,
                  "heading_weight": LEGAL_HEADING_WEIGHT, "route_weight": LEGAL_ROUTE_WEIGHT,
                  "glossary_sparse_weight": LEGAL_SPARSE_WEIGHT, "date_weight": LEGAL_DATE_WEIGHT,
                  "fusion": "convex", "sentence_weight": LEGAL_SENTENCE_WEIGHT, "query_adapter": LEGAL_QUERY_ADAPTER,
                  "expansion_terms": LEGAL_EXPANSION_TERMS},
        "general": {"glossary": None, "distinct_pages": True, "page_decay": PAGE_DECAY, "demote_roles": True,
                    "heading_weight": 0.0, "route_weight": 1.0, "glossary_sparse_weight": 1.0,
                    "date_weight": 0.0, "fusion": "rrf", "sentence_weight": 0.0, "query_adapter": None,
                    "expansion_terms": 0}}
    if name not in table:
        raise ValueError(f"unknown retrieval profile {name!r}: use one of {', '.join(PROFILE_NAMES)}")
    return table[name]


PROFILES = ("finance", "legal", "general")
#: Query adapter of the legal profile (:mod:`folioflow.indexing.query_adapter`): learned on the tuning
#: half of the legal benchmark; kept because it raised cross-validated hit@1 on all five read wordings
#: inside that half (docs/benchmarks.md).
LEGAL_QUERY_ADAPTER = "legal"
#: Terms of the legal adapter's learned expansion added to a question's BM25 query (retriever
#: ``expansion_terms``): chosen by cross-validation inside the tuning half (docs/benchmarks.md).
LEGAL_EXPANSION_TERMS = 30
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


def title_profile(title: str) -> str | None:
    """``legal`` when ``title`` names a legal instrument (a title naming both, like CUAD's
    ``..._10-K_EX-10.16_..._Development Agreement.pdf``, an agreement filed with a 10-K, counts as
    legal), ``finance`` when it names a financial report, else None (an opaque name)."""
    if _LEGAL.search(title):
        return "legal"
    if _FINANCE.search(title):
        return "finance"
    return None


#: Contract drafting cues in a document's own text (standard drafting: the preamble's "by and
#: between", recitals, "NOW, THEREFORE", the attestation "IN WITNESS WHEREOF", "here-" words,
#: quoted defined terms in parentheses). Each counts once, however often it occurs.
_LEGAL_TEXT = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bby\s+and\s+(between|among)\b", r"\bwhereas\b", r"\bnow,?\s+therefore\b", r"\bin\s+witness\s+whereof\b",
    r"\bagrees?\s+as\s+follows\b", r"\bhereinafter\b", r"\b(is|are|shall\s+be)\s+governed\s+by\b", r"\bhereto\b",
    r"\bhereunder\b", r"\bthis\s+(agreement|contract|lease|amendment|license|indenture)\b", r"\bthe\s+parties\b",
    r"\bhereof\b", r"\bhereby\b", r"\bherein\b", r"\((the\s+)?[\"\u201c](?-i:[A-Z])[^\"\u201d]{1,40}[\"\u201d]\)",
    r"\bterminat(e|ion)\s+(of\s+)?this\b"))
#: Financial report cues in a document's own text (SEC forms' cover pages and Items, the statements'
#: titles and line items). Each counts once.
_FINANCE_TEXT = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\bform\s+(10[-\u2011]?k|10[-\u2011]?q|20[-\u2011]?f|40[-\u2011]?f|8[-\u2011]?k)\b", r"\bsecurities\s+and\s+exchange\s+commission\b",
    r"\b(fiscal\s+)?(year|quarter|period)s?\s+ended\b", r"\bconsolidated\s+(balance\s+sheets?|statements?\s+of)\b",
    r"\bmanagement['\u2019]?s\s+discussion\s+and\s+analysis\b", r"\bearnings\s+per\s+share\b",
    r"\bnet\s+(income|loss|sales|revenues?)\b", r"\b(shareholders|stockholders)['\u2019]?\s+equity\b", r"\bcash\s+flows?\b",
    r"\boperating\s+(income|activities)\b", r"\bbalance\s+sheets?\b", r"\brevenues?\b"))
#: Characters of a document's text that :func:`text_profile` reads: its start (a contract's
#: preamble and first clauses; a filing's cover page, contents and first Items).
TEXT_PROFILE_CHARS = 50_000
#: Cues a text needs to read as a contract or as a financial report (with more of its own kind's
#: cues than of the other's). Chosen on the text layers of the corpus's PDFs, not on any question
#: (docs/benchmarks.md, "Legal retrieval").
LEGAL_TEXT_CUES = 5
FINANCE_TEXT_CUES = 4


def markdown_head(pages: Iterable[str], chars: int = TEXT_PROFILE_CHARS) -> str:
    """The first ``chars`` characters of a document's pages' Markdown joined by blank lines, pages in
    order; the pages past them are not read (a 300-page filing is not joined to read its start)."""
    parts: list[str] = []
    size = 0
    for page in pages:
        if size >= chars:
            break
        parts.append(page)
        size += len(page) + 2
    return "\n\n".join(parts)[:chars]


def text_profile(text: str) -> str | None:
    """What a document's own text reads as: ``legal`` when its first :data:`TEXT_PROFILE_CHARS`
    characters hold at least :data:`LEGAL_TEXT_CUES` distinct contract drafting cues and more
    than financial-report cues, ``finance`` when they hold at least
    :data:`FINANCE_TEXT_CUES` report cues and more than contract cues, else None (too little text,
    or neither: a paper, a letter, a form)."""
    head = text[:TEXT_PROFILE_CHARS]
    legal = sum(bool(p.search(head)) for p in _LEGAL_TEXT)
    finance = sum(bool(p.search(head)) for p in _FINANCE_TEXT)
    if legal >= LEGAL_TEXT_CUES and legal > finance:
        return "legal"
    if finance >= FINANCE_TEXT_CUES and finance > legal:
        return "finance"
    return None


def document_profile(title: str, read_as: str | None = None) -> str:
    """One document's profile: what its title names (:func:`title_profile`), else ``read_as`` (what
    its text reads as, :func:`text_profile`; None when unknown), else ``general``. The title comes
    first: the file names of a collection are how its owner says what it holds, and every
    constant of the profiles was chosen on collections named that way."""
    return title_profile(title) or read_as or "general"


def infer_profile(titles: Iterable[str], read_as: Iterable[str | None] | None = None) -> str:
    """``legal`` when most documents are legal instruments, ``finance`` when most are financial
    reports, else ``general`` (no documents, a mix without a majority, opaque names whose text
    was not read). ``titles``: one per document; ``read_as``: what each one's text reads as
    (:func:`text_profile`, None when unknown), in the same order, or None for titles alone. Each
    document counts as :func:`document_profile` says."""
    titles = list(titles)
    if not titles:
        return "general"
    kinds = [document_profile(t, r) for t, r in zip(titles, list(read_as) if read_as is not None else [None] * len(titles),
                                                     strict=True)]
    if kinds.count("legal") * 2 > len(kinds):
        return "legal"
    if kinds.count("finance") * 2 > len(kinds):
        return "finance"
    return "general"


class _Record(Protocol):
    """What :func:`collection_profile` reads of a registry record
    (:class:`~folioflow.indexing.registry.DocumentRecord`)."""

    doc_id: str
    path: str
    uri: str
    content_hash: str
    metadata: dict[str, Any]


def record_title(record: _Record) -> str:
    """A registry record's title: its source's ``title`` metadata (recorded as ``meta.title``), else
    its path's file name (:func:`folioflow.ocr.schema.source_title`)."""
    from folioflow.ocr.schema import source_title

    return source_title(record.path or record.uri, (record.metadata or {}).get("meta.title"))


def collection_profile(records: Iterable[_Record], documents_dir: Path | None = None) -> str:
    """:func:`infer_profile` over registry records: each one's title (:func:`record_title`) and
    what its text was read as at ingest (``metadata["text_profile"]``). A record indexed before
    ingest recorded it (no such key) whose title names no kind is read from its converted document
    in ``documents_dir`` when given (:func:`stored_text_profile`), else counts by its title alone."""
    records = list(records)
    if documents_dir is not None and not Path(documents_dir).is_dir():
        documents_dir = None  # a server store's collection, or converted documents not kept
    titles = [record_title(r) for r in records]
    return infer_profile(titles, [record_text_profile(r, t, documents_dir) for r, t in zip(records, titles, strict=True)])


def record_text_profile(record: _Record, title: str, documents_dir: Path | None = None) -> str | None:
    """What a registry record's text reads as (:func:`text_profile`): ``metadata["text_profile"]``
    as ingest recorded it; for a record indexed before ingest recorded it (no such key) whose
    ``title`` (:func:`record_title`) names no kind, its converted document in ``documents_dir``
    when given (:func:`stored_text_profile`); else None (the title decides)."""
    metadata = record.metadata or {}
    if "text_profile" in metadata or documents_dir is None or title_profile(title):
        return metadata.get("text_profile")
    return stored_text_profile(documents_dir, record.doc_id, record.content_hash)


#: ``{(doc_id, content_hash): reading}`` of converted documents (:func:`stored_text_profile`).
_STORED_PROFILES: dict[tuple[str, str], str | None] = {}


def stored_text_profile(documents_dir: Path, doc_id: str, content_hash: str = "") -> str | None:
    """:func:`text_profile` of the converted document ``<documents_dir>/<doc_id>.json`` (the
    Document JSON ``folioflow ingest`` writes: ``pages[].markdown``), for records indexed before
    ingest recorded the reading. None when the file is missing or unreadable. Cached per
    ``(doc_id, content_hash)``."""
    key = (doc_id, content_hash)
    if key not in _STORED_PROFILES:
        try:
            from folioflow.ocr.schema import kept_document_path

            with open(kept_document_path(documents_dir, doc_id), encoding="utf-8") as fh:
                pages = json.load(fh).get("pages") or []
            _STORED_PROFILES[key] = text_profile(markdown_head(
                str(page.get("markdown") or "") for page in takewhile(lambda page: isinstance(page, dict), pages)))
        except (OSError, ValueError, AttributeError):
            _STORED_PROFILES[key] = None
    return _STORED_PROFILES[key]
