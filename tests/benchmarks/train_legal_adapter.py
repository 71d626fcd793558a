"""Learn the legal query adapter (``folioflow.indexing.query_adapter``) on the tuning half of the
legal benchmark, and choose its constants by cross-validation inside that half.

Data: the folioflow store that ``bench_legal.py --work WORK --ingest-only`` builds (every CUAD
contract of the corpus, chunked and embedded by folioflow's defaults), read in place: each chunk's
text and dense vector. Only the **tuning-half** contracts (``bench_legal.half_of``: 47 of 97) are
used. Questions: the five wordings whose tuning halves were read (``main``, ``alt``, ``third``,
``fourth``, ``fifth``; not ``sixth``, ``seventh``, ``eighth``, the held-out wordings). For each
contract, category it annotates and wording: the question's dense vector as the retriever searches
with it (after the legal glossary's expansion, without an adapter), the contract's chunks, and as
positives the chunks that hold one of the category's excerpts (``bench_legal.holds``: the
benchmark's own hit rule). A question none of whose chunks holds an excerpt is left out.

Model: ``v' = (q + A q) / ||q + A q||``; loss: for each question the InfoNCE loss over its
contract's chunks (``-log sum_pos exp(s/TAU) + log sum_all exp(s/TAU)``, ``s`` the cosine of
``v'`` with each chunk's vector), averaged over batches of :data:`BATCH`, plus
``L2 * ||A||_F^2``; Adam, learning rate :data:`LR`, :data:`EPOCHS` passes, seed 0, ``A`` starting
at zero (the identity map); a last, partial batch's loss is divided by :data:`BATCH` too.

Constants: :data:`EPOCHS` and :data:`L2` were chosen by two-fold cross-validation inside the
tuning half (folds: the parity of the second byte of the SHA-256 of the normalised file name;
train on one fold's contracts, score the other's dense-only in-contract hit@5, average):
``--cv`` prints the grid (docs/benchmarks.md has the figures). :data:`TAU`, :data:`LR` and
:data:`BATCH` were set once and not searched. The checking half was not read.

Usage::

    python tests/benchmarks/bench_legal.py --work /tmp/bench-legal --ingest-only
    python tests/benchmarks/train_legal_adapter.py --work /tmp/bench-legal --cv
    python tests/benchmarks/train_legal_adapter.py --work /tmp/bench-legal \\
        --out indexing/adapters/legal-all-MiniLM-L6-v2.npz
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench_legal  # noqa: E402 - after the path set-up; sets the offline environment too
import numpy as np  # noqa: E402

#: The wordings whose tuning halves were read (bench_legal module docstring); the others are held out.
TRAIN_WORDINGS = ("main", "alt", "third", "fourth", "fifth")
#: Passes over the training questions (cross-validated: 2, 5 and 10 tried).
EPOCHS = 5
#: Weight of ``||A||_F^2`` (cross-validated: 0, 0.01, 0.03 and 0.1 tried).
L2 = 0.01
#: Softmax temperature of the cosine scores.
TAU = 0.05
#: Adam's learning rate.
LR = 1e-3
#: Questions per step.
BATCH = 32
#: The cross-validation grid of ``--cv``: (epochs, L2).
GRID = ((2, 0.0), (5, 0.0), (10, 0.0), (5, 0.01), (5, 0.03), (10, 0.03), (10, 0.1))


def read_chunks(work: Path, keep: set[str]) -> tuple[dict[str, list[int]], list[str], np.ndarray, str]:
    """The chunks of the documents whose doc keys are in ``keep`` (the tuning half) in the folioflow
    store under ``work``: (chunk rows by doc key, chunk texts, dense vectors ``(n, d)`` float32, the
    collection's embedding model)."""
    from folioflow.indexing.evaluation import doc_key

    store = bench_legal._folio_store(work)
    try:
        keys = {r.doc_id: doc_key(r.path) for r in store.list_documents()
                if r.status == "indexed" and doc_key(r.path) in keep}
        model = str(store.require_collection().get("model", ""))
        qe, recs, offset = store.qe, [], None
        while True:  # the embedded store's own scroll, with vectors (ChunkStore has no public call for them)
            page, offset = store.chunks.scroll(qe.ScrollRequest(offset=offset, limit=512, with_payload=True,
                                                                with_vector=True))
            recs.extend(page)
            if offset is None:
                break
    finally:
        store.close()
    recs.sort(key=lambda r: str(r.id))
    rows: dict[str, list[int]] = defaultdict(list)
    texts, vectors = [], []
    for r in recs:
        meta = (r.payload or {}).get("metadata") or {}
        if meta.get("doc_id") not in keys:
            continue
        rows[keys[meta["doc_id"]]].append(len(texts))
        texts.append((r.payload or {}).get("page_content", ""))
        vectors.append(np.asarray(r.vector["dense"], dtype=np.float32))
    return dict(rows), texts, np.stack(vectors), model


def question_vectors(work: Path, wordings: tuple[str, ...], doc_key_: str,
                     model: str) -> dict[tuple[str, str], np.ndarray]:
    """``{(wording, category): dense vector}``: the vector the retriever searches with for each
    question (legal profile, its glossary's expansion, no adapter), read from its first search in
    the (tuning-half) document ``doc_key_``; the vector does not depend on the document. Exits
    when the embedder's model is not the store's ``model``."""
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.retriever import FolioRetriever

    seen: list = []

    class Recorder(FolioRetriever):
        def _search(self, dense, sparse, flt, **kw):  # type: ignore[override]
            seen.append(dense)
            return super()._search(dense, sparse, flt, **kw)

    store = bench_legal._folio_store(work)
    try:
        from folioflow.indexing.evaluation import doc_key

        doc = next(r.doc_id for r in store.list_documents() if r.status == "indexed" and doc_key(r.path) == doc_key_)
        embedder = Embedder(device="cpu").warm_up()
        if embedder.model_name != model:
            raise SystemExit(f"the store was embedded by {model}, this embedder is {embedder.model_name}")
        retriever = Recorder(store=store, embedder=embedder, k=5, profile="legal", query_adapter=None)
        out = {}
        for wording in wordings:
            for category, question in bench_legal.WORDINGS[wording].items():
                seen.clear()
                retriever.invoke(question, doc_ids=[doc])
                out[(wording, category)] = np.asarray(seen[0], dtype=np.float32)
        return out
    finally:
        store.close()


def fold_of(name: str) -> int:
    """Cross-validation fold of a tuning contract: parity of the second byte of the SHA-256 of its
    normalised file name (the half uses the first)."""
    return hashlib.sha256(bench_legal.norm_name(name).encode()).digest()[1] % 2


def examples(work: Path, cuad: Path) -> tuple[list[tuple], np.ndarray, str]:
    """Training questions of the tuning half: ``[(question vector, chunk rows, positive positions,
    fold)]``, the chunk vectors and the embedding model."""
    from folioflow.indexing.evaluation import doc_key

    contracts = [c for c in bench_legal.load_contracts(cuad, None) if c["half"] == "tuning"]
    rows, texts, vectors, model = read_chunks(work, {doc_key(c["path"].name) for c in contracts})
    queries = question_vectors(work, TRAIN_WORDINGS, next(iter(rows)), model)
    out = []
    for c in contracts:
        idx = rows.get(doc_key(c["path"].name))
        if not idx:  # not in the store (its ingest failed)
            continue
        for category, excerpts in c["excerpts"].items():
            pos = [j for j, i in enumerate(idx) if any(bench_legal.holds(texts[i], e) for e in excerpts)]
            if pos:
                out.extend((queries[(w, category)], np.asarray(idx), pos, fold_of(c["name"])) for w in TRAIN_WORDINGS)
    return out, vectors, model


def train(data: list[tuple], vectors: np.ndarray, epochs: int = EPOCHS, l2: float = L2) -> np.ndarray:
    """``A`` (``(d, d)`` float32) learned on ``data`` (:func:`examples`' tuples) as the module
    docstring says."""
    import torch

    torch.manual_seed(0)
    chunks = torch.from_numpy(vectors)
    d = vectors.shape[1]
    a = torch.zeros(d, d, requires_grad=True)
    opt = torch.optim.Adam([a], lr=LR)
    for epoch in range(epochs):
        order = np.random.RandomState(epoch).permutation(len(data))
        for start in range(0, len(order), BATCH):
            loss = torch.zeros(())
            for t in order[start:start + BATCH]:
                q, idx, pos, _ = data[t]
                qt = torch.from_numpy(q)
                v = qt + a @ qt
                s = chunks[idx] @ (v / v.norm()) / TAU
                loss = loss + torch.logsumexp(s, 0) - torch.logsumexp(s[pos], 0)
            loss = loss / BATCH + l2 * (a ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return a.detach().numpy().astype(np.float32)


def hit_at_5(matrix: np.ndarray | None, data: list[tuple], vectors: np.ndarray) -> float:
    """Dense-only in-contract hit@5 of ``data``'s questions, their vectors mapped by ``matrix``."""
    hits = 0
    for q, idx, pos, _ in data:
        v = q if matrix is None else q + matrix @ q
        top = np.argsort(-(vectors[idx] @ v), kind="stable")[:5]
        hits += any(int(t) in pos for t in top)
    return hits / len(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="bench_legal.py's --work (its folioflow store)")
    ap.add_argument("--cuad", type=Path, default=bench_legal.CUAD)
    ap.add_argument("--cv", action="store_true", help="two-fold cross-validation of GRID inside the tuning half")
    ap.add_argument("--out", type=Path, default=None, help="write the adapter learned on the whole tuning half here")
    ap.add_argument("--folds", type=Path, default=None,
                    help="write DIR/for-fold-K.npz, learned on the other fold, to score whole-pipeline variants "
                         "by cross-validation (legal_cv.py)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    data, vectors, model = examples(args.work, args.cuad)
    folds = [[e for e in data if e[3] == k] for k in (0, 1)]
    print(f"{len(data)} training questions ({len(folds[0])} / {len(folds[1])} per fold), {len(vectors)} chunks, "
          f"model {model} ({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.cv:
        base = [hit_at_5(None, folds[k], vectors) for k in (0, 1)]
        print(f"no adapter: cross-validated dense hit@5 {np.mean(base):.3f} ({base[0]:.3f} / {base[1]:.3f})", flush=True)
        for epochs, l2 in GRID:
            got = [hit_at_5(train(folds[1 - k], vectors, epochs, l2), folds[k], vectors) for k in (0, 1)]
            print(f"epochs {epochs:>2}, L2 {l2:<5}: cross-validated dense hit@5 {np.mean(got):.3f} "
                  f"({got[0]:.3f} / {got[1]:.3f})", flush=True)
    if args.folds:
        args.folds.mkdir(parents=True, exist_ok=True)
        for k in (0, 1):
            np.savez_compressed(args.folds / f"for-fold-{k}.npz", matrix=train(folds[1 - k], vectors).astype(np.float16),
                                model=np.array(model))
        print(f"wrote {args.folds}/for-fold-0.npz and for-fold-1.npz", flush=True)
    if args.out:
        matrix = train(data, vectors)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, matrix=matrix.astype(np.float16), model=np.array(model))
        saved = matrix.astype(np.float16).astype(np.float32)
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes): tuning-half dense hit@5 "
              f"{hit_at_5(None, data, vectors):.3f} without, {hit_at_5(saved, data, vectors):.3f} with the saved "
              f"adapter (trained on)")


if __name__ == "__main__":
    main()
