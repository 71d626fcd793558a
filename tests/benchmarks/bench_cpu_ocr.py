"""Benchmark: CPU OCR engines side by side (tesseract vs rapidocr), per page and per language.

For every page with a reference text it runs each engine's full pipeline (render, orientation,
deskew, OCR, tables, Markdown) and prints character error rate (CER, order-sensitive), word recall
(order-free) of the text of all blocks (page headers/footers included) and seconds per page, then a per-language summary with rapidocr's time as a ratio of
tesseract's (both measured in the same process, one after the other, on the same pages).

Pages and references:
* ``sample``: the generated sample (``folioflow.ocr.samples``) scanned at 200 DPI, upright, turned 90 degrees
  and skewed 2.5 degrees (all four turns are covered by ``bench_orientation.py`` and the tests); reference = the born-digital PDF's text layer
  (footer moved last, where it is on the page).
* ``omnidocbench``: the 15 OmniDocBench demo page images; reference = the ``text``/``html`` of
  their annotated blocks in reading order (equations, figures and page furniture left out).
* ``docling``: ``ocr_test.pdf`` and its three rotated copies; reference = docling's expected text.
* ``linn``: OCRmyPDF's ``linn.png`` two-column brochure; reference = ``linn.txt``.
* ``textlayer``: born-digital pages rendered to images (no text layer used): French
  (``fr_olap.pdf`` p1, ``2023-06-20-PV.pdf`` p1), Korean (``korean-text-with-tables.pdf``),
  Arabic (``ArabicCIDTrueType.pdf``); reference = their text layer.

``auto@eng`` is the ``auto`` engine with languages left at English (the default configuration):
its script check must find Chinese on its own. ``auto`` with the page's languages configured picks
rapidocr for Chinese and tesseract otherwise, so its figures are those two columns (add
``--engines ...,auto`` to measure it).

Run (about 30 minutes on 2 shared cores)::

    PYTHONPATH=$PWD /work/venv/bin/python tests/benchmarks/bench_cpu_ocr.py [--engines tesseract,rapidocr] [--only SUBSTR] [--dump DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pypdfium2 as pdfium

from folioflow.ocr.engines.cpu import get_cpu_engine
from folioflow.ocr.postprocess.textmetrics import cer, plain_text, word_recall
from folioflow.ocr.render import open_document
from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus")) / "C_scanned_multilang"
TESS_LANGS = {"en": ["eng"], "zh": ["chi_sim", "eng"], "fr": ["fra", "eng"], "ko": ["kor", "eng"], "ar": ["ara"]}


@dataclass
class Case:
    label: str
    lang: str
    path: Path
    page: int
    reference: str


def text_layer(path: Path, page: int) -> str:
    doc = pdfium.PdfDocument(str(path))
    try:
        return doc[page - 1].get_textpage().get_text_range()
    finally:
        doc.close()


def sample_reference(pdf: Path, page: int) -> str:
    """The sample's text layer in visual order (reportlab draws the page footer first)."""
    lines = text_layer(pdf, page).splitlines()
    footer = [ln for ln in lines if ln.startswith("Northwind Capital Holdings - Annual Report")]
    return "\n".join([ln for ln in lines if ln not in footer] + footer)


def omnidoc_reference(entry: dict) -> str:
    keep = {"title", "text_block", "figure_caption", "table_caption", "table_footnote", "figure_footnote",
            "page_footnote", "equation_caption", "table"}
    parts = []
    for det in sorted(entry["layout_dets"], key=lambda d: d.get("order") or 0):
        if det.get("ignore") or det["category_type"] not in keep:
            continue
        text = det.get("html") if det["category_type"] == "table" else det.get("text")
        if text:
            parts.append(re.sub(r"<[^>]+>", " ", text))
    return "\n".join(parts)


