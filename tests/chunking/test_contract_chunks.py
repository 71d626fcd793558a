"""Contracts through conversion and chunking: every clause chunk's heading path names its clause,
clause numbers stay in the text, party/definitions/signature blocks are chunks of their own with
``metadata["role"]``; real CUAD contracts keep heading paths that name clauses."""

from __future__ import annotations

import re

import pytest

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.roles import CONTENTS, DEFINITIONS, PARTIES, ROLE, SIGNATURE
from folioflow.chunking.tokens import default_counter
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
from folioflow.ocr.sample_contracts import CONTRACT_CLAUSES, CONTRACT_STYLES, write_contract_pdf
from folioflow.ocr.schema import SourceRef

CLAUSE_TITLE = re.compile(r"^\s*(\(?[0-9]{1,3}(\.[0-9]{1,3})*[.)]?\s|\(?[a-z]\)|article\b|section\b|recitals?\b|"
                          r"exhibit\b|schedule\b|annex\b|appendix\b)", re.IGNORECASE)


def _convert(path):
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    return converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))


@pytest.fixture(scope="module")
def contract_chunks(tmp_path_factory):
    root = tmp_path_factory.mktemp("contract_chunks")
    chunker = Chunker(default_counter())
    return {s: chunker.chunk(_convert(write_contract_pdf(root / f"{s}.pdf", s))) for s in CONTRACT_STYLES}


@pytest.mark.parametrize("style", CONTRACT_STYLES)
def test_each_clause_chunk_names_its_clause_and_keeps_its_number(contract_chunks, style):
    chunks = contract_chunks[style]
    for title, opening in CONTRACT_CLAUSES[style]:
        holding = [c for c in chunks if opening in c.text]
        assert holding, opening
        assert all(c.heading_path and c.heading_path[-1] == title for c in holding), (title, [c.heading_path for c in holding])
        if style in ("run_in", "decimal"):
            number = title.split()[0]
            assert any(c.text.startswith(f"{number} ") for c in holding), (number, holding[0].text[:40])


@pytest.mark.parametrize("style", CONTRACT_STYLES)
def test_party_definitions_and_signature_blocks_are_chunks_of_their_own(contract_chunks, style):
    chunks = contract_chunks[style]
    by_role = {role: [c for c in chunks if c.metadata.get(ROLE) == role] for role in (PARTIES, DEFINITIONS, SIGNATURE)}
    assert all(len(found) == 1 for found in by_role.values()), {r: len(f) for r, f in by_role.items()}
    parties, definitions, signature = by_role[PARTIES][0], by_role[DEFINITIONS][0], by_role[SIGNATURE][0]
    assert parties.text.startswith("This Master Supply Agreement") and "WHEREAS" not in parties.text
    assert '"Affiliate" means' in definitions.text and '"Effective Date" means' in definitions.text
    assert "The term of this Agreement" not in definitions.text
    assert signature.text.startswith("IN WITNESS WHEREOF")
    assert all(w in signature.text for w in ("By:", "Name: Jane Smith", "Title: President"))
    assert "governed by the laws" not in signature.text and "Folding cartons" not in signature.text
    plain = [c for c in chunks if ROLE not in c.metadata]
    assert plain and not any("IN WITNESS" in c.text or "Name: Jane" in c.text for c in plain)


