"""Example questions for the :data:`~folioflow.indexing.glossary.LEGAL` glossary's matching by meaning.

:data:`LEGAL_EXAMPLES` maps a question that the legal glossary's keyword patterns match (its
*canonical* wording) to other wordings of the same question, as lawyers and business readers ask
it. A question that no pattern matches is expanded as the canonical question of the example
closest to it in meaning (:meth:`~folioflow.indexing.glossary.Glossary.closest_example`): "Can
either side hire away the other's people?", near a wording of "May a party solicit or hire the
other party's employees?", gets the non-solicitation expansion that the patterns give the latter. A canonical question that no pattern matches (the parties, the date an agreement was
made) expands nothing, and so does a question whose closest example is one of its wordings: such
a question is not a clause question.

Source: the canonical questions are the main wording of folioflow's legal benchmark
(``tests/benchmarks/bench_legal.py``, one question per CUAD clause category), the other wordings
its ``alt``, ``third``, ``fourth`` and ``fifth`` sets, written for it (the fourth and fifth by
writers who saw only each category's name and a one-line gloss). Its ``sixth`` set, never read,
is not here: it measures how the examples carry over to wordings they do not hold
(docs/benchmarks.md).
"""

from __future__ import annotations

__all__ = ["LEGAL_EXAMPLES"]

