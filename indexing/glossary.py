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

An entry may also carry a concept (its name and a short description): a glossary with a
``semantic_threshold`` (:data:`LEGAL`) then expands a question that no pattern matches with the
entry whose concept is closest in meaning to the question, by the cosine similarity of their
vectors from the retriever's own embedding model (:meth:`Glossary.expand`); the concepts are
embedded in one batch, once per model and process.

A glossary may also hold example questions (:data:`~folioflow.indexing.glossary_examples.LEGAL_EXAMPLES`
for :data:`LEGAL`): canonical questions that the patterns match, each with other wordings of it. A
question no pattern matches then takes the expansions of the example question closest to it in
meaning (:meth:`Glossary.closest_example`) before the concepts are consulted.

A user's own glossary: :meth:`Glossary.from_file` reads a JSON or YAML list of
``{"pattern": regex, "expansion": text}`` (patterns are case-insensitive). ``folioflow query
--glossary PATH`` uses it, and ``--glossary none`` turns expansion off.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from folioflow.indexing.clause_ranking import IN_FORCE, STARTS_QUESTION
from folioflow.indexing.glossary_examples import LEGAL_EXAMPLES
from folioflow.ocr.errors import ConfigurationError

__all__ = ["FINANCE", "LEGAL", "Example", "Glossary", "GlossaryEntry", "load_glossary"]


def _unit(vector: Any) -> Any:
    import numpy as np

    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    return v / (np.linalg.norm(v) or 1.0)


class Example(NamedTuple):
    """An example question of a :class:`Glossary`: ``question``, a wording of ``canonical`` (a
    question of the glossary's examples, possibly ``question`` itself), and ``expansions``, what the
    glossary's patterns append to ``canonical`` (possibly none)."""

    question: str
    canonical: str
    expansions: tuple[str, ...]


@dataclass(frozen=True)
class GlossaryEntry:
    """``pattern``: a case-insensitive regex for the user's term; ``expansion``: the documents'
    wording, appended to a query the pattern matches; ``concept``: the entry's concept in plain
    words (name and a short description), matched by meaning (:meth:`Glossary.expand`), or None."""

    pattern: re.Pattern[str]
    expansion: str
    concept: str | None = None