def _write_lines_pdf(path, lines):
    """One page of body-size lines 14 pt apart, so the text layer joins each clause's title line to
    the paragraph under it (no gap marks the title)."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=LETTER)
    pdf.setFont("Times-Roman", 11)
    y = 720
    for line in lines:
        pdf.drawString(72, y, line)
        y -= 14
    pdf.save()
    return path


def test_capital_titles_joined_to_their_text_name_their_clause(tmp_path):
    """NETGEAR's distributor agreement in CUAD: "19.", six no-break spaces, "ENTIRE AGREEMENT,
    GOVERNING LAW" on one line, the clause's text on the next; the text layer reads both lines as
    one paragraph, and the clause chunk's heading path still names the clause."""
    nbsp = "\u00a0"
    lines = ["DISTRIBUTOR AGREEMENT", "",
             "This Distributor Agreement is made as of March 1, 1996 by and between NETGEAR, Inc. and Ingram Micro Inc.",
             "",
             f"18.{nbsp * 6}ASSIGNMENT",
             "This Agreement may not be assigned by either party without prior written permission from the",
             "other party, which permission shall not be unreasonably withheld or delayed.", "",
             f"19.{nbsp * 6}ENTIRE{nbsp}AGREEMENT,{nbsp}GOVERNING{nbsp}LAW",
             f"This{nbsp}Agreement,{nbsp}including{nbsp}its{nbsp}attachment, constitutes the entire agreement between",
             "Distributor and NETGEAR and is governed by the laws of the State of California except that body",
             "of law dealing with conflicts of law.", "",
             "20. NOTICES, COUNTERPARTS All notices under this Agreement shall be in writing and delivered by",
             "hand or by courier to the addresses set out above; this Agreement may be signed in counterparts."]
    chunks = Chunker(default_counter()).chunk(_convert(_write_lines_pdf(tmp_path / "distributor.pdf", lines)))
    for title, words in (("18. ASSIGNMENT", "may not be assigned"),
                         ("19. ENTIRE AGREEMENT, GOVERNING LAW", "governed by the laws of the State of California"),
                         ("20. NOTICES, COUNTERPARTS", "shall be in writing")):
        holding = [c for c in chunks if words in c.text]
        assert holding and all(c.heading_path[-1] == title for c in holding), (title, [c.heading_path for c in chunks])
        assert any(c.text.startswith(title.split()[0] + " ") for c in holding)  # the number stays in the text


#: An agency agreement whose preamble names the parties and says they "agree as follows" (no "made
#: ... between"), then an amendment bound after it with its own preamble (CUAD's MICOA and NETGEAR files).
AGREES_AND_AMENDMENT = [
    "# MICOA AGENCY AGREEMENT\n\nMutual Insurance Corporation of America, a Michigan insurance corporation "
    "(\"MICOA\") and Stratton, Cheeseman & Walsh-Nevada, Inc., a Nevada corporation (\"Agency\") agree as "
    "follows:\n\n### 1. Authority\n\nSubject to the underwriting rules of MICOA, the Agency is authorized to "
    "solicit proposals for health care liability insurance within the State of Nevada.\n\n### 2. Term\n\nThis "
    "Agreement is effective as of the date signed and continues between the parties until terminated on sixty "
    "days' written notice.\n\nNOW, THEREFORE, the parties agree as follows: the schedule of commissions in "
    "Exhibit A applies to every policy placed.",
    "# AMENDMENT TO THE AGENCY AGREEMENT\n\nThis Amendment is entered into effective October 1, 1999 (\"Amendment "
    "Date\") by and between MICOA (\"MICOA\") and Stratton, Cheeseman & Walsh-Nevada, Inc. (\"Agency\").\n\n"
    "1. The territory of the Agreement is amended to be the States of Nevada and Arizona.",
]


def test_preambles_that_agree_as_follows_and_amendments_bound_after_are_party_blocks():

    chunks, parties = _party_chunks(*AGREES_AND_AMENDMENT)
    assert [c.text.split()[0] for c in parties] == ["Mutual", "This"], [c.text[:40] for c in parties]
    assert "agree as follows" in parties[0].text and "Amendment Date" in parties[1].text
    # a clause that says "effective ... between" and the recitals' "NOW, THEREFORE, ... agree as follows" are no preamble
    assert not any(c.metadata.get(ROLE) for c in chunks if "sixty days" in c.text or "NOW, THEREFORE" in c.text)


