"""What the finance glossary and title routing each add: hybrid retrieval over a store kept by
``bench_retrieval.py --keep``, with :class:`~folioflow.indexing.retriever.FolioRetriever`'s
``route_titles`` and ``glossary`` switched on and off (four retrievers, same store, same questions).

Prints page and document hit@1/5/10 and MRR@10 per retriever, over the shared store and within
each question's own filing (routing never changes the latter: the search is already restricted to
one filing). Retrieval only: nothing is ingested.

Usage: ``python tests/benchmarks/retrieval_ablation.py --work /tmp/bench-work [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

FB = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "A_finance" / "financebench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="--work folder of a bench_retrieval.py --keep run")
    ap.add_argument("--questions", type=Path, default=FB / "groundtruth" / "financebench_open_source.jsonl")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if not (args.work / "folio").is_dir():
        raise SystemExit(f"no folioflow store under {args.work} (run bench_retrieval.py --keep first)")
    if not args.questions.is_file():
        raise SystemExit(f"corpus absent: {args.questions}")

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation import evaluate_retrieval, load_questions
    from folioflow.indexing.evaluation.folio import collection_docs
    from folioflow.indexing.evaluation.metrics import RankedHit
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    docs = collection_docs(store)
    key_of = {doc_id: key for key, ids in docs.items() for doc_id in ids if key != doc_id.lower()}
    embedder = Embedder(device="cpu")
    searchers = {}
    for route in (True, False):
        for glossary in (True, False):
            retriever = FolioRetriever(store=store, embedder=embedder, mode="hybrid", route_titles=route,
                                       **({} if glossary else {"glossary": None}))

            def search(query, k, restrict, _r=retriever):
                ids = None if restrict is None else sorted({i for key in restrict for i in docs.get(key, [])})
                return [RankedHit(doc=key_of.get(d.metadata.get("doc_id"), ""),
                                  page_start=int(d.metadata.get("page_start", 0)),
                                  page_end=int(d.metadata.get("page_end", 0)), text=d.page_content,
                                  score=float(d.metadata.get("score", 0.0)))
                        for d in _r.invoke(query, k=k, doc_ids=ids)]

            searchers[f"routing {'on' if route else 'off'}, glossary {'on' if glossary else 'off'}"] = search
    report = evaluate_retrieval(load_questions(args.questions), searchers, set(docs), ks=(1, 5, 10), own_doc=True)
    store.close()
    print(f"questions evaluated: {report.questions - len(report.skipped)} of {report.questions}")
    print(f"{'scope':7} {'retriever':30} {'p@1':>6} {'p@5':>6} {'p@10':>6} {'MRR':>6} {'doc@1':>6}")
    for scope, by_mode in report.summaries.items():
        for mode, s in by_mode.items():
            page = s["page"]
            print(f"{scope:7} {mode:30} {page['hit@1']:6.3f} {page['hit@5']:6.3f} {page['hit@10']:6.3f} "
                  f"{page['mrr']:6.3f} {s['document']['hit@1']:6.3f}")
    if args.json:
        args.json.write_text(json.dumps(report.as_dict(), indent=2, default=str))


if __name__ == "__main__":
    main()