class Glossary:
    """An ordered list of :class:`GlossaryEntry`. ``entries``: ``(regex, expansion)`` or
    ``(regex, expansion, concept)`` tuples; a regex that does not compile raises
    :class:`~folioflow.ocr.errors.ConfigurationError`.

    ``semantic_threshold``: the cosine similarity (-1..1) between a question's vector and the best
    entry's concept vector at or above which that entry also expands the question (None: keyword
    patterns only); ``semantic_margin``: how much the best entry's similarity must exceed the
    second best's. Only entries with a ``concept`` take part.

    ``examples``: canonical question -> other wordings of it (:data:`~folioflow.indexing.glossary_examples.LEGAL_EXAMPLES`).
    Each wording, and the canonical question itself, is an example question that expands as the
    patterns expand the canonical one (possibly to nothing). With a ``semantic_threshold`` set, a
    question that no pattern matches takes the expansions of the example closest to it in meaning
    when their cosine similarity is at least ``example_threshold`` and exceeds that of the closest
    example expanding otherwise by ``example_margin``; else the concepts decide."""

    def __init__(self, entries: Iterable[tuple[str, ...]], name: str = "custom", *,
                 semantic_threshold: float | None = None, semantic_margin: float = 0.0,
                 examples: Mapping[str, Iterable[str]] | None = None, example_threshold: float = 0.5,
                 example_margin: float = 0.05):
        self.name = name
        self.semantic_threshold, self.semantic_margin = semantic_threshold, semantic_margin
        self.example_threshold, self.example_margin = example_threshold, example_margin
        compiled = []
        for pattern, expansion, *rest in entries:
            try:
                compiled.append(GlossaryEntry(re.compile(pattern, re.IGNORECASE), " ".join(str(expansion).split()),
                                              " ".join(str(rest[0]).split()) if rest and rest[0] else None))
            except re.error as exc:
                raise ConfigurationError(f"glossary {name!r}: bad pattern {pattern!r}: {exc}") from exc
        self.entries: list[GlossaryEntry] = compiled
        #: The example questions, each canonical question before its other wordings.
        self.examples: list[Example] = []
        for canonical, wordings in (examples or {}).items():
            expansions = tuple(self.matches(canonical))
            self.examples += [Example(q, canonical, expansions) for q in dict.fromkeys([canonical, *wordings])]
        self._vectors: dict[str, Any] = {}
        self._lock = threading.Lock()

    def matches(self, query: str) -> list[str]:
        """The expansions of the entries ``query`` matches, in glossary order, without repeats."""
        return list(dict.fromkeys(e.expansion for e in self.entries if e.pattern.search(query)))

    @property
    def semantic(self) -> bool:
        """Whether entries are matched by meaning too (a threshold is set and some entry has a concept)."""
        return self.semantic_threshold is not None and (bool(self.examples) or any(e.concept for e in self.entries))

    def _unit_vectors(self, key: str, texts: Sequence[str], encode: Callable[[Sequence[str]], Any]) -> Any:
        import numpy as np

        with self._lock:
            if key not in self._vectors:
                vectors = np.asarray(encode(list(texts)), dtype=np.float32).reshape(len(texts), -1)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                self._vectors[key] = vectors / np.where(norms == 0, 1.0, norms)
            return self._vectors[key]

    def concept_vectors(self, encode: Callable[[Sequence[str]], Any], model: str = "") -> Any:
        """The L2-normalised vectors of the entries' concepts, (n concepts, dimension) float32 in entry
        order: ``encode`` (an embedder's batch ``encode``) called once per ``model`` name and process,
        then cached here."""
        return self._unit_vectors("concepts\0" + model, [e.concept for e in self.entries if e.concept], encode)

    def example_vectors(self, encode: Callable[[Sequence[str]], Any], model: str = "") -> Any:
        """The L2-normalised vectors of :attr:`examples`' questions, (n examples, dimension) float32 in
        their order; embedded and cached like :meth:`concept_vectors`."""
        return self._unit_vectors("examples\0" + model, [e.question for e in self.examples], encode)

    def near_examples(self, query_vector: Any, encode: Callable[[Sequence[str]], Any], model: str = "") -> list[Example]:
        """The example questions whose cosine similarity to the question (``query_vector``, (dimension,))
        is at least ``example_threshold`` and within ``example_margin`` of the closest one's, closest
        first; empty when there are no examples or none is close enough. :meth:`closest_example`
        decides when they all expand alike; a caller may also read what their canonical wordings share
        (the retriever: the roles they ask for)."""
        import numpy as np

        if not self.examples or query_vector is None:
            return []
        sims = self.example_vectors(encode, model) @ _unit(query_vector)
        order = np.argsort(-sims, kind="stable")
        best = float(sims[order[0]])
        if best < self.example_threshold:
            return []
        return [self.examples[int(i)] for i in order if float(sims[i]) > best - self.example_margin]

    def closest_example(self, query_vector: Any, encode: Callable[[Sequence[str]], Any],
                        model: str = "") -> Example | None:
        """The example question closest in meaning to the question (``query_vector``, (dimension,)),
        when its cosine similarity is at least ``example_threshold`` and exceeds that of the closest
        example with other expansions by ``example_margin`` (every one of :meth:`near_examples`
        expands alike); else None (no examples, or none close enough). Its ``expansions`` may be
        none (``()``)."""
        near = self.near_examples(query_vector, encode, model)
        if not near or any(example.expansions != near[0].expansions for example in near):
            return None
        return near[0]

    def closest(self, query_vector: Any, encode: Callable[[Sequence[str]], Any], model: str = "") -> str | None:
        """The expansion of the entry whose concept is closest in meaning to the question, when its
        cosine similarity to ``query_vector`` (the question's own vector, (dimension,)) is at least
        ``semantic_threshold`` and exceeds the second best's by ``semantic_margin``; else None (and
        always None for a glossary that is not :attr:`semantic`)."""
        import numpy as np

        if not self.semantic or query_vector is None or not any(e.concept for e in self.entries):
            return None
        sims = self.concept_vectors(encode, model) @ _unit(query_vector)
        order = np.argsort(-sims, kind="stable")
        best = float(sims[order[0]])
        second = float(sims[order[1]]) if len(order) > 1 else -1.0
        if best < float(self.semantic_threshold or 0.0) or best - second < self.semantic_margin:
            return None
        return [e for e in self.entries if e.concept][int(order[0])].expansion

    def expand(self, query: str, query_vector: Any = None, encode: Callable[[Sequence[str]], Any] | None = None,
               model: str = "") -> str:
        """``query`` followed by one line per matching expansion; ``query`` itself when none matches.
        The entries whose pattern matches, in glossary order; when no pattern matches, with
        ``query_vector`` (the question's embedding) and ``encode`` (the same embedder's batch
        ``encode``), the expansions of the example question closest in meaning
        (:meth:`closest_example`), else the entry whose concept is :meth:`closest`, if any."""
        extra = self.matches(query)
        if not extra and encode is not None and query_vector is not None and self.semantic:
            example = self.closest_example(query_vector, encode, model)
            if example is not None:
                extra = list(example.expansions)
            else:
                near = self.closest(query_vector, encode, model)
                extra = [near] if near is not None else []
        return query if not extra else "\n".join([query, *extra])

    @classmethod
    def from_file(cls, path: str | Path) -> Glossary:
        """Read a JSON (``.json``) or YAML (other suffixes) glossary: a list of ``{"pattern",
        "expansion"}`` mappings, each with an optional ``"concept"``; or a mapping with that list as
        ``"entries"`` and optional ``"examples"`` (canonical question -> list of other wordings, as
        the ``examples`` argument). Entries with concepts, or examples, are matched by meaning
        with the legal glossary's thresholds (:data:`LEGAL_SEMANTIC_THRESHOLD`,
        :data:`LEGAL_EXAMPLE_THRESHOLD` and their margins). Raises
        :class:`~folioflow.ocr.errors.ConfigurationError` for an unreadable file or entry."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
            if path.suffix.lower() == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
            items = data["entries"] if isinstance(data, dict) else data
            entries = [(item["pattern"], item["expansion"], item.get("concept")) for item in items]
            raw = (data.get("examples") or {}) if isinstance(data, dict) else {}
            examples = {str(canonical): [str(q) for q in (wordings or [])] for canonical, wordings in raw.items()}
            if any(isinstance(w, str) for w in raw.values()):
                raise ValueError("examples: each canonical question needs a list of wordings")
        except Exception as exc:  # OSError, JSON/YAML errors, entries that are not {pattern, expansion}
            raise ConfigurationError(f"cannot read glossary {path}: {exc}".splitlines()[0]) from exc
        semantic = bool(examples) or any(concept for *_, concept in entries)
        return cls(entries, name=str(path), semantic_threshold=LEGAL_SEMANTIC_THRESHOLD if semantic else None,
                   semantic_margin=LEGAL_SEMANTIC_MARGIN, examples=examples,
                   example_threshold=LEGAL_EXAMPLE_THRESHOLD, example_margin=LEGAL_EXAMPLE_MARGIN)

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


#: Cosine similarity between a question and the closest :data:`LEGAL` concept at or above which that
#: entry expands a question its patterns missed (:meth:`Glossary.expand`).
LEGAL_SEMANTIC_THRESHOLD = 0.45
#: How much the closest concept's similarity must exceed the second closest's.
LEGAL_SEMANTIC_MARGIN = 0.025
#: Cosine similarity between a question no :data:`LEGAL` pattern matches and the closest of its example
#: questions (:data:`~folioflow.indexing.glossary_examples.LEGAL_EXAMPLES`) at or above which the
#: question takes that example's expansions, and how much it must exceed the closest example that
#: expands otherwise. Chosen on the tuning half of the legal benchmark's fifth wording, matched
#: against the glossary as it stood before that wording was read, with the examples of the other
#: four wordings (margins 0, 0.05, 0.1: 0.05 best at every threshold; thresholds 0.5, 0.6, 0.7 alike
#: per contract, 0.5 best in the shared store; docs/benchmarks.md).
LEGAL_EXAMPLE_THRESHOLD = 0.5
LEGAL_EXAMPLE_MARGIN = 0.05

#: Contract clauses as lawyers ask about them, followed by the words contracts draft them in (see
#: module docstring): the concept is matched in the question's wording, the expansion is drafting
#: language common to commercial agreements. No entry names a contract or a party.
LEGAL = Glossary([
    (r"\bexclusiv\w*|\bdeal\w* with (any )?others?\b|\bsole (and exclusive )?(supplier|distributor|provider|source)\b|"
     r"\b(deal\w*|work\w*|do\w* business) (only|solely) with\b|"
     r"\b(buy\w*|purchas\w*|sell\w*|sourc\w*) (from|to) (anyone|anybody|any ?one) else\b|"
     r"\b(work\w*|deal\w*|do\w* business|contract\w*) with (any )?(other|competing|third[- ]party) (suppliers?|distributors?|"
     r"customers?|vendors?|manufacturers?|resellers?)\b",
     "exclusive right; exclusivity; sole and exclusive; shall not appoint, sell to or deal with any other person in "
     "the territory",
     "Exclusivity: exclusive dealing, a sole supplier, distributor or provider, exclusive rights in a territory."),
    (r"\bcompet\w*|\bnon-?compet\w*",
     "shall not, directly or indirectly, engage in any business that competes; competing products; non-competition",
     "Non-compete: a ban on engaging in a competing business or selling competing products."),
    (r"\b(after|following|upon|once|on)\b.{0,30}\b(ends?|ended|expir\w*|terminat\w*)|\bpost-?terminat\w*|\bsurviv\w*",
     "upon termination or expiration of this agreement; following termination; shall survive; return, transition, "
     "wind down, continue to perform, sell off remaining inventory",
     "Post-termination obligations: duties that continue or survive after the contract ends, wind-down, transition, return of materials, sell-off of remaining inventory."),
    (r"\b(challeng|contest|dispute|attack|sue|suing)\w*\b.{0,60}\b(intellectual property|patents?|trademarks?|marks|"
     r"copyrights?|validity|ownership)\b|\bcovenant not to sue\b",
     "shall not contest, challenge or dispute the validity or ownership of the patents, trademarks or intellectual "
     "property, nor take any action to impair them",
     "No-challenge clause: a covenant not to contest the validity or ownership of the licensor's patents, trademarks or intellectual property."),
    (r"\bliabilit\w*\b.{0,40}\b(limit\w*|cap\w*|exceed)\b|\b(limit\w*|cap\w*) (of|on) liabilit\w*",
     "limitation of liability: in no event shall the aggregate liability exceed the amounts paid; not liable for "
     "indirect, incidental or consequential damages",
     "Limitation of liability: a cap on damages, the maximum amount a party can be liable for, exclusion of consequential damages."),
    (r"\bnot (limited|capped|excluded)\b|\bunlimited liabilit\w*|\bgross negligence\b|\bwillful misconduct\b",
     "except for gross negligence, willful misconduct, fraud, indemnification obligations or breach of "
     "confidentiality, the limitation of liability shall not apply",
     "Exceptions to the limitation of liability: gross negligence, willful misconduct, fraud and indemnity claims stay uncapped."),
    (r"\bown\w*\b.{0,60}\b(intellectual property|inventions?|work product|developments?|improvements?|ip)\b|"
     r"\b(intellectual property|inventions?|work product|ip)\b.{0,60}\bown\w*",
     "ownership: all right, title and interest in inventions, improvements and work product shall vest in and be the "
     "sole property of; hereby assigns",
     "Intellectual property ownership: who owns inventions, work product and improvements developed under the contract, assignment of IP rights."),
    (r"\bjointly\b|\bjoint(ly)? own\w*|\bco-?own\w*",
     "jointly owned by the parties; joint ownership; each party shall own an undivided interest",
     "Joint ownership of intellectual property developed together."),
    (r"\bfirst (refusal|negotiation|offer)\b|\bro(fr|fo|fn)\b",
     "right of first refusal, first negotiation or first offer: before offering to any third party, shall first "
     "offer, notify and negotiate in good faith; option to match the terms",
     "Right of first refusal, first offer or first negotiation: a preferential right to match an offer or negotiate first before a sale to outsiders."),
    (r"\b(audit|inspect)\w*",
     "audit, inspect and examine the books, records and accounts during normal business hours upon notice",
     "Audit rights: inspecting and examining books, records and accounts."),
    (r"\bassign\w*\b.{0,60}\b(consent|approv\w*|permission)\b|\b(consent|approv\w*|permission)\b.{0,60}\bassign\w*|"
     r"\b(transfer\w*|hand\w* over)\b.{0,20}\b(rights|obligations|agreement|contract)\b.{0,90}\b(consent|approv\w*|"
     r"permission)\b",
     "may not assign or transfer this agreement, by operation of law or otherwise, without prior written consent",
     "Anti-assignment: transferring the contract to another company requires prior written consent."),
    (r"\bfor convenience\b|\bwithout cause\b",
     "may terminate this agreement at any time, without cause, for any reason or no reason, upon written notice",
     "Termination for convenience: ending the contract at any time without cause by giving notice."),
    (r"\b(limit|cap|restrict)\w*\b.{0,40}\bquantit\w*|\bquantit\w*\b.{0,40}\b(limit|cap|restrict)\w*",
     "maximum quantities; shall not exceed the forecast or capacity; orders in excess of",
     "Volume restriction: caps or limits on the quantities ordered, purchased or sold."),
    (r"\broyalt\w*|\brevenue shar\w*|\bprofits? shar\w*|\bshare\w* (of )?(revenues?|profits?)",
     "royalty of a percentage of net sales; revenue share; profit split; commissions payable",
     "Royalties, revenue sharing, profit sharing and commissions."),
    (r"\binsurance\b|\binsured\b",
     "insurance policies and coverage: general liability, product liability, per occurrence and aggregate limits, "
     "additional insured, certificates of insurance",
     "Insurance requirements: the coverage types and amounts a party must maintain."),
    (r"\bwarrant\w*\b.{0,40}\b(last|period|long|duration)\b",
     "warranty period of months or years from the date of delivery or acceptance; warrants free from defects",
     "Warranty period: how long product or service warranties remain in effect."),
    (r"\bchange (of|in) control\b|\bacquired\b|\bmerger\b",
     "change of control: merger, consolidation, acquisition, sale of all or substantially all assets or of a "
     "majority of the voting securities",
     "Change of control: merger, acquisition or sale of a company, and the rights it triggers."),
    (r"\bliquidated damages\b|\btermination fee\b|\bbreak(-up)? fee\b",
     "liquidated damages; termination fee; a sum payable as a reasonable estimate of damages and not a penalty",
     "Liquidated damages, termination fees or break-up fees payable on breach or early termination."),
    (r"\bthird[- ]part(y|ies) beneficiar\w*|\banyone other than the parties\b|\bwho (else )?can enforce\b|\benforce\b",
     "third party beneficiaries: nothing in this agreement confers any rights or remedies upon any person other "
     "than the parties",
     "Intended beneficiaries: whether someone outside the deal may sue to enforce its promises."),
    (r"\bdisparag\w*",
     "shall not make any disparaging, derogatory or negative statements about the other party or its products",
     "Non-disparagement: not making negative or derogatory statements about the other party."),
    (r"\bmost[- ]favou?red\b|\bas good as\b|\bno less favou?rable\b",
     "most favored terms: prices and terms no less favorable than those offered to any other customer; lower price",
     "Most favored nation: prices or terms no worse than those given to any other customer."),
    (r"\b(solicit\w*|poach\w*|recruit\w*|hir(e|ing))\b.{0,60}\b(employees?|personnel|staff|workers?)\b",
     "shall not solicit, recruit, hire or employ any employee of the other party",
     "Non-solicitation of employees: no recruiting or hiring away of the other side's staff."),
    (r"\bsolicit\w*\b.{0,60}\b(customers?|clients?)\b|\btak\w* away\b.{0,30}\bcustomers?\b",
     "shall not solicit, divert or take away any customers, clients or accounts of the other party",
     "Non-solicitation of customers: no soliciting or diverting of the other side's clients."),
    (r"\bprices?\b.{0,40}\b(rais\w*|increas\w*|chang\w*|limit\w*|fixed)\b|\b(rais\w*|increas\w*)\b.{0,20}\bprices?\b",
     "prices shall not be increased; price adjustments; fixed prices; pricing changes upon notice",
     "Price increase restrictions: caps on raising or adjusting charges over time, fixed pricing."),
    (r"\baffiliates?\b|\bsubsidiar\w*",
     "affiliates and subsidiaries; licensed rights held or controlled by its affiliates",
     "Affiliates: licenses or rights extended to affiliates and subsidiaries."),
    (r"\bperpetu\w*|\birrevocabl\w*|\bpermanent\w*|\b(revok\w*|take\w* back)\b.{0,40}\blicen[cs]\w*|"
     r"\blicen[cs]\w*.{0,60}\b(revok\w*|take\w* back)\b",
     "perpetual, irrevocable, fully paid-up, royalty-free license",
     "Perpetual or irrevocable license that does not end and cannot be revoked."),
    (r"\bunlimited\b.{0,40}\b(users?|copies|uses?|number)\b|\benterprise[- ]wide\b",
     "unlimited number of users, copies or installations; enterprise-wide license",
     "Unlimited or enterprise-wide license: unlimited users, copies or installations."),
    (r"\bescrow\b|\bsource code\b",
     "source code escrow agreement: deposit the source code with the escrow agent; release conditions",
     "Source code escrow: deposit of source code with an escrow agent and its release conditions."),
    (r"\blicen[cs]es?\b.{0,40}\bgrant\w*|\bgrant\w*\b.{0,40}\blicen[cs]es?\b|\bscope of the licen[cs]e|\brights? to use\b",
     "hereby grants a non-exclusive, non-transferable, royalty-free, worldwide license to use; grant of license; "
     "grant of rights",
     "License grant: the rights a licensee gets to use the licensor's software, technology, patents or trademarks, "
     "their scope, field and territory."),
    (r"\bminimum\b.{0,40}\b(purchas|order|sales?\b|sell|buy|volume|quantit|commit|units?\b|amount|royalt|fee|charge|payment)\w*|"
     r"\b(buy|sell|purchas|order)\w*\b.{0,40}\bat least\b|\btake[- ]or[- ]pay\b|\bpurchase (obligation|commitment)s?\b",
     "a minimum of; at least; not less than; minimum quantities, orders or purchases per year; minimum royalty, fee "
     "or charge; quotas; shortfall",
     "Minimum commitment: a minimum quantity, volume or amount a party must buy, sell or pay for over a period."),
    (r"\bsub-?licen[cs]\w*|\btransfer\w*\b.{0,40}\blicen[cs]\w*|\blicen[cs]\w*\b.{0,40}\btransfer\w*",
     "non-transferable, non-sublicensable license; the license may not be sublicensed or transferred",
     "Non-transferable license: whether a licensee may sublicense or transfer its license rights."),
    (r"\brenew\w*",
     "shall automatically renew for successive renewal terms unless either party gives written notice of "
     "non-renewal before the end of the then-current term",
     "Automatic renewal of the contract term and notice of non-renewal."),
    (r"\bexpir\w*|\binitial term\b|\bhow long\b.{0,30}\bterm\b",
     "the term of this agreement shall commence on the effective date and continue for an initial term of years "
     "until expiration",
     "Term and expiration: how long the contract runs, its initial term and when it expires."),
    (r"\btakes?\s+effect\b|\beffective\s+date\b|\bcommenc\w*|\bbecomes?\s+effective\b|\bcomes?\s+into\s+force\b|"
     rf"\bgo(?:es)?\s+into\s+effect\b|{IN_FORCE.pattern}|{STARTS_QUESTION.pattern}",
     "the Effective Date; this agreement shall be effective as of; shall become effective on; the term shall "
     "commence on; shall begin on"),  # no concept: by meaning, "On what date was it made?" would match it
    (r"\b(law|laws)\b.{0,30}\bgovern\w*|\bgovern\w*\b.{0,30}\b(law|laws)\b|\bchoice of law\b",
     "governed by and construed in accordance with the laws of the state of",
     "Governing law: which jurisdiction's laws apply to the contract, choice of law."),
], name="legal", semantic_threshold=LEGAL_SEMANTIC_THRESHOLD, semantic_margin=LEGAL_SEMANTIC_MARGIN,
    examples=LEGAL_EXAMPLES, example_threshold=LEGAL_EXAMPLE_THRESHOLD, example_margin=LEGAL_EXAMPLE_MARGIN)


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