def test_a_preamble_whose_parties_enter_into_the_agreement_is_a_party_block():
    """CUAD's Nexstar outsourcing agreement: the parties are the subject and there is no "between"."""

    text = ("# OUTSOURCING AGREEMENT\n\nWYZZ, Inc. and WYZZ Licensee, Inc. (collectively \"WYZZ\") and Nexstar "
            "Broadcasting of Peoria, L.L.C. (\"NEXSTAR\") hereby enter into this Agreement (this \"Agreement\") dated "
            "November 28, 2001.\n\n## RECITALS\n\nWHEREAS, WYZZ is the licensee of Broadcast Television Station "
            "WYZZ.\n\n### 5. Term\n\nThe parties shall enter into this agreement's schedules (\"Schedules\") "
            "within thirty days of the Effective Date.")
    chunks, parties = _party_chunks(text)
    assert [c.text.split()[0] for c in parties] == ["WYZZ,"], [(c.metadata.get(ROLE), c.text[:40]) for c in chunks]


def _party_chunks(*texts: str):
    """(the chunks of a document made of the Markdown pages ``texts``, those of them with the party role)."""
    from tests.chunking.helpers import make_doc

    chunks = Chunker(default_counter()).chunk(make_doc(*texts))
    return chunks, [c for c in chunks if c.metadata.get(ROLE) == PARTIES]


def test_a_preamble_set_over_several_blocks_is_one_party_block():
    """The English form (CUAD's Profound Medical supply agreement): "THIS AGREEMENT is made July 31,
    2017" / "BETWEEN:" / each party's description / "- and -", then "WHEREAS:". No block alone is
    a preamble; together they are the party block, with the date and both parties, and the recitals
    after them are not."""
    text = ("# SUPPLY AGREEMENT\n\nTHIS AGREEMENT is made July 31, 2017\n\nBETWEEN:\n\nPROFOUND MEDICAL INC., a company "
            "incorporated under the laws of the province of Ontario (hereinafter referred to as \u201cCustomer\u201d)\n\n"
            "- and -\n\nPHILIPS MEDICAL SYSTEMS NEDERLAND B.V., a company incorporated under the laws of the Netherlands "
            "(hereinafter referred to as \u201cPhilips\u201d)\n\nWHEREAS:\n\nA. Philips manufactured the Product in-house."
            "\n\n### 1. Supply\n\nPhilips shall manufacture and supply the Product to Customer during the Term.")
    chunks, parties = _party_chunks(text)
    assert len(parties) == 1, [(c.metadata.get(ROLE), c.text[:40]) for c in chunks]
    assert "July 31, 2017" in parties[0].text and "PROFOUND MEDICAL" in parties[0].text
    assert "PHILIPS MEDICAL" in parties[0].text and "WHEREAS" not in parties[0].text
    # an amendment's opening takes its first two blocks; the amendments after them stay clauses
    amendment, _ = _party_chunks(
        "# AMENDMENT NO. 1\n\nTHIS AMENDMENT is made effective as of June 1, 2010.\n\nThe Supply Agreement between Acme "
        "Inc. and Beta LLC is amended as follows:\n\n1. Section 4.2 is deleted in its entirety.\n\n2. The Term is "
        "extended to December 31, 2012.")
    assert [c.metadata.get(ROLE) for c in amendment if "June 1, 2010" in c.text] == [PARTIES]
    assert not any(c.metadata.get(ROLE) for c in amendment if "December 31, 2012" in c.text or "4.2" in c.text), \
        [(c.metadata.get(ROLE), c.text[:50]) for c in amendment]
    # a clause that says it "is made" without the parties after it stays a clause
    other, _ = _party_chunks("# SUPPLY AGREEMENT\n\nTHIS PAYMENT is made monthly.\n\nInvoices are due in thirty days.")
    assert not any(c.metadata.get(ROLE) for c in other)


