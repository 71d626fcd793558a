"""Benchmark: the HTTP API server (``folioflow api``) against the cold CLI, under load, and its OCR
failover, in one run.

Phases (each prints its table; ratios are taken within this one run):

(a) **Query latency.** First, with no server running, ``folioflow query QUESTION --json`` in a
    fresh process ``--cold`` times (wall seconds: Python, torch, the embedding model and the store
    start from cold each time). Then the server is started on the same data dir and answers
    ``POST /v1/query`` (hybrid mode, k=5) ``--requests`` times, one request at a time, cycling over
    the question list (client-side latency on a kept-alive connection; embedding included), and
    ``folioflow query --api-url URL`` runs ``--api-cli`` times in fresh processes (wall; goal < 1 s).
    Questions: the first ``--questions-n`` distinct FinanceBench questions
    (``A_finance/financebench/groundtruth/financebench_open_source.jsonl`` under the corpus).
(b) **Load.** ``--clients`` concurrent clients (asyncio tasks over one ``httpx.AsyncClient``
    bounded to that many connections, loopback only) send ``POST /v1/query`` back to back for
    ``--duration`` seconds while ``--new-docs`` generated PDFs (``--new-pages`` pages each, every
    one carrying an invented code word) are uploaded through ``POST /v1/documents``, one job per
    document, and their jobs polled. Reports requests, errors (any non-200 answer or transport
    error; goal 0), p50/p95/p99 under load, and for each new document whether a query for its code
    word finds it (top 10, no filter) as soon as its job ends. Then the integrity check: through
    the API (``GET /v1/documents``: the collection's point count equals the sum of the registry's
    chunk counts), and after the server stopped, in the store itself
    (:func:`folioflow.indexing.store.open_store`): per document, committed points == the record's
    ``chunks`` and their ``chunk_index`` values are distinct (no duplicates); the collection's
    points == the sum over registered documents (no orphans); no pending (uncommitted) points.
(c) **OCR failover** (``--ocr``; skipped with the reason when the vLLM CPU engine or the tiny
    model is absent: install both with ``bash infra/vllm/setup_cpu_engine.sh``). Starts two vLLM
    CPU servers with the tiny random Qwen2-VL (``folioflow ocr serve --replicas 2``, as
    ``tests/ocr/vlm/conftest.py`` does) and a server whose ``ocr_endpoints`` are both; sends
    ``--ocr-requests`` concurrent ``POST /v1/ocr`` (``engine=vlm``, ``output_format=json``, the
    generated two-page sample report) and SIGKILLs vLLM server ``--kill-index`` (default the
    first: the one the VLM router prefers when both are idle) ``--kill-after`` seconds in. Checks
    that every request is answered 200 and every page exactly once, by the VLM (a page the text
    layer had to answer is counted as a fallback), and which endpoint served it.

The load client is asyncio + httpx (locust is not among the project's dependencies; one async
client is enough for 32 connections on loopback). It shares the machine's cores with the server:
on a 2-core machine the figures under load include the client's own CPU. The load average is
printed before and after each phase; a line says when the machine was not idle (1-minute load
average above 0.5 per core). The cold CLI and ``query --api-url`` runs also report CPU seconds,
which other jobs on a shared machine inflate far less than wall time.

Run (data dir ingested beforehand, or built from ``--corpus`` when missing; the FinanceBench
store of 74 filings takes a long while to build)::

    python tests/benchmarks/bench_api.py --data-dir /tmp/fb-store [--ocr] [--json out.json]

Smoke run (3 generated reports as the store, 10 s of load, 2 new documents)::

    python tests/benchmarks/bench_api.py --work /tmp/apibench --generate 3 --requests 30 --cold 2 \\
        --api-cli 2 --duration 10 --new-docs 2

Runs with the interpreter that runs it (``python -m folioflow ...`` for the CLI and the server),
so run it from the repository root with the project installed or ``/work/wt/devenv.sh`` sourced.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from bench_startup import timed  # the same timed child process (this script's folder is on sys.path)

ROOT = Path(__file__).resolve().parents[2]
#: ``$FOLIOFLOW_CORPUS``, else ``shared/corpus`` beside the checkout or beside a folder above it (a git
#: worktree under ``/work/wt/NAME`` finds ``/work/shared/corpus``).
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS") or next(
    (p / "shared" / "corpus" for p in ROOT.parents if (p / "shared" / "corpus").is_dir()),
    ROOT.parent / "shared" / "corpus"))
FB = CORPUS / "A_finance" / "financebench"
#: Used when the FinanceBench questions file is absent (a fresh clone without the corpus).
FALLBACK_QUESTIONS = [
    "What was the total revenue in fiscal 2025?",
    "How did the operating margin change?",
    "What is the Sharpe ratio of the flagship fund?",
    "Which law governs the agreement?",
    "What were capital expenditures last year?",
    "How much cash did operating activities provide?",
    "What is the company's total debt?",
    "What was the dividend per share?",
    "How many employees does the company have?",
    "What was net income attributable to shareholders?",
]
WORDS = ["revenue", "grew", "on", "advisory", "demand", "while", "trading", "income", "fell", "as", "rates", "rose", "and", "the", "firm", "held", "its", "dividend", "steady", "through", "the", "quarter", "with", "capital", "spending", "focused", "on", "data", "centres", "and", "operating", "cash", "flow", "covering", "interest", "several", "times", "over"]


# -- helpers -----------------------------------------------------------------------------------
def load_avg() -> tuple[float, float, float]:
    """The 1, 5 and 15-minute load averages."""
    return os.getloadavg()


def say_load(label: str) -> tuple[float, float, float]:
    """Print the load average with ``label``; returns it."""
    la = load_avg()
    cores = os.cpu_count() or 1
    busy = " (machine NOT idle: figures are from a shared machine)" if la[0] > 0.5 * cores else ""
    print(f"load average {label}: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} on {cores} cores{busy}", flush=True)
    return la


def pct(values: list[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max of ``values`` (seconds) in milliseconds; empty: all NaN."""
    if not values:
        return {k: float("nan") for k in ("p50", "p95", "p99", "mean", "max")}
    a = np.asarray(values) * 1000.0
    return {"p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
            "p99": float(np.percentile(a, 99)), "mean": float(a.mean()), "max": float(a.max())}


