"""Document routing by title: a question that names a document's title terms (a company, a year, a
form) is searched a second time inside those documents, and the two rankings are fused.

In a shared store of many filings, "What was 3M's capex in FY2018?" has near-identical evidence in
every filing: each 10-K has a cash-flow statement with a capex line. Chunk text rarely repeats the
company name or fiscal year, so dense and BM25 search rank other filings' statements alongside
the right one. The document's title usually names both (``3M_2018_10K.pdf``), and
:class:`TitleRouter` matches the question against titles:

* A title's terms are its alphanumeric words, lowercased, plus any year (``19xx``/``20xx``) inside
  them (``2023Q2`` gives ``2023q2`` and ``2023``), plus the names glued inside a word as file
  names write them: CamelCase parts and their join without a trailing legal form
  (``PareteumCorp`` -> ``pareteum``; ``ElPolloLocoHoldingsInc`` -> ``elpolloloco``, matched by
  "El Pollo Loco"), and a word with a glued legal form (:data:`LEGAL_FORMS`) stripped
  (``TUNIUCORP`` -> ``tuniu``). Left out: one-character words, English function
  words (``of``, ``the``, ...) and, with four or more titles, terms in more than half of them
  (``10k`` in a store of annual reports): they cannot tell documents apart.
* In a question written in sentence case (its first word capitalised, not mostly capitals),
  only words with a capital or a digit are names that can match: "Which state's law governs the
  agreement?" names no document, however rare "agreement" is among the titles. A question
  typed in lower case ("netflix revenue 2017") matches with every word.
* A title term matches when the question has it as a word, as a year inside a word
  (``FY2018`` -> ``2018``), or as two to four adjacent words written together (``American Water
  Works`` -> ``americanwaterworks``; ``10-K`` -> ``10k``; ``Coca-Cola`` -> ``cocacola``).
  An all-capitals word of three or more letters also matches a title term of six or more
  characters that starts with it (``MGM`` -> ``mgmresorts``, ``JPM`` -> ``jpmorgan``), unless it
  is a common finance abbreviation (``USD``, ``EPS``, ``GAAP``, ...) or most of the question is in
  capitals. Amounts (``$3M``, ``$1.2B``) are not words of the question.
* Tickers (two or more letters; a preferred series such as ``Series DD`` or ``JPM PR D`` is not one). A title rarely holds the company's ticker (FinanceBench's ``3M_2018_10K.pdf`` does not
  say ``MMM``), and a ticker is often not a shortening of the name (``MMM`` for 3M, ``KO`` for
  Coca-Cola, ``GLW`` for Corning, ``SQ`` for Block): what can be known without a network is the
  document's own cover. :func:`tickers_in` reads the tickers a filing prints on its first pages
  (the ``Trading Symbol(s)`` column of a 10-K or 10-Q cover since 2019, ``(NYSE: MGM)`` /
  ``(NASDAQ: NFLX)`` in a release, ``under the symbol "NFLX"``); the pipeline records them with the
  document (registry ``metadata["tickers"]``) and they count as terms of its title and of every
  title that starts with the same word (the company of ``COMPANY_YEAR_FORM`` names: an older 10-K
  gets the symbol its successor prints). A company none of whose documents prints one is matched
  by its name only: an all-capitals ticker that
  starts the name (``MGM``, ``JPM``, ``CVS``) still matches as a prefix (below), others do not. No
  list of tickers is shipped: it would go stale, and a guessed letter match (``AES`` in
  ``AmericanExpreSs``, ``CCC`` in ``CoCaCola``) routes questions that name no company.
* Names first: a document scores the sum of its matched terms' IDF over all titles,
  ``log(1 + N / df)``, counting only terms that hold no year (names, forms), and the documents
  with the top score are kept. A year alone never outweighs a name ("As of FY 2021, what will
  Verizon pay in 2024?" must not go to the only title that says 2024).
* Then the period (:func:`question_periods`): of those documents, the ones with the latest year
  the question names that one of them has in its title (a filing reports the years before it as
  comparatives: "revenue CAGR from FY2020 to FY2022" is answered by the 2022 10-K, which the
  rarer 2020 used to outweigh), then, of those, the ones whose title names a quarter of that
  year the question names (``Q2 of FY2023``, ``Q22023``, ``2023 Q2``, ``second quarter of fiscal
  2023``, ``FY23 Q2`` -> the title term ``2023q2`` of ``AMCOR_2023Q2_10Q``). A question that
  names no document but a year is routed to the documents of the latest year it names.
* The route is those documents, if at most ``max_documents`` of them and not every document.
  Otherwise no routing happens: the question names nothing that tells documents apart.

The retriever (:class:`~folioflow.indexing.retriever.FolioRetriever`, ``route_titles=True``, the default) then
fuses its usual ranking with the same search restricted to the routed documents by Reciprocal Rank
Fusion (:func:`fuse_rankings`), the routed search weighted ``route_weight`` (2 in the legal, 1 in the
general, 5 in the finance profile: :mod:`folioflow.indexing.profiles`). Routing boosts
rather than filters: the unrestricted ranking always takes part, so a document outside the route
still appears when it ranks high enough (at weight 1; from about 1.7 on, below every candidate of
the routed documents). A wrong route can push the right page out of the top k when the routed
documents have k good candidates of their own.

Where titles come from: :func:`folioflow.ocr.schema.source_title` on the document's registry record: the file
name, or the source's ``title`` metadata when its config sets one (one title for every document of
that source, so it suits sources of one document). Routing needs file names that name their
documents; with opaque names (``scan_0001.pdf``) no term matches and retrieval is unchanged (the
retrieval profile is then read from the documents' text: :func:`folioflow.indexing.profiles.text_profile`).

Measured on the 68 FinanceBench filings of the corpus (65 questions; the retriever in hybrid mode
with the default glossary, over the store a ``bench_retrieval.py`` run kept; dev script):
shared-store evidence-page hit@5 rose from 0.415 to 0.662, and document hit@1 (the top result comes
from the right filing) from 0.369 to 0.785. The benchmark's file names are ``COMPANY_YEAR_FORM``,
which is what routing reads. End-to-end figures are in the README
(``tests/benchmarks/bench_retrieval.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PARTY_CHARS", "TICKER_PAGES", "TitleRouter", "fuse_rankings", "fuse_scores", "parties_in", "question_periods",
           "party_terms", "stored_parties", "stored_tickers", "tickers_in", "title_terms"]

_WORD = re.compile(r"[0-9A-Za-z]+")
_YEAR = re.compile(r"(?:19|20)\d\d")
#: Adjacent question words joined to match a title word written as one (``American Water Works``).
MAX_JOINED_WORDS = 4
#: Shortest title term an all-capitals question word may match as a prefix (``MGM`` -> ``mgmresorts``).
MIN_PREFIX_TERM = 6
#: Title words that never tell documents apart.
STOP_WORDS = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or", "our", "the", "their", "to", "was", "were", "with"])
#: All-capitals question words that are finance abbreviations, not names: never prefix matches.
ABBREVIATIONS = frozenset(
    ["usd", "eur", "gbp", "fy", "ytd", "qtd", "yoy", "qoq", "ttm", "ltm", "eps", "gaap", "sec", "ceo", "cfo", "coo", "llc", "inc", "ltd", "plc", "corp", "co", "roa", "roe", "roic", "fcf", "cagr", "ebit", "ebitda", "ebitdar", "capex", "cogs", "sga", "ppe", "nav", "aum", "dso", "dpo", "dio", "tbd", "na", "nyse"])
#: Legal forms and group words that file names glue to a party's name (``PareteumCorp``,
#: ``TUNIUCORP``, ``ElPolloLocoHoldingsInc``); longest first, so ``corporation`` goes before ``corp``.
LEGAL_FORMS = tuple(sorted(
    ["inc", "incorporated", "corp", "corporation", "co", "company", "llc", "ltd", "limited", "plc", "lp", "llp",
     "sa", "nv", "ag", "gmbh", "holdings", "holding", "group", "technology", "technologies", "international",
     "enterprises", "partners", "com"], key=len, reverse=True))
#: Shortest name left after stripping a glued legal form (``TUNIUCORP`` -> ``tuniu``; ``ACMECO`` -> ``acme``).
MIN_NAME_STEM = 4
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: A quarter tied to a year, quarter first: ``Q2 of FY2023``, ``Q2 2023``, ``Q22023``, ``Q2 fiscal 2023``.
_QUARTER_YEAR = re.compile(r"\bQ([1-4])\s*(?:of\s+)?(?:(?:FY|fiscal(?:\s+year)?)\s*)?((?:19|20)\d\d)\b", re.IGNORECASE)
#: The same, year first: ``2023 Q2``, ``FY2023 Q2``, ``2023-Q2``, ``2023Q2``.
_YEAR_QUARTER = re.compile(r"(?:\bFY\s*|\b)((?:19|20)\d\d)\s*-?\s*Q([1-4])\b", re.IGNORECASE)
#: Written out: ``second quarter of 2023``, ``third fiscal quarter of fiscal year 2022``.
_ORDINAL_QUARTER = re.compile(r"\b(first|second|third|fourth)\s+(?:fiscal\s+)?quarter\s+(?:of\s+|in\s+)?"
                              r"(?:(?:FY|fiscal(?:\s+year)?)\s*)?((?:19|20)\d\d)\b", re.IGNORECASE)
_ORDINALS = {"first": "1", "second": "2", "third": "3", "fourth": "4"}
#: A two-digit fiscal year: ``FY23``, ``FY'23``, ``FY 23``.
_SHORT_FY = re.compile(r"\bFY\s*'?(\d\d)\b", re.IGNORECASE)
#: A quarter of a two-digit fiscal year: ``Q2 FY23``, ``Q2 of FY'23``, ``FY23 Q2``.
_SHORT_QUARTER = re.compile(r"\bQ([1-4])\s*(?:of\s+)?FY\s*'?(\d\d)\b|\bFY\s*'?(\d\d)\s*-?\s*Q([1-4])\b", re.IGNORECASE)
_AMOUNT = re.compile(r"\$\s*[0-9][0-9.,]*(?:[A-Za-z]{1,2}\b)?")  # $3M, $1.2bn, $ 450


#: The ``Trading Symbol(s)`` column of a filing's cover (10-K, 10-Q, 8-K since 2019).
_SYMBOL_HEADER = re.compile(r"trading\s+symbols?(?:\s*\(s\))?", re.IGNORECASE)
#: ``(NYSE: MGM)``, ``Nasdaq: NFLX``, ``under the symbol "NFLX"``, ``ticker symbol MMM``.
_SYMBOL_INLINE = re.compile(r"\b(?:NYSE(?:\s+American)?|NASDAQ|Nasdaq|AMEX|TSX|LSE)\s*:\s*([A-Z]{1,5}(?:\.[A-Z])?)\b|"
                            r"\b(?:ticker\s+)?symbols?\s+[“\"']([A-Z]{1,5}(?:\.[A-Z])?)[”\"']")
#: A cell or line of the cover's symbol column that is a ticker.
_TICKER_CELL = re.compile(r"[A-Z]{1,5}(?:\.[A-Z]{1,2})?")
#: Capitals in a symbol column that are not tickers.
_NOT_TICKERS = frozenset(["NYSE", "NONE", "NA", "AMEX", "LLC", "INC", "USD", "PLC", "LP", "NV", "SA", "AG", "THE",
                          "AND", "OF", "NEW", "YORK", "STOCK", "PAR", "CLASS", "A", "B", "C", "I", "II", "III"])
#: Where a cover's symbol column ends: a note under it, the check-box questions or the section 12(g) line.
_SYMBOL_END = re.compile(r"\bnote\s*:|indicate\s+by\s+check|securities\s+registered\s+pursuant\s+to\s+section\s+12\s*\(g\)",
                         re.IGNORECASE)
#: A preferred series designation in a cover's class or symbol column (``Series DD``, ``PR D``, ``PRD``).
_SERIES = re.compile(r"\bSeries\s+[A-Z]{1,3}\b|\bPR\s*[A-Z]{1,2}\b")
#: First pages of a document searched for the tickers it prints (a filing's cover).
TICKER_PAGES = 2
#: ``{(doc_id, content_hash): Markdown of the first pages}`` of converted documents (:func:`stored_tickers`,
#: :func:`stored_parties`).
_STORED_HEADS: dict[tuple[str, str], str] = {}
#: Characters after a ``Trading Symbol(s)`` header searched for its column's cells.
_SYMBOL_SPAN = 1200


def tickers_in(text: str) -> list[str]:
    """The stock tickers ``text`` (a filing's first pages, Markdown or plain text) prints, in order
    of appearance, without repeats: words of 1-5 capitals (``MMM``, ``BRK.B``) within
    :data:`_SYMBOL_SPAN` characters after a ``Trading Symbol(s)`` header, before a note under the
    table ("Note: ... also traded on the SIX Swiss Exchange") or the cover's check-box questions (debt symbols such as ``MMM26`` have digits and are left out; table cells,
    lines and the space-separated column a text layer makes of it alike), and exchange references (``(NYSE: MGM)``, ``under the
    symbol "NFLX"``). Returns [] when there are none."""
    out: list[str] = []

    def add(ticker: str) -> None:
        if ticker not in out and ticker not in _NOT_TICKERS:
            out.append(ticker)

    for m in _SYMBOL_HEADER.finditer(text):
        span = _SYMBOL_END.split(text[m.end(): m.end() + _SYMBOL_SPAN], maxsplit=1)[0]
        # a preferred series is not a ticker: "... Preferred Stock, Series DD" in the class column,
        # "JPM PR D" (NYSE's notation for the company's preferred series D) in the symbol column
        span = _SERIES.sub(" ", span)
        for word in re.split(r"[\s|]+", span):
            word = word.strip("*_`,;()")
            if _TICKER_CELL.fullmatch(word):
                add(word)
    for m in _SYMBOL_INLINE.finditer(text):
        add(m.group(1) or m.group(2))
    return out


#: Registered legal forms that end a party's name in a contract's preamble (``Pareteum Corporation``,
#: ``MOSSIMO, INC.``, ``S2K Financial LLC``, ``Blackwell Science Ltd``); matched case-insensitively
#: but written with a capital (``a Delaware corporation`` describes a party, it does not name one).
_PARTY_FORM = re.compile(
    r"(?:,\s*)?\b(?:Inc|Incorporated|Corp|Corporation|Co|Company|L\.?\s?L\.?\s?C|Ltd|Limited|P\.?L\.?C|L\.?\s?L\.?\s?P|"
    r"L\.?P|S\.?A|N\.?V|B\.?V|N\.?A|AG|GmbH|SE|Pty|S\.?p\.?A|S\.?r\.?l)\b\.?", re.IGNORECASE)
#: A word of a party's name: capitalised (``Pareteum``, ``ALPS``, ``Stamps.com``, ``E.R.``), a
#: digit-led word with a letter (``3M``, ``2U``), or ``&``.
_NAME_WORD = re.compile(r"(?:[A-Z][\w'’.-]*|[0-9]+[A-Za-z][\w'’.-]*|&)$")
#: A statute named after a legal form ("the Investment Company Act of 1940"): no party.
_STATUTE = re.compile(r"\s+Act\b")
#: Initials (``E.R.``, ``U.S.A.``): a word that ends with a period without ending a sentence.
_INITIALS = re.compile(r"(?:[A-Za-z]\.)+$")
#: Lower-case words a party's name may hold between its capitalised words (``Bank of America``).
_NAME_JOINERS = frozenset(["of", "de", "du", "la", "von", "van", "der"])
#: Words of a party's name, at most.
MAX_NAME_WORDS = 6
#: Characters of a document's start (its title and preamble) searched for party names.
PARTY_CHARS = 4000
#: Capitalised words that end a party's name where they precede it ("by and between", "the
#: Company", "THIS AGREEMENT", "WHEREAS", a signature block's "Authorized Signatory").
_NOT_NAMES = frozenset(["the", "this", "such", "said", "each", "any", "and", "or", "between", "among", "by", "with",
                        "agreement", "party", "parties", "whereas", "recitals", "exhibit", "schedule", "annex",
                        "execution", "version", "copy", "section", "article", "signatory", "authorized", "name",
                        "title", "its", "dated", "date", "to", "for", "in", "on", "amendment", "no"])


def parties_in(text: str) -> list[str]:
    """The names of the companies a contract's first :data:`PARTY_CHARS` characters (its title and
    preamble: "by and between MOSSIMO, INC., ... and DAVID DUVAL ENTERPRISES, INC.") name, in order,
    without repeats and without their legal form (``MOSSIMO``, ``DAVID DUVAL ENTERPRISES``): the run
    of up to :data:`MAX_NAME_WORDS` capitalised words (and joiners such as ``of``) that ends at a
    registered legal form written with a capital (``Inc.``, ``Corporation``, ``LLC``, ``Ltd``,
    ``GmbH``, ...), stopped by a comma, a sentence's end, another legal form or a word such as
    "between" or "Agreement" (:data:`_NOT_NAMES`). A legal form after an article ("a Delaware
    Corporation") or before "Act" ("the Investment Company Act") names nobody. People, and companies named without a legal form, are not found.
    Returns [] when there are none."""
    head = text[:PARTY_CHARS]
    out: list[str] = []
    for m in _PARTY_FORM.finditer(head):
        if not m.group(0).lstrip(", \t\n")[:1].isupper() or _STATUTE.match(head, m.end()):
            continue
        words = head[:m.start()].split()
        name: list[str] = []
        while words and len(name) < MAX_NAME_WORDS:
            raw = words[-1]
            word = raw.rstrip(",;:")
            if name and raw != word:  # "2450 White Road, Irvine," : punctuation ends the name
                break
            if word.endswith(".") and not _INITIALS.match(word):  # a sentence ends, or an abbreviated form
                break
            if word.lower() in _NAME_JOINERS and name:
                name.insert(0, word)
            elif _PARTY_FORM.fullmatch(word) or word.lower() in _NOT_NAMES:
                break
            elif _NAME_WORD.match(word):
                name.insert(0, word)
            else:
                break
            words.pop()
        while name and name[0].lower() in _NAME_JOINERS:
            name.pop(0)
        if not name or (words and words[-1].lower() in ("a", "an")):  # "a Delaware Corporation": a description
            continue
        joined = " ".join(name).strip(".,;:&- ")
        if len(joined) > 1 and any(c.isalpha() for c in joined) and joined not in out:
            out.append(joined)
    return out


def _stored_head(documents_dir: Path, doc_id: str, content_hash: str = "") -> str:
    """The Markdown of the first :data:`TICKER_PAGES` pages of the converted document
    ``<documents_dir>/<doc_id>.json`` (the Document JSON ``folioflow ingest`` writes:
    ``pages[].markdown``); "" when the file is missing or unreadable. Cached per ``(doc_id,
    content_hash)``."""
    key = (doc_id, content_hash)
    if key not in _STORED_HEADS:
        try:
            from folioflow.ocr.schema import kept_document_path

            with open(kept_document_path(documents_dir, doc_id), encoding="utf-8") as fh:
                pages = json.load(fh).get("pages") or []
            _STORED_HEADS[key] = "\n\n".join(str(p.get("markdown") or "") for p in pages[:TICKER_PAGES]
                                               if isinstance(p, dict))
        except (OSError, ValueError, AttributeError):
            _STORED_HEADS[key] = ""
    return _STORED_HEADS[key]


def stored_tickers(documents_dir: Path, doc_id: str, content_hash: str = "") -> list[str]:
    """The tickers (:func:`tickers_in`) on the first :data:`TICKER_PAGES` pages of the converted
    document ``<documents_dir>/<doc_id>.json`` (the Document JSON ``folioflow ingest`` writes:
    ``pages[].markdown``), for documents indexed before ingest recorded tickers in the registry.
    [] when the file is missing or unreadable."""
    return tickers_in(_stored_head(documents_dir, doc_id, content_hash))


def stored_parties(documents_dir: Path, doc_id: str, content_hash: str = "") -> list[str]:
    """The party names (:func:`parties_in`) of the converted document
    ``<documents_dir>/<doc_id>.json``, for contracts indexed before ingest recorded them in the
    registry. [] when the file is missing or unreadable."""
    return parties_in(_stored_head(documents_dir, doc_id, content_hash))


def _shared_tickers(titles: Mapping[str, str], tickers: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    """``{doc_id: lower-cased tickers}``: each document's own, and those of every document whose
    title starts with the same word (the company in ``COMPANY_YEAR_FORM`` names: a 2018 10-K whose
    cover lists no symbol gets ``mmm`` from the 2022 one, so that a ticker does not pull a question
    about 2018 to the newer filing)."""
    def company(title: str) -> str | None:
        first = next(iter(_WORD.findall(title)), "").lower()
        return first if len(first) > 1 and first not in STOP_WORDS and not first.isdigit() else None

    by_company: dict[str, set[str]] = {}
    # one-character tickers (F, T, C) are left out as one-character title words are: a capital
    # letter alone in a question is an initial ("D&A", "P&L"), rarely a company
    own = {doc_id: {t.lower() for t in symbols if len(t) > 1} for doc_id, symbols in tickers.items()
           if doc_id in titles}
    for doc_id, symbols in own.items():
        key = company(titles[doc_id])
        if key and symbols:
            by_company.setdefault(key, set()).update(symbols)
    out: dict[str, set[str]] = {}
    for doc_id, title in titles.items():
        key = company(title)
        symbols = own.get(doc_id, set()) | (by_company.get(key, set()) if key else set())
        if symbols:
            out[doc_id] = symbols
    return out


def _name_stems(word: str) -> set[str]:
    """Shorter forms of one title word that name the same party: its CamelCase parts and their
    joins without trailing legal forms (``PareteumCorp`` -> ``pareteum``, ``corp``;
    ``ElPolloLocoHoldingsInc`` -> ``el``, ``pollo``, ``loco``, ``elpolloloco``, ``elpollolocoholdings``),
    and a word in one case with glued trailing legal forms stripped (``TUNIUCORP`` -> ``tuniu``,
    ``SENMIAOTECHNOLOGYLTD`` -> ``senmiaotechnology``, ``senmiao``)."""
    out: set[str] = set()
    parts = [p.lower() for p in _CAMEL.findall(word)]
    if len(parts) > 1:
        out.update(parts)
        while len(parts) > 1 and parts[-1] in LEGAL_FORMS:
            parts = parts[:-1]
            out.add("".join(parts))
    low = word.lower()
    stripped = len(parts) <= 1  # a word in one case: its glued legal forms are found by their spelling
    while stripped:
        stripped = False
        for form in LEGAL_FORMS:
            if low.endswith(form) and len(low) - len(form) >= MIN_NAME_STEM:
                low = low[: -len(form)]
                out.add(low)
                stripped = True
                break
    return {t for t in out if len(t) > 1 and t not in STOP_WORDS and not t.isdigit()}


def title_terms(title: str) -> set[str]:
    """The matchable terms of a title (see the module docstring): lowercased words of two or more
    characters that are not function words, the years inside words, and the shorter names of glued
    words (:func:`_name_stems`)."""
    raw = _WORD.findall(title)
    words = [w.lower() for w in raw]
    terms = {w for w in words if len(w) > 1 and w not in STOP_WORDS}
    terms.update(y for w in words for y in _YEAR.findall(w))
    for w in raw:
        if not w.isdigit():
            terms.update(_name_stems(w))
    return terms


def party_terms(name: str) -> set[str]:
    """The matchable terms of a party's name (:func:`parties_in`): its :func:`title_terms`, plus its
    first two to :data:`MAX_JOINED_WORDS` words written together, as a file name glues them
    (``Cyberian Outpost`` -> ``cyberianoutpost``; ``Salesforce.com`` -> ``salesforcecom``)."""
    words = [w.lower() for w in _WORD.findall(name)]
    return title_terms(name) | {"".join(words[:n]) for n in range(2, min(len(words), MAX_JOINED_WORDS) + 1)}


def question_periods(question: str) -> tuple[set[int], set[str]]:
    """The periods a question names, the way titles write them: ``({years}, {"<year>q<n>"})``.
    Years are ``19xx``/``20xx`` anywhere in the question (``FY2022``, ``2022``, ``Q22023``) and
    two-digit fiscal years (``FY23`` -> 2023); quarters are a quarter tied to a year (``Q2 of
    FY2023``, ``Q22023``, ``2023 Q2``, ``second quarter of 2023``), written as titles write them
    (``2023q2``, as in ``AMCOR_2023Q2_10Q``)."""
    def century(yy: str) -> int:
        return 2000 + int(yy) if int(yy) < 70 else 1900 + int(yy)

    years = {int(y) for y in _YEAR.findall(question)}
    years |= {century(y) for y in _SHORT_FY.findall(question)}
    quarters = {(str(century(y1 or y2)), q1 or q2) for q1, y1, y2, q2 in _SHORT_QUARTER.findall(question)}
    quarters |= {(y, q) for q, y in _QUARTER_YEAR.findall(question)}
    quarters |= {(y, q) for y, q in _YEAR_QUARTER.findall(question)}
    quarters |= {(y, _ORDINALS[o.lower()]) for o, y in _ORDINAL_QUARTER.findall(question)}
    return years, {f"{y}q{q}" for y, q in quarters}


def _period_term(term: str) -> bool:
    """A title term that names a period (it holds a year: ``2022``, ``2023q2``, ``20191231``)."""
    return bool(_YEAR.search(term))


def _question_terms(question: str) -> tuple[set[str], list[str]]:
    """(terms a title term can equal, all-capitals words for prefix matches)."""
    raw = _WORD.findall(_AMOUNT.sub(" ", question))
    alpha = [w for w in raw if w.isalpha() and len(w) > 1]
    shouting = sum(w.isupper() for w in alpha) * 2 > len(alpha)
    # A question written in sentence case marks names with capitals: its lower-case words ("the
    # agreement", "revenue") are common words and must not route, however rare they are in titles.
    sentence_case = not shouting and bool(alpha) and alpha[0][0].isupper()
    named = [not sentence_case or not w.islower() for w in raw]
    words = [w.lower() for w in raw]
    terms = {w for w, ok in zip(words, named, strict=True) if ok}
    terms.update(y for w in words for y in _YEAR.findall(w))
    for i in range(len(words)):
        for j in range(i + 2, min(len(words), i + MAX_JOINED_WORDS) + 1):
            if all(named[i:j]):
                terms.add("".join(words[i:j]))
    years, quarters = question_periods(question)
    terms |= {str(y) for y in years} | quarters
    capitals = [] if shouting else [w.lower() for w in alpha
                                    if len(w) >= 3 and w.isupper() and w.lower() not in ABBREVIATIONS]
    return terms, capitals


class TitleRouter:
    """Routes questions to documents by their titles (see the module docstring).

    ``titles``: ``{doc_id: title}``. ``max_documents``: the most documents a route may hold; when
    more tie for the top score, :meth:`route` returns None. ``tickers``: ``{doc_id: [ticker]}``, the
    tickers a document prints (:func:`tickers_in`), matched as terms of its title. ``parties``:
    ``{doc_id: [name]}``, the companies a contract names as its parties (:func:`parties_in`), whose
    words (:func:`party_terms`) are matched as terms of its title.
    """

    def __init__(self, titles: Mapping[str, str], max_documents: int = 16,
                 tickers: Mapping[str, Iterable[str]] | None = None,
                 parties: Mapping[str, Iterable[str]] | None = None):
        self.max_documents = max_documents
        self.titles = dict(titles)
        #: The collection's retrieval profile, set by whoever infers it (:mod:`folioflow.indexing.profiles`).
        self.profile = "general"
        terms = {doc_id: title_terms(title) for doc_id, title in titles.items()}
        for doc_id, symbols in _shared_tickers(self.titles, tickers or {}).items():
            terms[doc_id] |= symbols  # a ticker is one more term of its company's titles
        for doc_id, names in (parties or {}).items():
            if doc_id in terms:  # "In the Pareteum agreement" names the contract whatever its file is called
                terms[doc_id] |= set().union(*(party_terms(name) for name in names))
        df = Counter(t for doc_terms in terms.values() for t in doc_terms)
        n = len(terms)
        common = {t for t, count in df.items() if n >= 4 and count * 2 > n}
        self.terms = {doc_id: doc_terms - common for doc_id, doc_terms in terms.items()}
        self.idf = {t: math.log(1.0 + n / count) for t, count in df.items() if t not in common}

    @classmethod
    def from_records(cls, records: Iterable[Any], max_documents: int = 16,
                     documents_dir: Path | None = None) -> TitleRouter:
        """A router over registry records (:class:`~folioflow.indexing.registry.DocumentRecord`), whatever
        their status (a document whose last re-index failed keeps its searchable points). The title
        comes from the ``meta.title`` metadata the pipeline records from the source, or else from
        the path (:func:`folioflow.ocr.schema.source_title`); the tickers from ``metadata["tickers"]``
        (what :func:`tickers_in` found on the document's first pages at ingest); the party names,
        for a document whose profile is ``legal`` (its title names a legal instrument, or, where
        its title names no kind, its text reads as a contract:
        :func:`~folioflow.indexing.profiles.document_profile`), from ``metadata["parties"]``
        (:func:`parties_in` at ingest). A record indexed before ingest recorded them (no such key)
        is read from its converted document in ``documents_dir`` when given (:func:`stored_tickers`,
        :func:`stored_parties`)."""
        from folioflow.indexing.profiles import document_profile, record_text_profile, record_title

        records = list(records)
        titles = {r.doc_id: record_title(r) for r in records}
        tickers = {r.doc_id: list(r.metadata.get("tickers") or ()) if "tickers" in r.metadata or documents_dir is None
                   else stored_tickers(documents_dir, r.doc_id, r.content_hash) for r in records}
        parties: dict[str, list[str]] = {}
        for r in records:
            title = titles[r.doc_id]
            if document_profile(title, record_text_profile(r, title, documents_dir)) != "legal":
                continue
            if "parties" in r.metadata or documents_dir is None:
                parties[r.doc_id] = list(r.metadata.get("parties") or ())
            else:
                parties[r.doc_id] = stored_parties(documents_dir, r.doc_id, r.content_hash)
        return cls(titles, max_documents=max_documents, tickers=tickers, parties=parties)

    def scores(self, question: str, names_only: bool = False) -> dict[str, float]:
        """``{doc_id: score}`` for documents with at least one matched title term; ``names_only``:
        only terms that name no period (no year in them) count."""
        terms, capitals = _question_terms(question)

        def matched(term: str) -> bool:
            if names_only and _period_term(term):
                return False
            return term in terms or (len(term) >= MIN_PREFIX_TERM and any(term.startswith(c) for c in capitals))

        out = {}
        for doc_id, doc_terms in self.terms.items():
            score = sum(self.idf[t] for t in doc_terms if matched(t))
            if score > 0:
                out[doc_id] = score
        return out

    def _by_period(self, question: str, doc_ids: list[str]) -> list[str]:
        """Of ``doc_ids`` (documents the question names equally), those of the period it asks
        about: the latest year the question names that one of them has in its title, then, of
        those, the ones whose title names a quarter of that year the question names. Unchanged
        when the question names no year they have."""
        years, quarters = question_periods(question)
        if not years:
            return doc_ids
        has = {d: {int(y) for t in self.terms.get(d, ()) for y in _YEAR.findall(t)} for d in doc_ids}
        named = [y for y in years if any(y in has[d] for d in doc_ids)]
        if not named:
            return doc_ids
        latest = max(named)  # a filing reports the years before it as comparatives
        kept = [d for d in doc_ids if latest in has[d]]
        wanted = {q for q in quarters if q.startswith(str(latest))}
        quarter = [d for d in kept if wanted & self.terms.get(d, set())]
        return quarter or kept

    def without_names(self, question: str, doc_ids: Iterable[str]) -> str:
        """``question`` without the words that name the documents ``doc_ids`` (words of letters
        only that equal, start as a capitals prefix, or join with their neighbours into one of their
        title terms; in a sentence-case question only capitalised words; years and other words
        with digits stay): "In the Bioamber agreement: is
        liability limited?" -> "In the agreement: is liability limited?". For the search inside the
        routed documents, where the name has done its work and would only favour the chunks that
        repeat it."""
        names = set().union(*(self.terms.get(d, set()) for d in doc_ids))
        if not names:
            return question
        spans = [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(question)]
        low = [w.lower() for _, _, w in spans]
        alpha = [w for _, _, w in spans if w.isalpha() and len(w) > 1]
        # in sentence case only capitalised words are names ("the development agreement" stays)
        sentence_case = bool(alpha) and alpha[0][0].isupper() and sum(w.isupper() for w in alpha) * 2 <= len(alpha)
        drop: set[int] = set()
        for i, (_, _, word) in enumerate(spans):
            if not word.isalpha() or (sentence_case and word.islower()):
                continue
            if low[i] in names or (word.isupper() and len(word) >= 3 and low[i] not in ABBREVIATIONS
                                   and any(len(t) >= MIN_PREFIX_TERM and t.startswith(low[i]) for t in names)):
                drop.add(i)
            for j in range(i + 2, min(len(spans), i + MAX_JOINED_WORDS) + 1):
                if all(w.isalpha() and not (sentence_case and w.islower()) for _, _, w in spans[i:j]) \
                        and "".join(low[i:j]) in names:
                    drop.update(range(i, j))
        if not drop or len(drop) == len(spans):
            return question
        out, at = [], 0
        for i in sorted(drop):
            out.append(question[at:spans[i][0]])
            at = spans[i][1]
        out.append(question[at:])
        return " ".join("".join(out).split())

    def route(self, question: str) -> list[str] | None:
        """The doc ids with the top title score, sorted; None when no title term matches, when
        every document ties, or when more than ``max_documents`` tie."""
        scores = self.scores(question, names_only=True)
        if scores:  # the names choose the documents, then the period chooses among them
            top = max(scores.values())
            best = self._by_period(question, sorted(d for d, score in scores.items() if math.isclose(score, top)))
        else:  # no name matched: the period alone (the documents of the period asked about)
            scores = self.scores(question)
            if not scores:
                return None
            best = self._by_period(question, sorted(scores))
        if len(best) > self.max_documents or len(best) == len(self.terms):
            return None
        return best


def fuse_scores(rankings: Sequence[Sequence[Any]], weights: Sequence[float] | None = None,
                scale: float = 1.0) -> list[tuple[Any, float]]:
    """Convex combination of normalised scores (Bruch, Gai and Ingber, "An Analysis of Fusion
    Functions for Hybrid Retrieval", ACM TOIS 2023) of rankings of hits that have an ``id`` and a
    ``score``: ``score(id) = scale * sum over rankings of w * score / max score``, each ranking's
    scores divided by its best one (their theoretical minimum, 0 for cosine and BM25, stays 0; a
    ranking whose best score is not positive is divided by 1), a hit absent from a ranking adding 0
    there, ``w`` the ranking's weight (``weights``, default 1 each). Unlike :func:`fuse_rankings`,
    how far ahead a hit is counts, not only its place. Returns ``(hit, score)`` best first. The hit
    kept for an id is the first one seen. Ties keep first-seen order."""
    def terms(ranking: Sequence[Any], w: float) -> Iterable[tuple[Any, float]]:
        top = max((float(hit.score) for hit in ranking), default=0.0)
        span = top if top > 0 else 1.0
        return ((hit, scale * w * float(hit.score) / span) for hit in ranking)

    return _weighted_sum(rankings, weights, terms)


def fuse_rankings(rankings: Sequence[Sequence[Any]], k: int = 60,
                  weights: Sequence[float] | None = None) -> list[tuple[Any, float]]:
    """Reciprocal Rank Fusion (Cormack, Clarke and Buettcher, SIGIR 2009) of rankings of hits that
    have an ``id``: ``score(id) = sum over rankings of w / (k + rank)``, rank 1-based, ``w`` the
    ranking's weight (``weights``, default 1 each). Returns ``(hit, score)`` best first. The hit
    kept for an id is the first one seen. Ties keep first-seen order."""
    return _weighted_sum(rankings, weights,
                         lambda ranking, w: ((hit, w / (k + rank)) for rank, hit in enumerate(ranking, start=1)))


def _weighted_sum(rankings: Sequence[Sequence[Any]], weights: Sequence[float] | None,
                  terms: Callable[[Sequence[Any], float], Iterable[tuple[Any, float]]]) -> list[tuple[Any, float]]:
    """The fusion of :func:`fuse_rankings` and :func:`fuse_scores`: each hit's ``id`` scored the sum
    of the ``(hit, term)`` pairs ``terms(ranking, w)`` gives for it over ``rankings``, ``w`` the
    ranking's weight (``weights``, default 1 each). Returns ``(hit, score)`` best first, the first
    hit seen for an id kept, ties in first-seen order."""
    scores: dict[Any, float] = {}
    hits: dict[Any, Any] = {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else float(weights[i])
        for hit, term in terms(ranking, w):
            scores[hit.id] = scores.get(hit.id, 0.0) + term
            hits.setdefault(hit.id, hit)
    order = sorted(scores, key=lambda i: -scores[i])
    return [(hits[i], scores[i]) for i in order]
