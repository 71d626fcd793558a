"""Fusion variants, scored client-side over the raw dense and BM25 rankings of a kept store.

``bench_retrieval.py --keep`` leaves folioflow's store under ``--work``. This script searches it
once per question (the glossary-expanded question, top ``--depth`` chunks per vector, over the
whole store, within the question's own filing, and within the documents title routing picks;
cached in ``WORK/rankings.pkl``) and re-fuses those rankings offline in several ways, so variants
of the retriever's fusion can be compared without re-ingesting:

* ``current``: what :class:`~folioflow.indexing.retriever.FolioRetriever` did before page scoring (RRF k=60
  of 40 dense and 40 sparse candidates, then RRF with the routed search, one chunk per page);
  ``page agg .3`` is what it does now;
* deeper candidate lists, another RRF ``k``, a heavier routed ranking, page-level score
  aggregation (best chunk + ``decay`` x the others of the page: "page agg", on the fused RRF
  scores, what the retriever's ``page_decay`` does, also over 16 and 100 candidates; "rank agg", the
  same on ``1/(60 + rank)``), dense mode alone and with rank aggregation, dense or sparse
  weighted 1.5.

Prints shared-store and own-filing evidence page hit@5 and MRR@10 per variant. The questions are
the ones the defaults were developed on, so a gain of one or two questions (1.4-2.9 points of 70)
is within what re-ordering of near ties moves. Retrieval only: nothing is ingested.

Usage: ``python tests/benchmarks/retrieval_fusion_variants.py --work STORE``.
"""
import argparse
import os
import pickle
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
FB = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "A_finance" / "financebench"

ap = argparse.ArgumentParser()
ap.add_argument("--work", type=Path, required=True)
ap.add_argument("--depth", type=int, default=100)
ap.add_argument("--cache", type=Path, default=None)
ap.add_argument("--questions", type=Path, default=FB / "groundtruth" / "financebench_open_source.jsonl")
args = ap.parse_args()
if not args.questions.is_file():
    raise SystemExit(f"corpus absent: {args.questions}")
if not (args.work / "folio").is_dir():
    raise SystemExit(f"no folioflow store under {args.work} (run bench_retrieval.py --keep first)")

from folioflow.indexing.evaluation import load_questions
from folioflow.indexing.evaluation.folio import collection_docs
from folioflow.indexing.evaluation.metrics import RankedHit, first_rank, page_relevant
from folioflow.indexing.glossary import FINANCE

questions = load_questions(args.questions)
cache = args.cache or args.work / "rankings.pkl"
if cache.exists():
    data = pickle.loads(cache.read_bytes())
else:
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.indexing.store import SearchFilter, open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    docs = collection_docs(store)
    key_of = {doc_id: key for key, ids in docs.items() for doc_id in ids if key != doc_id.lower()}
    embedder = Embedder(device="cpu")
    retr = FolioRetriever(store=store, embedder=embedder)
    router = retr._router(None, None)
    data = {"docs": list(docs), "q": {}}

    def slim(hits):
        out = []
        for h in hits:
            m = h.payload.get("metadata") or {}
            out.append((h.id, h.score, key_of.get(m.get("doc_id"), ""), int(m.get("page_start", 0)),
                        int(m.get("page_end", 0)), h.payload.get("page_content", "")))
        return out

    for q in questions:
        if any(d not in docs for d in q.docs):
            continue
        searched = FINANCE.expand(q.question)
        dense = embedder.encode([searched])[0]
        sparse = retr._encoder().encode_query(searched)
        entry = {}
        own_ids = sorted({i for key in q.docs for i in docs.get(key, [])})
        routed = router.route(q.question)
        entry["routed"] = [key_of.get(r, r) for r in routed] if routed else None
        for scope, ids in (("shared", None), ("own", own_ids), ("routed", routed)):
            if scope == "routed" and not routed:
                continue
            flt = SearchFilter(doc_ids=ids)
            entry[scope] = {
                "dense": slim(store.search(dense, None, mode="dense", k=args.depth, filter=flt)),
                "sparse": slim(store.search(None, sparse, mode="sparse", k=args.depth, filter=flt)),
            }
        data["q"][q.id] = entry
    store.close()
    cache.write_bytes(pickle.dumps(data))

qs = [q for q in questions if q.id in data["q"]]
print(len(qs), "questions")


def rrf(rankings, weights=None, k=60, depth=None):
    scores, hits = defaultdict(float), {}
    for i, ranking in enumerate(rankings):
        w = 1.0 if weights is None else weights[i]
        for rank, h in enumerate(ranking[:depth] if depth else ranking, start=1):
            scores[h[0]] += w / (k + rank)
            hits.setdefault(h[0], h)
    order = sorted(scores, key=lambda i: -scores[i])
    return [(hits[i], scores[i]) for i in order]