def test_only_the_opening_chunk_of_a_long_preamble_is_the_party_block():
    """CUAD's AUL/Nationwide servicing agreement: one preamble paragraph names the parties, then lists
    the services; the chunks after its opening hold services a clause question asks about."""
    from tests.chunking.helpers import make_doc

    services = " ".join(f"({i}) responding to routine customer inquiries number {i} relating to services performed by "
                        f"you and maintaining the records of every account held for the Trust's shareholders;"
                        for i in range(1, 25))
    text = ("# SERVICING AGREEMENT\n\nAgreement, made as of the first day of May, 2002 between Nationwide Fund "
            "Management LLC (\"Nationwide\") and American United Life Insurance Company (\"you\"), whereby you "
            f"agree to provide the following services: {services}\n\n### 2. Compensation\n\nNationwide shall pay "
            "you a fee of 0.25% a year.")
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    preamble = [c for c in chunks if "responding to routine" in c.text]
    assert len(preamble) >= 2, [c.text[:40] for c in chunks]
    assert [c.metadata.get(ROLE) for c in preamble] == [PARTIES] + [None] * (len(preamble) - 1)
    assert "made as of the first day of May" in preamble[0].text

def test_a_table_of_contents_is_a_chunk_of_its_own_and_the_preamble_after_it_is_the_party_block():
    """A contract's table of contents (TRICITY: a paragraph "TABLE OF CONTENTS" and 23 listed
    clauses; HOSPITALITY: a section "TABLE OF CONTENTS" holding tables) holds every clause's title
    and answers no clause question: its chunks carry the role ``contents``. The party block after a
    long list is still found (the list does not count among the first blocks searched), and where no
    heading comes between, the preamble's path does not name the table of contents."""
    from tests.chunking.helpers import make_doc

    listed = "\n\n".join(f"{n}. CLAUSE TITLE {n} {n}.1 First Part {n}.2 Second Part" for n in range(1, 24))
    preamble = ('This Outsourcing Agreement ("Agreement") is made as of the 16th day of February, 1998, by and '
                'between Tri City National Bank ("Customer") and M&I Data Services ("M&I").')
    clause = "## 1. TERM\n\nThe initial term of this Agreement shall be eight years from the Commencement Date."
    text = f"# OUTSOURCING AGREEMENT\n\nTABLE OF CONTENTS\n\nPage\n\n{listed}\n\nOUTSOURCING AGREEMENT\n\n{preamble}\n\n{clause}"
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    listing = [c for c in chunks if c.metadata.get(ROLE) == CONTENTS]
    assert listing and listing[0].text.startswith("TABLE OF CONTENTS"), [c.text[:30] for c in chunks]
    assert all("CLAUSE TITLE" in c.text and "made as of" not in c.text for c in listing)
    assert not any("CLAUSE TITLE" in c.text for c in chunks if c.metadata.get(ROLE) != CONTENTS)
    party = next(c for c in chunks if "made as of" in c.text)
    assert party.metadata.get(ROLE) == PARTIES and party.heading_path == ["OUTSOURCING AGREEMENT"]
    assert party.text.startswith("OUTSOURCING AGREEMENT\n\nThis Outsourcing")  # its title: no chunk of its own
    term = next(c for c in chunks if "initial term" in c.text)
    assert term.metadata.get(ROLE) is None and term.heading_path[-1] == "1. TERM"

    table = "| 1.0 | DEFINITIONS | 1 |\n|---|---|---|\n| 2.0 | GRANT OF LICENSE | 6 |\n| 3.0 | TERM | 7 |"
    text = f"# FRANCHISE AGREEMENT\n\n## TABLE OF CONTENTS\n\n{table}\n\nii\n\n{preamble}\n\n{clause}"
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    assert [c.metadata.get(ROLE) for c in chunks if "GRANT OF LICENSE" in c.text] == [CONTENTS]
    party = next(c for c in chunks if "made as of" in c.text)
    assert party.metadata.get(ROLE) == PARTIES and party.heading_path == ["FRANCHISE AGREEMENT"], party.heading_path


