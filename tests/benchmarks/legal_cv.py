"""Cross-validated whole-pipeline scores of legal retrieval settings that use a learned query
adapter, inside the tuning half of the legal benchmark.

The adapter (``train_legal_adapter.py``) is learned on the tuning half, so that half's own
figures flatter any setting that uses it. To choose such settings on the tuning half alone, each
tuning contract is searched with the adapter learned on the *other* fold
(``train_legal_adapter.py --folds DIR``: ``DIR/for-fold-K.npz``), per contract and in the shared
store (``bench_legal.py``'s questions, hit rule and store), for each setting of ``--configs``
(FolioRetriever keyword arguments; ``"query_adapter": "FOLD"`` stands for the fold's adapter).
The checking half is not read.

Usage::

    python tests/benchmarks/legal_cv.py --work /tmp/bench-legal --folds /tmp/folds \\
        --configs '{"none": {"query_adapter": null}, "adapter": {"query_adapter": "FOLD"}}'
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench_legal  # noqa: E402 - after the path set-up; sets the offline environment too
from train_legal_adapter import TRAIN_WORDINGS, fold_of  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--folds", type=Path, required=True)
    ap.add_argument("--configs", required=True, help='JSON {"name": {FolioRetriever keyword arguments}}')
    ap.add_argument("--wordings", default=",".join(TRAIN_WORDINGS))
    ap.add_argument("--cuad", type=Path, default=bench_legal.CUAD)
    args = ap.parse_args()
    held_out = sorted(set(args.wordings.split(",")) - set(TRAIN_WORDINGS))
    if held_out:
        ap.error(f"--wordings: {', '.join(held_out)} not allowed (held out; choose on {', '.join(TRAIN_WORDINGS)})")
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation import doc_key
    from folioflow.indexing.retriever import FolioRetriever

    contracts = [c for c in bench_legal.load_contracts(args.cuad, None) if c["half"] == "tuning"]
    store = bench_legal._folio_store(args.work)
    embedder = bench_legal.QueryCache(Embedder(device="cpu").warm_up(), args.work / "query_vectors.pkl")
    ids = {doc_key(r.path): r.doc_id for r in store.list_documents() if r.status == "indexed"}
    try:
        for name, kw in json.loads(args.configs).items():
            line = []
            for wording in args.wordings.split(","):
                per = {False: [], True: []}
                for k in (0, 1):
                    opts = dict(kw)
                    if opts.get("query_adapter") == "FOLD":
                        opts["query_adapter"] = str(args.folds / f"for-fold-{k}.npz")
                    retriever = FolioRetriever(store=store, embedder=embedder, k=bench_legal.K, **opts)
                    for c in contracts:
                        key = doc_key(c["path"].name)
                        if fold_of(c["name"]) != k or key not in ids:
                            continue
                        for category, excerpts in c["excerpts"].items():
                            for shared in (False, True):
                                q = bench_legal.ask(c, category, shared, wording)
                                docs = retriever.invoke(q, **({} if shared else {"doc_ids": [ids[key]]}))
                                hits = [(doc_key(d.metadata.get("path") or ""), d.page_content) for d in docs]
                                per[shared].append(bench_legal.first_hit_rank(hits, excerpts, key if shared else None))
                f = {s: bench_legal._figures(r) for s, r in per.items()}
                line.append(f"{wording} {f[False]['hit@1']:.3f}/{f[False]['hit@5']:.3f}; {f[True]['hit@5']:.3f}")
            print(f"{name}: " + " | ".join(line), flush=True)
    finally:
        embedder.save()
        store.close()


if __name__ == "__main__":
    main()
