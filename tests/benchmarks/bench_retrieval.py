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

Measured in one process, interleaved: the filings (shuffled with ``--seed``) are ingested in rounds
of ``--group``; in each round folioflow and the baseline ingest the same filings, taking turns to go
first, so both see the same load on a shared machine. With ``--deadline-min`` no new round starts
after that many minutes and the shared store is the filings done by then (a random sample of the
corpus, reported as such); without it, every filing.

* ingest seconds and pages/s (model loading counted once for both: folioflow's flow loads its
  models in each round, so later rounds' warm-up is left out; Prefect's ephemeral server start-up
  is outside the flow's own clock), re-ingest seconds (the same files again: folioflow skips
  unchanged documents; the baseline has no such check, so it re-does the work and duplicates its
  points, shown as the point count after re-ingest; ``--baseline-reingest N`` limits that repeat to
  the N smallest filings, with folioflow's re-ingest of the same filings beside it), folioflow's time
  per stage (convert, chunk, embed, store; summed over worker threads);
* the baseline's share of chunks longer than the model's 256-token window (silently truncated by
  sentence-transformers), folioflow's share (0 by construction: the chunker counts tokens);
* retrieval through :func:`folioflow.indexing.evaluation.evaluate_retrieval` (the code behind
  ``folioflow eval retrieval``): hit@1/5/10 of the evidence page and MRR, document-level hit@k,
  and hit@5 within the question's own filing (search filtered to that filing). FinanceBench's
  evidence pages are 0-based and converted; questions whose filing is absent are skipped.

Goals (issue 5): evidence-page hit@5 >= 2x the baseline's over the shared store; own-filing
hit@5 >= 0.80; ingest pages/s >= 2x the baseline's.

Usage::

    python tests/benchmarks/bench_retrieval.py --work /tmp/bench-retrieval [--docs 5] [--deadline-min 90] [--json OUT]

A baseline store built once (``--baseline-only --work DIR``: every filing, its figures in
``DIR/baseline_build.json``) can be reused by later runs over the same filings with
``--baseline-from DIR``: folioflow alone ingests and both are scored side by side; the baseline's
ingest timings then come from that earlier run and the output says so::

    python tests/benchmarks/bench_retrieval.py --baseline-only --work /tmp/fb-baseline
    python tests/benchmarks/bench_retrieval.py --baseline-from /tmp/fb-baseline --work /tmp/fb --keep --json OUT

``--docs N`` keeps the N smallest filings that questions refer to (development runs); without it
every filing in ``--pdfs`` is ingested. Stores and vectors live under ``--work`` (never the repo).

Chunking options A/B: ``--variant-chunking '{"document_title": true}'`` adds a second folioflow
store with those options, ingested in the same rounds from folioflow's page cache and scored
beside the others; with ``--no-baseline`` only folioflow and the variant run (quicker)::

    python tests/benchmarks/bench_retrieval.py --work /tmp/bret --deadline-min 24 --group 8 \
        --no-baseline --variant-chunking '{"document_title": true}'
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
        self.paused = False  # while a variant store ingests (the wrapped methods are the classes')

    def add(self, name: str, dt: float) -> None:
        if self.paused:
            return
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
    from folioflow.indexing.evaluation import doc_key

    wanted = {d for q in questions for d in q.docs}
    candidates = [f for f in files if doc_key(f.name) in wanted]
    return sorted(candidates, key=page_count)[:limit]


# ----------------------------------------------------------------------------------------- folioflow
class FolioIngest:
    """folioflow ingestion into one store under ``work/folio``, round after round, with the time of
    each pipeline stage (wrapped methods of the flow's classes, summed over worker threads)."""

    def __init__(self, work: Path, name: str = "folio", chunking: dict | None = None, cache_url: str | None = None,
                 clock: bool = True):
        from folioflow.flows.pipeline import Pipeline
        from folioflow.flows.settings import Settings
        from folioflow.flows.stages import Stages
        from folioflow.indexing.indexer import Indexer

        self.settings = Settings(data_dir=work / name, workers=2, chunking=chunking or {}, cache_url=cache_url)
        self.clock = StageClock()
        if not clock:
            self.clock.paused = True
        else:
            self.clock.wrap(Pipeline, "warm_up", "warm_up (models, store)")
            self.clock.wrap(Stages, "convert", "convert (text layer / OCR)")
            self.clock.wrap(Stages, "chunk", "chunk")
            self.clock.wrap(Indexer, "index", "index (embed + store)",
                            after=lambda r: (self.clock.add("  embed (dense + BM25)", r.embed_s),
                                             self.clock.add("  store upsert", r.store_s)))
        self.totals = {"pages": 0, "chunks": 0, "flow_s": 0.0, "warm_up_s": 0.0, "wall_s": 0.0, "cpu_s": 0.0,
                       "failed": [], "engines": defaultdict(int)}

    def run(self, files: list[Path]) -> dict:
        """Ingest ``files``; returns this round's figures and adds them to :attr:`totals`."""
        from folioflow.flows.ingest import run_ingest

        warm0 = self.clock.seconds["warm_up (models, store)"]
        t0, cpu0 = time.perf_counter(), time.process_time()
        report = run_ingest([str(f) for f in files], self.settings)
        out = {"wall_s": time.perf_counter() - t0, "flow_s": report.seconds, "cpu_s": time.process_time() - cpu0,
               "warm_up_s": self.clock.seconds["warm_up (models, store)"] - warm0,
               "pages": sum(d.pages for d in report.documents), "pages_converted": report.pages_processed,
               "chunks": report.chunks_indexed, "indexed": report.count("indexed"), "skipped": report.count("skipped"),
               "failed": [(d.source, d.error) for d in report.documents if d.status == "failed"],
               "engines": report.engine_shares()}
        for key in ("pages", "chunks", "flow_s", "warm_up_s", "wall_s", "cpu_s"):
            self.totals[key] += out[key]
        self.totals["failed"] += out["failed"]
        for engine, n in out["engines"].items():
            self.totals["engines"][engine] += n
        return out

    def run_beside(self, main: FolioIngest, files: list[Path]) -> dict:
        """:meth:`run` for a variant store, with ``main``'s stage clock paused (the wrapped methods
        are the classes', so its clock would count the variant's time too)."""
        main.clock.paused = True
        try:
            return self.run(files)
        finally:
            main.clock.paused = False

    def summary(self) -> dict:
        """Totals; ``ingest_s`` counts the model/store warm-up once (each round's flow loads them)."""
        t = dict(self.totals, engines=dict(self.totals["engines"]))
        rounds_warm = t["warm_up_s"]
        first_warm = self.first_warm if hasattr(self, "first_warm") else 0.0
        t["ingest_s"] = t["flow_s"] - rounds_warm + first_warm
        t["pages_per_s"] = t["pages"] / t["ingest_s"] if t["ingest_s"] else 0.0
        t["stages_s"] = dict(self.clock.seconds)
        return t


def folio_token_stats(work: Path) -> tuple[float, dict]:
    """Share of folioflow's points whose embedded text exceeds the model's 256 tokens (their
    ``token_count`` payload, counted by the chunker with the model's tokenizer), and the spread."""
    import numpy as np

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=work / "folio")))
    try:
        counts = [int(p["metadata"].get("token_count") or 0) for r in store.list_documents() for p in store.payloads(r.doc_id)]
    finally:
        store.close()
    arr = np.array(counts or [0])
    return (float((arr > 256).mean()), {"n": len(counts), "p50": float(np.percentile(arr, 50)),
                                        "p90": float(np.percentile(arr, 90)), "max": int(arr.max())})


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