def cases(tmp: Path) -> list[Case]:
    out = []
    pdf = write_sample_pdf(tmp / "sample.pdf")
    variants = {"upright": {}, "cw90": {"rotate": 90}, "skew2.5": {"skew_degrees": 2.5}}
    for name, kwargs in variants.items():
        scan = write_scanned_copy(pdf, tmp / f"sample-{name}.tif", dpi=200, **kwargs)
        for page in (1, 2):
            out.append(Case(f"sample p{page} {name}", "en", scan, page, sample_reference(pdf, page)))
    if not CORPUS.is_dir():
        print(f"corpus absent ({CORPUS}): sample pages only")
        return out
    omni = CORPUS / "omnidocbench_demo"
    lang_of = {"english": "en", "simplified_chinese": "zh", "en_ch_mixed": "zh"}
    for entry in json.loads((omni / "OmniDocBench_demo.json").read_text(encoding="utf-8")):
        info = entry["page_info"]
        out.append(Case(f"omnidoc {info['image_path'][:40]}", lang_of.get(info["page_attribute"]["language"], "en"),
                        omni / "images" / info["image_path"], 1, omnidoc_reference(entry)))
    docling = CORPUS / "docling_ocr"
    for name in ("ocr_test", "ocr_test_rotated_90", "ocr_test_rotated_180", "ocr_test_rotated_270"):
        ref = (docling / "groundtruth" / f"{name}.tesseract.full_page.md").read_text(encoding="utf-8")
        out.append(Case(f"docling {name}", "en", docling / f"{name}.pdf", 1, ref))
    out.append(Case("ocrmypdf linn.png", "en", CORPUS / "ocrmypdf" / "linn.png", 1,
                    (CORPUS / "ocrmypdf" / "linn.txt").read_text(encoding="utf-8")))
    for rel, lang in (("unstructured/fr_olap.pdf", "fr"), ("pdfplumber/2023-06-20-PV.pdf", "fr"),
                      ("unstructured/korean-text-with-tables.pdf", "ko"), ("pdfjs_fonts_scripts/ArabicCIDTrueType.pdf", "ar")):
        out.append(Case(f"textlayer {Path(rel).name}", lang, CORPUS / rel, 1, text_layer(CORPUS / rel, 1)))
    return out


def run_case(engine, case: Case):
    with open_document(case.path) as doc:
        started = time.perf_counter()
        page = next(iter(engine.convert_pages(doc, [case.page])))
        seconds = time.perf_counter() - started
    # all blocks, page headers/footers included (Markdown leaves them out; references have them)
    text = plain_text("\n\n".join(block.text for block in page.blocks))
    return page, cer(case.reference, text), word_recall(case.reference, text), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="tesseract,rapidocr,auto@eng",
                        help="comma-separated engine names; NAME@lang+lang fixes the languages (else per page)")
    parser.add_argument("--only", default="", help="run only cases whose label contains this")
    parser.add_argument("--dump", type=Path, help="write each page's Markdown here")
    parser.add_argument("--json", type=Path, help="write the per-page results as JSON here")
    args = parser.parse_args()
    names = args.engines.split(",")
    engines: dict = {}
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        all_cases = [c for c in cases(Path(tmp)) if args.only in c.label]
        print(f"{'page':44s} {'lang':4s} " + " ".join(f"{'CER ' + n[:8]:>12s} {'recall':>6s} {'s':>5s}" for n in names))
        for case in all_cases:
            row = {"case": case.label, "lang": case.lang}
            for name in names:
                engine_name, _, fixed = name.partition("@")
                languages = fixed.split("+") if fixed else TESS_LANGS[case.lang]
                key = (engine_name, tuple(languages))
                if key not in engines:
                    engines[key] = get_cpu_engine(engine_name, languages)
                    engines[key].warm_up()
                page, c, r, s = run_case(engines[key], case)
                row[name] = {"cer": c, "recall": r, "seconds": s, "status": page.status.value,
                             "rotation": page.rotation, "engine": page.engine}
                if args.dump:
                    args.dump.mkdir(parents=True, exist_ok=True)
                    (args.dump / f"{re.sub(r'[^A-Za-z0-9]+', '_', case.label)}.{name}.md").write_text(page.markdown)
            results.append(row)
            print(f"{case.label[:44]:44s} {case.lang:4s} " + " ".join(
                f"{row[n]['cer']:>12.3f} {row[n]['recall']:>6.3f} {row[n]['seconds']:>5.1f}" for n in names), flush=True)
    summarize(results, names)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def summarize(results: list[dict], names: list[str]) -> None:
    print("\nPer language (mean over pages; CER capped at 1.0 per page; time ratio vs " + names[0] + ")")
    print(f"{'lang':6s} {'pages':>5s} " + " ".join(f"{'CER ' + n[:8]:>12s} {'recall':>6s} {'s/page':>6s} {'time':>6s}" for n in names))
    langs = sorted({r["lang"] for r in results}) + ["all"]
    for lang in langs:
        rows = [r for r in results if lang in ("all", r["lang"])]
        base = sum(r[names[0]]["seconds"] for r in rows)
        cells = []
        for n in names:
            c = sum(min(1.0, r[n]["cer"]) for r in rows) / len(rows)
            rec = sum(r[n]["recall"] for r in rows) / len(rows)
            s = sum(r[n]["seconds"] for r in rows)
            cells.append(f"{c:>12.3f} {rec:>6.3f} {s / len(rows):>6.2f} {s / max(base, 1e-9):>5.2f}x")
        print(f"{lang:6s} {len(rows):>5d} " + " ".join(cells))


if __name__ == "__main__":
    main()
