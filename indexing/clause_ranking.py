"""Ranking rules for contracts: role chunks after substantive clauses, and clause titles that
match the question.

Two re-rankings of a fused chunk ranking, used by
:class:`~folioflow.indexing.retriever.FolioRetriever` when its profile turns them on
(:mod:`folioflow.indexing.profiles`):

* **Role demotion** (``demote_roles``). A contract's party block, defined terms, signature
  blocks and table of contents are chunks of their own marked with a role (:mod:`folioflow.chunking.roles`, payload
  ``metadata.extra.role``). They share the words of almost every question (the parties' names,
  "Agreement", defined terms) and answer few. For a question that does not ask for a role
  (:func:`wanted_roles`), every chunk with a role comes after every chunk without one
  (:func:`split_roles`): a role chunk never outranks a substantive clause for a clause question.
  Exceptions: a definitions chunk that defines a term of two or more words that the question or
  its glossary expansion names (:func:`defines_named_term`: ``"Effective Date" shall mean December
  5, 2014`` for "When does this agreement take effect?") answers it and stays with the clauses.
  For a question about the agreement's term (:func:`asks_term`), a definitions chunk or party block
  that states when the term ends (:func:`states_term`: ``"Term" shall mean the period ...
  terminating on the eighth anniversary``, a preamble's "and shall terminate on July 31, 2009")
  stays with the clauses too, and for a take-effect question a definitions chunk that dates the
  start (``"Contract Period" shall mean that period of time commencing on January 1, 2000``).
  A question asks for the party block when it asks who the parties are or when the agreement was
  made, dated or took effect (the preamble says "made as of ... by and between ..."); for the
  signature blocks when it asks who signed, or when the agreement was made or executed; for the
  defined terms when it asks what a term means or how it is defined; for the table of contents
  when it names it.
* **The party block first** (with role demotion, retriever option ``lead_roles``). A question that
  asks for a role of :data:`LEADING_ROLES` (:func:`leading_role`: the party block, for "who are the
  parties", "when was it made", "when does it take effect") gets that block first: the retriever
  searches the chunks of that role alone (the same dense and sparse search, filtered on the role,
  in the documents the call is restricted to or title routing chose) and puts the best one in
  front of the fused ranking (for "when does it take effect?", only a block that dates itself or
  says it is effective without deferring to a later definition: :func:`effective_blocks`; with the
  date rule on). Keeping the block where it ranked is not enough: "Who are the parties
  to this agreement?" shares its words with every "relationship of the parties" or "entire
  agreement between the parties" clause, and those outrank the preamble, which names the parties
  without saying "parties".
* **General provisions after the clauses** (with role demotion, retriever option
  ``demote_boilerplate``). A clause whose title is only general provisions about the document
  itself (:data:`BOILERPLATE_TITLE`: "Counterparts", "Entire Agreement", "Notices", "Relationship
  of the Parties", "Section Headings; Construction", ...; every part of the title split at ``;``,
  ``,`` and "and", so "Entire Agreement, Governing Law" is not one) is short and shares a
  question's common words ("party", "agreement", "other") while answering none of its substance:
  it goes after the substantive chunks with the role chunks (:func:`boilerplate_test`), unless its
  title shares a content term with the question or its glossary expansion ("Can it be signed in
  counterparts?"; "Can anyone other than the parties enforce it?", expanded with "third party
  beneficiaries"), or both the dense and the sparse search rank it first (an insurance obligation
  filed under "6. Independent Contractor").
* **Clause-title match** (``heading_weight``). A clause chunk's heading path names its clause
  ("12. Governing Law", "ARTICLE VIII Insurance"). :func:`heading_ranking` ranks the candidates
  whose heading path shares a content term with the question (BM25 terms: Snowball stems without
  stop words, so "governs" matches "Governing"), more shared terms first; the retriever then adds
  ``heading_weight x 1 / (RRF_K + rank in that ranking)`` to each chunk's fused score (a weighted
  Reciprocal Rank Fusion of the fused ranking with the title ranking). Words every contract
  question shares with clause titles ("agreement", "party") are not matched (:data:`GENERIC_WORDS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from folioflow.chunking.roles import CONTENTS, DEFINITIONS, PARTIES, ROLE, ROLES, SIGNATURE

__all__ = ["BLANK_DATE", "BOILERPLATE_TITLE", "DATE", "EFFECT_DATE", "GENERIC_WORDS", "LEADING_ROLES", "OTHER_DATE",
           "RENEWAL", "START_DATE", "TERM_END", "asks_date", "asks_effect", "asks_term", "blank_dated", "boilerplate_test", "chunk_role",
           "date_ranking", "defines_named_term", "effect_clauses", "effective_blocks", "heading_ranking", "leading_role", "split_roles", "states_term", "wanted_roles"]

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
#: A calendar date as contracts write it: "April 15, 2010" (also "April 15 , 2010"), "15 April 2010",
#: "the 1st day of April, 2007", "1/27/2020", "2020-01-29". A blank to fill in ("[date]", "this __ day
#: of ____, 20__") is not a date.
DATE = re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\s*,?\s*(?:19|20)\d\d\b|"
                  rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:day\s+of\s+)?{_MONTH},?\s+(?:19|20)\d\d\b|"
                  r"\b\d{1,2}/\d{1,2}/(?:19|20)?\d\d\b|\b(?:19|20)\d\d-\d\d-\d\d\b", re.IGNORECASE)
#: A date left blank in a dated form of words: "made as of this day of , 20", "this ____ day of
#: __________, 19__", "this 14 day of SEPTEMBER, 200_" (CUAD annotates the blank as the answer).
BLANK_DATE = re.compile(rf"\bday\s+of\s+(?:[_\s,]+|{_MONTH}\s*,?\s*)(?:19|20)(?:\d?_+|(?![\d_]))", re.IGNORECASE)
#: A provision that dates the agreement's start: a take-effect word, then a calendar date in the same sentence.
#: A date after an end word is the end's ("commence on the Effective Date and conclude on October 31, 2010").
EFFECT_DATE = re.compile(rf"\b(?:commenc\w*|begins?|beginning|effective|takes?\s+effect|binding)\b"
                         r"(?:(?!\b(?:conclud\w*|ends?|ending|expir\w*|terminat\w*|until|through)\b)[^.;]){0,80}?"
                         rf"(?:{DATE.pattern})", re.IGNORECASE)
#: A renewal or extension of the term: its start is not the agreement's.
RENEWAL = re.compile(r"\brenew\w*|\bextension\b|\bextended\b|\badditional\s+(?:\w+\s+){0,2}(?:term|period)s?\b",
                     re.IGNORECASE)
#: A question that asks for a date ("On what date was this agreement made?", "What is the date of
#: this contract?", "When was it signed?"). "When does it take effect?" is not one: a contract
#: answers it with a provision as often as with a date ("effective on the date a fully executed
#: copy is received").
_ASKS_DATE = re.compile(r"\b(?:what|which)\s+(?:\w+\s+){0,2}date\b|\bdate\s+(?:of|on)\s+(?:this|the)\b|"
                        r"\bwhen\b.*\b(?:made|dated|signed|executed|entered)\b|\bdated\b", re.IGNORECASE)

#: The date a contract starts: "the effective date", "the commencement date", "its start date".
START_DATE = re.compile(r"\b(?:effective|commencement|start(?:ing)?)\s+date\b", re.IGNORECASE)
#: A contract's start in the words of "in force": "enters into force", "from what date is it in force"
#: (a start word before "in force" or "in effect"; "How long does it remain in force?" asks for its term).
IN_FORCE = re.compile(r"\b(?:enters?|entered|entry)\s+into\s+(?:force|effect)\b|"
                      r"\b(?:from|since|as\s+of|starting)\b[^?.;]{0,40}\bin\s+(?:force|effect)\b", re.IGNORECASE)
#: The agreement itself starting: "When does the agreement start?", "When does this contract become
#: binding?", "On which day does the agreement begin?" (read with :data:`_ENDS` and :data:`RENEWAL`:
#: "When does the contract begin a renewal term?" asks for a renewal, not its start).
AGREEMENT_STARTS = re.compile(r"\b(?:agreement|contract|deal)(?:'s)?\s+(?:\w+\s+){0,2}?(?:start|begin|become\s+"
                              r"(?:binding|operative|valid|enforceable))\w*|\b(?:agreement|contract|deal)\s+"
                              r"(?:becomes?|is)\s+(?:binding|operative|valid|enforceable)\b", re.IGNORECASE)
#: Words of a contract's end, which a question about its start does not hold.
_ENDS = re.compile(r"\b(?:end|ends|ended|ending|expir\w*|terminat\w*|lapse\w*|after)\b", re.IGNORECASE)
#: Words that ask for a time ("when", "what date", "from", "as of"): "Is the agreement binding on
#: affiliates?" does not ask when it starts.
_WHEN = re.compile(r"\bwhen\b|\bdate\b|\bday\b|\bfrom\b|\bsince\b|\bas\s+of\b", re.IGNORECASE)
#: A question that asks when the agreement itself starts: :data:`AGREEMENT_STARTS` in a question that
#: asks for a time (:data:`_WHEN`) and holds no word of an end (:data:`_ENDS`) or a renewal
#: (:data:`RENEWAL`). The legal glossary's take-effect entry uses the same pattern.
STARTS_QUESTION = re.compile(rf"^(?![\s\S]*(?:{_ENDS.pattern}|{RENEWAL.pattern}))(?=[\s\S]*(?:{_WHEN.pattern}))"
                             rf"[\s\S]*(?:{AGREEMENT_STARTS.pattern})", re.IGNORECASE)
#: A question that asks when a contract takes effect or commences (or names its :data:`START_DATE`).
_ASKS_EFFECT = re.compile(rf"\btakes?\s+effect\b|\beffective\b|\bcommenc\w*|{START_DATE.pattern}|"
                          rf"\bcomes?\s+into\s+force\b|\bgo(?:es)?\s+into\s+effect\b|{IN_FORCE.pattern}", re.IGNORECASE)
_EFFECTIVE = re.compile(r"\beffective\b", re.IGNORECASE)
#: A preamble that leaves its effective date to a definition: "as of the Effective Date (as defined below)".
_DEFERS = re.compile(r"\beffective\s+date\W{0,3}\(?\s*as\s+defined\b", re.IGNORECASE)
#: "was this agreement", "is the contract", "the agreement was", "it was": the agreement as the
#: subject of "made", "signed", ... ("before a deal is made" is not about the agreement).
_AGREEMENT_WAS = (r"(?:(?:was|is)\s+(?:(?:this|the)\s+(?:agreement|contract)|it)|(?:agreement|contract|it)\s+(?:was|is))"
                  r"\s+")
#: Question words that ask for the party block (who the parties are, when the agreement was made).
_ASKS_PARTIES = re.compile(r"\bparties\s+(?:to|of)\s+(?:this|the|that)\s+(?:\w+\s+)?(?:agreement|contract)\b|"
                           r"\bwho\s+(?:are|is|were|was)\s+(?!not\b)(?:\w+\s+){0,2}part(?:y|ies)\b|"
                           r"\bcontracting\s+part(?:y|ies)\b|\bwho\s+(?:are|were)\s+(?:the\s+)?(?:companies|entities|"
                           r"firms|businesses|signatories|counterpart(?:y|ies))\b|"
                           r"\b(?:who|which\s+\w+)\s+(?:entered|signed|executed|(?:are|were)\s+bound)\b|"
                           rf"\bbetween\s+whom\b|\bdated?\b|\b{_AGREEMENT_WAS}(?:made|entered\s+into|signed|executed)\b|"
                           r"\beffective\b|\btakes?\s+effect\b", re.IGNORECASE)
#: Question words that ask for the signature blocks.
_ASKS_SIGNATURE = re.compile(r"\bwho\s+signed\b|\bsign(?:ed|ing|ature|atory|atories)\b|\bexecut(?:ed|ion)\b|\bdated?\b|"
                             rf"\b{_AGREEMENT_WAS}made\b", re.IGNORECASE)
#: A date that is not the agreement's: "the end date", "the termination date", "a payment due date",
#: "on what date does it expire", "by what date must the payment be made". Left out of a question
#: before it is read for the date it was made or for a role ("What is the expiration date?" does
#: not ask for the party block).
OTHER_DATE = re.compile(r"\b(?:end(?:ing)?|expir\w*|expiry|terminat\w*|renewal|payment|due|delivery|closing|milestone|"
                        r"shipment|invoice|deadline)\s+date\b|\bdate\b(?:\s+(?!and\b)[\w']+){0,8}?\s+"
                        r"(?:expir\w*|ends?|terminat\w*|renew\w*|pay\w*|paid|deliver\w*|lapses?|runs?\s+out|"
                        r"finish\w*|conclude[sd]?|come\s+to\s+an\s+end)\b", re.IGNORECASE)
#: Question words that ask for the defined terms.
_ASKS_DEFINITIONS = re.compile(r"\bdefin(?:e|ed|es|ition|itions)\b|\bmeaning\b|\bwhat\s+(?:does|do)\b.*\bmean\b|"
                               r"\bmeans\b", re.IGNORECASE)
#: Question words that ask for the table of contents (what the agreement's sections are).
_ASKS_CONTENTS = re.compile(r"\btable\s+of\s+contents\b|\bcontents\s+of\s+(?:this|the)\s+(?:agreement|contract)\b|"
                            r"\bwhat\s+(?:sections|articles|clauses)\s+(?:does|do)\b", re.IGNORECASE)
#: Roles whose block goes first for a question that asks for it: the party block (one per agreement;
#: it answers "who are the parties" and "when was it made", and often "when does it take effect").
LEADING_ROLES = (PARTIES,)
#: Clause titles of general provisions about the document itself (how it is signed, read, amended
#: and noticed, the parties' independence), not about what the parties owe each other.
BOILERPLATE_TITLE = re.compile(
    r"(?:the\s+)?(?:counterparts?|entire(?:\s+agreement)?|sole\s+agreement|integration|"
    r"(?:section\s+)?headings?|captions?|severab\w*|waivers?|amendments?|modifications?|"
    r"relationship\s+(?:of|between)\s+(?:the\s+)?parties|independent\s+contractors?|notices?|construction|"
    r"interpretation|further\s+assurances?|exclusion\s+of\s+united\s+nations\s+convention|"
    r"(?:no\s+)?third[\s-]+party\s+beneficiar\w*|parties\s+in\s+interest|execution)")
_CLAUSE_NUMBER = re.compile(r"^\s*(?:(?:article|section)\s+)?[\divxlc]+(?:\.[\divxlc]+)*\.?\)?\s*|^\s*\([a-z0-9]{1,4}\)\s*",
                            re.IGNORECASE)
#: Words of contract questions and clause titles that do not tell clauses apart.
GENERIC_WORDS = ("agreement", "agreements", "party", "parties", "contract", "this", "section", "article", "clause",
                 "shall", "may", "any", "other", "each")


def wanted_roles(question: str) -> frozenset[str]:
    """The roles ``question`` asks for (see the module docstring); empty for a clause question.
    A date that is not the agreement's (:data:`OTHER_DATE`) asks for none."""
    question = OTHER_DATE.sub(" ", question)
    out = set()
    if _ASKS_PARTIES.search(question) or IN_FORCE.search(question) or STARTS_QUESTION.search(question):  # a preamble dates it
        out.add(PARTIES)
    if _ASKS_SIGNATURE.search(question):
        out.add(SIGNATURE)
    if _ASKS_DEFINITIONS.search(question):
        out.add(DEFINITIONS)
    if _ASKS_CONTENTS.search(question):
        out.add(CONTENTS)
    return frozenset(out)