def open_baseline(work: Path, create: bool = True):
    """The baseline's vector store (collection created unless ``create`` is false: an existing
    store under ``work/baseline``) and its embedding model."""
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from qdrant_client.http import models
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.embedder import default_model_path

    class Adapter(STEmbeddings, Embeddings):
        pass

    model = SentenceTransformer(default_model_path(), device="cpu")
    client = QdrantClient(path=str(work / "baseline"))
    if create:
        client.create_collection("baseline", vectors_config=models.VectorParams(size=model.get_embedding_dimension(),
                                                                             distance=models.Distance.COSINE))
    return QdrantVectorStore(client=client, collection_name="baseline", embedding=Adapter(model)), model


def baseline_pass(files: list[Path], store, model, measure_tokens: bool) -> dict:
    """Load, split, embed and upsert ``files`` the LangChain way; seconds per stage."""
    from langchain_community.document_loaders import PyPDFLoader
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
    t0, cpu0 = time.perf_counter(), time.process_time()
    pages = chunks = 0
    lengths: list[int] = []
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
        if measure_tokens:  # untimed would be fairer, but it is ~1% of the embed time; kept outside the stages
            lengths += [len(ids) for ids in model.tokenizer([d.page_content for d in split])["input_ids"]]
    out = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0, "pages": pages,
           "chunks": chunks, "points_after": store.client.count("baseline").count, "stages_s": dict(stages),
           "files": len(files)}
    if measure_tokens:
        out["over_limit"] = sum(1 for n in lengths if n > model.max_seq_length)
        out["token_limit"] = model.max_seq_length
    return out