def test_an_interpretation_clause_is_no_definitions_block():
    """TRICITY's "1.4 Interpretation" says which document prevails in a conflict: a clause a lawyer
    asks about, not defined terms. A section titled "Definitions and Interpretation" still is."""
    from tests.chunking.helpers import make_doc

    precedence = ("In the event of a conflict between this Agreement and the terms of any exhibits and schedules "
                  "attached hereto, the terms of the schedules and exhibits shall prevail.")
    text = (f"# OUTSOURCING AGREEMENT\n\n## 1.3 Definitions and Interpretation\n\nWords used in the singular "
            f"include the plural.\n\n## 1.4 Interpretation\n\n{precedence}")
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    roles = {c.text: c.metadata.get(ROLE) for c in chunks}
    assert roles[precedence] is None and roles["Words used in the singular include the plural."] == DEFINITIONS, roles


def test_conformed_signatures_without_labels_are_a_signature_block():
    """IMAGEWARE's last page: "/s/ [Illegible]" above "---- XIMAGE" and "/s/ [Illegible] ---- SAGEM",
    no "By:" or "Name:" label, were text of clause 20; two conformed signatures in a few short lines
    are a signature block. One "/s/" quoted in a clause is not."""
    from tests.chunking.helpers import make_doc

    clause = "This Agreement contains the entire agreement between the parties and supersedes all prior agreements."
    text = (f"# MAINTENANCE AGREEMENT\n\n## 20. Entire Agreement and Waiver\n\n{clause}\n\n/s/ [Illegible]\n\n"
            "---- XIMAGE\n\n/s/ [Illegible] ---- SAGEM")
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    signed = [c for c in chunks if "SAGEM" in c.text]
    assert [c.metadata.get(ROLE) for c in signed] == [SIGNATURE] and "XIMAGE" in signed[0].text, [c.text for c in chunks]
    assert next(c for c in chunks if clause in c.text).metadata.get(ROLE) is None
    quoted = "## 4. Filings\n\nEach filing is signed /s/ by an officer.\n\nThe officer keeps a copy of each filing."
    assert not any(c.metadata.get(ROLE) for c in Chunker(default_counter()).chunk(make_doc(quoted)))


def test_signature_blocks_split_over_short_lines_keep_their_lead_in_and_win_over_a_definitions_section():
    """Signature blocks as CUAD's exhibits print them: ORBSAT's "Approved by:" above the conformed
    signatures (no block holds both a label and a rule), Prudential's "Signed at ... this ____ day"
    and "EMPLOYEE:" above the signature lines, and "IN WITNESS WHEREOF" closing a "Definitions and Interpretation"
    article. A form's blanks ("DATE OF ORDER:____") are no signature."""
    from tests.chunking.helpers import make_doc

    text = ("# STRATEGIC ALLIANCE AGREEMENT\n\n## 1. Compensation\n\nAVDU shall pay UTK $120,000 worth of unregistered "
            "shares upon the execution of this Agreement.\n\nApproved by:\n\n/s/ Clifford M. Gross\n\n"
            "/s/ Benjamin C. Croxton\n\nUTEK Corporation\n\nDate: September 9, 2005\n\n"
            "## 2. Definitions and Interpretation\n\nWords used in the singular include the plural.\n\nIN WITNESS WHEREOF, the "
            "parties have set their hands on the day and year first above written.\n\n/s/ Jeffrey Hanuscin\n\n"
            "Employee\n\n## Exhibit A Beneficiary Designation\n\nAny payment directed by the Owner shall be a full "
            "discharge of the Insurer, binding on all parties claiming any interest under the policy.\n\n"
            "Signed at Philadelphia, PA this __________ day of ________________, 2017.\n\nEMPLOYEE:\n\n"
            "Signature: ____________________ Name: ______________\n\n## Exhibit B Certificate\n\n"
            "CLIENT NAME: SCHOOLPOP, INC.\n\nDATE OF ORIGINATING ORDER:______________\n\n"
            "1. The undersigned certifies that each of the cards described on Schedule A has been destroyed.")
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    roles = {c.text.split("\n")[0]: c.metadata.get(ROLE) for c in chunks}
    assert roles["Approved by:"] == SIGNATURE and roles["AVDU shall pay UTK $120,000 worth of unregistered shares "
                                                         "upon the execution of this Agreement."] is None, roles
    assert roles["Words used in the singular include the plural."] == DEFINITIONS, roles
    assert roles["IN WITNESS WHEREOF, the parties have set their hands on the day and year first above written."] \
        == SIGNATURE, roles
    signed = next(c for c in chunks if "Signed at Philadelphia" in c.text)
    assert signed.metadata.get(ROLE) == SIGNATURE and "EMPLOYEE:" in signed.text and "Signature:" in signed.text
    assert "full discharge" not in signed.text
    form = next(c for c in chunks if "SCHOOLPOP" in c.text)
    assert form.metadata.get(ROLE) is None, form.text


