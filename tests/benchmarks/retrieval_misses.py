"""Why questions are missed: the evidence pages of the questions a system did not find in its top 5,
as the folioflow store holds them (run after ``bench_retrieval.py --keep``).

For every missed question (evidence-page rank > 5 or none, for ``--system`` in ``--scope``): the
evidence page's chunks (kind, tokens, heading path), where the system's top hits landed (same
document? a page next to the evidence?), and the other systems' ranks. Totals per cause:

* ``other documents``: no hit of the top 5 from the evidence filing (shared scope only);
* ``adjacent page``: a top-5 hit one page from the evidence page;
* ``table evidence``: most of the evidence page's tokens are in table chunks (kind ``table``/``mixed``);
* ``text evidence``: the rest.

``--tokens`` also prints the tokens each system embeds per page (folioflow: the chunks' counted
``token_count``; baseline: its chunks tokenized by the model, capped at the 256 it can see), the
figure that decides embedding time on a CPU.

Usage: ``python tests/benchmarks/retrieval_misses.py --json /tmp/bench.json --work /tmp/bench-work [--tokens]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

FB = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "A_finance" / "financebench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--system", default="folioflow hybrid")
    ap.add_argument("--scope", default="own", choices=["own", "shared"])
    ap.add_argument("--show", type=int, default=12, help="missed questions printed in full")
    ap.add_argument("--tokens", action="store_true", help="embedded tokens per page of both systems")
    args = ap.parse_args()
    if args.tokens:
        token_stats(args.work, data_pages=json.loads(args.json.read_text())["pages"])

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.evaluation import doc_key, load_questions
    from folioflow.indexing.store import open_store

    data = json.loads(args.json.read_text())
    results = data["retrieval"]["results"]
    questions = {q.id: q for q in load_questions(FB / "groundtruth" / "financebench_open_source.jsonl")}
    ranks: dict[str, dict[str, int | None]] = defaultdict(dict)
    tops: dict[str, list[str]] = {}
    for r in results:
        if r["scope"] == args.scope:
            ranks[r["id"]][r["mode"]] = r["page_rank"]
            if r["mode"] == args.system:
                tops[r["id"]] = r["top"]
    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    try:
        ids = {doc_key(rec.path): rec.doc_id for rec in store.list_documents()}
        causes: Counter[str] = Counter()
        tokens_on_evidence: list[int] = []
        shown = 0
        missed = [qid for qid, r in ranks.items() if r.get(args.system) is None or r[args.system] > 5]
        for qid in missed:
            q = questions[qid]
            ev = [(e.key, e.page) for e in q.evidence if e.page]
            chunks = []
            for key, page in ev:
                for p in store.payloads(ids[key]):
                    m = p["metadata"]
                    if m["page_start"] <= page <= m["page_end"]:
                        chunks.append((m["kind"], m["token_count"], " > ".join(m["heading_path"])[:60],
                                       p["page_content"][:90].replace("\n", " ")))
            tokens_on_evidence += [c[1] for c in chunks]
            top_pages = [(t.split(" p.")[0], t.split(" p.")[1]) for t in tops.get(qid, [])]
            same_doc = [pg for d, pg in top_pages if any(d == k for k, _ in ev)]
            near = any(abs(int(pg.split("-")[0]) - page) <= 1 or abs(int(pg.split("-")[-1]) - page) <= 1
                       for pg in same_doc for _, page in ev)
            if args.scope == "shared" and not same_doc:
                cause = "other documents"
            elif near:
                cause = "adjacent page"
            elif chunks and sum(c[1] for c in chunks if c[0] in ("table", "mixed")) * 2 >= sum(c[1] for c in chunks):
                cause = "table evidence"
            else:
                cause = "text evidence"
            causes[cause] += 1
            if shown < args.show:
                shown += 1
                print(f"\n{qid} [{cause}] {q.question[:110]}")
                print(f"  evidence {ev}; ranks " + ", ".join(f"{k}: {v}" for k, v in ranks[qid].items()))
                print(f"  top hits of {args.system}: {', '.join(tops.get(qid, []))}")
                for kind, n, path, text in chunks[:4]:
                    print(f"    {kind:<6} {n:>3} tok  [{path}]  {text}")
        evaluated = len(ranks)
        print(f"\n{args.system}, scope {args.scope}: {len(missed)} of {evaluated} questions missed at page hit@5")
        for cause, n in causes.most_common():
            print(f"  {cause:<16} {n}")
        if tokens_on_evidence:
            tokens_on_evidence.sort()
            print(f"  chunks on missed evidence pages: {len(tokens_on_evidence)}, tokens median "
                  f"{tokens_on_evidence[len(tokens_on_evidence) // 2]}, max {tokens_on_evidence[-1]}")
    finally:
        store.close()


def token_stats(work: Path, data_pages: int) -> None:
    """Chunks and embedded tokens per page, folioflow vs the baseline (see module docstring)."""
    from qdrant_client import QdrantClient

    from folioflow.chunking.tokens import default_counter
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=work / "folio")))
    try:
        meta = [p["metadata"] for r in store.list_documents() for p in store.payloads(r.doc_id)]
    finally:
        store.close()
    f_tokens = sum(int(m.get("token_count") or 0) for m in meta)
    kinds = Counter(m["kind"] for m in meta)
    headings = sum(len("\n".join(m["heading_path"])) for m in meta)
    client = QdrantClient(path=str(work / "baseline"))
    texts, offset, seen = [], None, set()
    while True:
        points, offset = client.scroll("baseline", limit=2048, offset=offset, with_payload=True, with_vectors=False)
        for p in points:
            key = (p.payload["metadata"].get("source"), p.payload["metadata"].get("page"), p.payload["page_content"][:200])
            if key not in seen:  # the baseline's re-ingest duplicated some points
                seen.add(key)
                texts.append(p.payload["page_content"])
        if offset is None:
            break
    client.close()
    counter = default_counter()
    b_counts = counter.count_batch(texts)
    b_tokens = sum(min(n, counter.max_tokens) for n in b_counts)
    print(f"pages {data_pages}: folioflow {len(meta)} chunks ({len(meta) / data_pages:.2f}/page), "
          f"{f_tokens} tokens embedded ({f_tokens / data_pages:.0f}/page, {f_tokens / max(len(meta), 1):.0f}/chunk), "
          f"kinds {dict(kinds)}, heading-path characters {headings / max(len(meta), 1):.0f}/chunk")
    print(f"pages {data_pages}: baseline {len(texts)} chunks ({len(texts) / data_pages:.2f}/page), "
          f"{b_tokens} tokens embedded ({b_tokens / data_pages:.0f}/page, {b_tokens / max(len(texts), 1):.0f}/chunk), "
          f"{sum(n > counter.max_tokens for n in b_counts)} chunks truncated, "
          f"{sum(max(0, n - counter.max_tokens) for n in b_counts)} tokens never embedded")


if __name__ == "__main__":
    main()
