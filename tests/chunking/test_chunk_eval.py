"""folioflow.chunking.evaluation: the chunker's own output has no failure; hand-made faulty chunkings are
caught in the right category (tables cut, formulas cut, over the limit, heading paths, words lost)."""

from __future__ import annotations

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.evaluation import CATEGORIES, evaluate_document_chunks
from folioflow.chunking.schema import Chunk, ChunkKind
from folioflow.chunking.sections import contextualize
from folioflow.chunking.tokens import default_counter
from folioflow.ocr.ids import sha256_text
from tests.chunking.helpers import make_doc, pipe_table, prose

TABLE = pipe_table(6)
FORMULA = "$$S = (R_p - R_f) / \\sigma_p$$"
PAGE1 = f"# 1 Results\n\n{prose(3)}\n\n## 1.1 Segments\n\n{TABLE}\n"
PAGE2 = f"# 2 Risk\n\n{prose(2, 2)}\n\n{FORMULA}\n\n{prose(2, 5)}\n"


def chunk(index: int, text: str, path: list[str], page: int) -> Chunk:
    embed = contextualize(path, text)
    return Chunk(doc_id=DOC.doc_id, index=index, kind=ChunkKind.TEXT, text=text, embed_text=embed, heading_path=path,
                 page_start=page, page_end=page, token_count=default_counter().count(embed),
                 content_hash=sha256_text(embed))


DOC = make_doc(PAGE1, PAGE2)


def test_chunker_output_has_no_failures():
    chunks = Chunker(default_counter()).chunk(DOC)
    report = evaluate_document_chunks(DOC, chunks, default_counter(), 256)
    assert report.counts == {c: 0 for c in CATEGORIES}, report.failures
    assert (report.tables, report.formulas) == (1, 1)


def test_faulty_chunks_are_reported_by_category():
    rows = TABLE.split("\n")
    half = len(rows) // 2
    formula_a, formula_b = FORMULA[:15], FORMULA[15:]
    chunks = [
        chunk(0, prose(3), ["1 Results"], 1),
        chunk(1, "\n".join(rows[:half]), ["1 Results", "1.1 Segments"], 1),
        chunk(2, "\n".join(rows[half:]), ["1 Results", "1.1 Segments"], 1),     # rows without the header
        chunk(3, prose(2, 2) + "\n\n" + formula_a, [], 2),                       # no heading path, formula cut
        chunk(4, formula_b + "\n\n" + prose(2, 5), ["1 Results"], 2),            # wrong heading path
    ]
    report = evaluate_document_chunks(DOC, chunks, default_counter(), 256)
    assert report.counts["tables_cut"] == 1 and "without a header row" in dict(report.failures)["tables_cut"]
    assert report.counts["formulas_cut"] == 1
    assert report.counts["no_heading_path"] == 1 and "2 Risk" in dict(report.failures)["no_heading_path"]
    assert report.counts["wrong_heading_path"] >= 1
    assert report.counts["over_limit"] == 0
    tight = evaluate_document_chunks(DOC, chunks, default_counter(), 40)
    assert tight.counts["over_limit"] == sum(1 for c in chunks if c.token_count > 40) > 0
    lost = evaluate_document_chunks(DOC, chunks[:3], default_counter(), 256)
    assert lost.counts["words_lost"] == 1 and "page 2" in dict(lost.failures)["words_lost"]


def test_without_the_converted_document_only_limits_and_paths_are_checked():
    chunks = Chunker(default_counter()).chunk(DOC)
    chunks[2] = chunks[2].model_copy(update={"heading_path": []})
    report = evaluate_document_chunks(None, chunks, default_counter(), 256)
    assert report.note and "skipped" in report.note
    assert report.counts["no_heading_path"] == 1 and report.counts["tables_cut"] == 0


def test_every_chunk_without_a_heading_path_counts_even_without_headings_in_the_markdown():
    """A contract whose clause titles stayed body text has no ATX heading at all: each of its chunks
    lacks a heading path, and each is counted (the count was 0 when only chunks under a heading of
    the Markdown were)."""
    body = "\n\n".join(f"{n}. The Supplier shall deliver the goods of order {n} within thirty days of the purchase "
                       f"order and the Buyer shall pay each invoice within sixty days. " + prose(2, n) for n in range(1, 9))
    doc = make_doc(body, body.replace("order", "shipment"))
    chunks = Chunker(default_counter()).chunk(doc)
    assert len(chunks) > 2 and not any(c.heading_path for c in chunks)
    report = evaluate_document_chunks(doc, chunks, default_counter(), 256)
    assert report.counts["no_heading_path"] == len(chunks)
    assert all("no heading above it" in why for cat, why in report.failures if cat == "no_heading_path")
    headed = make_doc("# Supply Agreement\n\n" + body)
    chunks = Chunker(default_counter()).chunk(headed)
    assert evaluate_document_chunks(headed, chunks, default_counter(), 256).counts["no_heading_path"] == 0
    assert evaluate_document_chunks(None, chunks, default_counter(), 256).counts["no_heading_path"] == 0
    bare = Chunker(default_counter()).chunk(doc)
    assert evaluate_document_chunks(None, bare, default_counter(), 256).counts["no_heading_path"] == len(bare)


def test_a_signature_blocks_path_is_not_counted_wrong(tmp_path):
    """A user's trial: `eval chunks` listed the signature blocks ("IN WITNESS WHEREOF", "By: /s/")
    of a contract as wrong heading paths, while docs/contracts.md says a signature chunk's path
    stops above the clauses on purpose. Generated contracts of every clause-title style, converted
    and chunked for real, now report none."""
    from folioflow.chunking.roles import ROLE, SIGNATURE
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.sample_contracts import CONTRACT_STYLES, write_contract_pdf
    from folioflow.ocr.schema import SourceRef

    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    chunker = Chunker(default_counter())
    for style in CONTRACT_STYLES:
        path = write_contract_pdf(tmp_path / f"{style}.pdf", style)
        document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
        chunks = chunker.chunk(document)
        assert any(c.metadata.get(ROLE) == SIGNATURE for c in chunks), style
        report = evaluate_document_chunks(document, chunks, default_counter(), 256)
        assert report.counts["wrong_heading_path"] == 0, (style, report.failures)