#: Canonical question (matched by a :data:`~folioflow.indexing.glossary.LEGAL` pattern, or by none)
#: -> other wordings of it.
LEGAL_EXAMPLES: dict[str, tuple[str, ...]] = {
    'Who are the parties to this agreement?': (
        'Which companies signed up to this contract?',
        'Name the contracting parties.',
        'Who are the companies signing this agreement?',
        'Who are the companies or individuals that signed this agreement?',
    ),
    'On what date was this agreement made?': (
        'What is the date of this contract?',
        'When was this contract signed?',
        'What date was this contract signed?',
        'What date appears on the agreement as the date it was executed?',
    ),
    'When does this agreement take effect?': (
        'From what date is the contract in force?',
        'What is the commencement date of the agreement?',
        'From what date does this agreement actually take effect?',
        'As of what date do the obligations under this agreement come into force?',
    ),
    'When does this agreement expire, and how long is its initial term?': (
        'How long does the contract run before it ends?',
        'What is the end date of the term?',
        'When does the initial term of the contract run out?',
        'On what date does the original term of this agreement come to an end?',
    ),
    'Does the agreement renew automatically, and for how long?': (
        'Is the term extended automatically at the end, and by how much?',
        'Is there an evergreen or auto-renewal provision?',
        'Does the contract roll over automatically at the end of the term, and if so for how long?',
        'Does the agreement roll over automatically at the end of the term, and if so for how long each time?',
    ),
    'How much notice must a party give to stop the agreement from renewing?': (
        'How far in advance must notice of non-renewal be given?',
        'What is the deadline to send a non-renewal notice?',
        "How much notice do we have to give if we don't want the agreement to renew?",
        "How far in advance must a party give notice if it doesn't want the agreement to roll over for another term?",
    ),
    "Which state's law governs this agreement?": (
        "Under which jurisdiction's laws is the contract to be interpreted?",
        'What is the choice-of-law provision?',
        "Which state's or country's laws govern this contract?",
        "Which state's or country's laws apply to the interpretation and enforcement of this agreement?",
    ),
    "Can a party assign this agreement without the other party's consent?": (
        'Is a party allowed to transfer its rights and obligations under the contract to someone else?',
        'Is consent required for an assignment of the contract?',
        "Can either side hand this contract over to another company without the other side's written approval?",
        "Can either party hand over its rights or obligations under the agreement to someone else without the other side's approval?",
    ),
    "Is either party's liability limited, and to what amount?": (
        'Is there a maximum amount of damages a party can be made to pay?',
        'What is the limitation of liability?',
        'What is the maximum amount a party can be on the hook for in damages?',
        'Is there a maximum amount either party can be required to pay in damages under this agreement?',
    ),
    'Which liabilities are not limited or excluded, for example for gross negligence?': (
        'For which claims does the damages cap not apply?',
        'Which claims are carved out of the liability cap?',
        'Are there any claims, such as indemnity or confidentiality breaches, where the liability limit does not apply?',
        "Are any claims or types of loss carved out of the limitation of liability so that they aren't subject to a maximum amount?",
    ),
    'Can either party terminate for convenience, and on how much notice?': (
        'May the contract be ended at will, without any breach?',
        'Can the customer walk away without cause?',
        'Can we walk away from this deal without cause just by giving notice?',
        'Can a party walk away from the agreement at any time without having to show a breach or give a reason?',
    ),
    'What license does the agreement grant, and to whom?': (
        'What rights to use the intellectual property are granted?',
        'What is the scope of the license granted?',
        "What rights does the licensee actually get to use the licensor's technology or trademarks?",
        'Does either party give the other the right to use its intellectual property, such as software, trademarks or patents?',
    ),
    'Can the licensee transfer or sublicense its rights?': (
        'Is the license personal to the licensee, or may it pass it on to others?',
        'Is the license assignable or sublicensable?',
        'Is the licensee allowed to sublicense or transfer its license to someone else?',
        'Is the licensee allowed to pass its licence rights on to a third party or grant sub-licences?',
    ),
    'Is the license perpetual or irrevocable?': (
        'Can the license ever be revoked, or does it last forever?',
        'Is the license granted in perpetuity?',
        'Does the license last forever, or can the licensor take it back?',
        "Are any of the licensed rights granted permanently or on terms that the licensor can't take back?",
    ),
    'Is the arrangement exclusive, or may a party deal with others?': (
        'Is either side prevented from working with other suppliers, distributors or customers?',
        'Is there an exclusive dealing obligation?',
        'Are we locked into dealing only with this counterparty, or do they have exclusive rights in a territory?',
        'Is either party required to deal only with the other, or barred from buying from or selling to anyone else?',
    ),
    'Is a party restricted from competing with the other?': (
        'Does the contract bar a party from running a competing business?',
        'Is there a non-competition covenant?',
        'Is there anything stopping us from selling competing products or going into a similar business?',
        'Is a party prohibited from running a competing business or offering rival products during or after the agreement?',
    ),
    'What exceptions are there to the restrictions on competition or exclusivity?': (
        'In what cases may a party still sell competing products despite the restrictions?',
        'What carve-outs apply to the non-compete or exclusivity?',
        'Are there any exceptions that let a party compete or deal with others despite the exclusivity restrictions?',
        'Are there any exceptions that let a party engage in certain competing activities despite the restrictive covenants?',
    ),
    "May a party solicit or hire the other party's employees?": (
        "Is there a prohibition on poaching the other side's staff?",
        'Is there an employee non-solicitation clause?',
        "Are we prohibited from hiring or recruiting the other side's staff during or after the contract?",
        "Is either party barred from poaching or recruiting the other side's personnel?",
    ),
    "Can a party inspect or audit the other's books and records?": (
        "Does a party have the right to examine the other's accounts?",
        'What audit rights does the agreement give?',
        'Does the other party have the right to inspect our books and records to check the payments?',
        "Does a party have the right to examine the other party's accounts and records to verify payments or compliance?",
    ),
    'Is there a minimum purchase or sales commitment?': (
        'Must a party buy or sell at least a certain amount?',
        'Is there a minimum order quantity or purchase obligation?',
        'Is there a minimum quantity we have to buy or a minimum amount we have to pay each year?',
        'Is the buyer required to order at least a set quantity or spend a floor amount each year?',
    ),
    'Are there limits on the quantities a party may order or sell?': (
        'Is there a cap on how much may be purchased or supplied?',
        'Is there a maximum volume or quantity limit?',
        'Is there a cap on how many units we can order or how much we can use?',
        "Are there limits on the number of units, users or transactions permitted, with extra fees if they're exceeded?",
    ),
    'How are revenues, royalties or profits shared between the parties?': (
        'What percentage of sales or income is paid to the other side?',
        'What royalty or revenue share is payable?',
        'What royalties or share of revenue has to be paid to the other party?',
        'Does one party have to pay the other a percentage of its sales or earnings?',
    ),
    'What must the parties still do after the agreement ends?': (
        'What obligations continue once the contract is over?',
        'What transition or wind-down obligations apply after termination?',
        'What do we still have to do once the agreement ends, for example transition support or selling off remaining inventory?',
        'What assistance must be provided after the agreement terminates to help move the services over to a replacement provider?',
    ),
    'What insurance must a party carry?': (
        'What insurance coverage is required?',
        'What are the insurance requirements?',
        'What insurance coverage does the supplier have to maintain, and for how much?',
        'What types and amounts of cover is each party required to carry, and must the other party be named as an additional insured?',
    ),
    'Who owns the intellectual property created under this agreement?': (
        'Which side gets title to inventions and work product made under the contract?',
        'Does the agreement assign IP rights to one party?',
        'Who owns the inventions and work product developed under this agreement, and is there an assignment of IP?',
        'Who will own the deliverables, inventions and other work product developed under this agreement?',
    ),
    "Is a party barred from challenging the other's intellectual property?": (
        "Is a party prohibited from contesting the validity of the other's patents or trademarks?",
        'Is there a no-challenge clause for patents or marks?',
        "Are we barred from challenging the validity of the licensor's patents or trademarks?",
        'Has a party agreed not to bring claims against the other or contest the validity of its patents or trademarks?',
    ),
    'What happens if a party is acquired or undergoes a change of control?': (
        'What are the consequences of a merger or sale of a party?',
        'Is there a change-of-control provision?',
        'What happens to this contract if one of the parties is acquired or merges with another company?',
        'What happens if one of the parties is acquired or merges with another company, and can the other side terminate as a result?',
    ),
    'Does a party have a right of first refusal or first negotiation?': (
        'Must a party be offered the opportunity first before a deal is made with a third party?',
        'Is there a ROFR, ROFO or ROFN?',
        'Do we get first dibs, or a right to match any offer, before they sell or license to a third party?',
        'Does either party have the right to match a third-party offer, or to be given the opportunity first, before the other side sells or licenses to someone else?',
    ),
    'How long do the warranties last?': (
        'For what period is the product warranted?',
        'What is the warranty period?',
        'How long is the product warranty period?',
        "For how long after delivery does the supplier's guarantee on the products or services remain in effect?",
    ),
    'Does the agreement provide for liquidated damages or a termination fee?': (
        'Is a fixed sum payable as damages on breach or early termination?',
        'Is there a liquidated damages clause?',
        'Is there a fixed termination fee or pre-agreed damages amount if the contract is breached or ended early?',
        'Does the agreement set a fixed sum payable on breach or on early termination?',
    ),
    'Can anyone other than the parties enforce this agreement?': (
        'Does the contract give rights to any person who is not a party?',
        'Are there any third-party beneficiaries?',
        "Can anyone who isn't a party to this contract enforce any of its terms?",
        "Can anyone who didn't sign the agreement enforce any of its terms?",
    ),
    'Must the parties refrain from disparaging each other?': (
        'Is a party forbidden to criticise the other publicly?',
        'Is there a non-disparagement obligation?',
        'Is either side prohibited from saying negative things about the other publicly?',
        'Are the parties prohibited from criticising or making derogatory public remarks about each other?',
    ),
    'Is a party entitled to terms at least as good as those it gives any other customer?': (
        'Must a party match better prices it offers to other buyers?',
        'Is there a most-favoured-customer pricing clause?',
        "Does the vendor guarantee that we'll get pricing at least as good as what they give their other customers?",
        'Is the supplier required to give this customer pricing or terms no less favourable than it offers its other customers?',
    ),
    "Is a party barred from soliciting or taking away the other party's customers?": (
        "Is a party prevented from approaching the other's clients?",
        'Is there a customer non-solicitation covenant?',
        "Are we restricted from going after the other party's clients or customers?",
        "Is a party restricted from approaching or taking business away from the other party's clients?",
    ),
    'Are there limits on raising or changing prices?': (
        'Can the prices be increased during the term?',
        'Are prices fixed or capped for the term?',
        'Can the supplier raise prices during the term, and is there any limit on increases?',
        'Are there limits on how much or how often the supplier can increase its fees?',
    ),
    'Is any intellectual property jointly owned by the parties?': (
        'Do the parties share ownership of any inventions?',
        'Is there joint ownership of intellectual property?',
        'Is any intellectual property created under the deal owned jointly by both parties?',
        'Will any inventions or other intellectual property developed together be co-owned by the parties?',
    ),
    "Does the license also cover rights held by the licensor's affiliates?": (
        "Are intellectual property rights of the licensor's group companies included in the license?",
        "Does the grant include IP owned by the licensor's affiliates?",
        "Does the license cover IP owned by the licensor's affiliates and subsidiaries too?",
        "Does the licence include patents or other IP held by the licensor's group companies, not just the licensor itself?",
    ),
    "May the licensee's affiliates or subsidiaries use the licensed rights?": (
        "Can the licensee's group companies exercise the license too?",
        "Are the licensee's affiliates licensed too?",
        'Can our subsidiaries and affiliates use the licensed rights as well?',
        "Can the licensee's subsidiaries and other group companies also use the licensed rights?",
    ),
    'Is the license unlimited in the number of users, copies or uses?': (
        'Is there any limit on the number of seats, installations or uses?',
        'Is it an enterprise-wide or unlimited-use license?',
        'Is there an enterprise-wide license allowing unlimited users or copies?',
        'Does the licence allow unrestricted use across the whole organisation with no cap on users, seats or copies?',
    ),
    'Must the source code be deposited with an escrow agent?': (
        "Is the software's source code held by a third party for release in certain events?",
        'Is there a source code escrow arrangement?',
        'Is the vendor required to put the source code into escrow, and when can we get it released?',
        'Is the vendor required to lodge its source code with an independent custodian for release if the vendor goes bankrupt or stops supporting the software?',
    ),
}
