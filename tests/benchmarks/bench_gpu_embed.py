"""GPU embedding throughput: plain ``SentenceTransformer.encode`` against folioflow's fast path.

Runs, side by side in one process on the same texts (real corpus text cut into windows of 20-220
words, seeded):

* ``plain fp32 b32``: ``encode`` as shipped (fp32 weights, batch 32) - the issue's baseline;
* ``plain fp16 b256``: ``encode`` with fp16 weights and batch 256;
* ``fast 1 GPU``: :class:`folioflow.indexing.gpu_encode.GpuEncoder` on ``cuda:0``;
* ``fast N GPUs``: :class:`folioflow.indexing.gpu_encode.GpuEncoderPool` over every visible GPU (when > 1);
* ``token ids``: the fast paths (1 GPU in-thread, and the pool) from the same texts' token ids,
  computed once before timing (folioflow's chunker has them): no tokenizer runs in the call.

Before timing it profiles the plain fp16 path (where the time goes): tokenization alone, the
model's GPU time alone on pre-tokenized, device-resident batches (CUDA events), and the whole call.
Each configuration is warmed up, then timed ``--reps`` times (median reported); every output is
checked against plain fp32 (minimum cosine over all texts). Prints a table with texts/s and ratios,
and the best N GPUs over the best 1 GPU, from texts and from token ids.

Usage (GPU host; ``--model`` a local sentence-transformers folder, ``--text`` a UTF-8 text file,
optionally .xz, or JSON lines of strings ``*.jsonl[.xz]``)::

    python tests/benchmarks/bench_gpu_embed.py --model PATH --text corpus.txt.xz --n 20000

On a CPU-only machine it runs the same code on the CPU with ``--device cpu`` (tiny ``--n``) as a
smoke test.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def make_texts(text_path: str, n: int, seed: int = 0, lo: int = 20, hi: int = 220) -> list[str]:
    """``n`` windows of ``lo``-``hi`` words (uniform), consecutive in the text, wrapping around."""
    opener = lzma.open if text_path.endswith(".xz") else open
    with opener(text_path, "rt", encoding="utf-8") as fh:
        if ".jsonl" in text_path:  # benchmark pieces (corpus_pieces.py): one JSON string a line
            words = " ".join(json.loads(line) for line in fh).split()
        else:
            words = fh.read().split()
    rng = np.random.default_rng(seed)
    out, pos = [], 0
    for _ in range(n):
        k = int(rng.integers(lo, hi + 1))
        if pos + k > len(words):
            pos = 0
        out.append(" ".join(words[pos:pos + k]))
        pos += k
    return out


def timed(fn, reps: int, sync) -> tuple[float, object]:
    times, result = [], None
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        result = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def profile_plain(model, texts: list[str], batch: int, device: str) -> dict[str, float]:
    """Seconds spent tokenizing, in GPU kernels (events around forward on device-resident inputs),
    and in the whole plain ``encode`` call, for the same texts and batch size."""
    import torch

    order = np.argsort([-len(t) for t in texts])
    ordered = [texts[i] for i in order]
    prep = getattr(model, "preprocess", None) or model.tokenize
    t0 = time.perf_counter()
    feats = [prep(ordered[i:i + batch]) for i in range(0, len(ordered), batch)]
    tokenize_s = time.perf_counter() - t0
    dev_feats = [{k: (v.to(device) if hasattr(v, "to") else v) for k, v in f.items()} for f in feats]
    gpu_s = 0.0
    if device.startswith("cuda"):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.inference_mode():
            torch.cuda.synchronize()
            start.record()
            for f in dev_feats:
                model(dict(f))
            end.record()
            torch.cuda.synchronize()
        gpu_s = start.elapsed_time(end) / 1000
    t0 = time.perf_counter()
    model.encode(texts, batch_size=batch, normalize_embeddings=True)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    total_s = time.perf_counter() - t0
    return {"tokenize_s": tokenize_s, "forward_s": gpu_s, "encode_s": total_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n-large", type=int, default=0, help="also time the fast paths alone on this many texts")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--token-budget", type=int, default=32768)
    ap.add_argument("--tok-workers", type=int, default=None, help="tokenizer processes per GPU (default: auto)")
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.gpu_encode import GpuEncoder, GpuEncoderPool
    from folioflow.indexing.gpu_tokenize import fast_tokenizer, tokenize_ids

    cuda = args.device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    texts = make_texts(args.text, args.n)
    words = [len(t.split()) for t in texts]
    print(f"texts: {len(texts)}, words {min(words)}-{max(words)} (mean {statistics.mean(words):.0f}); "
          f"torch {torch.__version__}, device {torch.cuda.get_device_name(0) if cuda else 'cpu'}, "
          f"GPUs visible {torch.cuda.device_count() if cuda else 0}", flush=True)
    dev0 = "cuda:0" if cuda else "cpu"

    fp32 = SentenceTransformer(args.model, device=dev0).float()
    fp32.encode(texts[:512], batch_size=32)
    t_ref, ref = timed(lambda: fp32.encode(texts, batch_size=32, normalize_embeddings=True), max(1, args.reps - 1), sync)

    fp16 = SentenceTransformer(args.model, device=dev0)
    if cuda:
        fp16.half()
    fp16.encode(texts[:512], batch_size=256)
    prof = profile_plain(fp16, texts, 256, dev0)
    t16, e16 = timed(lambda: fp16.encode(texts, batch_size=256, normalize_embeddings=True), max(1, args.reps - 1), sync)
    cos16 = float((ref * e16).sum(1).min())

    n = len(texts)
    rate_ref, rate16 = n / t_ref, n / t16
    large = make_texts(args.text, args.n_large, seed=1) if args.n_large else []
    sizes = [("n", texts)] + ([("large", large)] if large else [])
    fast_rows: list[tuple[str, int, float, float]] = []  # name, n, seconds, min cos (n only)
    best: dict[tuple[int, int], float] = {}               # (gpus, n) -> best seconds

    def measure(label: str, encode, gpus: int, kind: str = "texts") -> None:
        for key, batch in sizes:
            if kind == "ids":
                batch = ids[key]
                encode(batch.take(np.arange(min(4096, len(batch)))))
            else:
                encode(batch[:4096])
            secs, res = timed(lambda b=batch: encode(b), args.reps, sync)
            cos = float((ref * res.embeddings).sum(1).min()) if key == "n" else float("nan")
            fast_rows.append((label, len(batch), secs, cos))
            best[(gpus, len(batch), kind)] = min(best.get((gpus, len(batch), kind), secs), secs)

    ids = {key: tokenize_ids(fast_tokenizer(fp16.tokenizer, int(fp16.max_seq_length)), batch) for key, batch in sizes}
    breakdown = None
    for workers in (0, args.tok_workers):
        enc = GpuEncoder(SentenceTransformer(args.model, device=dev0), dev0, token_budget=args.token_budget,
                         tokenizer_workers=workers, pool_min_texts=0)
        label = f"fast 1 GPU, {enc.tokenizer_workers} tokenizer procs"
        measure(label, enc.encode, 1)
        if workers == 0:
            t0 = time.perf_counter()
            prebuilt = list(enc.batches(texts))
            tok_s = time.perf_counter() - t0
            sync()
            t0 = time.perf_counter()
            enc.run_batches(prebuilt, n).cpu()
            sync()
            breakdown = (tok_s, time.perf_counter() - t0, fast_rows[-len(sizes)][2])
            del prebuilt
            measure("fast 1 GPU, token ids (no tokenizer)", enc.encode_ids, 1, "ids")
        enc.close()

    ngpu = torch.cuda.device_count() if cuda else 1
    for workers in ((0, args.tok_workers) if ngpu > 1 else ()):
        t0 = time.perf_counter()
        with GpuEncoderPool(args.model, [f"cuda:{i}" for i in range(ngpu)], token_budget=args.token_budget,
                            tokenizer_workers=workers, pool_min_texts=0) as pool:
            start_s = time.perf_counter() - t0
            measure(f"fast {ngpu} GPUs, tokenizer procs {'0' if workers == 0 else 'auto'} (start {start_s:.0f}s)",
                    pool.encode, ngpu)
            if workers == 0:
                measure(f"fast {ngpu} GPUs, token ids (no tokenizer)", pool.encode_ids, ngpu, "ids")

    print("\nwhere plain fp16 b256 spends its time (same texts):")
    print(f"  tokenization alone           {prof['tokenize_s']:7.3f} s")
    print(f"  forward alone, inputs on GPU {prof['forward_s']:7.3f} s  (CUDA events; includes launch gaps)")
    print(f"  whole encode call            {prof['encode_s']:7.3f} s")
    if breakdown:
        print("where the fast path (1 GPU, in-thread tokenizer) spends its time (same texts):")
        print(f"  tokenize+pad+pin alone       {breakdown[0]:7.3f} s  (producer, no GPU)")
        print(f"  GPU loop on prebuilt batches {breakdown[1]:7.3f} s")
        print(f"  whole fast encode call       {breakdown[2]:7.3f} s  (the two overlapped)")
    print()
    print(f"{'configuration':52s} {'texts':>7s} {'texts/s':>9s} {'x fp32 b32':>10s} {'x fp16 b256':>11s} {'min cos':>8s}")
    print(f"{'plain fp32 b32':52s} {n:7d} {rate_ref:9.0f} {1.0:10.2f} {rate_ref / rate16:11.2f} {1.0:8.5f}")
    print(f"{'plain fp16 b256':52s} {n:7d} {rate16:9.0f} {rate16 / rate_ref:10.2f} {1.0:11.2f} {cos16:8.5f}")
    for label, count, secs, cos in fast_rows:
        rate = count / secs
        print(f"{label:52s} {count:7d} {rate:9.0f} {rate / rate_ref:10.2f} {rate / rate16:11.2f} {cos:8.5f}")
    print("(ratios at the larger size use the plain rates measured on the smaller one)")
    for _key, batch in sizes:
        m = len(batch)
        if (ngpu, m, "texts") in best and ngpu > 1:
            print(f"scaling at {m} texts: best {ngpu} GPUs / best 1 GPU = "
                  f"{best[(1, m, 'texts')] / best[(ngpu, m, 'texts')]:.2f}x from texts, "
                  f"{best[(1, m, 'ids')] / best[(ngpu, m, 'ids')]:.2f}x from token ids")
    if ngpu <= 1:
        print("scaling: one GPU visible; multi-GPU not run")


if __name__ == "__main__":
    main()
