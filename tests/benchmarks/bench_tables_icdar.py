"""Benchmark: table detection on the ICDAR 2013 table competition (EU set) in the corpus.

Scores table regions against the ground truth ``*-reg.xml`` (a prediction matches a true region
at IoU >= 0.5, one to one) and times, side by side in one process:
  * folioflow ``find_tables`` (pdfplumber's TableFinder on PDFium edges + alignment tables),
    timed including the PDFium page read;
  * pdfplumber ``page.find_tables()`` (``lines`` strategy, pdfminer.six parsing), the baseline;
  * camelot ``lattice`` and ``stream``, only if camelot-py is importable (not a dependency).

Run: ``PYTHONPATH=. python tests/benchmarks/bench_tables_icdar.py`` (needs ``../shared/corpus``).
"""

from __future__ import annotations

import glob
import logging
import os
import time
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pdfplumber
import pypdfium2 as pdfium

from folioflow.ocr.layout.lines import build_lines
from folioflow.ocr.layout.pdfpage import read_page
from folioflow.ocr.layout.tables import find_tables

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))
ICDAR = CORPUS / "D_layout_math_tables" / "tabula_icdar2013" / "competition-dataset-eu"

Box = tuple[float, float, float, float]


def truth(pdf: str) -> dict[int, list[Box]]:
    """Ground-truth regions per 1-based page, PDF coordinates (x1, y1, x2, y2), y up."""
    out: dict[int, list[Box]] = {}
    for region in ET.parse(pdf.replace(".pdf", "-reg.xml")).getroot().iter("region"):
        bb = region.find("bounding-box").attrib
        out.setdefault(int(region.attrib["page"]), []).append(tuple(float(bb[k]) for k in ("x1", "y1", "x2", "y2")))
    return out


def iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def score(pred: list[Box], gold: list[Box]) -> int:
    used: set[int] = set()
    hits = 0
    for g in gold:
        for j, p in enumerate(pred):
            if j not in used and iou(p, g) >= 0.5:
                used.add(j)
                hits += 1
                break
    return hits


def run(name: str, predict) -> None:
    hits = predicted = gold_total = 0
    seconds = 0.0
    for pdf in sorted(glob.glob(str(ICDAR / "*.pdf"))):
        for number, gold in truth(pdf).items():
            started = time.perf_counter()
            pred = predict(pdf, number)
            seconds += time.perf_counter() - started
            hits += score(pred, gold)
            predicted += len(pred)
            gold_total += len(gold)
    print(f"{name:34} recall {hits}/{gold_total} = {hits / gold_total:.2f}   precision {hits}/{predicted} = "
          f"{hits / max(predicted, 1):.2f}   {seconds:6.1f} s")


def folioflow(pdf: str, number: int) -> list[Box]:
    doc = pdfium.PdfDocument(pdf)
    page = doc[number - 1]
    height = page.get_size()[1]
    content = read_page(page)
    tables = find_tables(content, build_lines(content.chars))
    return [(t.bbox[0], height - t.bbox[3], t.bbox[2], height - t.bbox[1]) for t in tables]


def plumber(pdf: str, number: int) -> list[Box]:
    with pdfplumber.open(pdf, pages=[number]) as doc:
        page = doc.pages[0]
        return [(t.bbox[0], page.height - t.bbox[3], t.bbox[2], page.height - t.bbox[1]) for t in page.find_tables()]


def main() -> None:
    if not ICDAR.is_dir():
        raise SystemExit(f"corpus absent: {ICDAR}")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    run("folioflow find_tables (+page read)", folioflow)
    run("pdfplumber find_tables (lines)", plumber)
    try:
        import camelot
    except ImportError:
        print("camelot-py not installed: skipped")
        return
    for flavor in ("lattice", "stream"):
        run(f"camelot {flavor}", lambda pdf, n, f=flavor: [tuple(t._bbox) for t in camelot.read_pdf(pdf, pages=str(n), flavor=f)])


if __name__ == "__main__":
    main()