def distinct(fused, n=10):
    out, seen = [], set()
    for h, _ in fused:
        key = (h[2], h[3])
        if key in seen:
            continue
        seen.add(key)
        out.append(h)
        if len(out) == n:
            break
    return out


def page_agg(fused, n=10, decay=0.5):
    """page score = best chunk + decay * sum of the others on the same page."""
    by_page = defaultdict(list)
    for h, s in fused:
        by_page[(h[2], h[3])].append((s, h))
    scored = []
    for items in by_page.values():
        items.sort(key=lambda x: -x[0])
        score = items[0][0] + decay * sum(s for s, _ in items[1:])
        scored.append((score, items[0][1]))
    scored.sort(key=lambda x: -x[0])
    return [h for _, h in scored[:n]]


def rank_agg(fused, n=10, decay=0.3, k=60):
    """page score = sum over the page's chunks of w / (k + chunk rank), w = 1 for the page's best
    chunk and ``decay`` for the others (what FolioRetriever's page_decay does: rank-based, so the
    same for every mode's scores)."""
    return page_agg([(h, 1.0 / (k + rank)) for rank, (h, _) in enumerate(fused, start=1)], n=n, decay=decay)


def dense_only(entry, scope, depth=40, agg=None):
    ranking = [(h, h[1]) for h in entry[scope]["dense"][:depth]]
    if scope == "shared" and entry.get("routed"):
        ranking = rrf([[h for h, _ in ranking], entry["routed"]["dense"][:depth]])
    return agg(ranking) if agg else distinct(ranking)


def hybrid(entry, scope, depth=40, k=60, wd=1.0, ws=1.0):
    r = entry[scope]
    return rrf([r["dense"][:depth], r["sparse"][:depth]], [wd, ws], k=k)[:depth]


def variant_current(entry, scope, **kw):
    fused = hybrid(entry, scope, **kw)
    if scope == "shared" and entry.get("routed"):
        inside = hybrid(entry, "routed", **kw)
        fused = rrf([[h for h, _ in fused], [h for h, _ in inside]])
    return distinct(fused)


def make_routed_weight(w, agg=None, **kw):
    def f(entry, scope):
        fused = hybrid(entry, scope, **kw)
        if scope == "shared" and entry.get("routed"):
            inside = hybrid(entry, "routed", **kw)
            fused = rrf([[h for h, _ in fused], [h for h, _ in inside]], [1.0, w])
        return agg(fused) if agg else distinct(fused)
    return f


def score(variant):
    out = {}
    for scope in ("shared", "own"):
        hits5 = 0
        mrr = 0.0
        for q in qs:
            hits = [RankedHit(doc=h[2], page_start=h[3], page_end=h[4], text=h[5]) for h in variant(data["q"][q.id], scope)]
            rank = first_rank(hits, lambda h, q=q: page_relevant(h, q))
            hits5 += bool(rank and rank <= 5)
            mrr += 1 / rank if rank else 0
        out[scope] = (hits5 / len(qs), mrr / len(qs))
    return out


variants = {
    "current": variant_current,
    "depth100": lambda e, s: variant_current(e, s, depth=100),
    "rrf_k20": lambda e, s: variant_current(e, s, k=20),
    "routed w2": make_routed_weight(2.0),
    "routed w3": make_routed_weight(3.0),
    "routed w10": make_routed_weight(10.0),
    "page agg .5": make_routed_weight(1.0, agg=page_agg),
    "page agg .3": make_routed_weight(1.0, agg=lambda f: page_agg(f, decay=0.3)),
    "page agg 1": make_routed_weight(1.0, agg=lambda f: page_agg(f, decay=1.0)),
    "w2 + agg .5": make_routed_weight(2.0, agg=page_agg),
    "rank agg .3": make_routed_weight(1.0, agg=rank_agg),
    "rank agg .5": make_routed_weight(1.0, agg=lambda f: rank_agg(f, decay=0.5)),
    "rank agg .2": make_routed_weight(1.0, agg=lambda f: rank_agg(f, decay=0.2)),
    "page agg .3 d100": make_routed_weight(1.0, agg=lambda f: page_agg(f, decay=0.3), depth=100),
    "page agg .3 d16": make_routed_weight(1.0, agg=lambda f: page_agg(f, decay=0.3), depth=16),
    "page agg .2": make_routed_weight(1.0, agg=lambda f: page_agg(f, decay=0.2)),
    "dense mode": dense_only,
    "dense rank agg .3": lambda e, s: dense_only(e, s, agg=rank_agg),
    "dense 1.5": lambda e, s: variant_current(e, s, wd=1.5),
    "sparse 1.5": lambda e, s: variant_current(e, s, ws=1.5),
}
for name, v in variants.items():
    r = score(v)
    print(f"{name:14} shared hit@5 {r['shared'][0]:.3f} mrr {r['shared'][1]:.3f} | own hit@5 {r['own'][0]:.3f} mrr {r['own'][1]:.3f}")
