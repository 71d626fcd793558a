"""The ingest flow's GPU embedding from the chunker's token ids, through :class:`~folioflow.indexing.embedder.Embedder`.

On a CUDA host the pipeline hands the chunks' ``token_ids`` (kept by the chunker from its own token
count) to ``Embedder.encode(texts, token_ids=...)``. This script checks that glue on one GPU and
through the multi-GPU pool (two workers, on two GPUs when the host has them, else both on the
first), and times the one-GPU fast path from texts against from ids, alternating, median of 4:

* min cosine between the vectors from texts and from ids (they must be the same vectors);
* texts/s from texts and from ids.

Measured on one H200 (20,000 windows of 20-220 words of the corpus pieces, MiniLM fp16; the pool's
two workers on the one GPU, as only one-GPU machines were lent): 25,358 texts/s from texts, 43,398
from ids (1.71x), min cosine 0.9999998, also through the pool. An earlier run of the same check
(a dev copy of this script): 17,169 from texts, 41,741 from ids.

Usage (on the device; the model folder and the pieces travel with the command)::

    python tests/benchmarks/bench_gpu_token_ids.py --model PATH --pieces pieces.jsonl.xz [--n 20000]
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
    ap.add_argument("--pieces", required=True)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args()
    import torch
    from bench_gpu_embed import make_texts

    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.gpu_tokenize import TokenIds

    texts = make_texts(args.pieces, args.n)
    one = Embedder(args.model, device="cuda:0").warm_up()
    ids = TokenIds.from_lists(one.token_counter().ids_batch(texts))
    print(f"takes_token_ids: {one.takes_token_ids}")
    a, b = one.encode(texts), one.encode(texts, token_ids=ids)
    print(f"one GPU: min cosine from texts vs from ids {float((a * b).sum(1).min()):.7f}")
    times: dict[str, list[float]] = {"texts": [], "ids": []}
    for _ in range(4):
        for name, run in (("texts", lambda: one.encode(texts)), ("ids", lambda: one.encode(texts, token_ids=ids))):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize()
            times[name].append(time.perf_counter() - t0)
    rates = {k: len(texts) / statistics.median(v) for k, v in times.items()}
    print(f"one GPU: from texts {rates['texts']:,.0f} texts/s, from ids {rates['ids']:,.0f} texts/s "
          f"({rates['ids'] / rates['texts']:.2f}x)")
    devices = [f"cuda:{i}" for i in range(min(2, torch.cuda.device_count()))]
    devices = devices if len(devices) == 2 else [devices[0]] * 2
    pool = Embedder(args.model, device="cuda", devices=devices, multi_gpu_min_texts=1).warm_up()
    c, d = pool.encode(texts), pool.encode(texts, token_ids=ids)
    print(f"pool on {devices}: min cosine from texts vs from ids {float((c * d).sum(1).min()):.7f}, "
          f"vs one GPU {float((a * d).sum(1).min()):.7f}")
    pool.close()
    one.close()


if __name__ == "__main__":
    main()