def test_signing_parties_names_join_their_signature_block_whose_path_names_no_clause():
    """ORBSAT's last page: "APPROVED AND AGREED:" and the parties' names in capitals above the
    conformed signatures belong to the signature block, not to clause L; STAMPS' "Client:
    Stamps.com Inc." / "Intuit Inc." above blank "By:" lines likewise; WORLDWIDE's "IN WITNESS OF
    THE FOREGOING" opens a signature block. A signature chunk's heading path stops above the
    clauses (the document title, an exhibit stay). American Physicians' "Signed and effective this
    25th day of May, 1999." is the effective date: it stays with the clauses."""
    from tests.chunking.helpers import make_doc

    fees = ("In the event of any dispute under this Agreement, the prevailing party shall be entitled to recover "
            "its reasonable attorney's fees and costs from the other party.")
    text = (f"# STRATEGIC ALLIANCE AGREEMENT\n\n## IX. MISCELLANEOUS\n\n#### L. ATTORNEY'S FEES\n\n{fees}\n\n"
            "Signed and effective this 25th day of May, 1999.\n\nAPPROVED AND AGREED:\n\nUTEK CORPORATION\n\nWORLD ENERGY SOLUTIONS\n\nBy: /s/ Clifford M. Gross\n\n"
            "By: /s/ Benjamin C. Croxton\n\n## Exhibit A Sponsorship Terms\n\n### 18.8 Counterparts\n\n"
            "This Agreement may be executed in counterparts, each of which will serve to evidence the parties' "
            "binding agreement.\n\nClient: Stamps.com Inc. ---------------\n\nIntuit Inc.\n\n"
            "By: ____________ Name: ____________ Title: ____________\n\n### 10.16 Publicity\n\nNeither party "
            "shall issue a press release about this Agreement without the other party's written consent.\n\n"
            "IN WITNESS OF THE FOREGOING, the parties have signed this Agreement.\n\nWORLDWIDE STRATEGIES INC.")
    chunks = Chunker(default_counter()).chunk(make_doc(text))
    signatures = [c for c in chunks if c.metadata.get(ROLE) == SIGNATURE]
    assert [c.text.split("\n")[0] for c in signatures] == [
        "APPROVED AND AGREED:", "Client: Stamps.com Inc. ---------------", "IN WITNESS OF THE FOREGOING, the parties "
        "have signed this Agreement."], [(c.metadata.get(ROLE), c.text[:30]) for c in chunks]
    assert "UTEK CORPORATION" in signatures[0].text and "Intuit Inc." in signatures[1].text
    assert [c.heading_path for c in signatures] == [
        ["STRATEGIC ALLIANCE AGREEMENT"], ["STRATEGIC ALLIANCE AGREEMENT", "Exhibit A Sponsorship Terms"],
        ["STRATEGIC ALLIANCE AGREEMENT", "Exhibit A Sponsorship Terms"]]
    clause = next(c for c in chunks if "prevailing party" in c.text)
    assert clause.metadata.get(ROLE) is None and "UTEK" not in clause.text
    assert "Signed and effective this 25th day of May, 1999." in clause.text  # a date stays with the clauses
    assert clause.heading_path[-1] == "L. ATTORNEY'S FEES"


