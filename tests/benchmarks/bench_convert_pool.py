"""Benchmark: page conversion on one machine, threads (before) against the process pool (after).

PDFium is not thread-safe (``folioflow.ocr.render.PDFIUM_LOCK``), so the spine's thread pool converted one
text-layer page at a time whatever the core count. Side by side, in one process, on the same
filings, with no page cache (every page really converted), this times

* **before**: one shared :class:`~folioflow.ocr.converter.DocumentConverter` driven by a thread pool of
  ``--workers`` documents (the spine's ``ingest`` flow);
* **after**: :class:`~folioflow.flows.convert_pool.ConvertPool` with ``--processes`` worker processes
  (default: the CPU count), pages of each document split across them, documents one after another
  as the flow's thread runner hands them over (``--workers`` documents at a time).

Rounds alternate before/after so load swings on a shared machine hit both; the pool's process
start-up is counted in every round (a fresh pool each round). Prints pages/s per round and the
ratio of the totals. With ``--e2e`` it also runs the whole ``ingest`` flow (convert, chunk, embed,
index into a fresh embedded store) with ``convert_processes=1`` and with the default.

Run: ``PYTHONPATH=. python tests/benchmarks/bench_convert_pool.py [--rounds 2] [--e2e]`` (needs
``../shared/corpus``; ``FOLIOFLOW_CORPUS`` overrides).

Measured (``--rounds 2``, 2-core machine at load average 8-9, Linux autogroup: this session's
processes shared 0.25-0.5 of a core whatever their number): before 12.67 pages/s, after 8.59
pages/s (0.68x); 37.7 vs 32.8 pages per CPU-second (pool overhead +15%, mostly process start-up).
The pool pays only where idle cores exist; that case could not be measured on this machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from folioflow.flows.convert_pool import ConvertPool  # noqa: E402
from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput  # noqa: E402
from folioflow.ocr.render import open_document  # noqa: E402
from folioflow.ocr.schema import SourceRef  # noqa: E402

FILINGS = ["AMCOR_2023Q2_10Q.pdf", "BESTBUY_2023_10K.pdf", "ADOBE_2022_10K.pdf"]


def _corpus() -> Path:
    return Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus")) / "A_finance/financebench/pdfs"


def _cpu() -> float:
    """CPU seconds (user + system) of this process and its finished children (pool workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _item(path: Path) -> DocumentInput:
    return DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name))


def before(paths: list[Path], workers: int) -> int:
    converter = DocumentConverter(ConvertOptions())
    converter.warm_up()
    with ThreadPoolExecutor(workers) as pool:
        docs = list(pool.map(lambda p: converter.convert(_item(p)), paths))
    converter.close()
    return sum(len(d.pages) for d in docs)


def after(paths: list[Path], workers: int, processes: int) -> int:
    pool = ConvertPool(ConvertOptions(), processes, cache_root=None)
    counts = {}
    for path in paths:
        with open_document(path) as opened:
            counts[path] = opened.page_count
    try:
        with ThreadPoolExecutor(workers) as threads:
            docs = list(threads.map(lambda p: pool.convert(_item(p), counts[p]), paths))
    finally:
        pool.close()
    return sum(len(d.pages) for d in docs)


def e2e(paths: list[Path], processes: int | None) -> tuple[int, float]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.settings import load_settings

    with tempfile.TemporaryDirectory() as data:
        report = run_ingest([str(p) for p in paths], load_settings(data_dir=Path(data), convert_processes=processes))
    assert report.count("indexed") == len(paths), [d.error for d in report.documents]
    return report.pages_processed, report.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2, help="documents at a time (the flow's thread pool)")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--e2e", action="store_true", help="also time the whole ingest flow")
    args = parser.parse_args()
    paths = [_corpus() / name for name in FILINGS]
    missing = [p for p in paths if not p.exists()]
    if missing:
        sys.exit(f"corpus files missing: {missing}")
    print(f"filings: {', '.join(FILINGS)}; workers={args.workers}, processes={args.processes}, cpus={os.cpu_count()}")
    totals = {"before": [0, 0.0, 0.0], "after": [0, 0.0, 0.0]}
    for round_ in range(1, args.rounds + 1):
        for label in ("before", "after") if round_ % 2 else ("after", "before"):
            started, cpu = time.perf_counter(), _cpu()
            pages = before(paths, args.workers) if label == "before" else after(paths, args.workers, args.processes)
            seconds, cpu = time.perf_counter() - started, _cpu() - cpu
            totals[label][0] += pages
            totals[label][1] += seconds
            totals[label][2] += cpu
            print(f"round {round_} {label:6s}: {pages} pages in {seconds:6.1f} s = {pages / seconds:6.2f} pages/s "
                  f"(CPU {cpu:5.1f} s, {cpu / seconds:.2f} cores busy)")
    rate = {k: p / s for k, (p, s, _) in totals.items()}
    per_cpu = {k: p / c for k, (p, _, c) in totals.items()}
    print(f"convert pages/s: before {rate['before']:.2f}, after {rate['after']:.2f}, "
          f"after/before = {rate['after'] / rate['before']:.2f}x")
    print(f"pages per CPU-second: before {per_cpu['before']:.2f}, after {per_cpu['after']:.2f} "
          f"(pool overhead {per_cpu['before'] / per_cpu['after'] - 1:+.0%})")
    if args.e2e:
        one_pages, one_s = e2e(paths, 1)
        all_pages, all_s = e2e(paths, None)
        print(f"ingest flow pages/s: convert_processes=1 {one_pages / one_s:.2f} ({one_s:.1f} s), "
              f"default {all_pages / all_s:.2f} ({all_s:.1f} s), ratio {(all_pages / all_s) / (one_pages / one_s):.2f}x")


if __name__ == "__main__":
    main()
