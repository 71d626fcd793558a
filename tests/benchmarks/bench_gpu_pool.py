"""Multi-GPU embedding: how :class:`indexing.gpu_encode.GpuEncoderPool` hands rows back.

Two pools over every visible GPU stay alive side by side, one returning each worker's rows through
the result queue (pickled, ``use_shared_memory=False``), one writing them into a shared-memory array
(``True``); they alternate on the same texts for ``--reps`` rounds. Prints the median texts/s of
each, the per-worker encode seconds (``last_worker_seconds``) against the whole call (what the
hand-off costs), and one GPU alone (:class:`~indexing.gpu_encode.GpuEncoder`, in-thread tokenizer)
for the scaling ratio.

    python tests/benchmarks/bench_gpu_pool.py --model PATH --text pieces.jsonl.xz --n 20000 --n-large 100000

Texts as in ``bench_gpu_embed.py`` (20-220-word windows of real text).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--n-large", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()

    import torch
    from bench_gpu_embed import make_texts
    from sentence_transformers import SentenceTransformer

    from indexing.gpu_encode import GpuEncoder, GpuEncoderPool

    sets = {"n": make_texts(args.text, args.n), "large": make_texts(args.text, args.n_large, seed=1)}
    devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cpu", "cpu"]
    one = GpuEncoder(SentenceTransformer(args.model, device=devices[0]), devices[0], tokenizer_workers=0,
                     pool_min_texts=0)
    times: dict[tuple[str, str], list[float]] = {}
    workers: dict[tuple[str, str], list[float]] = {}
    for key, texts in sets.items():
        one.encode(texts[:4096])
        for _ in range(args.reps):
            t0 = time.perf_counter()
            one.encode(texts)
            times.setdefault(("1 device", key), []).append(time.perf_counter() - t0)
    one.close()
    del one
    pools = {
        f"{len(devices)} devices, rows via {label}": GpuEncoderPool(args.model, devices, use_shared_memory=shm,
                                                                tokenizer_workers=0, pool_min_texts=0)
        for label, shm in (("queue", False), ("shared memory", True))
    }
    try:
        for pool in pools.values():
            pool.encode(sets["n"][:4096])
        for _ in range(args.reps):
            for name, pool in pools.items():
                for key, texts in sets.items():
                    t0 = time.perf_counter()
                    pool.encode(texts)
                    times.setdefault((name, key), []).append(time.perf_counter() - t0)
                    workers.setdefault((name, key), []).append(max(pool.last_worker_seconds))
    finally:
        for pool in pools.values():
            pool.close()
    print(f"{'configuration':36s} {'texts':>7s} {'texts/s':>9s} {'call s':>7s} {'worker s':>9s} {'x 1 device':>11s}")
    for (name, key), ts in times.items():
        n = len(sets[key])
        t = statistics.median(ts)
        base = statistics.median(times[("1 device", key)])
        w = f"{statistics.median(workers[(name, key)]):9.3f}" if (name, key) in workers else f"{'-':>9s}"
        print(f"{name:36s} {n:7d} {n / t:9.0f} {t:7.3f} {w} {base / t:11.2f}")


if __name__ == "__main__":
    main()