CUAD = "B_legal/cuad/pdfs"
#: Real contracts of three clause-title styles: run-in "1. Term. Subject to ..." (GAINSCO), ALL-CAPS
#: titles with their number in a margin column (Apollo Endosurgery), numbered run-ins with lettered
#: sub-clauses (Driven Deliveries).
CUAD_CONTRACTS = ["Part_II/Sponsorship/GAINSCOINC_01_21_2010-EX-10.41-SPONSORSHIP AGREEMENT.PDF",
                  "Part_III/Manufacturing/Apollo Endosurgery - Manufacturing and Supply Agreement.PDF",
                  "Part_II/Consulting_Agreements/DRIVENDELIVERIES,INC_05_22_2020-EX-10.4-CONSULTING AGREEMENT.PDF"]


@pytest.mark.parametrize("name", CUAD_CONTRACTS)
def test_cuad_contract_chunks_mostly_name_a_clause(corpus, name):
    path = corpus / CUAD / name
    if not path.is_file():
        pytest.skip(f"CUAD contract not in the corpus: {path}")
    chunks = Chunker(default_counter()).chunk(_convert(path))
    headed = [c for c in chunks if c.heading_path]
    naming = [c for c in chunks if any(CLAUSE_TITLE.match(t) for t in c.heading_path)]
    assert len(headed) >= 0.9 * len(chunks)
    assert len(naming) >= 0.7 * len(chunks), [c.heading_path for c in chunks if c not in naming][:10]
    assert any(c.metadata.get(ROLE) == PARTIES for c in chunks)


@pytest.mark.slow
def test_a_scanned_contract_gets_clause_paths_and_roles_through_cpu_ocr(tmp_path):
    """The clause pass runs on CPU OCR pages too (their Markdown is built from their blocks); a
    signature label OCR took for a heading ("By:" with its rule) becomes text of the signature block."""
    from folioflow.ocr.samples import write_scanned_copy

    scan = write_scanned_copy(write_contract_pdf(tmp_path / "run_in.pdf", "run_in"), tmp_path / "run_in.tif", dpi=200)
    converter = DocumentConverter(ConvertOptions(engine="ocr", guard=False, fidelity=False))
    chunks = Chunker(default_counter()).chunk(
        converter.convert(DocumentInput(data=scan, source=SourceRef(uri=scan.as_uri(), path=scan.name))))
    for title, opening in CONTRACT_CLAUSES["run_in"]:
        holding = [c for c in chunks if opening in c.text]
        assert holding and all(c.heading_path[-1:] == [title] for c in holding), (title, [c.heading_path for c in holding])
    signature = [c for c in chunks if c.metadata.get(ROLE) == SIGNATURE]
    assert signature and "Name: Jane Smith" in "\n".join(c.text for c in signature)
    assert not any(t.startswith("By") for c in chunks for t in c.heading_path)


def test_chunk_listing_shows_each_chunk_with_its_role_and_heading_path(contract_chunks):
    """What `folioflow show --chunks` and GET /v1/documents/{id}/chunks list, built from the stored
    payloads: every chunk in reading order, its contract role and its heading path, one page's
    chunks with --page."""
    from folioflow.flows.queries import document_chunks
    from folioflow.indexing.payload import chunk_payload
    from folioflow.indexing.registry import DocumentRecord

    chunks = contract_chunks["run_in"]
    record = DocumentRecord(doc_id=chunks[0].doc_id, uri="file:///contract.pdf", path="contract.pdf", content_hash="0" * 64)
    payloads = [chunk_payload(c, record) for c in reversed(chunks)]  # a store returns them in any order
    rows = document_chunks(payloads)
    assert [r.index for r in rows] == [c.index for c in chunks]
    assert [(r.role, r.heading_path, r.text) for r in rows] == [(c.metadata.get(ROLE), c.heading_path, c.text) for c in chunks]
    assert {r.role for r in rows} >= {PARTIES, DEFINITIONS, SIGNATURE}
    last = max(c.page_end for c in chunks)
    assert document_chunks(payloads, page=last) == [r for r in rows if r.page_start <= last <= r.page_end] != []
