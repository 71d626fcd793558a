"""Benchmark: the text-layer engine against plain PDFium text extraction, side by side.

For each filing, in one process and on the same pages, times
  * baseline: ``pypdfium2`` ``PdfTextPage.get_text_range()`` (unstructured text), and
  * folioflow: ``TextLayerEngine`` (assessment + lines + tables + blocks + Markdown),
and prints pages/s for both and the slowdown ratio, in wall-clock and in process CPU time (the
machine is shared: CPU time is the steadier figure), plus table-detection counts. With
``--plumber N`` it also times pdfplumber's own ``find_tables()`` (pdfminer.six parsing) on the
first N pages, the alternative our table finder avoids.

With ``--ref REV`` it times the engine as of git revision ``REV`` too (the tree is exported with
``git archive`` to a temporary folder): each round runs one subprocess per tree, alternating, and
the speed-up of the working tree over ``REV`` is printed, both as raw time and normalised by each
run's own PDFium baseline.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_text_layer.py [--max-pages 80] [--plumber 20]
[--ref REV --rounds 2]`` (needs ``../shared/corpus``; FOLIOFLOW_CORPUS overrides).

Measured (2-core machine shared with other jobs, so wall-clock figures swing run to run; the
FinanceBench AMAZON_2017/3M_2022/BOEING_2018 10-Ks, first 80 pages each, ``--ref 7a39e86
--rounds 2``): the engine before the text-layer speed-up (7a39e86) ran 20.2 pages/s of CPU time,
17.8x slower than ``get_text_range()``; after it, 42.8 pages/s, 7.9x: 2.1x faster in CPU time
(2.25x against each run's own PDFium baseline), with identical output on 1,041 corpus pages.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))
FILINGS = ["AMAZON_2017_10K.pdf", "3M_2022_10K.pdf", "BOEING_2018_10K.pdf"]
TIMES = ("base_wall", "base_cpu", "ff_wall", "ff_cpu")


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def baseline(path: Path, pages: list[int]) -> tuple[float, float]:
    """(wall, CPU) seconds for ``get_text_range()`` on ``pages`` (1-based)."""
    pdf = pdfium.PdfDocument(path)
    wall, cpu = _clock()
    for n in pages:
        page = pdf[n - 1]
        textpage = page.get_textpage()
        textpage.get_text_range()
        textpage.close()
        page.close()
    seconds = time.perf_counter() - wall, time.process_time() - cpu
    pdf.close()
    return seconds


def folioflow(path: Path, pages: list[int]) -> tuple[float, float, Counter]:
    """(wall, CPU) seconds and table counts for the text engine on ``pages`` (1-based)."""
    from folioflow.ocr.engines.text_layer import TextLayerEngine
    from folioflow.ocr.render import open_document
    from folioflow.ocr.schema import BlockType

    engine = TextLayerEngine()
    counts: Counter = Counter()
    with open_document(path) as doc:
        wall, cpu = _clock()
        for n in pages:
            page = engine.convert_page(doc.page(n))
            tables = [b for b in page.blocks if b.type == BlockType.TABLE]
            counts["pages"] += 1
            counts["unusable pages"] += page.status.value == "failed"
            counts["pages with tables"] += bool(tables)
            counts["tables"] += len(tables)
            for t in tables:
                counts[f"tables ({t.attributes.get('detector')})"] += 1
        seconds = time.perf_counter() - wall, time.process_time() - cpu
    return *seconds, counts


def plumber(path: Path, pages: list[int]) -> tuple[float, int]:
    import pdfplumber

    started = time.perf_counter()
    found = 0
    with pdfplumber.open(path, pages=pages) as pdf:
        for page in pdf.pages:
            found += len(page.find_tables())
    return time.perf_counter() - started, found


def measure(folder: Path, max_pages: int) -> dict[str, dict]:
    """Per filing: pages, baseline and engine (wall, CPU) seconds, table counts."""
    out = {}
    for name in FILINGS:
        path = folder / name
        with pdfium.PdfDocument(path) as pdf:
            count = len(pdf)
        pages = list(range(1, (min(count, max_pages) if max_pages else count) + 1))
        base_wall, base_cpu = baseline(path, pages)
        ff_wall, ff_cpu, counts = folioflow(path, pages)
        out[name] = {"pages": len(pages), "base_wall": base_wall, "base_cpu": base_cpu, "ff_wall": ff_wall,
                     "ff_cpu": ff_cpu, "counts": dict(counts)}
    return out


def report(results: dict[str, dict], label: str = "") -> dict:
    """Print the per-filing table; return the totals."""
    print(f"{label or 'filing':28} {'pages':>5} {'pdfium p/s':>11} {'folioflow p/s':>14} {'ratio':>7} "
          f"{'CPU p/s':>8} {'CPU ratio':>9}  tables")
    total = {"pages": 0, **{k: 0.0 for k in TIMES}, "counts": Counter()}
    for name, r in list(results.items()) + [("all", None)]:
        if r is None:
            r = total
        else:
            for k in ("pages", *TIMES):
                total[k] += r[k]
            total["counts"].update(r["counts"])
        n = r["pages"]
        print(f"{name:28} {n:5d} {n / r['base_wall']:11.1f} {n / r['ff_wall']:14.1f} "
              f"{r['ff_wall'] / r['base_wall']:6.1f}x {n / r['ff_cpu']:8.1f} "
              f"{r['ff_cpu'] / r['base_cpu']:8.1f}x  "
              f"{r['counts'].get('tables', 0)} on {r['counts'].get('pages with tables', 0)} pages")
    return total


def side_by_side(folder: Path, max_pages: int, ref: str, rounds: int) -> None:
    """Time the engine of git revision ``ref`` and of the working tree, alternating subprocesses."""
    with tempfile.TemporaryDirectory(prefix="folioflow-ref-") as tmp:
        git = ["git", "-C", str(ROOT), "archive", ref]
        archive = subprocess.run(git, capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        trees = {ref: Path(tmp), "working tree": ROOT}
        runs: dict[str, dict[str, dict]] = {label: {} for label in trees}
        for _ in range(rounds):
            for label, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                cmd = [sys.executable, __file__, "--child", "--max-pages", str(max_pages)]
                run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                out = json.loads(run.stdout)
                for name, r in out.items():
                    empty = {"pages": 0, **{k: 0.0 for k in TIMES}, "counts": Counter()}
                    acc = runs[label].setdefault(name, empty)
                    for k in ("pages", *TIMES):
                        acc[k] += r[k]
                    acc["counts"].update(r["counts"])
        totals = {label: report(r, label) for label, r in runs.items()}
    old, new = totals[ref], totals["working tree"]
    for clock in ("wall", "cpu"):
        raw = old[f"ff_{clock}"] / new[f"ff_{clock}"]
        norm = (old[f"ff_{clock}"] / old[f"base_{clock}"]) / (new[f"ff_{clock}"] / new[f"base_{clock}"])
        print(f"speed-up of the working tree over {ref} ({clock}): {raw:.2f}x raw, "
              f"{norm:.2f}x against each run's PDFium baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-pages", type=int, default=80, help="pages per filing (0 = all)")
    parser.add_argument("--plumber", type=int, default=0, help="also time pdfplumber.find_tables on N pages")
    parser.add_argument("--ref", help="also time the engine of this git revision, side by side")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per tree with --ref")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = CORPUS / "A_finance" / "financebench" / "pdfs"
    if not folder.is_dir():
        raise SystemExit(f"corpus absent: {folder}")
    if args.child:
        print(json.dumps(measure(folder, args.max_pages)))
        return
    if args.ref:
        side_by_side(folder, args.max_pages, args.ref, args.rounds)
        return
    total = report(measure(folder, args.max_pages))
    print("counts:", dict(sorted(total["counts"].items())))
    for name in FILINGS if args.plumber else []:
        path = folder / name
        sub = list(range(1, args.plumber + 1))
        p_seconds, p_found = plumber(path, sub)
        f_seconds, _, f_counts = folioflow(path, sub)
        print(f"{name:28} pdfplumber.find_tables on {len(sub)} pages: {len(sub) / p_seconds:.1f} p/s, "
              f"{p_found} tables"
              f" | folioflow full engine: {len(sub) / f_seconds:.1f} p/s, {f_counts['tables']} tables"
              f" | ratio {p_seconds / f_seconds:.1f}x")


if __name__ == "__main__":
    main()