def baseline_searcher(store, within: set[str] | None = None):
    """Search the baseline store; ``within`` (doc keys) limits every search to those filings (to
    score a snapshot against the same set of filings as folioflow's)."""
    from qdrant_client.http import models

    from folioflow.indexing.evaluation import RankedHit, doc_key

    def search(query: str, k: int, restrict):
        flt = None
        if restrict is None and within is not None:
            restrict = sorted(within)
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

    from folioflow.indexing.evaluation import doc_key

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
def print_table(names, summaries, folio: dict, base: dict, points: int) -> dict:
    """The side-by-side table; returns the goal checks."""
    s, o = summaries["shared"], summaries["own"]
    rows = [("evidence page hit@1", lambda n: s[n]["page"]["hit@1"]),
            ("evidence page hit@5", lambda n: s[n]["page"]["hit@5"]),
            ("evidence page hit@10", lambda n: s[n]["page"]["hit@10"]),
            ("evidence page MRR@10", lambda n: s[n]["page"]["mrr"]),
            ("document hit@1", lambda n: s[n]["document"]["hit@1"]),
            ("document hit@5", lambda n: s[n]["document"]["hit@5"]),
            ("own filing: page hit@5", lambda n: o[n]["page"]["hit@5"]),
            ("own filing: page MRR@10", lambda n: o[n]["page"]["mrr"])]
    short = {n: " ".join(w[:3] if i < len(n.split()) - 1 else w for i, w in enumerate(n.split())) for n in names}
    print(f"{'metric':<32}" + "".join(f"{n:>18}" for n in names) + "".join(f"{'x ' + short[n]:>14}" for n in names[:-1]))
    for label, get in rows:
        vals = [get(n) for n in names]
        ratios = [v / vals[-1] if vals[-1] else float("inf") for v in vals[:-1]]
        print(f"{label:<32}" + "".join(f"{v:>18.3f}" for v in vals) + "".join(f"{r:>13.2f}x" for r in ratios))
    fi, bi = folio["ingest"], base["ingest"]
    pad = " " * 18 * (len(names) - 2)
    print(f"{'ingest pages/s':<32}{folio['pages_per_s']:>18.2f}{pad}{base['pages_per_s']:>18.2f}"
          f"{folio['pages_per_s'] / base['pages_per_s']:>11.2f}x")
    print(f"{'ingest s (pages)':<32}{fi['flow_s']:>11.1f} ({fi['pages']}){pad}{bi['wall_s']:>11.1f} ({bi['pages']})")
    re_b = base.get("reingest")
    re_txt = f"{re_b['wall_s']:>11.1f} ({re_b['files']} f.)" if re_b else f"{'not run':>18}"
    print(f"{'re-ingest s (all filings)':<32}{folio['reingest']['flow_s']:>18.1f}")
    if re_b:
        same = re_b.get("folioflow_same_files_s", folio["reingest"]["flow_s"])
        print(f"{'re-ingest s (same filings)':<32}{same:>18.1f}{pad}{re_txt}")
    print(f"{'chunks (points after re-ingest)':<32}{fi['chunks']:>10} ({points}){pad}{bi['chunks']:>10} "
          f"({re_b['points_after'] if re_b else '-'})")
    print(f"{'chunks over 256 tokens':<32}{folio.get('over_limit_share', 0.0):>18.2%}{pad}{base['truncated_share']:>18.2%}")
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
    return goals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pdfs", type=Path, default=FB / "pdfs")
    ap.add_argument("--questions", type=Path, default=FB / "groundtruth" / "financebench_open_source.jsonl")
    ap.add_argument("--work", type=Path, default=Path("/tmp/folioflow-bench-retrieval"))
    ap.add_argument("--docs", type=int, default=None, help="only the N smallest filings that questions refer to")
    ap.add_argument("--group", type=int, default=4, help="filings per round (both systems ingest each round)")
    ap.add_argument("--deadline-min", type=float, default=None,
                    help="start no new round after this many minutes; the store then holds the filings done")
    ap.add_argument("--seed", type=int, default=0, help="order of the filings (shuffled, so any prefix is a fair sample)")
    ap.add_argument("--modes", default="dense,hybrid")
    ap.add_argument("--baseline-reingest", default="5", help="all | none | N (the N smallest ingested filings)")
    ap.add_argument("--json", type=Path, default=None, help="results (rewritten after each round and phase)")
    ap.add_argument("--keep", action="store_true", help="keep the stores under --work")
    ap.add_argument("--evaluate-only", type=Path, default=None,
                    help="score copies of the stores (folio/, baseline/ under this folder) taken between rounds of a "
                         "run whose --json is given with --rounds-json; no ingestion")
    ap.add_argument("--rounds-json", type=Path, default=None)
    ap.add_argument("--variant-chunking", default=None, metavar="JSON",
                    help='a second folioflow store with these chunking options (e.g. \'{"document_title": true}\'), '
                         "ingested in the same rounds from folioflow's page cache (its time is not in the ingest "
                         "figures) and scored beside the others as 'variant <mode>'")
    ap.add_argument("--baseline-only", action="store_true",
                    help="build only the baseline store under --work (every filing in --pdfs, or --docs N) and write "
                         "--work/baseline_build.json; reuse it with --baseline-from")
    ap.add_argument("--baseline-from", type=Path, default=None,
                    help="a folder made by --baseline-only over the same filings: its store is copied and scored, and "
                         "folioflow alone ingests (retrieval figures side by side; the baseline's ingest timings are "
                         "from that earlier run, not interleaved, and are reported as such)")
    ap.add_argument("--no-baseline", action="store_true",
                    help="with --variant-chunking: folioflow against its variant only (no LangChain baseline: "
                         "a quicker A/B of chunking options)")
    args = ap.parse_args()
    if args.no_baseline:
        if not args.variant_chunking:
            ap.error("--no-baseline needs --variant-chunking")
        compare_variant(args)
        return
    if args.evaluate_only:
        evaluate_snapshot(args)
        return
    if args.baseline_only:
        build_baseline(args)
        return

    from folioflow.indexing.evaluation import doc_key, evaluate_retrieval

    started = time.perf_counter()
    questions, files = start_run(args)
    sizes = {f: page_count(f) for f in files}
    print(f"{len(files)} filings, {sum(sizes.values())} pages, {len(questions)} questions; rounds of {args.group}",
          flush=True)
    result: dict = {"filings_available": len(files), "pages_available": sum(sizes.values()), "rounds": []}

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(result, indent=2, default=str))

    folio = FolioIngest(args.work)
    variant = variant_ingest(args, folio) if args.variant_chunking else None
    t0 = time.perf_counter()
    prebuilt = load_prebuilt_baseline(args, files) if args.baseline_from else None
    base_store, model = open_baseline(args.work, create=prebuilt is None)
    base_load_s = time.perf_counter() - t0
    base_tot = {"pages": 0, "chunks": 0, "wall_s": 0.0, "cpu_s": 0.0, "over_limit": 0,
                "stages_s": defaultdict(float)}
    if prebuilt is not None:
        for key in ("pages", "chunks", "wall_s", "cpu_s", "over_limit"):
            base_tot[key] = prebuilt[key]
        base_tot["stages_s"].update(prebuilt["stages_s"])
        result["baseline_from"] = {"folder": str(args.baseline_from), "not_interleaved": True}
    done: list[Path] = []
    for r, start in enumerate(range(0, len(files), args.group)):
        if args.deadline_min and time.perf_counter() - started > args.deadline_min * 60:
            print(f"deadline reached after {len(done)} filings", flush=True)
            break
        group = files[start:start + args.group]
        runs = {}
        order = ("folioflow", "baseline") if r % 2 == 0 else ("baseline", "folioflow")  # alternate who goes first
        for who in order:
            if who == "baseline" and prebuilt is not None:
                continue
            if who == "folioflow":
                runs[who] = folio.run(group)
                if r == 0:
                    folio.first_warm = runs[who]["warm_up_s"]
            else:
                runs[who] = b = baseline_pass(group, base_store, model, measure_tokens=True)
                for key in ("pages", "chunks", "wall_s", "cpu_s", "over_limit"):
                    base_tot[key] += b[key]
                for key, v in b["stages_s"].items():
                    base_tot["stages_s"][key] += v
        if variant is not None:
            runs["variant"] = variant.run_beside(folio, group)
        done += group
        fs = folio.summary()
        b_s = base_tot["wall_s"] + base_load_s
        result["rounds"].append({"round": r, "files": [f.name for f in group], **{k: v for k, v in runs.items()}})
        print(f"round {r}: {len(done)} filings, {fs['pages']} pages; folioflow {fs['pages_per_s']:.2f} pages/s, "
              f"baseline {base_tot['pages'] / b_s:.2f} pages/s; {(time.perf_counter() - started) / 60:.1f} min", flush=True)
        save()

    folio_sum = folio.summary()
    reingest = folio.run(done)
    folio_res = result["folioflow"] = {"ingest": folio_sum, "reingest": reingest, "pages_per_s": folio_sum["pages_per_s"],
                                       "stages_s": folio_sum["stages_s"]}
    folio_res["ingest"]["flow_s"] = folio_sum["ingest_s"]
    folio_res["over_limit_share"], folio_res["token_counts"] = folio_token_stats(args.work)
    b_wall = base_tot["wall_s"] + base_load_s
    base = result["baseline"] = {"ingest": {**base_tot, "stages_s": {"model load": base_load_s, **base_tot["stages_s"]},
                                            "wall_s": b_wall},
                                 "pages_per_s": base_tot["pages"] / b_wall,
                                 "truncated_share": base_tot["over_limit"] / max(base_tot["chunks"], 1),
                                 "token_limit": model.max_seq_length}
    result["filings"] = [f.name for f in done]
    result["pages"] = sum(sizes[f] for f in done)
    save()
    if prebuilt is None:
        tag_doc_keys(base_store)

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation.folio import collection_docs, folio_searchers
    from folioflow.indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    points = store.count()
    embedder = Embedder(device="cpu")
    modes = [m for m in args.modes.split(",") if m]
    searchers = {f"folioflow {m}": s for m, s in folio_searchers(store, embedder, modes).items()}
    known = set(collection_docs(store)) & {doc_key(f.name) for f in done}
    variant_store = None
    if variant is not None:
        variant_store = open_store(Pipeline.store_settings(variant.settings))
        searchers.update({f"variant {m}": s for m, s in folio_searchers(variant_store, embedder, modes).items()})
        known &= set(collection_docs(variant_store))
        result["variant"] = {"chunking": json.loads(args.variant_chunking), "ingest": variant.summary()}
    searchers["baseline"] = baseline_searcher(base_store)
    t0 = time.perf_counter()
    report = evaluate_retrieval(questions, searchers, known, ks=(1, 5, 10), own_doc=True)
    store.close()
    if variant_store is not None:
        variant_store.close()
    result["retrieval"] = report.as_dict()
    n_eval = report.questions - len(report.skipped)
    print(f"\nshared store: {len(done)} filings, {result['pages']} pages (of {len(files)} / {sum(sizes.values())})")
    print(f"questions: {report.questions}, evaluated {n_eval}, skipped {len(report.skipped)} "
          f"(their filings not in the store: {len(report.skipped_docs)}); evaluation {time.perf_counter() - t0:.1f} s", flush=True)
    if prebuilt is not None:
        print(f"baseline: prebuilt store from {args.baseline_from} (its ingest timings come from that run, not "
              "interleaved with this one: the pages/s ratio is not side by side)")
    result["goals"] = print_table(list(searchers), report.summaries, folio_res, base, points)
    save()

    if args.baseline_reingest != "none" and prebuilt is None:
        again = done if args.baseline_reingest == "all" else sorted(done, key=lambda f: sizes[f])[:int(args.baseline_reingest)]
        folio_sub = folio_reingest_subset(again, args.work) if len(again) < len(done) else None
        base["reingest"] = baseline_pass(again, base_store, model, measure_tokens=False)
        if folio_sub is not None:
            base["reingest"]["folioflow_same_files_s"] = folio_sub
        print(f"baseline reingest ({len(again)} filings): {json.dumps(base['reingest'])}", flush=True)
        print()
        result["goals"] = print_table(list(searchers), report.summaries, folio_res, base, points)
        save()
    if args.json:
        print(f"wrote {args.json}")
    base_store.client.close()
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