def leading_role(wanted: Iterable[str]) -> str | None:
    """The first role of :data:`LEADING_ROLES` among ``wanted`` (:func:`wanted_roles` of a
    question), or None: the role whose best chunk the retriever puts first."""
    wanted = frozenset(wanted)
    return next((role for role in LEADING_ROLES if role in wanted), None)


#: A term being defined: a quoted term followed by "means", "shall mean", "has the meaning", ...
#: (``“Affiliate” shall mean``, ``"Term" has the meaning set forth``), or "as used herein".
DEFINES = re.compile(r"[“\"‘'][^”\"’'\n]{1,80}[”\"’']\s*[^.\n]{0,60}?\b(?:shall\s+mean|means|mean|"
                     r"shall\s+have\s+the\s+meaning|has\s+the\s+meaning|have\s+the\s+meanings?|shall\s+include|"
                     r"includes|refers?\s+to)\b|\bas\s+used\s+(?:herein|in\s+this)", re.IGNORECASE)


def chunk_role(payload: dict[str, Any]) -> str | None:
    """The role of a chunk from its point payload (``metadata.extra.role``), or None. A chunk
    marked ``definitions`` that defines no term (:data:`DEFINES` nowhere in its text) has none:
    the chunker marks every block of a section titled "Definitions", and when the next clause
    titles were not recognised as headings, that section runs on over substantive clauses
    ("12.2 IN NO EVENT WILL EITHER PARTY BE LIABLE ..." under "2. Certain Definitions")."""
    meta = payload.get("metadata") or {}
    role = (meta.get("extra") or {}).get(ROLE)
    if role == DEFINITIONS and not DEFINES.search(str(payload.get("page_content") or "")):
        return None
    return role if role in ROLES else None


