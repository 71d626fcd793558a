"""Embedded backends side by side: qdrant-client local mode vs Qdrant Edge, on real chunks.

Data: the first ``--n`` (100k) pieces of ``corpus_pieces.py`` (FinanceBench filings and CUAD
contracts cut into 200-token windows) with their MiniLM embeddings, read from
``/tmp/folioflow-bench/vec/*.npy`` (float16, made by ``embed_pieces.py`` on a GPU host) or computed
here on the CPU when absent (slow) and cached there. Queries: the FinanceBench questions, embedded
here with the same model.

For each backend, through folioflow's own :class:`folioflow.indexing.store.ChunkStore` interface (dense +
BM25 vectors + full payload, ``replace_document`` per document of 100 chunks, as ingestion does):

* upsert rate (points/s), then ``optimize()`` (Edge builds HNSW; local mode has nothing to build),
  reported separately and as "ready" rate (upsert + optimize);
* re-open time (close, then open the data dir again: what a new process pays);
* dense search latency p50/p95 over the questions (k=10, after a warm-up), and hybrid p95 over
  the first ``--hybrid-queries`` questions;
* recall@10 of dense search against exact search (float32 brute force in numpy);
* disk space allocated under the data dir.

Both backends run side by side on the first ``--small`` chunks (10k); the backends in
``--large-backends`` (Edge) also run on all ``--n`` (100k): local mode commits every point to
sqlite on its own (~4 ms a point here), so 100k points take it the better part of an hour.

Usage: ``python tests/benchmarks/bench_stores.py [--n 100000] [--small 10000]``.
"""

from __future__ import annotations

import argparse
import glob
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_pieces import CACHE, CORPUS, corpus_pieces