def build_baseline(args) -> None:
    """``--baseline-only``: the baseline store of every selected filing under ``--work`` and its
    ingest figures in ``--work/baseline_build.json`` (for ``--baseline-from``)."""
    _, files = start_run(args)
    files = sorted(files)
    store, model = open_baseline(args.work)
    out = baseline_pass(files, store, model, measure_tokens=True)
    tag_doc_keys(store)
    out["filings"] = [f.name for f in files]
    (args.work / "baseline_build.json").write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "filings"}, indent=2))
    store.client.close()


def load_prebuilt_baseline(args, files: list[Path]) -> dict:
    """``--baseline-from``: copy the prebuilt store into ``--work`` and return its build figures;
    exits when it was built over other filings."""
    build = json.loads((args.baseline_from / "baseline_build.json").read_text())
    if sorted(build["filings"]) != sorted(f.name for f in files):
        sys.exit(f"--baseline-from {args.baseline_from} holds other filings than this run's")
    shutil.copytree(args.baseline_from / "baseline", args.work / "baseline")
    return build


def start_run(args) -> tuple[list, list[Path]]:
    """The questions and the filings in ``--seed`` order (see :func:`pick_filings`); ``--work``
    emptied."""
    import random

    from folioflow.indexing.evaluation import load_questions

    questions = load_questions(args.questions)
    files = pick_filings(args.pdfs, questions, args.docs)
    random.Random(args.seed).shuffle(files)
    if args.work.exists():
        shutil.rmtree(args.work)
    args.work.mkdir(parents=True)
    return questions, files