#: The term a definition defines: the quoted words before "means", "shall mean", "has the meaning"...
_DEFINED_TERM = re.compile(r"(?<![A-Za-z])[“\"‘']([^“”\"‘’'\n]{1,80})[”\"’']\s*[^.\n]{0,60}?\b(?:shall\s+mean|means|mean|"
                           r"shall\s+have\s+the\s+meaning|has\s+the\s+meaning|have\s+the\s+meanings?)\b", re.IGNORECASE)


#: A question that asks when the agreement ends or how long its term is ("When does this agreement
#: expire, and how long is its initial term?", "What is the term of this agreement?", "How long does
#: the contract run?", "When does the agreement terminate?"). Another thing's expiry ("When do the
#: warranties expire?", "the expiration date of the payment obligation") is not the agreement's.
_ASKS_TERM = re.compile(
    r"\b(?:agreement|contract|deal|term|it)\b[^?,;]{0,30}\bexpir\w*|"
    r"\bexpir(?:y|ation)\b(?!\s+(?:date\s+)?of\s+(?!(?:this|the|that)\s+(?:agreement|contract)\b))|"
    r"\binitial\s+term\b|\b(?:term|duration)\s+of\s+(?:this|the|that)\s+(?:agreement|contract)\b|"
    r"\b(?:agreement|contract)(?:'s)?\s+(?:term|duration)\b|"
    r"\bhow\s+long\b[^?]{0,40}\b(?:agreement|contract|term|deal)\b|"
    r"\b(?:when|what\s+date)\b[^?]{0,40}\b(?:agreement|contract|deal|term|it)\b[^?]{0,20}"
    r"\b(?:ends?|runs?\s+out|terminates?)\b",
    re.IGNORECASE)
