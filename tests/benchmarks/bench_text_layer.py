"""Benchmark: the text-layer engine against plain PDFium text extraction, side by side.

For each filing, in one process and on the same pages, times
  * baseline: ``pypdfium2`` ``PdfTextPage.get_text_range()`` (unstructured text), and
  * folioflow: ``TextLayerEngine`` (assessment + lines + tables + blocks + Markdown),
and prints pages/s for both and the slowdown ratio, plus table-detection counts. With
``--plumber N`` it also times pdfplumber's own ``find_tables()`` (pdfminer.six parsing) on the
first N pages, the alternative our table finder avoids.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_text_layer.py [--max-pages 80] [--plumber 20]``
(needs ``../shared/corpus``; FOLIOFLOW_CORPUS overrides).
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium

from ocr.engines.text_layer import TextLayerEngine
from ocr.render import open_document
from ocr.schema import BlockType

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))
FILINGS = ["AMAZON_2017_10K.pdf", "3M_2022_10K.pdf", "BOEING_2018_10K.pdf"]


def baseline(path: Path, pages: list[int]) -> float:
    pdf = pdfium.PdfDocument(path)
    started = time.perf_counter()
    for n in pages:
        page = pdf[n - 1]
        textpage = page.get_textpage()
        textpage.get_text_range()
        textpage.close()
        page.close()
    seconds = time.perf_counter() - started
    pdf.close()
    return seconds


def folioflow(path: Path, pages: list[int]) -> tuple[float, Counter]:
    engine = TextLayerEngine()
    counts: Counter = Counter()
    with open_document(path) as doc:
        started = time.perf_counter()
        for n in pages:
            page = engine.convert_page(doc.page(n))
            tables = [b for b in page.blocks if b.type == BlockType.TABLE]
            counts["pages"] += 1
            counts["unusable pages"] += page.status.value == "failed"
            counts["pages with tables"] += bool(tables)
            counts["tables"] += len(tables)
            for t in tables:
                counts[f"tables ({t.attributes.get('detector')})"] += 1
        seconds = time.perf_counter() - started
    return seconds, counts


def plumber(path: Path, pages: list[int]) -> tuple[float, int]:
    import pdfplumber

    started = time.perf_counter()
    found = 0
    with pdfplumber.open(path, pages=pages) as pdf:
        for page in pdf.pages:
            found += len(page.find_tables())
    return time.perf_counter() - started, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-pages", type=int, default=80, help="pages per filing (0 = all)")
    parser.add_argument("--plumber", type=int, default=0, help="also time pdfplumber.find_tables on N pages")
    args = parser.parse_args()
    folder = CORPUS / "A_finance" / "financebench" / "pdfs"
    if not folder.is_dir():
        raise SystemExit(f"corpus absent: {folder}")
    total_base = total_ff = 0.0
    total_pages = 0
    total_counts: Counter = Counter()
    print(f"{'filing':28} {'pages':>5} {'pdfium p/s':>11} {'folioflow p/s':>14} {'ratio':>7}  tables")
    for name in FILINGS:
        path = folder / name
        with pdfium.PdfDocument(path) as pdf:
            count = len(pdf)
        pages = list(range(1, (min(count, args.max_pages) if args.max_pages else count) + 1))
        base = baseline(path, pages)
        ff, counts = folioflow(path, pages)
        total_base, total_ff, total_pages = total_base + base, total_ff + ff, total_pages + len(pages)
        total_counts.update(counts)
        print(f"{name:28} {len(pages):5d} {len(pages) / base:11.1f} {len(pages) / ff:14.1f} {ff / base:6.1f}x  "
              f"{counts['tables']} on {counts['pages with tables']} pages")
        if args.plumber:
            sub = pages[: args.plumber]
            p_seconds, p_found = plumber(path, sub)
            f_seconds, f_counts = folioflow(path, sub)
            print(f"{'':28} pdfplumber.find_tables on {len(sub)} pages: {len(sub) / p_seconds:.1f} p/s, {p_found} tables"
                  f" | folioflow full engine: {len(sub) / f_seconds:.1f} p/s, {f_counts['tables']} tables"
                  f" | ratio {p_seconds / f_seconds:.1f}x")
    print(f"{'all':28} {total_pages:5d} {total_pages / total_base:11.1f} {total_pages / total_ff:14.1f} "
          f"{total_ff / total_base:6.1f}x")
    print("counts:", dict(sorted(total_counts.items())))


if __name__ == "__main__":
    main()