def variant_ingest(args, folio: FolioIngest) -> FolioIngest:
    """The ``--variant-chunking`` store under ``work/folio-variant``, reading ``folio``'s page cache."""
    return FolioIngest(args.work, "folio-variant", chunking=json.loads(args.variant_chunking),
                       cache_url=str(folio.settings.cache_dir), clock=False)


def compare_variant(args) -> None:
    """folioflow with its default chunking against ``--variant-chunking`` (no baseline): the same
    filings in the same rounds, the variant reading folioflow's page cache; retrieval of both."""
    from folioflow.flows.pipeline import Pipeline
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation import doc_key, evaluate_retrieval
    from folioflow.indexing.evaluation.folio import collection_docs, folio_searchers
    from folioflow.indexing.store import open_store

    started = time.perf_counter()
    questions, files = start_run(args)
    folio = FolioIngest(args.work)
    variant = variant_ingest(args, folio)
    done: list[Path] = []
    for start in range(0, len(files), args.group):
        if args.deadline_min and time.perf_counter() - started > args.deadline_min * 60:
            print(f"deadline reached after {len(done)} filings", flush=True)
            break
        group = files[start:start + args.group]
        folio.run(group)
        variant.run_beside(folio, group)
        done += group
        print(f"{len(done)} filings, {folio.totals['pages']} pages; {(time.perf_counter() - started) / 60:.1f} min",
              flush=True)
    embedder = Embedder(device="cpu")
    modes = [m for m in args.modes.split(",") if m]
    stores = [open_store(Pipeline.store_settings(x.settings)) for x in (folio, variant)]
    searchers = {}
    for label, store in zip(("folioflow", "variant"), stores, strict=True):
        searchers.update({f"{label} {m}": s for m, s in folio_searchers(store, embedder, modes).items()})
    known = set(collection_docs(stores[0])) & set(collection_docs(stores[1])) & {doc_key(f.name) for f in done}
    report = evaluate_retrieval(questions, searchers, known, ks=(1, 5, 10), own_doc=True)
    for store in stores:
        store.close()
    n_eval = report.questions - len(report.skipped)
    pages = folio.totals["pages"]
    print(f"\n{len(done)} filings, {pages} pages; {n_eval} of {report.questions} questions evaluated; "
          f"chunks {folio.totals['chunks']} vs variant {variant.totals['chunks']}; variant: {args.variant_chunking}")
    s, o = report.summaries["shared"], report.summaries["own"]
    rows = [("shared: page hit@1", s, "page", "hit@1"), ("shared: page hit@5", s, "page", "hit@5"),
            ("shared: page hit@10", s, "page", "hit@10"), ("shared: page MRR@10", s, "page", "mrr"),
            ("shared: document hit@1", s, "document", "hit@1"), ("shared: document hit@5", s, "document", "hit@5"),
            ("own filing: page hit@5", o, "page", "hit@5"), ("own filing: page MRR@10", o, "page", "mrr")]
    print(f"{'metric':<28}" + "".join(f"{m:>12}{'+variant':>10}{'ratio':>8}" for m in modes))
    for label, table, level, key in rows:
        cells = []
        for m in modes:
            a, b = table[f"folioflow {m}"][level][key], table[f"variant {m}"][level][key]
            cells.append(f"{a:>12.3f}{b:>10.3f}{(b / a if a else float('inf')):>7.2f}x")
        print(f"{label:<28}" + "".join(cells))
    if args.json:
        args.json.write_text(json.dumps({"filings": [f.name for f in done], "pages": pages,
                                         "variant": json.loads(args.variant_chunking),
                                         "chunks": [folio.totals["chunks"], variant.totals["chunks"]],
                                         "retrieval": report.as_dict()}, indent=2, default=str))
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