#: A provision that states when a term ends: an end word, then in the same sentence a calendar date
#: (:data:`DATE`) or an anniversary ("terminating on the eighth anniversary of the Commencement
#: Date", "shall terminate on July 31, 2009", "the Effective Date through June 15, 2001",
#: "commencing on January 1, 2000 and concluding December 31, 2003"). Whose term it is, is read
#: from the sentence (:func:`states_term`).
TERM_END = re.compile(rf"\b(?:terminat\w*|expir\w*|conclud\w*|end(?:s|ing)?|through|until)\b[^.;]{{0,80}}?"
                      rf"(?:{DATE.pattern}|\banniversary\b)", re.IGNORECASE)
#: The agreement or its term named in a sentence: "this Agreement", "the Term", "Initial Term", a
#: defined ``"Term"``, "Contract Period"; a term another word qualifies ("Royalty Term", "Renewal
#: Term", "Exclusivity Period") is not the agreement's.
_TERM_SUBJECT = re.compile(r"\b(?:this|the)\s+(?:agreement|contract)\b|\b(?:contract|agreement)\s+period\b|"
                           r"(?:^\W*|[^\w\s]\s*|\b(?:the|this|its|initial|such)\s+)term\b", re.IGNORECASE)


def asks_term(question: str) -> bool:
    """True when ``question`` asks when the agreement expires or how long its term runs
    (:data:`_ASKS_TERM`)."""
    return bool(_ASKS_TERM.search(question))


