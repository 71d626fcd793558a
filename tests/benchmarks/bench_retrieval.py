"""Retrieval benchmark: FinanceBench questions over one shared store of SEC filings, folioflow
(dense and hybrid) against a LangChain baseline, measured side by side in one run.

Baseline (what a LangChain tutorial builds): ``PyPDFLoader`` (pypdf text, one Document per page,
0-based ``page`` metadata) -> ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)``
-> ``QdrantVectorStore`` (langchain-qdrant, qdrant-client local mode under ``--work``) with the same
embedding model as folioflow (all-MiniLM-L6-v2) through a small LangChain ``Embeddings`` adapter over
sentence-transformers (``langchain-huggingface`` would pin ``huggingface-hub<2`` and downgrade the
one transformers needs; the adapter calls ``SentenceTransformer.encode`` as ``HuggingFaceEmbeddings``
does). folioflow: ``run_ingest`` (the Prefect flow, embedded Qdrant Edge store, text layer for
born-digital pages, structure-aware chunks of <= 256 tokens).

Measured in one process, one after the other:

* ingest wall seconds and pages/s (model loading included for both; folioflow's from its flow
  report, Prefect's ephemeral server start-up shown separately), re-ingest seconds (same files
  again: folioflow skips unchanged documents; the baseline has no such check, so it re-does the
  work and duplicates its points, which is shown as the point count after re-ingest),
  folioflow's time per stage (convert, chunk, embed, store; summed over worker threads);
* the baseline's share of chunks longer than the model's 256-token window (silently truncated by
  sentence-transformers), folioflow's share (0 by construction: the chunker counts tokens);
* retrieval through :func:`indexing.evaluation.evaluate_retrieval` (the code behind
  ``folioflow eval retrieval``): hit@1/5/10 of the evidence page and MRR, document-level hit@k,
  and hit@5 within the question's own filing (search filtered to that filing). FinanceBench's
  evidence pages are 0-based and converted; questions whose filing is absent are skipped.

Goals (issue 5): evidence-page hit@5 >= 2x the baseline's over the shared store; own-filing
hit@5 >= 0.80; ingest pages/s >= 2x the baseline's.

Usage::

    python tests/benchmarks/bench_retrieval.py --work /tmp/bench-retrieval [--docs 5] [--json OUT]

``--docs N`` keeps the N smallest filings that questions refer to (development runs); without it
every filing in ``--pdfs`` is ingested. Stores and vectors live under ``--work`` (never the repo).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

ROOT = Path(__file__).resolve().parents[2]
FB = ROOT.parent / "shared" / "corpus" / "A_finance" / "financebench"


# ----------------------------------------------------------------------------------------- helpers
class StageClock:
    """Seconds per pipeline stage, summed over threads (wraps methods of the flow's classes)."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.lock = threading.Lock()

    def add(self, name: str, dt: float) -> None:
        with self.lock:
            self.seconds[name] += dt

    def wrap(self, cls, method: str, name: str, after=None):
        original = getattr(cls, method)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            result = original(*args, **kwargs)
            self.add(name, time.perf_counter() - t0)
            if after:
                after(result)
            return result

        setattr(cls, method, timed)
        return lambda: setattr(cls, method, original)


def page_count(path: Path) -> int:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    try:
        return len(pdf)
    finally:
        pdf.close()


def pick_filings(pdfs: Path, questions, limit: int | None) -> list[Path]:
    files = sorted(pdfs.glob("*.pdf"))
    if not limit:
        return files
    from indexing.evaluation import doc_key

    wanted = {d for q in questions for d in q.docs}
    candidates = [f for f in files if doc_key(f.name) in wanted]
    return sorted(candidates, key=page_count)[:limit]


# ----------------------------------------------------------------------------------------- folioflow
def folio_ingest(files: list[Path], work: Path) -> dict:
    from flows.ingest import run_ingest
    from flows.pipeline import Pipeline
    from flows.settings import Settings
    from indexing.indexer import Indexer

    settings = Settings(data_dir=work / "folio", workers=2)
    clock = StageClock()
    restore = [
        clock.wrap(Pipeline, "warm_up", "warm_up (models, store)"),
        clock.wrap(Pipeline, "convert", "convert (text layer / OCR)"),
        clock.wrap(Pipeline, "chunk", "chunk"),
        clock.wrap(Indexer, "index", "index (embed + store)",
                   after=lambda r: (clock.add("  embed (dense + BM25)", r.embed_s), clock.add("  store upsert", r.store_s))),
    ]
    out: dict = {}
    try:
        for label in ("ingest", "reingest"):
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            report = run_ingest([str(f) for f in files], settings)
            wall = time.perf_counter() - t0
            failed = [(d.source, d.error) for d in report.documents if d.status == "failed"]
            out[label] = {"wall_s": wall, "flow_s": report.seconds, "cpu_s": time.process_time() - cpu0,
                          "pages": sum(d.pages for d in report.documents),
                          "pages_converted": report.pages_processed, "chunks": report.chunks_indexed,
                          "indexed": report.count("indexed"), "skipped": report.count("skipped"),
                          "failed": failed, "engines": report.engine_shares()}
            if label == "ingest":
                out["stages_s"] = dict(clock.seconds)
            print(f"folioflow {label}: {json.dumps(out[label])}", flush=True)
    finally:
        for undo in restore:
            undo()
    out["pages_per_s"] = out["ingest"]["pages"] / out["ingest"]["flow_s"]
    return out


# ----------------------------------------------------------------------------------------- baseline
class STEmbeddings:
    """LangChain ``Embeddings`` over sentence-transformers, as ``HuggingFaceEmbeddings`` calls it
    (``encode`` with default batch size, no normalisation; Qdrant's cosine distance normalises)."""

    def __init__(self, model):
        self.model = model

    def embed_documents(self, texts):
        return self.model.encode(list(texts), show_progress_bar=False).tolist()

    def embed_query(self, text):
        return self.model.encode([text], show_progress_bar=False)[0].tolist()


def baseline_ingest(files: list[Path], work: Path) -> tuple[dict, object]:
    from langchain_community.document_loaders import PyPDFLoader
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from qdrant_client import QdrantClient
    from qdrant_client.http import models
    from sentence_transformers import SentenceTransformer

    from indexing.embedder import default_model_path

    class Adapter(STEmbeddings, Embeddings):
        pass

    path = work / "baseline"
    out: dict = {}
    t0 = time.perf_counter()
    model = SentenceTransformer(default_model_path(), device="cpu")
    embeddings = Adapter(model)
    client = QdrantClient(path=str(path))
    client.create_collection("baseline", vectors_config=models.VectorParams(size=model.get_sentence_embedding_dimension(),
                                                                         distance=models.Distance.COSINE))
    store = QdrantVectorStore(client=client, collection_name="baseline", embedding=embeddings)
    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    lengths: list[int] = []
    limit = model.max_seq_length
    for label in ("ingest", "reingest"):
        if label == "reingest":
            t0 = time.perf_counter()
        cpu0 = time.process_time()
        pages = chunks = 0
        stages: dict[str, float] = defaultdict(float)
        for f in files:
            s = time.perf_counter()
            docs = PyPDFLoader(str(f)).load()
            stages["load (pypdf)"] += time.perf_counter() - s
            s = time.perf_counter()
            split = splitter.split_documents(docs)
            stages["split"] += time.perf_counter() - s
            s = time.perf_counter()
            if split:
                store.add_documents(split)
            stages["embed + upsert"] += time.perf_counter() - s
            pages += len(docs)
            chunks += len(split)
            if label == "ingest":
                lengths += [len(ids) for ids in model.tokenizer([d.page_content for d in split])["input_ids"]]
        wall = time.perf_counter() - t0
        out[label] = {"wall_s": wall, "cpu_s": time.process_time() - cpu0, "pages": pages, "chunks": chunks,
                      "points_after": client.count("baseline").count, "stages_s": dict(stages)}
        print(f"baseline {label}: {json.dumps(out[label])}", flush=True)
    out["pages_per_s"] = out["ingest"]["pages"] / out["ingest"]["wall_s"]
    out["truncated_share"] = sum(1 for n in lengths if n > limit) / max(len(lengths), 1)
    out["token_limit"] = limit
    return out, store


def baseline_searcher(store):
    from qdrant_client.http import models

    from indexing.evaluation import RankedHit, doc_key

    def search(query: str, k: int, restrict):
        flt = None
        if restrict is not None:
            # documents were loaded from absolute paths; match on the stem through the source field
            flt = models.Filter(must=[models.FieldCondition(key="metadata.doc_key", match=models.MatchAny(any=list(restrict)))])
        found = store.similarity_search_with_score(query, k=k, filter=flt)
        return [RankedHit(doc=doc_key(d.metadata.get("source", "")), page_start=int(d.metadata.get("page", 0)) + 1,
                          page_end=int(d.metadata.get("page", 0)) + 1, text=d.page_content, score=float(s))
                for d, s in found]

    return search


def tag_doc_keys(store) -> None:
    """Add ``metadata.doc_key`` (file stem) to every baseline point so the own-filing scope can filter
    on it (PyPDFLoader records the absolute path as ``source``); done after timing, untimed."""
    from qdrant_client.http import models

    from indexing.evaluation import doc_key

    client = store.client
    offset = None
    by_key: dict[str, list] = defaultdict(list)
    while True:
        points, offset = client.scroll("baseline", limit=2048, offset=offset, with_payload=True, with_vectors=False)
        for p in points:
            by_key[doc_key(p.payload["metadata"]["source"])].append(p.id)
        if offset is None:
            break
    for key, ids in by_key.items():
        client.set_payload("baseline", payload={"doc_key": key}, points=ids, key="metadata")


# ----------------------------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pdfs", type=Path, default=FB / "pdfs")
    ap.add_argument("--questions", type=Path, default=FB / "groundtruth" / "financebench_open_source.jsonl")
    ap.add_argument("--work", type=Path, default=Path("/tmp/folioflow-bench-retrieval"))
    ap.add_argument("--docs", type=int, default=None, help="only the N smallest filings that questions refer to")
    ap.add_argument("--modes", default="dense,hybrid")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the stores under --work")
    args = ap.parse_args()

    from indexing.evaluation import doc_key, evaluate_retrieval, load_questions

    questions = load_questions(args.questions)
    files = pick_filings(args.pdfs, questions, args.docs)
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    total_pages = sum(page_count(f) for f in files)
    print(f"{len(files)} filings, {total_pages} pages, {len(questions)} questions", flush=True)

    folio = folio_ingest(files, args.work)
    base, base_store = baseline_ingest(files, args.work)
    tag_doc_keys(base_store)

    from flows.pipeline import Pipeline
    from flows.settings import Settings
    from indexing.embedder import Embedder
    from indexing.evaluation.folio import collection_docs, folio_searchers
    from indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    embedder = Embedder(device="cpu")
    modes = [m for m in args.modes.split(",") if m]
    searchers = {f"folioflow {m}": s for m, s in folio_searchers(store, embedder, modes).items()}
    searchers["baseline"] = baseline_searcher(base_store)
    known = {k for k in collection_docs(store)} & {doc_key(f.name) for f in files}
    t0 = time.perf_counter()
    report = evaluate_retrieval(questions, searchers, known, ks=(1, 5, 10), own_doc=True)
    eval_s = time.perf_counter() - t0
    store.close()

    s, o = report.summaries["shared"], report.summaries["own"]
    n_eval = report.questions - len(report.skipped)
    print(f"\nquestions: {report.questions}, evaluated {n_eval}, skipped {len(report.skipped)} "
          f"(filings absent: {len(report.skipped_docs)}); evaluation {eval_s:.1f} s")
    names = list(searchers)
    rows = [("evidence page hit@1", lambda n: s[n]["page"]["hit@1"]),
            ("evidence page hit@5", lambda n: s[n]["page"]["hit@5"]),
            ("evidence page hit@10", lambda n: s[n]["page"]["hit@10"]),
            ("evidence page MRR@10", lambda n: s[n]["page"]["mrr"]),
            ("document hit@1", lambda n: s[n]["document"]["hit@1"]),
            ("document hit@5", lambda n: s[n]["document"]["hit@5"]),
            ("own filing: page hit@5", lambda n: o[n]["page"]["hit@5"]),
            ("own filing: page MRR@10", lambda n: o[n]["page"]["mrr"])]
    header = f"{'metric':<28}" + "".join(f"{n:>20}" for n in names) + "".join(f"{'ratio ' + n.split()[-1]:>16}" for n in names[:-1])
    print(header)
    for label, get in rows:
        vals = [get(n) for n in names]
        ratios = [v / vals[-1] if vals[-1] else float("inf") for v in vals[:-1]]
        print(f"{label:<28}" + "".join(f"{v:>20.3f}" for v in vals) + "".join(f"{r:>15.2f}x" for r in ratios))
    fi, bi = folio["ingest"], base["ingest"]
    print(f"{'ingest pages/s':<28}{folio['pages_per_s']:>20.2f}{'':>20}{base['pages_per_s']:>20.2f}"
          f"{folio['pages_per_s'] / base['pages_per_s']:>15.2f}x")
    print(f"{'ingest s (pages)':<28}{fi['flow_s']:>14.1f} ({fi['pages']}){'':>20}{bi['wall_s']:>14.1f} ({bi['pages']})")
    print(f"{'re-ingest s':<28}{folio['reingest']['flow_s']:>20.1f}{'':>20}{base['reingest']['wall_s']:>20.1f}")
    print(f"{'chunks / points after re-ingest':<28}{fi['chunks']:>12} / {store_points(args.work):<7}{'':>20}"
          f"{bi['chunks']:>12} / {base['reingest']['points_after']}")
    print(f"{'chunks over 256 tokens':<28}{0.0:>20.3%}{'':>20}{base['truncated_share']:>20.3%}")
    print("folioflow stage seconds (summed over 2 workers):",
          ", ".join(f"{k} {v:.1f}" for k, v in folio["stages_s"].items()))
    print("baseline stage seconds:", ", ".join(f"{k} {v:.1f}" for k, v in bi["stages_s"].items()))
    goals = {
        "page hit@5 >= 2x baseline (shared store)": max(s[n]["page"]["hit@5"] for n in names[:-1]) >= 2 * s["baseline"]["page"]["hit@5"],
        "own-filing page hit@5 >= 0.80": max(o[n]["page"]["hit@5"] for n in names[:-1]) >= 0.80,
        "ingest pages/s >= 2x baseline": folio["pages_per_s"] >= 2 * base["pages_per_s"],
    }
    for goal, met in goals.items():
        print(f"goal {goal}: {'MET' if met else 'NOT MET'}")
    if args.json:
        args.json.write_text(json.dumps({"filings": [f.name for f in files], "pages": total_pages, "folioflow": folio,
                                         "baseline": base, "goals": goals, "retrieval": report.as_dict()}, indent=2))
        print(f"wrote {args.json}")
    base_store.client.close()
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


def store_points(work: Path) -> int:
    from flows.pipeline import Pipeline
    from flows.settings import Settings
    from indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=work / "folio")))
    try:
        return store.count()
    finally:
        store.close()


if __name__ == "__main__":
    main()
