"""Embed benchmark pieces (JSON lines of strings, optionally .xz) with :class:`folioflow.indexing.embedder.Embedder`
and save the vectors as float16 ``.npy`` shards of at most ``--shard`` rows (``NAME-000.npy``...).

Used to build the 100k real-chunk vectors of ``bench_stores.py`` on a GPU host (the vectors are
fp16-rounded MiniLM embeddings; ``bench_stores.py`` re-normalises them in float32)::

    python tests/benchmarks/embed_pieces.py --model PATH --pieces pieces.jsonl.xz --out DIR/vec
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--pieces", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shard", type=int, default=20000)
    ap.add_argument("--device", default=None)
    args = ap.parse_args()
    opener = lzma.open if args.pieces.endswith(".xz") else open
    with opener(args.pieces, "rt", encoding="utf-8") as fh:
        pieces = [json.loads(line) for line in fh]
    from folioflow.indexing.embedder import Embedder

    emb = Embedder(args.model, device=args.device).warm_up()
    t0 = time.perf_counter()
    vecs = emb.encode(pieces)
    secs = time.perf_counter() - t0
    emb.close()
    for i in range(0, len(vecs), args.shard):
        np.save(f"{args.out}-{i // args.shard:03d}.npy", vecs[i:i + args.shard].astype(np.float16))
    print(f"embedded {len(pieces)} pieces in {secs:.1f}s ({len(pieces) / secs:.0f}/s) on {emb.device}; "
          f"over limit {emb.over_limit}")


if __name__ == "__main__":
    main()
