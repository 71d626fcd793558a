"""folioflow's chunker against LangChain's MarkdownHeaderTextSplitter + RecursiveCharacterTextSplitter
on the same real documents (``../shared/corpus``): tables cut, formulas cut, chunks over the limit,
chunks without heading context, chunks per page, and chunking time (best of ``--repeat`` runs, same
process, side by side).

Run::

    PYTHONPATH=$PWD python tests/benchmarks/bench_chunking.py [--filings 3] [--filing-pages 0] [--repeat 3]

FinanceBench filings go through folioflow's text-layer engine (``folioflow.ocr.converter``) when present, so
their Markdown has real pipe tables, headings and page furniture.

Comparable size: LangChain's splitter measures characters. Its ``chunk_size`` is set to the limit
(256 MiniLM tokens) times the corpus's own characters per token (all page Markdown, measured with
MiniLM's tokenizer, special tokens excluded), printed with the results. A second LangChain row uses
``RecursiveCharacterTextSplitter.from_huggingface_tokenizer`` (MiniLM, chunk_size 256 tokens) for a
size measured in the same tokens, as a LangChain user would do to respect the model.

Definitions (shared with the tests, :mod:`tests.chunking.invariants`): a *table is cut* when one of
its rows is in no chunk intact, or a chunk holds some of its rows without a header row; a *formula
is cut* when no chunk holds it whole. *Over the limit*: the embedded text (folioflow: heading path
+ text; LangChain: ``page_content``, what would be embedded) has more than 256 tokens, special
tokens included, by MiniLM's tokenizer. *Without heading context*: the chunk lies under at least one
heading but its embedded text contains none of its headings' titles.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from folioflow.chunking.chunker import Chunker
from folioflow.chunking.invariants import formula_failures, source_facts, table_failures
from folioflow.chunking.tokens import default_counter
from tests.chunking import corpus_docs

LIMIT = 256
HEADERS = [("#" * i, f"h{i}") for i in range(1, 7)]


def langchain_chunks(markdown: str, splitter) -> list[tuple[str, list[str]]]:
    """(page_content, header titles) per LangChain chunk."""
    from langchain_text_splitters import MarkdownHeaderTextSplitter

    sections = MarkdownHeaderTextSplitter(HEADERS, strip_headers=False).split_text(markdown)
    return [(d.page_content, [v for k, v in sorted(d.metadata.items())]) for d in splitter.split_documents(sections)]


def measure(name, docs, run, counter) -> dict:
    """Run ``run(doc) -> list[(embedded text, chunk text, headings, part, rows_as_text)]`` on all
    docs; count the faults."""
    out = {"method": name, "docs": len(docs), "pages": 0, "chunks": 0, "tables": 0, "tables_cut": 0, "formulas": 0,
           "formulas_cut": 0, "over": 0, "under_heading": 0, "no_context": 0}
    for doc, chunks in run:
        facts = source_facts(doc)
        texts = [c[1] for c in chunks]
        out["pages"] += len(doc.pages)
        out["chunks"] += len(chunks)
        out["tables"] += len(facts.tables)
        out["formulas"] += len(facts.formulas)
        out["tables_cut"] += table_failures(facts.tables, texts, None, [c[4] for c in chunks])[0]
        out["formulas_cut"] += formula_failures(facts.formulas, texts)[0]
        counts = counter.count_batch([c[0] for c in chunks]) if chunks else []
        out["over"] += sum(1 for n in counts if n > LIMIT)
        for embedded, _, headings, _, _ in chunks:
            if headings:
                out["under_heading"] += 1
                if not any(h and h.strip() in embedded for h in headings):
                    out["no_context"] += 1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--filings", type=int, default=3, help="FinanceBench filings (first N by name)")
    parser.add_argument("--filing-pages", type=int, default=0, help="first pages of each filing (0: all)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (args.corpus / "MANIFEST.tsv").is_file():
        sys.exit(f"corpus absent: {args.corpus}")
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    counter = default_counter()
    sets = corpus_docs.corpus_sets(args.corpus, filings=args.filings, filing_pages=args.filing_pages or None)
    sets.pop("docling_md")  # the same documents as docling_json, which adds pages, bboxes and furniture
    docs = [d for family in sets.values() for d in family]
    markdown = {d.doc_id + d.source.path: "\n\n".join(p.markdown for p in d.pages) for d in docs}
    all_md = list(markdown.values())
    chars = sum(len(m) for m in all_md)
    tokens = sum(n - 2 for n in counter.count_batch(all_md))
    chars_per_token = chars / tokens
    chunk_chars = round(LIMIT * chars_per_token)

    chunker = Chunker(counter)
    by_chars = RecursiveCharacterTextSplitter(chunk_size=chunk_chars, chunk_overlap=0)
    by_tokens = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(counter.tokenizer, chunk_size=LIMIT, chunk_overlap=0)

    def ff(doc):
        # a heading path too long for its budget is embedded shortened ("…"): its shown part counts
        return [(c.embed_text, c.text, [h.rstrip("…") for h in c.metadata.get("heading_path_rendered", c.heading_path)
                                        if h != "…"], c.part, bool(c.metadata.get("table_rows_as_text")))
                for c in chunker.chunk(doc)]

    def lc(splitter):
        return lambda doc: [(t, t, h, None, False) for t, h in langchain_chunks(markdown[doc.doc_id + doc.source.path], splitter)]

    methods = [("folioflow", ff), (f"langchain chars={chunk_chars}", lc(by_chars)), ("langchain tokens=256", lc(by_tokens))]
    timings: dict[str, float] = {}
    results: dict[str, list] = {}
    for _ in range(args.repeat):  # interleaved, best of N: the same machine state for every method
        for name, fn in methods:
            start = time.perf_counter()
            out = [(d, fn(d)) for d in docs]
            elapsed = time.perf_counter() - start
            timings[name] = min(timings.get(name, elapsed), elapsed)
            results[name] = out
    print(f"documents: {len(docs)} ({', '.join(f'{k} {len(v)}' for k, v in sets.items())}), "
          f"pages: {sum(len(d.pages) for d in docs)}")
    print(f"chars per MiniLM token over these documents: {chars_per_token:.2f} -> LangChain chunk_size "
          f"{LIMIT} x {chars_per_token:.2f} = {chunk_chars} characters")
    rows = []
    for family in ["all", *sets]:
        for name, _ in methods:
            subset = [(d, ch) for d, ch in results[name] if family == "all" or d in sets[family]]
            rows.append((family, measure(name, [d for d, _ in subset], subset, counter)))
    header = f"{'family':<13} {'method':<24} {'chunks':>6} {'/page':>6} {'tables cut':>11} {'formulas cut':>12} " \
             f"{'over 256':>8} {'no heading ctx':>15}"
    print(header)
    print("-" * len(header))
    for family, r in rows:
        print(f"{family:<13} {r['method']:<24} {r['chunks']:>6} {r['chunks'] / max(1, r['pages']):>6.2f} "
              f"{r['tables_cut']:>4}/{r['tables']:<6} {r['formulas_cut']:>5}/{r['formulas']:<6} {r['over']:>8} "
              f"{r['no_context']:>6}/{r['under_heading']:<8}")
    base = timings["folioflow"]
    print(f"\nchunking time, all documents (best of {args.repeat}):")
    for name, _ in methods:
        print(f"  {name:<24} {timings[name]:7.2f} s   x{timings[name] / base:.2f} of folioflow")


if __name__ == "__main__":
    main()