def states_term(text: str) -> bool:
    """Whether ``text`` states when the agreement's term ends: a :data:`TERM_END` whose sentence
    names the agreement or its term (:data:`_TERM_SUBJECT`) and no renewal (:data:`RENEWAL`: "may be
    extended for one additional year ending December 31, 2005" is not the term's end; "Fiscal Year
    means each twelve month period ending December 31" and "Royalty Term ... expiring on the tenth
    anniversary" are not the agreement's)."""
    for match in TERM_END.finditer(text):
        sentence = _sentence_before(text, match.start())
        if _TERM_SUBJECT.search(sentence) and not RENEWAL.search(sentence):
            return True
    return False


def defines_named_term(text: str, asked: str) -> bool:
    """Whether ``text`` defines a term of two or more words that ``asked`` (a question and its
    glossary expansion) names as a phrase: ``"Effective Date" shall mean December 5, 2014`` for a
    question expanded with "the Effective Date"."""
    low = " ".join(asked.lower().split())
    for match in _DEFINED_TERM.finditer(text):
        term = " ".join(match.group(1).lower().split())
        if len(term.split()) >= 2 and re.search(rf"(?<!\w){re.escape(term)}(?!\w)", low):
            return True
    return False


def split_roles(ranked: Sequence[tuple[Any, float]], wanted: Iterable[str],
                demote: Callable[[Any], bool] | None = None, asked: str | None = None,
                question: str | None = None) -> tuple[list, list]:
    """``ranked`` ``(hit, score)`` pairs (best first) split into (those without a role or with a
    wanted one, those with another role or for which ``demote(hit)`` is true), each in the given order.
    ``asked`` (the question and its expansion): a definitions chunk that defines a term it names
    (:func:`defines_named_term`) is kept with the substantive chunks. ``question`` (the question as
    read): when it asks for the agreement's term (:func:`asks_term`), a definitions chunk or party
    block that states when the term ends (:func:`states_term`: ``"Term" shall mean the period
    commencing on the Effective Date and terminating on the eighth anniversary ...``, a preamble's
    "and shall terminate on July 31, 2009") is kept with them too; when it asks when the agreement
    takes effect (:func:`asks_effect`), a definitions chunk that dates the start (:func:`effect_clauses`:
    ``"Contract Period" shall mean that period of time commencing on January 1, 2000``) is kept."""
    wanted = frozenset(wanted)
    term, effect = asks_term(question or ""), asks_effect(question or "")
    keep: list = []
    demoted: list = []
    for pair in ranked:
        role = chunk_role(pair[0].payload)
        text = _text(pair[0]) if role in (DEFINITIONS, PARTIES) else ""
        answers = ((role == DEFINITIONS and bool(asked) and defines_named_term(text, asked or ""))
                   or (term and states_term(text))  # a definitions chunk or party block that states the term
                   or (effect and role == DEFINITIONS and _dates_start(text)))
        if answers:
            role = None
        out = (role is not None and role not in wanted) or (role is None and demote is not None and demote(pair[0]))
        (demoted if out else keep).append(pair)
    return keep, demoted


