"""Host tokenizer capacity: texts/s of the model's Rust tokenizer in N single-threaded processes.

The GPU fast path from texts is bound by the host's tokenizer (see :mod:`folioflow.indexing.gpu_encode`).
This measures how that capacity grows with cores: for N in ``--procs``, N spawned processes
(``RAYON_NUM_THREADS=1``) each tokenize the same ``--n`` texts (``bench_gpu_embed.make_texts``)
after a barrier, with ``encode_batch`` and with ``encode_batch_fast`` (no character offsets).
Prints total texts/s (N x n over the slowest process) and the median per-process rate; then one
process with rayon over ``--rayon`` threads (``encode_batch`` on 8,192 texts).

    python tests/benchmarks/bench_tokenizer_scaling.py --model PATH --text pieces.jsonl.xz
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _child(tok_path: str, texts: list[str], fast: bool, barrier, q) -> None:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tok_path)
    tok.enable_truncation(256)
    f = tok.encode_batch_fast if fast else tok.encode_batch
    f(texts[:64])
    barrier.wait()
    t0 = time.perf_counter()
    f(texts)
    q.put(time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--procs", default="1,2,4,8,16,24,32")
    ap.add_argument("--rayon", default="4,8,16,32")
    args = ap.parse_args()
    from bench_gpu_embed import make_texts
    from bench_gpu_pool import tokenizer_rate

    tok_path = str(Path(args.model) / "tokenizer.json")
    texts = make_texts(args.text, args.n)
    ctx = mp.get_context("spawn")
    os.environ["RAYON_NUM_THREADS"] = "1"  # inherited by the spawned processes
    for fast in (False, True):
        for n in map(int, args.procs.split(",")):
            barrier, q = ctx.Barrier(n), ctx.Queue()
            procs = [ctx.Process(target=_child, args=(tok_path, texts, fast, barrier, q)) for _ in range(n)]
            for p in procs:
                p.start()
            secs = [q.get() for _ in procs]
            for p in procs:
                p.join()
            print(f"tokenizer procs {n:2d} {'encode_batch_fast' if fast else 'encode_batch     '}: "
                  f"{n * len(texts) / max(secs):8.0f} texts/s total ({len(texts) / statistics.median(secs):6.0f}/proc "
                  f"median, slowest {max(secs):.3f} s)", flush=True)
    del os.environ["RAYON_NUM_THREADS"]
    for threads in args.rayon.split(","):
        rate = tokenizer_rate(args.model, args.text, 8192, threads)
        print(f"one process, rayon threads {threads:>2s}: encode_batch {rate:8.0f} texts/s")


if __name__ == "__main__":
    main()
