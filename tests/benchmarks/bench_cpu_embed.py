"""CPU embedding: sentence-transformers' PyTorch path against ONNX Runtime, side by side.

1. Tries sentence-transformers' own ONNX backend (``backend="onnx"``, which exports through
   optimum-onnx); prints why it cannot run when it cannot.
2. Exports the default model with ``torch.onnx.export`` (needs the ``onnx`` package) to
   ``/tmp/folioflow-bench/minilm.onnx`` and runs it with onnxruntime (graph optimisations on, the
   same thread count as torch), with the same tokenization, mean pooling and normalisation.

Both embed the same corpus pieces (``corpus_pieces.py``: 200-token windows of real filings and
contracts), interleaved for ``--reps`` repetitions (median reported), and the minimum cosine
between the two outputs shows whether they are equivalent (>= 0.999).

With ``--precision``: instead of ONNX, folioflow's :class:`folioflow.indexing.embedder.Embedder` in fp32,
with bf16 autocast (its ``precision="auto"`` default on CPUs with native bf16) and a model cast
wholly to bf16, interleaved, each with its min cosine to fp32. Measured here (2 threads, AMX CPU,
``--precision --n 600 --reps 2``): fp32 34.7 texts/s, autocast bf16 79.0 (2.28x, min cosine
0.99997), bf16 model 101.2 (2.92x, min cosine 0.9964: drifts, so not the default).

With ``--fast``: :class:`~folioflow.indexing.embedder.Embedder` with plain sentence-transformers ``encode``
(``fast=False``) against its fast path (``fast=True``, the default: one tokenization in a producer
thread, token-budget batches; see :mod:`folioflow.indexing.embedder`), same precision, interleaved with
alternating order. Measured here: ``--fast --n 600 --reps 4``: 89.5 vs
85.9 texts/s (1.04x) on 200-token pieces; with ``--mixed``, 187.7 vs 131.7 (1.43x); min cosine
0.99997.

Usage: ``python tests/benchmarks/bench_cpu_embed.py [--n 300] [--threads 2] [--precision | --fast]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from corpus_pieces import CACHE, corpus_pieces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", action="store_true", help="compare fp32 / bf16 autocast / bf16 model")
    ap.add_argument("--fast", action="store_true", help="compare plain encode / the fast path (Embedder fast=False/True)")
    ap.add_argument("--mixed", action="store_true", help="with --fast: cut piece i to a word prefix of 1-100%% of it "
                    "(a fixed pattern), for chunk-like varied lengths")
    args = ap.parse_args()
    if args.precision:
        compare_precision(args)
        return
    if args.fast:
        compare_fast(args)
        return
    import torch
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.embedder import default_model_path

    path = default_model_path()
    try:
        SentenceTransformer(path, device="cpu", backend="onnx")
        print("sentence-transformers backend='onnx': loads")
    except Exception as exc:  # noqa: BLE001 - report any failure, then measure our own export
        print(f"sentence-transformers backend='onnx': unavailable: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError as exc:
        print(f"onnx/onnxruntime missing ({exc}); nothing to compare")
        return
    torch.set_num_threads(args.threads)
    st = SentenceTransformer(path, device="cpu")
    tok = st.tokenizer
    onnx_path = CACHE / "minilm.onnx"
    if not onnx_path.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        class Wrapped(torch.nn.Module):
            def __init__(self, bert):
                super().__init__()
                self.bert = bert

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                 token_type_ids=token_type_ids).last_hidden_state

        enc = tok(["probe text"] * 2, return_tensors="pt", padding=True)
        names = ["input_ids", "attention_mask", "token_type_ids"]
        torch.onnx.export(Wrapped(st[0].auto_model.eval()), tuple(enc[k] for k in names), str(onnx_path), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={k: {0: "b", 1: "s"} for k in names + ["last_hidden_state"]})
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])

    def ort_encode(texts: list[str], batch: int = 32) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts])
        out = np.zeros((len(texts), 384), np.float32)
        for i in range(0, len(texts), batch):
            idx = order[i:i + batch]
            e = tok([texts[j] for j in idx], padding=True, truncation=True, max_length=st.max_seq_length,
                    return_tensors="np")
            h = sess.run(None, {k: e[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})[0]
            m = e["attention_mask"][..., None].astype(np.float32)
            v = (h * m).sum(1) / m.sum(1)
            out[idx] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return out

    texts = corpus_pieces(args.n)
    st.encode(texts[:32])
    ort_encode(texts[:32])
    t_torch, t_ort = [], []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        a = st.encode(texts, batch_size=32, normalize_embeddings=True)
        t_torch.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b = ort_encode(texts)
        t_ort.append(time.perf_counter() - t0)
    rt, ro = len(texts) / statistics.median(t_torch), len(texts) / statistics.median(t_ort)
    print(f"{len(texts)} pieces, {args.threads} threads: torch {rt:.1f} texts/s, onnxruntime {ro:.1f} texts/s, "
          f"ratio ort/torch {ro / rt:.2f}; min cosine {float((a * b).sum(1).min()):.6f}")
    print(f"per repetition (s): torch {[round(x, 1) for x in t_torch]}, ort {[round(x, 1) for x in t_ort]}")


def compare_precision(args) -> None:
    """fp32 vs bf16 autocast (folioflow's CPU default where bf16 is native) vs a bf16-cast model."""
    import torch

    from folioflow.indexing.embedder import Embedder, cpu_has_native_bf16

    torch.set_num_threads(args.threads)
    texts = corpus_pieces(args.n)
    fp32 = Embedder(device="cpu", precision="fp32").warm_up()
    bf16 = Embedder(device="cpu", precision="bf16").warm_up()
    cast = Embedder(device="cpu", precision="fp32").warm_up()
    cast.model.to(torch.bfloat16)
    runs = {"fp32": fp32.encode, "autocast bf16": bf16.encode,
            "bf16 model": lambda t: cast.model.encode(t, batch_size=32, normalize_embeddings=True,
                                                      convert_to_tensor=True).float().numpy()}
    times: dict[str, list[float]] = {k: [] for k in runs}
    out: dict[str, np.ndarray] = {}
    for fn in runs.values():
        fn(texts[:32])
    for _ in range(args.reps):
        for name, fn in runs.items():
            t0 = time.perf_counter()
            out[name] = fn(texts)
            times[name].append(time.perf_counter() - t0)
    print(f"{len(texts)} pieces, {args.threads} threads, native bf16: {cpu_has_native_bf16()}")
    base = len(texts) / statistics.median(times["fp32"])
    for name in runs:
        rate = len(texts) / statistics.median(times[name])
        cos = float((out["fp32"] * out[name]).sum(1).min())
        print(f"{name:14s} {rate:7.1f} texts/s  {rate / base:5.2f}x fp32  min cosine to fp32 {cos:.6f}")


def compare_fast(args) -> None:
    """Plain sentence-transformers ``encode`` (``Embedder(fast=False)``) vs the fast path
    (``fast=True``, folioflow's default), same precision, interleaved: texts/s and min cosine."""
    import torch

    from folioflow.indexing.embedder import Embedder

    torch.set_num_threads(args.threads)
    texts = corpus_pieces(args.n)
    if args.mixed:
        texts = [" ".join(t.split()[:max(1, len(t.split()) * ((i * 37) % 100 + 1) // 100)]) for i, t in enumerate(texts)]
    runs = {"plain encode": Embedder(device="cpu", fast=False).warm_up(),
            "fast path": Embedder(device="cpu", fast=True).warm_up()}
    times: dict[str, list[float]] = {k: [] for k in runs}
    out: dict[str, np.ndarray] = {}
    for emb in runs.values():
        emb.encode(texts[:32])
    for rep in range(args.reps):
        for name in (list(runs) if rep % 2 == 0 else list(runs)[::-1]):  # alternate who goes first
            t0 = time.perf_counter()
            out[name] = runs[name].encode(texts)
            times[name].append(time.perf_counter() - t0)
    print(f"{len(texts)} pieces{' (mixed lengths)' if args.mixed else ''}, {args.threads} threads, "
          f"bf16 autocast: {runs['fast path'].cpu_bf16}")
    base = len(texts) / statistics.median(times["plain encode"])
    for name in runs:
        rate = len(texts) / statistics.median(times[name])
        cos = float((out["plain encode"] * out[name]).sum(1).min())
        print(f"{name:13s} {rate:7.1f} texts/s  {rate / base:5.2f}x plain  min cosine to plain {cos:.6f}  "
              f"per repetition (s) {[round(t, 2) for t in times[name]]}")


if __name__ == "__main__":
    main()