def boilerplate_test(question: str, terms: Callable[[str], Iterable[int]]) -> Callable[[Any], bool]:
    """``hit -> bool``: whether the hit's clause is a general provision about the document itself
    (:data:`BOILERPLATE_TITLE`: every part of its clause title, split at ``;``, ``,`` and "and", is
    one) whose title shares no content term with ``question`` ("Can the agreement be signed in
    counterparts?" keeps "12. Counterparts"). ``terms`` as for :func:`heading_ranking`."""
    asked = set(terms(question)) - set(terms(" ".join(GENERIC_WORDS)))
    cache: dict[str, bool] = {}

    def test(hit: Any) -> bool:
        path = (hit.payload.get("metadata") or {}).get("heading_path") or ()
        if not path:
            return False
        title = str(path[-1])
        if title not in cache:
            words = _CLAUSE_NUMBER.sub("", title).strip(" .:")
            parts = [p for p in re.split(r"[;,]|\band\b|&", words, flags=re.IGNORECASE) if p.strip(" .")]
            cache[title] = bool(parts) and all(BOILERPLATE_TITLE.fullmatch(p.strip(" .").lower()) for p in parts) \
                and not asked & set(terms(title))
        return cache[title]

    return test


def heading_ranking(hits: Sequence[Any], question: str, terms: Callable[[str], Iterable[int]]) -> list[Any]:
    """The hits whose heading path shares a content term with ``question``, most shared terms
    first (ties in the given order). ``terms``: text -> its term ids (the BM25 encoder's query
    terms: stemmed, no stop words). A hit's heading path is its payload's
    ``metadata.heading_path`` (list of str)."""
    generic = set(terms(" ".join(GENERIC_WORDS)))
    wanted = set(terms(question)) - generic
    if not wanted:
        return []
    cache: dict[tuple[str, ...], int] = {}
    scored = []
    for i, hit in enumerate(hits):
        path = tuple((hit.payload.get("metadata") or {}).get("heading_path") or ())
        if not path:
            continue
        if path not in cache:
            cache[path] = len(wanted & set(terms(" ".join(path))))
        if cache[path]:
            scored.append((-cache[path], i, hit))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [hit for _, _, hit in scored]