def load_vectors(pieces: list[str]) -> np.ndarray:
    files = sorted(glob.glob(str(CACHE / "vec" / "vecA-*.npy"))) + sorted(glob.glob(str(CACHE / "vec" / "vecB-*.npy")))
    vecs = np.concatenate([np.load(f).astype(np.float32) for f in files]) if files else np.zeros((0, 384), np.float32)
    if len(vecs) < len(pieces):
        from folioflow.indexing.embedder import Embedder

        print(f"embedding {len(pieces) - len(vecs)} pieces on the CPU (no cached vectors)...", flush=True)
        more = Embedder(device="cpu").encode(pieces[len(vecs):])
        np.save(CACHE / "vec" / "vecC-000.npy", more.astype(np.float16))
        vecs = np.concatenate([vecs, more])
    vecs = vecs[:len(pieces)]
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def make_chunks(pieces: list[str], per_doc: int):
    from folioflow.chunking.schema import Chunk, ChunkKind
    from folioflow.indexing.registry import DocumentRecord
    from folioflow.ocr.ids import doc_id_for, sha256_text

    docs = []
    for d in range(0, len(pieces), per_doc):
        doc_id = doc_id_for(f"s3://bench/doc-{d // per_doc:05d}.pdf")
        chunks = [Chunk(doc_id=doc_id, index=i, kind=ChunkKind.TEXT, text=t, embed_text=t, heading_path=["Bench"],
                        page_start=i // 3 + 1, page_end=i // 3 + 1, token_count=200, content_hash=sha256_text(t))
                  for i, t in enumerate(pieces[d:d + per_doc])]
        rec = DocumentRecord(doc_id=doc_id, uri=f"s3://bench/doc-{d // per_doc:05d}.pdf",
                             path=f"doc-{d // per_doc:05d}.pdf", source="bench", content_hash=sha256_text(str(d)),
                             pages=len(chunks) // 3 + 1)
        docs.append((rec, chunks, d))
    return docs


def du(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())  # allocated, not apparent


def run_backend(backend: str, docs, vecs, sparse_docs, queries, qsparse, exact_top, hybrid_queries: int) -> dict:
    from folioflow.indexing.store import SearchFilter, StoreSettings, open_store  # noqa: F401

    root = Path(tempfile.mkdtemp(prefix=f"bench-{backend}-"))
    settings = StoreSettings(data_dir=root, backend=backend)
    store = open_store(settings)
    store.ensure_collection(vecs.shape[1], "sentence-transformers/all-MiniLM-L6-v2")
    n = sum(len(c) for _, c, _ in docs)
    t0 = time.perf_counter()
    for rec, chunks, start in docs:
        store.replace_document(rec, chunks, vecs[start:start + len(chunks)], sparse_docs[start:start + len(chunks)])
    upsert_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store.optimize()
    optimize_s = time.perf_counter() - t0
    assert store.count() == n, (store.count(), n)
    t0 = time.perf_counter()
    store.close()
    close_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    store = open_store(settings)
    assert store.count() == n
    reopen_s = time.perf_counter() - t0
    for q in queries[:10]:
        store.search(q, mode="dense", k=10)
    lat, recall = [], []
    for q, top in zip(queries, exact_top, strict=True):
        t0 = time.perf_counter()
        hits = store.search(q, mode="dense", k=10)
        lat.append(time.perf_counter() - t0)
        recall.append(len({h.id for h in hits} & top) / 10)
    hyb = []
    for q, s in list(zip(queries, qsparse, strict=True))[:hybrid_queries]:
        t0 = time.perf_counter()
        store.search(q, s, mode="hybrid", k=10)
        hyb.append(time.perf_counter() - t0)
    store.close()
    size = du(root)
    shutil.rmtree(root, ignore_errors=True)

    def pct(xs, p):
        return float(np.percentile(np.array(xs) * 1000, p))

    return {"backend": backend, "points": n, "upsert_pps": n / upsert_s, "optimize_s": optimize_s,
            "ready_pps": n / (upsert_s + optimize_s), "close_s": close_s, "reopen_s": reopen_s,
            "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "hybrid_p95_ms": pct(hyb, 95),
            "recall10": statistics.mean(recall), "disk_mb": size / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--per-doc", type=int, default=100)
    ap.add_argument("--backends", default="local,edge")
    ap.add_argument("--small", type=int, default=10_000,
                    help="also run every backend side by side on this many chunks (0: off); local mode "
                         "persists each point with its own sqlite commit, so 100k takes it the better part of an hour")
    ap.add_argument("--large-backends", default="edge", help="backends run on all --n chunks")
    ap.add_argument("--hybrid-queries", type=int, default=10,
                    help="questions timed in hybrid mode (local mode scores BM25 in Python: seconds a query)")
    args = ap.parse_args()

    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.sparse import BM25Encoder

    pieces = corpus_pieces(args.n)
    vecs = load_vectors(pieces)
    bm = BM25Encoder()
    t0 = time.perf_counter()
    sparse_docs = bm.encode_documents(pieces)
    sparse_s = time.perf_counter() - t0
    qfile = CORPUS / "A_finance" / "financebench" / "groundtruth" / "financebench_open_source.jsonl"
    questions = [json.loads(line)["question"] for line in qfile.open(encoding="utf-8")]
    queries = Embedder(device="cpu").encode(questions)
    qsparse = [bm.encode_query(q) for q in questions]
    exact = queries @ vecs.T
    exact_top = [set() for _ in questions]
    docs = make_chunks(pieces, args.per_doc)
    ids = np.array([c.id for _, chunks, _ in docs for c in chunks])
    for i, row in enumerate(exact):
        exact_top[i] = set(ids[np.argpartition(-row, 10)[:10]].tolist())
    print(f"{len(pieces)} real chunks ({args.per_doc} per document), {len(questions)} FinanceBench questions; "
          f"BM25 encoding {len(pieces) / sparse_s:.0f} chunks/s", flush=True)
    runs = []
    if args.small:
        small_docs = [d for d in docs if d[2] < args.small]
        small_ids = ids[:args.small]
        small_top = []
        for row in queries @ vecs[:args.small].T:
            small_top.append(set(small_ids[np.argpartition(-row, 10)[:10]].tolist()))
        runs.append((args.small, [run_backend(b, small_docs, vecs, sparse_docs, queries, qsparse, small_top,
                                              args.hybrid_queries) for b in args.backends.split(",")]))
        for r in runs[-1][1]:
            print(json.dumps(r), flush=True)
    large = [run_backend(b, docs, vecs, sparse_docs, queries, qsparse, exact_top, args.hybrid_queries)
             for b in args.large_backends.split(",") if b]
    for r in large:
        print(json.dumps(r), flush=True)
    if large:
        runs.append((len(pieces), large))
    cols = [("upsert_pps", "upsert pts/s", "{:.0f}"), ("optimize_s", "optimize s", "{:.1f}"),
            ("ready_pps", "ready pts/s", "{:.0f}"), ("reopen_s", "reopen s", "{:.2f}"),
            ("p50_ms", "dense p50 ms", "{:.2f}"), ("p95_ms", "dense p95 ms", "{:.2f}"),
            ("hybrid_p95_ms", "hybrid p95 ms", "{:.2f}"), ("recall10", "recall@10", "{:.4f}"),
            ("disk_mb", "disk MB", "{:.0f}")]
    for n_points, rows in runs:
        print(f"\n{n_points} chunks{'':7s}" + "".join(f"{r['backend']:>12s}" for r in rows)
              + ("   ratio edge/local" if len(rows) == 2 else ""))
        for key, label, fmt in cols:
            line = f"{label:16s}" + "".join(f"{fmt.format(r[key]):>12s}" for r in rows)
            if len(rows) == 2 and rows[0][key]:
                line += f"   {rows[1][key] / rows[0][key]:.2f}"
            print(line)


if __name__ == "__main__":
    main()