def row(name: str, n: int, p: dict[str, float]) -> str:
    return (f"| {name} | {n} | {p['p50']:,.1f} | {p['p95']:,.1f} | {p['p99']:,.1f} | {p['mean']:,.1f} | "
            f"{p['max']:,.1f} |")


TABLE_HEAD = "| what | n | p50 ms | p95 ms | p99 ms | mean ms | max ms |\n| --- | --- | --- | --- | --- | --- | --- |"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cli(*args: str) -> list[str]:
    """argv running the folioflow CLI with this interpreter."""
    return [sys.executable, "-m", "folioflow", *args]


def questions(path: Path, n: int) -> list[str]:
    """The first ``n`` distinct questions of a FinanceBench JSONL file (``FALLBACK_QUESTIONS`` when absent)."""
    if not path.is_file():
        print(f"questions file {path} absent: using {len(FALLBACK_QUESTIONS)} built-in questions")
        return FALLBACK_QUESTIONS[:n]
    seen: list[str] = []
    for line in path.read_text().splitlines():
        q = json.loads(line)["question"].strip()
        if q and q not in seen:
            seen.append(q)
        if len(seen) == n:
            break
    return seen


def write_report_pdf(path: Path, title: str, codeword: str, pages: int, seed: int) -> Path:
    """A born-digital report of ``pages`` pages of finance-like prose (reportlab), with the
    sentence "The internal code word of this review is CODEWORD." on its last page."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate

    rng = random.Random(seed)
    styles = getSampleStyleSheet()
    story: list[Any] = [Paragraph(title, styles["Title"])]
    for page in range(1, pages + 1):
        story.append(Paragraph(f"{page} Segment review {rng.randint(1, 99)}", styles["Heading1"]))
        for _ in range(5):
            words = [rng.choice(WORDS) for _ in range(60)]
            words[rng.randrange(60)] = f"${rng.randint(10, 9999):,} million"
            story.append(Paragraph(" ".join(words).capitalize() + ".", styles["BodyText"]))
        if page == pages:
            story.append(Paragraph(f"The internal code word of this review is {codeword}.", styles["BodyText"]))
        else:
            story.append(PageBreak())
    path.parent.mkdir(parents=True, exist_ok=True)
    SimpleDocTemplate(str(path), pagesize=LETTER, title=title).build(story)
    return path


def codeword(rng: random.Random) -> str:
    """An invented word no filing contains (letters only, 12 long)."""
    return "zq" + "".join(rng.choice("bcdfghjklmnpstvwxz") for _ in range(10))


class Server:
    """``folioflow api`` on a free loopback port in its own process group; stopped by SIGTERM."""

    def __init__(self, data_dir: Path, log: Path, config: Path | None = None, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        argv = cli("api", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(data_dir),
                   "--log-level", "warning", *(["--config", str(config)] if config else []))
        started = time.perf_counter()
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **(env or {})}, start_new_session=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"folioflow api exited with {self.proc.returncode}:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=5).status_code == 200:
                    break
            time.sleep(0.5)
        else:
            self.stop()
            raise RuntimeError(f"folioflow api not healthy within 600 s:\n{log.read_text()[-3000:]}")
        self.start_s = time.perf_counter() - started

    def stop(self, grace: float = 60.0) -> int | None:
        """SIGTERM (uvicorn's graceful shutdown: the lifespan closes the store), SIGKILL after ``grace``."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode


# -- data dir ----------------------------------------------------------------------------------
def store_exists(data_dir: Path) -> bool:
    """Whether ``folioflow status`` finds a collection with chunks in ``data_dir``."""
    run = subprocess.run(cli("status", "--json", "--data-dir", str(data_dir)), capture_output=True, text=True)
    if run.returncode != 0:
        return False
    return int(json.loads(run.stdout).get("chunks", 0)) > 0


def ensure_store(args: argparse.Namespace) -> None:
    """Ingest ``--corpus`` (or ``--generate`` N reports) into ``--data-dir`` when it holds no documents."""
    if store_exists(args.data_dir):
        print(f"data dir {args.data_dir}: existing index, reused")
        return
    if args.generate:
        corpus = args.work / "generated"
        rng = random.Random(7)
        for i in range(args.generate):
            write_report_pdf(corpus / f"report-{i:03d}.pdf", f"Harrowgate Mutual Review {i}", codeword(rng), 3, i)
    else:
        corpus = args.corpus
        if not corpus.exists():
            sys.exit(f"no index in {args.data_dir} and no corpus at {corpus}: pass --corpus DIR or --generate N")
    print(f"data dir {args.data_dir}: building the index from {corpus} (folioflow ingest) ...", flush=True)
    started = time.perf_counter()
    subprocess.run(cli("ingest", str(corpus), "--data-dir", str(args.data_dir), "--no-progress"), check=True)
    print(f"  built in {time.perf_counter() - started:.1f} s")
    if not store_exists(args.data_dir):
        sys.exit(f"the ingest of {corpus} indexed nothing (symlinks that leave the folder are refused): see above")


# -- (a) latency ---------------------------------------------------------------------------------
def phase_latency(args: argparse.Namespace, qs: list[str], out: dict) -> Server:
    """(a): cold CLI first (no server may hold the store), then the server, then ``query --api-url``."""
    say_load("before (a)")
    cold, cold_cpu = [], []
    for i in range(args.cold):
        argv = cli("query", qs[i % len(qs)], "--json", "--data-dir", str(args.data_dir))
        w, c = timed(argv, args.work / "cold.log", f"{' '.join(argv[2:5])}...")
        cold.append(w)
        cold_cpu.append(c)
        print(f"  cold CLI query {i + 1}/{args.cold}: {w:.2f} s wall, {c:.2f} CPU s", flush=True)
    server = Server(args.data_dir, args.work / "api-a.log")
    print(f"server up at {server.url} in {server.start_s:.1f} s (model load, store open)")
    api: list[float] = []
    hits = 0
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for q in qs[:3]:  # warm-up: first-request costs (lazy imports, caches)
            client.post("/v1/query", json={"text": q, "k": 5, "mode": "hybrid"}).raise_for_status()
        for i in range(args.requests):
            started = time.perf_counter()
            answer = client.post("/v1/query", json={"text": qs[i % len(qs)], "k": 5, "mode": "hybrid"})
            api.append(time.perf_counter() - started)
            answer.raise_for_status()
            hits += bool(answer.json())
    via, via_cpu = [], []
    for i in range(args.api_cli):
        argv = cli("query", qs[i % len(qs)], "--json", "--api-url", server.url, "--data-dir", str(args.data_dir))
        w, c = timed(argv, args.work / "api-cli.log", f"{' '.join(argv[2:5])}...")
        via.append(w)
        via_cpu.append(c)
    pa, pc, pv = pct(api), pct(cold), pct(via)
    print("\n(a) query latency, hybrid, k=5, embedding included")
    print(TABLE_HEAD)
    print(row("cold CLI `folioflow query` (fresh process, wall)", len(cold), pc))
    print(row("`folioflow query --api-url` (fresh process, wall)", len(via), pv))
    print(row("POST /v1/query (client-side, one at a time)", len(api), pa))
    print(f"ratios: cold CLI / API p50 = {pc['p50'] / pa['p50']:,.0f}x; cold CLI / CLI-through-server p50 = "
          f"{pc['p50'] / pv['p50']:.1f}x; goals: API p95 {pa['p95']:.1f} ms (< 100 ms: "
          f"{'met' if pa['p95'] < 100 else 'NOT met'}), CLI through the server p50 {pv['p50'] / 1000:.2f} s "
          f"(< 1 s: {'met' if pv['max'] < 1000 else 'NOT met' if pv['p50'] >= 1000 else 'p50 met, max not'})")
    print(f"CPU seconds per fresh process (median): cold CLI {np.median(cold_cpu):.2f}, through the server "
          f"{np.median(via_cpu):.2f} ({np.median(cold_cpu) / np.median(via_cpu):.1f}x); wall time on a shared machine "
          "is inflated by other jobs, CPU time much less")
    print(f"{hits}/{len(api)} API answers had hits")
    out["latency"] = {"cold_cli_s": cold, "api_cli_s": via, "cold_cli_cpu_s": cold_cpu, "api_cli_cpu_s": via_cpu, "api_ms": pa, "cold_ms": pc, "api_cli_ms": pv,
                      "server_start_s": server.start_s, "answers_with_hits": hits}
    say_load("after (a)")
    return server


# -- (b) load ------------------------------------------------------------------------------------
async def load_run(url: str, qs: list[str], clients: int, duration: float, docs: list[tuple[Path, str]],
                   ingest_timeout: float) -> dict[str, Any]:
    """The load phase: ``clients`` query loops for ``duration`` s and the ingest of ``docs``
    (path, code word), one upload job each. Returns the raw measurements."""
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    t0 = time.perf_counter()
    stop_at = t0 + duration
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    results: dict[str, Any] = {"docs": []}

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:

        async def worker(i: int) -> None:
            n = i
            while time.perf_counter() < stop_at:
                body = {"text": qs[n % len(qs)], "k": 5, "mode": "hybrid"}
                n += clients
                started = time.perf_counter()
                try:
                    answer = await client.post("/v1/query", json=body)
                except httpx.HTTPError as exc:
                    errors[f"{type(exc).__name__}"] += 1
                    continue
                took = time.perf_counter() - started
                if answer.status_code == 200:
                    latencies.append(took)
                else:
                    errors[f"{answer.status_code}: {answer.text[:160]}"] += 1

        async def ingest_one(path: Path, word: str) -> None:
            doc: dict[str, Any] = {"file": path.name, "codeword": word}
            results["docs"].append(doc)
            try:
                with open(path, "rb") as fh:
                    answer = await client.post("/v1/documents", files={"files": (path.name, fh.read(), "application/pdf")})
                doc["submit_status"] = answer.status_code
                if answer.status_code != 202:
                    doc["error"] = answer.text[:300]
                    return
                job_id = answer.json()["id"]
                doc["submitted_s"] = time.perf_counter() - t0
                deadline = time.perf_counter() + ingest_timeout
                while time.perf_counter() < deadline:
                    job = (await client.get(f"/v1/jobs/{job_id}")).json()
                    if job["state"] in ("succeeded", "failed"):
                        break
                    await asyncio.sleep(0.25)
                else:
                    doc["error"] = f"job not finished within {ingest_timeout:.0f} s"
                    return
                doc["finished_s"] = time.perf_counter() - t0
                doc["state"] = job["state"]
                reports = job.get("documents") or []
                doc["report"] = [{k: r.get(k) for k in ("doc_id", "status", "pages", "chunks", "error")} for r in reports]
                doc["doc_id"] = reports[0].get("doc_id") if reports else None
                hits = (await client.post("/v1/query", json={"text": f"Which review has the code word {word}?",
                                                              "k": 10, "mode": "hybrid"})).json()
                ranks = [i + 1 for i, h in enumerate(hits) if h.get("doc_id") == doc["doc_id"] and word in h.get("text", "")]
                doc["searchable_rank"] = ranks[0] if ranks else None
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                doc["error"] = f"{type(exc).__name__}: {exc}"

        async def ingest_all() -> None:
            await asyncio.sleep(min(1.0, duration / 10))
            await asyncio.gather(*(ingest_one(p, w) for p, w in docs))

        ingest = asyncio.create_task(ingest_all())
        await asyncio.gather(*(worker(i) for i in range(clients)))
        results["load_s"] = time.perf_counter() - t0
        await ingest
        results["ingest_done_s"] = time.perf_counter() - t0
    results["latencies"] = latencies
    results["errors"] = dict(errors)
    return results


def api_integrity(url: str) -> dict[str, Any]:
    """Through the API: the collection's point count against the registry's chunk counts."""
    status = httpx.get(url + "/v1/documents", timeout=60).json()
    docs = status.get("document_list") or []
    return {"points": status["chunks"], "registry_chunks": sum(d["chunks"] for d in docs), "documents": len(docs),
            "failed": [d["path"] for d in docs if d["status"] != "indexed"]}


def store_integrity(data_dir: Path) -> dict[str, Any]:
    """In the store itself (the server stopped): per-document points vs registry, duplicates, orphans, pending."""
    from folioflow.flows.settings import Settings
    from folioflow.indexing.store import SearchFilter, open_store

    with open_store(Settings(data_dir=data_dir).store_settings()) as store:
        records = store.list_documents()
        mismatched, duplicated = [], []
        per_doc_total = 0
        for r in records:
            n = store.count(SearchFilter(doc_ids=[r.doc_id]))
            per_doc_total += n
            if n != r.chunks:
                mismatched.append(f"{r.path}: {n} points, registry says {r.chunks}")
            indexes = [(p.get("metadata") or {}).get("chunk_index") for p in store.payloads(r.doc_id)]
            if len(set(indexes)) != len(indexes):
                duplicated.append(f"{r.path}: {len(indexes) - len(set(indexes))} repeated chunk_index")
        total = store.count()
        return {"documents": len(records), "points": total, "points_of_registered_docs": per_doc_total,
                "orphans": total - per_doc_total, "pending": store.pending_count(), "mismatched": mismatched,
                "duplicated": duplicated}


def phase_load(args: argparse.Namespace, qs: list[str], server: Server, out: dict) -> None:
    """(b): load with a concurrent ingest, then the integrity checks (the server is stopped here)."""
    rng = random.Random(int(time.time()))
    new_dir = args.work / f"new-{int(time.time())}"
    docs = []
    for _ in range(args.new_docs):
        word = codeword(rng)
        docs.append((write_report_pdf(new_dir / f"bench-new-{word}.pdf", f"Bench Review {word[-4:]}", word,
                                      args.new_pages, rng.randint(0, 10**6)), word))
    la0 = say_load("before (b)")
    res = asyncio.run(load_run(server.url, qs, args.clients, args.duration, docs, args.ingest_timeout))
    la1 = say_load("after (b)")
    lat = res["latencies"]
    n_err = sum(res["errors"].values())
    p = pct(lat)
    print(f"\n(b) load: {args.clients} concurrent clients for {args.duration:.0f} s, POST /v1/query hybrid k=5, "
          f"while {len(docs)} new documents ({args.new_pages} pages each) were ingested through POST /v1/documents")
    print(TABLE_HEAD)
    print(row("POST /v1/query under load", len(lat), p))
    print(f"requests {len(lat) + n_err} in {res['load_s']:.1f} s ({(len(lat) + n_err) / res['load_s']:.1f}/s), "
          f"errors {n_err} (goal 0){': ' + json.dumps(res['errors']) if n_err else ''}")
    base = out.get("latency", {}).get("api_ms")
    if base:
        print(f"under load / one-at-a-time p50: {p['p50'] / base['p50']:.1f}x, p95: {p['p95'] / base['p95']:.1f}x "
              f"(queries queue behind each other and the ingest on {os.cpu_count()} cores)")
    print("| new document | job | submitted s | finished s | pages | chunks | code word found at rank |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for d in res["docs"]:
        rep = (d.get("report") or [{}])[0]
        print(f"| {d['file']} | {d.get('state', d.get('error', '?'))} | {d.get('submitted_s', float('nan')):.1f} | "
              f"{d.get('finished_s', float('nan')):.1f} | {rep.get('pages')} | {rep.get('chunks')} | "
              f"{d.get('searchable_rank')} |")
    searchable = sum(d.get("searchable_rank") is not None for d in res["docs"])
    within = all(d.get("finished_s", 1e9) <= res["load_s"] for d in res["docs"])
    print(f"new documents searchable when their job ended: {searchable}/{len(docs)}; ingest "
          f"{'finished within' if within else 'ran past'} the load window (all jobs done at {res['ingest_done_s']:.1f} s)")
    via_api = api_integrity(server.url)
    code = server.stop()
    print(f"server stopped (exit {code}{': SIGTERM, orderly shutdown' if code == 143 else ''})")
    in_store = store_integrity(args.data_dir)
    ok = (via_api["points"] == via_api["registry_chunks"] and in_store["orphans"] == 0 and in_store["pending"] == 0
          and not in_store["mismatched"] and not in_store["duplicated"])
    print(f"integrity through the API: {via_api['points']} points, registry chunks {via_api['registry_chunks']}, "
          f"{via_api['documents']} documents, failed {via_api['failed'] or 'none'}")
    print(f"integrity in the store: {in_store['documents']} documents, {in_store['points']} points, "
          f"{in_store['points_of_registered_docs']} of registered documents, orphans {in_store['orphans']}, "
          f"pending {in_store['pending']}, count mismatches {in_store['mismatched'] or 'none'}, "
          f"duplicates {in_store['duplicated'] or 'none'}: {'OK' if ok else 'PROBLEM'}")
    out["load"] = {"latency_ms": p, "requests": len(lat) + n_err, "errors": res["errors"], "seconds": res["load_s"],
                   "docs": res["docs"], "searchable": searchable, "ingest_within_load": within,
                   "integrity_api": via_api, "integrity_store": in_store, "integrity_ok": ok,
                   "load_before": la0, "load_after": la1}


# -- (c) OCR failover ----------------------------------------------------------------------------
def find_vllm(given: str | None) -> tuple[str | None, Path, str]:
    """(vllm executable or None, tiny model dir, why not) for the vLLM CPU engine."""
    model = Path(os.environ.get("FOLIOFLOW_TINY_VLM", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                                / "folioflow" / "tiny-qwen2-vl"))
    candidates = [given, os.environ.get("FOLIOFLOW_VLLM"), os.environ.get("FOLIOFLOW_VLLM_VENV"),
                  str(ROOT / ".venv-vllm"), str(Path(sys.executable).resolve().parents[2] / ".venv-vllm"),
                  str(Path(sys.executable).parents[2] / ".venv-vllm")]
    vllm = None
    for c in filter(None, candidates):
        p = Path(c)
        if p.is_dir() and (p / "bin" / "vllm").exists():
            vllm = str(p / "bin" / "vllm")
            break
        if p.is_file():
            vllm = str(p)
            break
    if vllm is None:
        return None, model, ("vLLM CPU engine absent (no --vllm, $FOLIOFLOW_VLLM[_VENV] or .venv-vllm beside the "
                             "repository or this interpreter's venv); install it with bash infra/vllm/setup_cpu_engine.sh")
    if not (model / "config.json").is_file():
        return None, model, f"tiny test VLM absent at {model}; build it with bash infra/vllm/setup_cpu_engine.sh"
    return vllm, model, ""


class Fleet:
    """``folioflow ocr serve --replicas 2`` with the tiny model (as ``tests/ocr/vlm/conftest.py``)."""

    def __init__(self, vllm: str, model: Path, log_dir: Path):
        self.base = free_port()
        while any(_busy(self.base + i) for i in range(2)):
            self.base = free_port()
        self.urls = [f"http://127.0.0.1:{self.base + i}/v1" for i in range(2)]
        names = [a for n in ("tiny-vlm", "olmocr-tiny", "chandra-tiny", "deepseek-ocr-tiny") for a in ("--served-model-name", n)]
        argv = cli("ocr", "serve", "--model", str(model), "--replicas", "2", "--port", str(self.base), *names,
                   "--vllm", vllm, "--log-dir", str(log_dir), "--max-restarts", "0", "--", "--max-model-len", "4096",
                   "--max-num-seqs", "8", "--enforce-eager", "--dtype", "bfloat16")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**os.environ, "VLLM_CACHE_ROOT": str(log_dir / "vllm-cache")},
                                     start_new_session=True, stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.startswith("endpoints: ") for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError("vLLM fleet not ready:\n" + "\n".join(self.lines[-30:]))

    def pids(self) -> dict[int, int]:
        found = {}
        for line in self.lines:
            if m := re.match(r"started replica (\d+): pid (\d+)", line):
                found[int(m.group(1))] = int(m.group(2))
        return found

    def kill_replica(self, index: int) -> None:
        """SIGKILL one vLLM server's process group (a crash)."""
        os.killpg(self.pids()[index], signal.SIGKILL)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in self.pids().values():  # our own servers only, by pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def _busy(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


#: vLLM's gauges of requests running and waiting, and its counter of finished ones (``/metrics``).
RUNNING = re.compile(r"^vllm:num_requests_(?:running|waiting)(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.M)
FINISHED = re.compile(r"^vllm:request_success_total(?:\{[^}]*\})? ([0-9.eE+-]+)$", re.M)


async def ocr_run(url: str, pdf: bytes, n: int, kill_after: float, victim: str, kill: Any,
                  snapshot: Path) -> tuple[list[Any], float, float | None, float, float]:
    """``n`` concurrent ``POST /v1/ocr`` of ``pdf``; ``kill()`` is called ``kill_after`` s in, after
    saving the ``/metrics`` of the vLLM server ``victim`` (base URL) to ``snapshot``. Returns
    (answers, seconds, killed at s, requests running or waiting on the victim then, requests it
    had finished)."""
    t0 = time.perf_counter()
    killed: dict[str, Any] = {}

    async def killer() -> None:
        await asyncio.sleep(kill_after)
        running = finished = float("nan")
        with contextlib.suppress(httpx.HTTPError):
            async with httpx.AsyncClient(timeout=5) as probe:
                text = (await probe.get(victim + "/metrics")).text
            snapshot.write_text(text)
            running = sum(float(v) for v in RUNNING.findall(text))
            finished = sum(float(v) for v in FINISHED.findall(text))
        kill()
        killed.update(at=time.perf_counter() - t0, running=running, finished=finished)

    async with httpx.AsyncClient(base_url=url, timeout=600, limits=httpx.Limits(max_connections=n + 2)) as client:
        async def one(i: int) -> Any:
            try:
                answer = await client.post("/v1/ocr", files={"file": (f"req-{i}.pdf", pdf, "application/pdf")},
                                           data={"engine": "vlm", "output_format": "json"})
                return answer.status_code, (answer.json() if answer.headers.get("content-type", "").startswith(
                    "application/json") else answer.text[:300]), time.perf_counter() - t0
            except httpx.HTTPError as exc:
                return None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0

        k = asyncio.create_task(killer())
        answers = await asyncio.gather(*(one(i) for i in range(n)))
        if not k.done():
            k.cancel()
    return (list(answers), time.perf_counter() - t0, killed.get("at"), killed.get("running", float("nan")),
            killed.get("finished", float("nan")))


def phase_ocr(args: argparse.Namespace, out: dict) -> None:
    """(c): two vLLM CPU servers, a server using both, concurrent /v1/ocr, one server killed."""
    vllm, model, why = find_vllm(args.vllm)
    if vllm is None:
        print(f"\n(c) OCR failover: SKIPPED: {why}")
        out["ocr"] = {"skipped": why}
        return
    import yaml

    from folioflow.ocr.samples import write_sample_pdf

    say_load("before (c)")
    fleet = Fleet(vllm, model, args.work / "vllm-logs")
    server = None
    try:
        started = time.perf_counter()
        fleet.wait_ready(600)
        print(f"\n(c) two vLLM CPU servers up in {time.perf_counter() - started:.0f} s: {fleet.urls}")
        config = args.work / "ocr.yaml"
        short = {"structured_outputs": {"regex": "[a-z ]{1,12}"}, "temperature": 0.0}
        config.write_text(yaml.safe_dump({"ocr_endpoints": fleet.urls, "vlm": {
            "max_tokens": 64, "extra_body": short, "max_in_flight": 4, "render_workers": 1}}))
        server = Server(args.data_dir, args.work / "api-c.log", config=config)
        pdf = write_sample_pdf(args.work / "ocr-sample.pdf").read_bytes()
        bases = [u.removesuffix("/v1") for u in fleet.urls]
        dead = bases[args.kill_index]
        answers, took, killed, busy, done = asyncio.run(ocr_run(
            server.url, pdf, args.ocr_requests, args.kill_after, dead, lambda: fleet.kill_replica(args.kill_index),
            args.work / "victim-metrics.txt"))
        failed = [a for a in answers if a[0] != 200]
        pages: Counter[int] = Counter()
        by_engine: Counter[str] = Counter()
        endpoints: Counter[str] = Counter()
        fallbacks = 0
        for status, body, _ in answers:
            if status != 200:
                continue
            numbers = [p["number"] for p in body["pages"]]
            if sorted(numbers) != list(range(1, body["page_count"] + 1)):
                failed.append((status, f"pages {numbers} of {body['page_count']}", 0))
            for p in body["pages"]:
                pages[p["number"]] += 1
                by_engine[p["engine"]] += 1
                fallbacks += p["status"] != "ok" or not p["engine"].startswith("vlm")
                content = p["content"] if isinstance(p["content"], dict) else {}
                endpoint = str((content.get("attributes") or {}).get("endpoint", "?"))
                endpoints[endpoint] += 1
        print(f"{args.ocr_requests} concurrent POST /v1/ocr (engine=vlm, 2-page sample) in {took:.1f} s; "
              f"vLLM server {dead} SIGKILLed at {killed if killed is None else round(killed, 1)} s "
              f"with {busy:.0f} requests running or waiting on it and {done:.0f} finished")
        print(f"requests failed: {len(failed)} (goal 0){': ' + str([f[1] for f in failed][:3]) if failed else ''}")
        once = all(v == len(answers) - len([a for a in answers if a[0] != 200]) for v in pages.values())
        print(f"pages answered: {dict(sorted(pages.items()))} per page number over {len(answers)} requests "
              f"({'each page exactly once per request' if once and not failed else 'NOT exactly once'}); "
              f"engines {dict(by_engine)}; not answered by the VLM (fallback/failed): {fallbacks}; "
              f"served by endpoint {dict(endpoints)}")
        out["ocr"] = {"requests": len(answers), "failed": len(failed), "seconds": took, "killed_at_s": killed, "killed": dead, "victim_running": busy, "victim_finished": done,
                      "pages": dict(pages), "engines": dict(by_engine), "fallbacks": fallbacks,
                      "endpoints": dict(endpoints)}
    finally:
        if server is not None:
            server.stop()
        fleet.stop()
        say_load("after (c)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=None, help="Work folder (logs, generated PDFs; default a temp dir)")
    ap.add_argument("--data-dir", type=Path, default=None, help="Data dir holding the index (default WORK/data)")
    ap.add_argument("--corpus", type=Path, default=FB / "pdfs", help="What to ingest when the data dir has no index")
    ap.add_argument("--generate", type=int, default=0, help="Instead of --corpus: N generated 3-page reports")
    ap.add_argument("--questions", type=Path, default=FB / "groundtruth" / "financebench_open_source.jsonl")
    ap.add_argument("--questions-n", type=int, default=50)
    ap.add_argument("--cold", type=int, default=5, help="Cold `folioflow query` runs (fresh processes)")
    ap.add_argument("--requests", type=int, default=200, help="POST /v1/query requests, one at a time")
    ap.add_argument("--api-cli", type=int, default=10, help="`folioflow query --api-url` runs")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60.0, help="Load seconds")
    ap.add_argument("--new-docs", type=int, default=4, help="Documents ingested through the API during the load")
    ap.add_argument("--new-pages", type=int, default=5, help="Pages of each new document")
    ap.add_argument("--ingest-timeout", type=float, default=900.0)
    ap.add_argument("--ocr", action="store_true", help="Also run (c), the OCR failover over two vLLM CPU servers")
    ap.add_argument("--ocr-requests", type=int, default=16)
    ap.add_argument("--kill-after", type=float, default=10.0, help="(c): seconds in when a vLLM server is killed")
    ap.add_argument("--kill-index", type=int, choices=(0, 1), default=0, help="(c): which vLLM server is killed")
    ap.add_argument("--vllm", default=None, help="vllm executable or its venv (default: as folioflow ocr serve finds it)")
    ap.add_argument("--skip", default="", help="Comma-separated phases to skip: a, b")
    ap.add_argument("--json", type=Path, default=None, help="Write every measurement here")
    args = ap.parse_args()
    args.work = args.work or Path(tempfile.mkdtemp(prefix="bench-api-"))
    args.work.mkdir(parents=True, exist_ok=True)
    args.data_dir = args.data_dir or args.work / "data"
    skip = set(filter(None, args.skip.split(",")))
    out: dict[str, Any] = {"load_start": say_load("at start"), "args": {k: str(v) for k, v in vars(args).items()}}
    ensure_store(args)
    qs = questions(args.questions, args.questions_n)
    print(f"{len(qs)} questions; data dir {args.data_dir}; work {args.work}")
    server: Server | None = None
    try:
        if "a" not in skip or "b" not in skip:
            if "a" not in skip:
                server = phase_latency(args, qs, out)
            else:
                server = Server(args.data_dir, args.work / "api-b.log")
            if "b" not in skip:
                phase_load(args, qs, server, out)
    finally:
        if server is not None:
            server.stop()
    if args.ocr:
        phase_ocr(args, out)
    else:
        print("\n(c) OCR failover: not run (pass --ocr; it starts two vLLM CPU servers)")
    out["load_end"] = say_load("at the end")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2, default=str))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