def asks_date(question: str) -> bool:
    """True when ``question`` asks for a date (on what date a contract was made or signed). The
    date of another event (:data:`OTHER_DATE`) is not one, nor is a question that asks when it takes
    effect (:func:`asks_effect`: "What is the effective date?", "From what date does it take effect?")."""
    return not asks_effect(question) and bool(_ASKS_DATE.search(OTHER_DATE.sub(" ", question)))


def asks_effect(question: str) -> bool:
    """True when ``question`` asks when a contract takes effect ("When does this agreement take
    effect?", "What is its effective date?", "When does the term commence?", "From what date is it in
    force?", "When does the contract begin?")."""
    return bool(_ASKS_EFFECT.search(question) or STARTS_QUESTION.search(question))


def effective_blocks(hits: Sequence[Any]) -> list[Any]:
    """The party blocks (hits, payload ``page_content``) that answer when their agreement takes
    effect, in the given order: those that hold a calendar date (:data:`DATE`), or say "effective"
    ("entered into effective this __ day of ____", ``(the "Effective Date")``) without deferring to
    a definition further on ("as of the Effective Date (as defined below)")."""
    return [hit for hit in hits if DATE.search(text := _text(hit)) or
            (_EFFECTIVE.search(text) and not _DEFERS.search(text))]


def _text(hit: Any) -> str:
    """A hit's text (payload ``page_content``; "" when absent)."""
    return str(hit.payload.get("page_content") or "")


def _holding(hits: Sequence[Any], pattern: re.Pattern[str]) -> list[Any]:
    """The hits whose text ``pattern`` finds, in the given order."""
    return [hit for hit in hits if pattern.search(_text(hit))]


def effect_clauses(hits: Sequence[Any]) -> list[Any]:
    """The hits whose text says the agreement commences, begins or is effective on a calendar date
    ("The term of this Agreement will begin on February 1, 1998", "shall commence on December 1,
    2001, which date shall be deemed the effective date", "Signed and effective this 25th day of
    May, 1999"), in the given order (:data:`EFFECT_DATE`). A date after an end word ("and conclude on
    October 31, 2010") is not the start, nor is a renewal's ("may renew this Agreement for one
    additional five year period that shall begin on January 1, 2005": :data:`RENEWAL`, earlier in
    the same sentence)."""
    return [hit for hit in hits if _dates_start(_text(hit))]


def _dates_start(text: str) -> bool:
    """Whether ``text`` dates the agreement's start (:func:`effect_clauses`)."""
    return any(not RENEWAL.search(_sentence_before(text, match.start())) for match in EFFECT_DATE.finditer(text))


def _sentence_before(text: str, end: int) -> str:
    """The part of ``text``'s sentence (from the last ``.``, ``;`` or line break) before offset ``end``."""
    start = max(text.rfind(mark, 0, end) for mark in ".;\n") + 1
    return text[start:end]


def blank_dated(hits: Sequence[Any]) -> list[Any]:
    """The hits whose text holds a date left blank (:data:`BLANK_DATE`), in the given order."""
    return _holding(hits, BLANK_DATE)


def date_ranking(hits: Sequence[Any]) -> list[Any]:
    """The hits whose text (payload ``page_content``) holds a calendar date (:data:`DATE`), in the
    given order: a date question's answer is a date ("dated November 28, 2001"), which a question's
    words rarely share, and a blank template's "[date]" is none."""
    return _holding(hits, DATE)
