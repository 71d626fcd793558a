"""Benchmark: peak memory of ``folioflow ingest`` does not grow with the page count.

Each case runs ``python -m folioflow.flows.cli ingest FILE`` in its own process (fresh data dir, Prefect
ephemeral mode, the guard and OCR as configured by default) while the resident memory of its whole
process tree (ingest, guard worker, Prefect's server) is sampled every 50 ms with psutil. A long
document is compared with a short one of the same kind, side by side in one run; memory is bounded
when the long/short ratio of peak RSS stays near 1 while the page ratio is 10.

Cases:

* ``text``: generated born-digital PDFs (:func:`folioflow.flows.reliability.hostile.long_pdf`), 300 and
  3,000 pages (text-layer route, every page chunked, embedded and indexed);
* ``scan``: image-only scans of the sample report rendered at 200 dpi (CPU OCR route: every page
  rendered and recognised), 4 and 40 pages;
* ``corpus``: ``D_layout_math_tables/unstructured/DA-619p.pdf`` (619 pages), against its first 62
  pages (``--page-range`` is not an ingest option, so the baseline is a 62-page copy made with
  pypdfium2).

Run (about 25 minutes on 2 shared cores; ``--cases text`` alone about 8)::

    PYTHONPATH=$PWD /work/venv/bin/python tests/benchmarks/bench_memory.py [--cases text,scan,corpus]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from folioflow.flows.reliability.hostile import long_pdf  # noqa: E402
from folioflow.flows.reliability.measure import ingest_env, run_sampled  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"


def scanned(path: Path, pages: int, scratch: Path) -> Path:
    """An image-only PDF of ``pages`` pages: the sample report's two pages scanned, repeated."""
    import pypdfium2 as pdfium

    from folioflow.ocr.samples import write_sample_pdf, write_scanned_copy

    scan = write_scanned_copy(write_sample_pdf(scratch / "sample.pdf"), scratch / "sample-scan.pdf", dpi=200)
    src = pdfium.PdfDocument(str(scan))
    out = pdfium.PdfDocument.new()
    for i in range(pages):
        out.import_pages(src, [i % len(src)])
    out.save(str(path))
    return path


def head(src: Path, path: Path, pages: int) -> Path:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(src))
    out = pdfium.PdfDocument.new()
    out.import_pages(doc, list(range(min(pages, len(doc)))))
    out.save(str(path))
    return path


def measure(pdf: Path, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    report = work / f"{pdf.stem}.json"
    cmd = [sys.executable, "-m", "folioflow.flows.cli", "ingest", str(pdf), "--data-dir", str(work / f"{pdf.stem}-data"),
           "--report", str(report), "--no-progress", "--workers", "1"]
    code, seconds, peak, tail = run_sampled(cmd, ingest_env(), timeout=7200)
    if code != 0:
        raise SystemExit(f"ingest of {pdf} failed ({code}):\n{tail}")
    [record] = json.loads(report.read_text())
    return {"file": pdf.name, "status": record["status"], "pages": record["pages"], "chunks": record["chunks"],
            "seconds": round(seconds, 1), "peak_rss_mib": round(peak)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="text,scan,corpus")
    args = parser.parse_args()
    cases = args.cases.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="folioflow-bench-memory-") as tmp:
        work = Path(tmp)
        pairs = []
        if "text" in cases:
            pairs.append(("text", long_pdf(work / "text-300.pdf", 300), long_pdf(work / "text-3000.pdf", 3000)))
        if "scan" in cases:
            pairs.append(("scan", scanned(work / "scan-4.pdf", 4, work), scanned(work / "scan-40.pdf", 40, work)))
        if "corpus" in cases:
            big = CORPUS / "D_layout_math_tables" / "unstructured" / "DA-619p.pdf"
            if big.is_file():
                pairs.append(("corpus", head(big, work / "DA-62p.pdf", 62), big))
            else:
                print(f"skipped corpus: {big} absent")
        for case, short, long in pairs:
            a, b = measure(short, work / "runs"), measure(long, work / "runs")
            rows.append((case, a, b))
            print(json.dumps({"case": case, "short": a, "long": b}), flush=True)
    print()
    print(f"{'case':8} {'pages':>12} {'peak RSS MiB':>18} {'RSS ratio':>10} {'seconds':>14} {'pages/s':>14}")
    for case, a, b in rows:
        print(f"{case:8} {a['pages']:>5} / {b['pages']:<5} {a['peak_rss_mib']:>8,} / {b['peak_rss_mib']:<7,} "
              f"{b['peak_rss_mib'] / a['peak_rss_mib']:>10.2f} {a['seconds']:>6} / {b['seconds']:<6} "
              f"{a['pages'] / a['seconds']:>6.1f} / {b['pages'] / b['seconds']:<6.1f}")


if __name__ == "__main__":
    main()