def evaluate_snapshot(args) -> None:
    """Retrieval over store copies (see ``--evaluate-only``), with the ingest figures of the rounds
    whose filings the folioflow copy holds, read from the running benchmark's JSON."""
    from langchain_core.embeddings import Embeddings
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient
    from sentence_transformers import SentenceTransformer

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.embedder import Embedder, default_model_path
    from folioflow.indexing.evaluation import doc_key, evaluate_retrieval, load_questions
    from folioflow.indexing.evaluation.folio import collection_docs, folio_searchers
    from folioflow.indexing.store import open_store

    class Adapter(STEmbeddings, Embeddings):
        pass

    store = open_store(Pipeline.store_settings(Settings(data_dir=args.evaluate_only / "folio")))
    known = {doc_key(r.path) for r in store.list_documents() if r.status == "indexed"}
    client = QdrantClient(path=str(args.evaluate_only / "baseline"))
    base_store = QdrantVectorStore(client=client, collection_name="baseline",
                                   embedding=Adapter(SentenceTransformer(default_model_path(), device="cpu")))
    tag_doc_keys(base_store)
    rounds = [r for r in json.loads(args.rounds_json.read_text())["rounds"] if {doc_key(f) for f in r["files"]} <= known]
    held = {doc_key(f) for r in rounds for f in r["files"]}
    assert held == known, f"store copy holds {sorted(known - held)} beyond whole rounds"
    fsum = {k: sum(r["folioflow"][k] for r in rounds) for k in ("pages", "chunks", "flow_s", "warm_up_s")}
    fsum["flow_s"] = fsum["flow_s"] - fsum["warm_up_s"] + rounds[0]["folioflow"]["warm_up_s"]
    bsum = {k: sum(r["baseline"][k] for r in rounds) for k in ("pages", "chunks", "wall_s", "over_limit")}
    stages: dict[str, float] = defaultdict(float)
    for r in rounds:
        for key, v in r["baseline"]["stages_s"].items():
            stages[key] += v
    bsum["stages_s"] = dict(stages)
    folio = {"ingest": fsum, "reingest": {"flow_s": float("nan")}, "pages_per_s": fsum["pages"] / fsum["flow_s"],
             "stages_s": {}, "over_limit_share": 0.0}
    base = {"ingest": bsum, "pages_per_s": bsum["pages"] / bsum["wall_s"],
            "truncated_share": bsum["over_limit"] / max(bsum["chunks"], 1)}
    embedder = Embedder(device="cpu")
    modes = [m for m in args.modes.split(",") if m]
    searchers = {f"folioflow {m}": s for m, s in folio_searchers(store, embedder, modes).items()}
    searchers["baseline"] = baseline_searcher(base_store, within=known)
    questions = load_questions(args.questions)
    report = evaluate_retrieval(questions, searchers, set(collection_docs(store)) & known, ks=(1, 5, 10), own_doc=True)
    points = store.count()
    store.close()
    n_eval = report.questions - len(report.skipped)
    print(f"snapshot: {len(known)} filings, {fsum['pages']} pages ({len(rounds)} rounds); questions {report.questions}, "
          f"evaluated {n_eval}, skipped {len(report.skipped)} (their filings not in the store)")
    goals = print_table(list(searchers), report.summaries, folio, base, points)
    if args.json:
        args.json.write_text(json.dumps({"snapshot": str(args.evaluate_only), "filings": sorted(known),
                                         "pages": fsum["pages"], "folioflow": folio, "baseline": base, "goals": goals,
                                         "retrieval": report.as_dict()}, indent=2, default=str))
        print(f"wrote {args.json}")
    client.close()


def folio_reingest_subset(files: list[Path], work: Path) -> float:
    """Seconds of folioflow's flow re-ingesting ``files`` (all unchanged: skipped)."""
    from folioflow.flows.ingest import run_ingest
    from folioflow.flows.settings import Settings

    return run_ingest([str(f) for f in files], Settings(data_dir=work / "folio", workers=2)).seconds


def store_points(work: Path) -> int:
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.store import open_store

    store = open_store(Pipeline.store_settings(Settings(data_dir=work / "folio")))
    try:
        return store.count()
    finally:
        store.close()


if __name__ == "__main__":
    main()
