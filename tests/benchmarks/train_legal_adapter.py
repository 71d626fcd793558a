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

Term expansion (the same file, ``expansion`` and ``terms``): ``E``, ``(V, d)``, maps the question's
vector to weights of the BM25 terms held by chunks of at least :data:`MIN_CONTRACTS` tuning
contracts; loss: for each question the InfoNCE loss over its contract's chunks of
``(BM25(question's terms) + x E q) / EXPANSION_TAU``, ``x`` each chunk's stored BM25 weights times
the terms' IDF over the tuning chunks (Qdrant's formula), plus ``EXPANSION_L2 * ||E||_F^2``; Adam,
:data:`LR`, :data:`BATCH`, seed 0, ``E`` starting at zero. The retriever adds the top
``expansion_terms`` positive weights to the question's BM25 query.

Constants: :data:`EPOCHS` and :data:`L2` were chosen by two-fold cross-validation inside the
tuning half (folds: the parity of the second byte of the SHA-256 of the normalised file name;
train on one fold's contracts, score the other's dense-only in-contract hit@5, average):
``--cv`` prints the grid (docs/benchmarks.md has the figures); so were the expansion's
:data:`MIN_CONTRACTS`, :data:`EXPANSION_EPOCHS`, :data:`EXPANSION_L2` and :data:`EXPANSION_TAU`
(:data:`EXPANSION_GRID`, BM25-only in-contract hit@5). :data:`TAU`, :data:`LR` and
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
#: A BM25 term enters the expansion's vocabulary when chunks of at least this many tuning contracts
#: hold it (a term of one contract's names would not carry over to another contract).
MIN_CONTRACTS = 5
#: Passes, L2 weight and softmax temperature of the term expansion (cross-validated: ``EXPANSION_GRID``).
EXPANSION_EPOCHS, EXPANSION_L2, EXPANSION_TAU = 10, 0.001, 3.0
#: The cross-validation grid of the term expansion: (min contracts, epochs, L2, tau).
EXPANSION_GRID = ((5, 5, 0.0, 1.0), (5, 5, 0.001, 1.0), (5, 10, 0.001, 3.0), (5, 10, 0.003, 3.0),
                  (5, 20, 0.001, 3.0), (3, 10, 0.001, 3.0), (10, 10, 0.001, 3.0))
#: The cross-validation grid of ``--cv``: (epochs, L2).
GRID = ((2, 0.0), (5, 0.0), (10, 0.0), (5, 0.01), (5, 0.03), (10, 0.03), (10, 0.1))


def read_chunks(work: Path, keep: set[str]) -> tuple[dict[str, list[int]], list[str], np.ndarray, str, list]:
    """The chunks of the documents whose doc keys are in ``keep`` (the tuning half) in the folioflow
    store under ``work``: (chunk rows by doc key, chunk texts, dense vectors ``(n, d)`` float32, the
    collection's embedding model, BM25 vectors ``[(term ids, weights)]`` as stored)."""
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
    texts, vectors, sparse = [], [], []
    for r in recs:
        meta = (r.payload or {}).get("metadata") or {}
        if meta.get("doc_id") not in keys:
            continue
        rows[keys[meta["doc_id"]]].append(len(texts))
        texts.append((r.payload or {}).get("page_content", ""))
        vectors.append(np.asarray(r.vector["dense"], dtype=np.float32))
        bm25 = r.vector.get("bm25")  # a chunk without a content word has none
        sparse.append((list(bm25.indices), list(bm25.values)) if bm25 is not None else ([], []))
    return dict(rows), texts, np.stack(vectors), model, sparse


def question_vectors(work: Path, wordings: tuple[str, ...], doc_key_: str,
                     model: str) -> dict[tuple[str, str], tuple[np.ndarray, list[int]]]:
    """``{(wording, category): (dense vector, BM25 term ids)}``: the vectors the retriever searches
    with for each question (legal profile, its glossary's expansion, no adapter), read from its first search in
    the (tuning-half) document ``doc_key_``; the vector does not depend on the document. Exits
    when the embedder's model is not the store's ``model``."""
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.retriever import FolioRetriever

    seen: list = []

    class Recorder(FolioRetriever):
        def _search(self, dense, sparse, flt, **kw):  # type: ignore[override]
            seen.append((dense, sparse))
            return super()._search(dense, sparse, flt, **kw)

    store = bench_legal._folio_store(work)
    try:
        from folioflow.indexing.evaluation import doc_key

        doc = next(r.doc_id for r in store.list_documents() if r.status == "indexed" and doc_key(r.path) == doc_key_)
        embedder = Embedder(device="cpu").warm_up()
        if embedder.model_name != model:
            raise SystemExit(f"the store was embedded by {model}, this embedder is {embedder.model_name}")
        retriever = Recorder(store=store, embedder=embedder, k=5, profile="legal", query_adapter=None,
                             expansion_terms=0)
        out = {}
        for wording in wordings:
            for category, question in bench_legal.WORDINGS[wording].items():
                seen.clear()
                retriever.invoke(question, doc_ids=[doc])
                out[(wording, category)] = (np.asarray(seen[0][0], dtype=np.float32), list(seen[0][1].indices))
        return out
    finally:
        store.close()


def fold_of(name: str) -> int:
    """Cross-validation fold of a tuning contract: parity of the second byte of the SHA-256 of its
    normalised file name (the half uses the first)."""
    return hashlib.sha256(bench_legal.norm_name(name).encode()).digest()[1] % 2


def examples(work: Path, cuad: Path) -> tuple[list[tuple], np.ndarray, str, list, dict[str, list[int]]]:
    """Training questions of the tuning half: ``[(question vector, chunk rows, positive positions,
    fold, question's BM25 term ids)]``, the chunk vectors, the embedding model, the chunks' BM25
    vectors and the chunk rows per contract (:func:`read_chunks`)."""
    from folioflow.indexing.evaluation import doc_key

    contracts = [c for c in bench_legal.load_contracts(cuad, None) if c["half"] == "tuning"]
    rows, texts, vectors, model, sparse = read_chunks(work, {doc_key(c["path"].name) for c in contracts})
    queries = question_vectors(work, TRAIN_WORDINGS, next(iter(rows)), model)
    out = []
    for c in contracts:
        idx = rows.get(doc_key(c["path"].name))
        if not idx:  # not in the store (its ingest failed)
            continue
        for category, excerpts in c["excerpts"].items():
            pos = [j for j, i in enumerate(idx) if any(bench_legal.holds(texts[i], e) for e in excerpts)]
            if pos:
                out.extend((queries[(w, category)][0], np.asarray(idx), pos, fold_of(c["name"]), queries[(w, category)][1])
                           for w in TRAIN_WORDINGS)
    return out, vectors, model, sparse, rows


def fit(data: list[tuple], shape: tuple[int, int], logits: Callable[[int, Any], Any], epochs: int,
        l2: float) -> np.ndarray:
    """The matrix of ``shape`` (float32) that minimises, from zero, the mean over batches of
    :data:`BATCH` questions of each question's InfoNCE loss over its contract's chunks (``logits(t,
    m)``: the chunks' scores of ``data[t]`` under matrix ``m``, divided by the temperature), plus
    ``l2 * ||m||_F^2``; Adam, :data:`LR`, ``epochs`` passes, seed 0 (a last, partial batch's loss
    is divided by :data:`BATCH` too)."""
    import torch

    torch.manual_seed(0)
    m = torch.zeros(*shape, requires_grad=True)
    opt = torch.optim.Adam([m], lr=LR)
    for epoch in range(epochs):
        order = np.random.RandomState(epoch).permutation(len(data))
        for start in range(0, len(order), BATCH):
            loss = torch.zeros(())
            for t in order[start:start + BATCH]:
                s = logits(t, m)
                loss = loss + torch.logsumexp(s, 0) - torch.logsumexp(s[data[t][2]], 0)
            loss = loss / BATCH + l2 * (m ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return m.detach().numpy().astype(np.float32)


def train(data: list[tuple], vectors: np.ndarray, epochs: int = EPOCHS, l2: float = L2) -> np.ndarray:
    """``A`` (``(d, d)`` float32) learned on ``data`` (:func:`examples`' tuples) as the module
    docstring says."""
    import torch

    chunks = torch.from_numpy(vectors)

    def logits(t, a):
        qt = torch.from_numpy(data[t][0])
        v = qt + a @ qt
        return chunks[data[t][1]] @ (v / v.norm()) / TAU

    d = vectors.shape[1]
    return fit(data, (d, d), logits, epochs, l2)


class Terms:
    """The BM25 side of the tuning half's chunks: ``terms`` (``(V,)`` uint32), the vocabulary of
    the expansion (term ids held by chunks of at least :data:`MIN_CONTRACTS` contracts, sorted);
    ``x`` (``(n, V)`` float32), each chunk's stored BM25 weight of each vocabulary term times the
    term's IDF; ``idf``: every term's IDF over the tuning chunks (Qdrant's formula,
    :mod:`folioflow.indexing.sparse`)."""

    def __init__(self, sparse: list, rows: dict[str, list[int]], min_contracts: int = MIN_CONTRACTS):
        import math

        n = len(sparse)
        owner = {i: key for key, idx in rows.items() for i in idx}
        df: dict[int, int] = defaultdict(int)
        held: dict[int, set[str]] = defaultdict(set)
        for i, (ids, _) in enumerate(sparse):
            for t in set(ids):
                df[t] += 1
                held[t].add(owner.get(i, ""))
        self.idf = {t: math.log(1 + (n - m + 0.5) / (m + 0.5)) for t, m in df.items()}
        self.sparse = sparse
        self.terms = np.array(sorted(t for t in df if len(held[t]) >= min_contracts),
                              dtype=np.uint32)
        column = {int(t): j for j, t in enumerate(self.terms)}
        self.x = np.zeros((n, len(self.terms)), dtype=np.float32)
        for i, (ids, weights) in enumerate(sparse):
            for t, w in zip(ids, weights, strict=True):
                if t in column:
                    self.x[i, column[t]] = w * self.idf[t]

    def bm25(self, query_terms: list[int], idx: np.ndarray) -> np.ndarray:
        """BM25 scores of chunks ``idx`` for a query of ``query_terms`` (weight 1 each), ``(len(idx),)``."""
        asked = set(query_terms)
        return np.array([sum(w * self.idf[t] for t, w in zip(*self.sparse[i], strict=True) if t in asked)
                         for i in idx], dtype=np.float32)


def train_expansion(data: list[tuple], terms: Terms, epochs: int = EXPANSION_EPOCHS, l2: float = EXPANSION_L2,
                    tau: float = EXPANSION_TAU) -> np.ndarray:
    """``E`` (``(V, d)`` float32) learned on ``data`` (:func:`examples`' tuples): for each question
    the InfoNCE loss over its contract's chunks of ``(BM25 + x E q) / tau`` (module docstring), plus
    ``l2 * ||E||_F^2``; Adam, :data:`LR`, :data:`BATCH`, seed 0, ``E`` starting at zero."""
    import torch

    x = torch.from_numpy(terms.x)
    base = [torch.from_numpy(terms.bm25(e[4], e[1])) for e in data]

    def logits(t, e_):
        return (base[t] + x[data[t][1]] @ (e_ @ torch.from_numpy(data[t][0]))) / tau

    return fit(data, (len(terms.terms), data[0][0].shape[0]), logits, epochs, l2)


def expansion_hit_at_5(expansion: np.ndarray | None, data: list[tuple], terms: Terms, top: int = 0) -> float:
    """BM25-only in-contract hit@5 of ``data``'s questions, their queries expanded by ``expansion``
    with its ``top`` largest positive terms as the retriever adds them
    (:meth:`~folioflow.indexing.query_adapter.QueryAdapter.expand`; 0: every weight, negative ones too)."""
    from folioflow.indexing.query_adapter import QueryAdapter

    d = data[0][0].shape[0]
    adapter = QueryAdapter(matrix=np.zeros((d, d), dtype=np.float32), model="", expansion=expansion,
                           terms=terms.terms)
    column = {int(t): j for j, t in enumerate(terms.terms)}
    hits = 0
    for q, idx, pos, _, asked in data:
        s = terms.bm25(asked, idx)
        if expansion is not None and not top:  # every weight, negative ones too
            s = s + terms.x[idx] @ (expansion @ q)
        elif expansion is not None:
            w = np.zeros(len(terms.terms), dtype=np.float32)
            for term, weight in zip(*adapter.expand(q, top), strict=True):
                w[column[term]] = weight
            s = s + terms.x[idx] @ w
        top5 = np.argsort(-s, kind="stable")[:5]
        hits += any(int(t) in pos for t in top5)
    return hits / len(data)


def hit_at_5(matrix: np.ndarray | None, data: list[tuple], vectors: np.ndarray) -> float:
    """Dense-only in-contract hit@5 of ``data``'s questions, their vectors mapped by ``matrix``."""
    hits = 0
    for q, idx, pos, *_ in data:
        v = q if matrix is None else q + matrix @ q
        top = np.argsort(-(vectors[idx] @ v), kind="stable")[:5]
        hits += any(int(t) in pos for t in top)
    return hits / len(data)


#: Expansion sizes ``--cv`` scores (0: every learned weight, negative ones too).
TOPS = (0, 10, 20, 30, 50)


def sparse_language(work: Path) -> str:
    """The BM25 tokenizer language of the folioflow store under ``work`` (its collection record)."""
    store = bench_legal._folio_store(work)
    try:
        return str((store.require_collection().get("sparse") or {}).get("language", "english"))
    finally:
        store.close()


def save(path: Path, matrix: np.ndarray, model: str, expansion: np.ndarray, terms: Terms, language: str) -> None:
    """Write an adapter ``.npz`` (``folioflow.indexing.query_adapter``): ``matrix`` and ``expansion``
    in float16, ``terms`` uint32, ``model`` and ``sparse_language``."""
    np.savez_compressed(path, matrix=matrix.astype(np.float16), model=np.array(model),
                        expansion=expansion.astype(np.float16), terms=terms.terms,
                        sparse_language=np.array(language))


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
    data, vectors, model, sparse, rows = examples(args.work, args.cuad)
    folds = [[e for e in data if e[3] == k] for k in (0, 1)]
    terms = Terms(sparse, rows)
    language = sparse_language(args.work)
    print(f"{len(data)} training questions ({len(folds[0])} / {len(folds[1])} per fold), {len(vectors)} chunks, "
          f"model {model} ({time.perf_counter() - t0:.0f} s)", flush=True)
    if args.cv:
        base = [hit_at_5(None, folds[k], vectors) for k in (0, 1)]
        print(f"no adapter: cross-validated dense hit@5 {np.mean(base):.3f} ({base[0]:.3f} / {base[1]:.3f})", flush=True)
        for epochs, l2 in GRID:
            got = [hit_at_5(train(folds[1 - k], vectors, epochs, l2), folds[k], vectors) for k in (0, 1)]
            print(f"epochs {epochs:>2}, L2 {l2:<5}: cross-validated dense hit@5 {np.mean(got):.3f} "
                  f"({got[0]:.3f} / {got[1]:.3f})", flush=True)
        base = [expansion_hit_at_5(None, folds[k], terms) for k in (0, 1)]
        print(f"no expansion: cross-validated BM25 hit@5 {np.mean(base):.3f} ({base[0]:.3f} / {base[1]:.3f})",
              flush=True)
        for min_contracts, epochs, l2, tau in EXPANSION_GRID:
            vocab = Terms(sparse, rows, min_contracts)
            learned = [train_expansion(folds[1 - k], vocab, epochs, l2, tau) for k in (0, 1)]
            got = {top: [expansion_hit_at_5(learned[k], folds[k], vocab, top) for k in (0, 1)] for top in TOPS}
            print(f"expansion: {len(vocab.terms)} terms (>= {min_contracts} contracts), epochs {epochs:>2}, "
                  f"L2 {l2:<6}, tau {tau}: cross-validated BM25 hit@5 with the top "
                  + ", ".join(f"{top or 'all'} {np.mean(g):.3f}" for top, g in got.items()), flush=True)
    if args.folds:
        args.folds.mkdir(parents=True, exist_ok=True)
        for k in (0, 1):
            save(args.folds / f"for-fold-{k}.npz", train(folds[1 - k], vectors), model,
                 train_expansion(folds[1 - k], terms), terms, language)
        print(f"wrote {args.folds}/for-fold-0.npz and for-fold-1.npz", flush=True)
    if args.out:
        matrix, expansion = train(data, vectors), train_expansion(data, terms)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        save(args.out, matrix, model, expansion, terms, language)
        saved = matrix.astype(np.float16).astype(np.float32)
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes): tuning-half dense hit@5 "
              f"{hit_at_5(None, data, vectors):.3f} without, {hit_at_5(saved, data, vectors):.3f} with the saved "
              f"adapter; BM25 hit@5 {expansion_hit_at_5(None, data, terms):.3f} without, "
              f"{expansion_hit_at_5(expansion.astype(np.float16).astype(np.float32), data, terms, 30):.3f} with "
              f"its top 30 terms (trained on)")


if __name__ == "__main__":
    main()
