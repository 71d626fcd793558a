"""Multi-GPU embedding: :class:`folioflow.indexing.gpu_encode.GpuEncoderPool` against one GPU, texts and token ids.

One GPU alone (:class:`~folioflow.indexing.gpu_encode.GpuEncoder` in this process, in-thread tokenizer) and
pools over every visible GPU stay alive side by side and take turns on the same inputs for
``--reps`` rounds (after one warm-up call each on every input, so every batch shape has been seen):

* input ``texts``: each worker tokenizes its share (``encode``);
* input ``ids``: the same texts' token ids, computed once before timing (as folioflow's chunker
  already has them), so no tokenizer runs (``encode_ids``);
* with ``--pin yes,no``, pools with workers pinned to disjoint CPU shares (``pin_cpus=True``) and
  not (the default, ``False``); both at ``--reps 5`` did not finish within 4 minutes on ``nvidia-h200-x2``.

Prints median texts/s, the whole call against the time to deal the inputs out
(``last_send_seconds``) and the slowest worker's own seconds (``last_worker_seconds``; call minus
worker is the hand-off), and the ratio to one GPU on the same input. Also checks the pool's rows
from ids against one GPU's rows from texts (min cosine).
Before timing it measures the host's tokenizer capacity: texts/s of ``encode_batch`` on one core
and on every core (rayon).

    python tests/benchmarks/bench_gpu_pool.py --model PATH --text pieces.jsonl.xz --n 20000 --n-large 100000 \
        --reps 5 --pin no

Texts as in ``bench_gpu_embed.py`` (20-220-word windows of real text). On a machine without CUDA
it runs two CPU workers (smoke test; use a tiny ``--n``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

_CAPACITY = r"""
import sys, time
from tokenizers import Tokenizer
sys.path.insert(0, {bench!r})
from bench_gpu_embed import make_texts
texts = make_texts({text!r}, {n})
tok = Tokenizer.from_file({tok!r})
tok.encode_batch(texts[:256])
t0 = time.perf_counter(); tok.encode_batch(texts); print(len(texts) / (time.perf_counter() - t0))
"""


def tokenizer_rate(model: str, text: str, n: int, threads: str | None) -> float:
    """texts/s of ``encode_batch`` on ``n`` texts in a fresh process (rayon reads its thread count
    once) with ``threads`` rayon threads (``None``: rayon's default, every core)."""
    code = _CAPACITY.format(bench=str(Path(__file__).resolve().parent), text=text, n=n,
                            tok=str(Path(model) / "tokenizer.json"))
    env = dict(os.environ)
    env.pop("RAYON_NUM_THREADS", None)
    if threads:
        env["RAYON_NUM_THREADS"] = threads
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def tokenizer_capacity(model: str, text: str, n: int) -> tuple[float, float]:
    """texts/s of ``encode_batch`` with one rayon thread and with the default (every core)."""
    return tokenizer_rate(model, text, n, "1"), tokenizer_rate(model, text, n, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--n-large", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pin", default="no", help="pools to run: no (default), yes (pinned), or yes,no")
    args = ap.parse_args()

    import numpy as np
    import torch
    from bench_gpu_embed import make_texts
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.gpu_encode import GpuEncoder, GpuEncoderPool
    from folioflow.indexing.gpu_tokenize import tokenize_ids

    one_core, all_cores = tokenizer_capacity(args.model, args.text, min(args.n, 8192))
    print(f"host: {len(os.sched_getaffinity(0))} CPUs; tokenizer encode_batch {one_core:.0f} texts/s on one "
          f"core, {all_cores:.0f} texts/s on all (rayon)", flush=True)

    devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cpu", "cpu"]
    one = GpuEncoder(SentenceTransformer(args.model, device=devices[0]), devices[0], tokenizer_workers=0,
                     pool_min_texts=0)
    texts = {"n": make_texts(args.text, args.n), "large": make_texts(args.text, args.n_large, seed=1)}
    t0 = time.perf_counter()
    ids = {key: tokenize_ids(one.tokenizer, batch) for key, batch in texts.items()}
    print(f"token ids of {sum(map(len, texts.values()))} texts computed in {time.perf_counter() - t0:.1f} s "
          f"(not timed below)", flush=True)
    inputs = {(key, "texts"): texts[key] for key in texts} | {(key, "ids"): ids[key] for key in ids}

    encoders = {"1 device": (one.encode, one.encode_ids, None)}
    pools = []
    for pin in args.pin.split(","):
        t0 = time.perf_counter()
        pool = GpuEncoderPool(args.model, devices, pin_cpus=pin == "yes", tokenizer_workers=0, pool_min_texts=0)
        pools.append(pool)
        name = f"{len(devices)} devices, " + ("pinned" if pin == "yes" else "not pinned")
        encoders[name] = (pool.encode, pool.encode_ids, pool)
        print(f"{name}: started in {time.perf_counter() - t0:.1f} s, CPU shares {pool.cpus}", flush=True)
    times: dict[tuple[str, str, str], list[float]] = {}
    workers: dict[tuple[str, str, str], list[float]] = {}
    sends: dict[tuple[str, str, str], list[float]] = {}
    results: dict[tuple[str, str], np.ndarray] = {}
    try:
        for rep in range(args.reps + 1):  # round 0 warms every encoder up on every input
            for name, (enc_texts, enc_ids, pool) in encoders.items():
                for (key, kind), batch in inputs.items():
                    fn = enc_texts if kind == "texts" else enc_ids
                    t0 = time.perf_counter()
                    res = fn(batch)
                    secs = time.perf_counter() - t0
                    if rep == 0:
                        if key == "n":
                            results[(name, kind)] = res.embeddings
                        continue
                    times.setdefault((name, key, kind), []).append(secs)
                    if pool is not None:
                        workers.setdefault((name, key, kind), []).append(max(pool.last_worker_seconds))
                        sends.setdefault((name, key, kind), []).append(pool.last_send_seconds)
    finally:
        one.close()
        for pool in pools:
            pool.close()
    ref = results[("1 device", "texts")]
    print(f"\n{'configuration':26s} {'input':>5s} {'texts':>7s} {'texts/s':>9s} {'call s':>7s} {'send s':>7s} "
          f"{'worker s':>9s} {'x 1 device':>11s}")
    for (name, key, kind), ts in sorted(times.items(), key=lambda kv: (kv[0][1] != "n", kv[0][2] == "ids")):
        n = len(texts[key])
        t = statistics.median(ts)
        base = statistics.median(times[("1 device", key, kind)])
        k = (name, key, kind)
        w = f"{statistics.median(workers[k]):9.3f}" if k in workers else f"{'-':>9s}"
        snd = f"{statistics.median(sends[k]):7.3f}" if k in sends else f"{'-':>7s}"
        print(f"{name:26s} {kind:>5s} {n:7d} {n / t:9.0f} {t:7.3f} {snd} {w} {base / t:11.2f}")
    print(f"(medians of {args.reps}; x 1 device = one device's median seconds on the same input / this one's)")
    for (name, kind), emb in results.items():
        print(f"min cosine to 1 device from texts, {args.n} texts: {name}, {kind}: "
              f"{float((emb * ref).sum(1).min()):.5f}")


if __name__ == "__main__":
    main()
