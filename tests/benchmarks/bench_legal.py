"""Legal retrieval benchmark: clause questions over CUAD contracts, folioflow against the LangChain
baseline, side by side in one run.

Data: the CUAD contracts in ``--cuad`` (default ``$FOLIOFLOW_CORPUS/B_legal/cuad``, else ``../shared/corpus/...``): ``pdfs/*/*/*.pdf``
and ``groundtruth/master_clauses.csv``. A CSV row's ``Filename`` is the PDF's file name (matched
after lower-casing and dropping everything but letters and digits: two names differ in spacing);
each category column (``Governing Law``, ``Anti-Assignment``, ...) holds a Python list literal of
the clause excerpts the annotators marked in that contract (``[]``: none), the ``-Answer`` columns a
normalised answer (not used). A contract without a matching row is left out.

Questions: :data:`QUESTIONS`, one per CUAD category, written as a lawyer would ask it (not the
category descriptions). A contract is asked a category's question when it has an excerpt there.

Hit: a returned chunk *holds* an excerpt when at least :data:`HOLD_SHARE` (half) of the excerpt's
word trigrams appear in the chunk (words: lower-cased runs of letters and digits, in both texts;
an excerpt of fewer than three words uses its words instead). The question's rank is the first
returned chunk (1-based) that holds any of the category's excerpts, in the shared store also only
chunks of the asked contract. hit@1, hit@5 and MRR@5 (``1/rank``, 0 past 5) per category and overall.

Settings: per contract (the search filtered to the contract: folioflow ``doc_ids``, the baseline a
payload filter on the file stem) and a shared store of every contract of the run (the question
then names the contract the way a lawyer would, by the party in its file name: "In the Pareteum
agreement, ..."; see :func:`company_name`).

Systems, all over the same contracts: folioflow's ingest (``run_ingest``, the Prefect flow, as in
``bench_retrieval.py``) searched with each of :data:`CONFIGS`, and the LangChain baseline
(PyPDFLoader + RecursiveCharacterTextSplitter 1000/200 + MiniLM + Qdrant local mode; built by
``bench_retrieval.py``'s own functions).

Split: contracts sorted by file name, alternately into a tuning half (even positions) and a
checking half (odd positions); every figure is printed for both. No constant of the retriever was
chosen on the checking half: the figures a profile's constants were chosen on are the tuning
half's (docs/retrieval.md says which).

Usage (stores kept under ``--work`` when given, else a temporary folder; a later run with the same
``--work`` and contracts reuses them: folioflow skips unchanged contracts, the baseline store is
opened as it is, so only the searches run again)::

    python tests/benchmarks/bench_legal.py --limit 4 --work /tmp/bench-legal --json /tmp/bench-legal.json
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import bench_retrieval  # noqa: E402 - after the path set-up; sets the offline/Prefect environment too

ROOT = Path(__file__).resolve().parents[2]
CUAD = Path(os.environ.get("FOLIOFLOW_CORPUS") or ROOT.parent / "shared" / "corpus") / "B_legal" / "cuad"
K = 5
#: Share of an excerpt's word trigrams a chunk must hold to count as holding the clause.
HOLD_SHARE = 0.5

#: One question per CUAD category, in a lawyer's words.
QUESTIONS = {
    "Parties": "Who are the parties to this agreement?",
    "Agreement Date": "On what date was this agreement made?",
    "Effective Date": "When does this agreement take effect?",
    "Expiration Date": "When does this agreement expire, and how long is its initial term?",
    "Renewal Term": "Does the agreement renew automatically, and for how long?",
    "Notice Period To Terminate Renewal": "How much notice must a party give to stop the agreement from renewing?",
    "Governing Law": "Which state's law governs this agreement?",
    "Anti-Assignment": "Can a party assign this agreement without the other party's consent?",
    "Cap On Liability": "Is either party's liability limited, and to what amount?",
    "Uncapped Liability": "Which liabilities are not limited or excluded, for example for gross negligence?",
    "Termination For Convenience": "Can either party terminate for convenience, and on how much notice?",
    "License Grant": "What license does the agreement grant, and to whom?",
    "Non-Transferable License": "Can the licensee transfer or sublicense its rights?",
    "Irrevocable Or Perpetual License": "Is the license perpetual or irrevocable?",
    "Exclusivity": "Is the arrangement exclusive, or may a party deal with others?",
    "Non-Compete": "Is a party restricted from competing with the other?",
    "Competitive Restriction Exception": "What exceptions are there to the restrictions on competition or exclusivity?",
    "No-Solicit Of Employees": "May a party solicit or hire the other party's employees?",
    "Audit Rights": "Can a party inspect or audit the other's books and records?",
    "Minimum Commitment": "Is there a minimum purchase or sales commitment?",
    "Volume Restriction": "Are there limits on the quantities a party may order or sell?",
    "Revenue/Profit Sharing": "How are revenues, royalties or profits shared between the parties?",
    "Post-Termination Services": "What must the parties still do after the agreement ends?",
    "Insurance": "What insurance must a party carry?",
    "Ip Ownership Assignment": "Who owns the intellectual property created under this agreement?",
    "Covenant Not To Sue": "Is a party barred from challenging the other's intellectual property?",
    "Change Of Control": "What happens if a party is acquired or undergoes a change of control?",
    "Rofr/Rofo/Rofn": "Does a party have a right of first refusal or first negotiation?",
    "Warranty Duration": "How long do the warranties last?",
    "Liquidated Damages": "Does the agreement provide for liquidated damages or a termination fee?",
    "Third Party Beneficiary": "Can anyone other than the parties enforce this agreement?",
    "Non-Disparagement": "Must the parties refrain from disparaging each other?",
}

#: folioflow retriever settings scored side by side (FolioRetriever keyword arguments).
CONFIGS: dict[str, dict] = {
    "folioflow defaults": {},
    "folioflow legal profile": {"profile": "legal"},
    "folioflow plain chunks": {"distinct_pages": False, "page_decay": 0.0, "glossary": None, "route_titles": False},
}

_WORDS = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased runs of letters and digits."""
    return _WORDS.findall(text.lower())


def shingles(tokens: list[str]) -> set[tuple[str, ...]]:
    """Word trigrams of ``tokens`` (its words when fewer than three)."""
    if len(tokens) < 3:
        return {(t,) for t in tokens}
    return {tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)}


def holds(chunk: str, excerpt: str) -> bool:
    """Whether ``chunk`` holds ``excerpt`` (module docstring: half of its trigrams)."""
    want = shingles(words(excerpt))
    if not want:
        return False
    toks = words(chunk)
    have = shingles(toks) if len(next(iter(want))) == 3 else {(t,) for t in toks}
    return len(want & have) >= HOLD_SHARE * len(want)


def norm_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_FORMS = re.compile(r"(inc|incorporated|corp|corporation|co|company|ltd|limited|llc|lp|llp|plc|nv|sa|com|holdings?)$",
                    re.IGNORECASE)


_GLUED = re.compile(r"(inc|corp|ltd|llc|lp|plc|holdings)$", re.IGNORECASE)  # unambiguous when glued


def company_name(file_name: str) -> str:
    """The party a lawyer would name the contract by: the file name's first field, CamelCase split
    into words and trailing legal forms dropped, as people write names (``PareteumCorp_2019...`` ->
    ``Pareteum``, ``ElPolloLocoHoldingsInc_...`` -> ``El Pollo Loco``, ``TUNIUCORP_...`` -> ``Tuniu``,
    ``Quaker Chemical Corporation - NON ...`` -> ``Quaker Chemical``)."""
    first = re.split(r"_| - ", Path(file_name).stem)[0].strip().rstrip(",")
    parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", first)
    while len(parts) > 1 and _FORMS.fullmatch(parts[-1]):
        parts.pop()
    if len(parts) == 1 and parts[0].isupper():  # one glued capital word: TUNIUCORP, DRIVENDELIVERIES,INC
        word = parts[0]
        while (m := _GLUED.search(word)) and len(word) - len(m.group(0)) >= 4:
            word = word[: m.start()]
        parts = [word.capitalize()]
    return " ".join(parts)


def load_contracts(cuad: Path, limit: int | None) -> list[dict]:
    """``[{"path", "name", "half", "excerpts": {category: [text]}}]`` sorted by file name."""
    rows = {}
    with (cuad / "groundtruth" / "master_clauses.csv").open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            rows[norm_name(Path(row["Filename"]).stem)] = row
    pdfs = sorted((p for p in (cuad / "pdfs").glob("*/*/*") if p.suffix.lower() == ".pdf"), key=lambda p: p.name)
    out = []
    for path in pdfs:
        row = rows.get(norm_name(path.stem))
        if row is None:
            continue
        excerpts = {}
        for category in QUESTIONS:
            try:
                found = [str(t) for t in ast.literal_eval(row.get(category) or "[]") if str(t).strip()]
            except (ValueError, SyntaxError):
                found = []
            if found:
                excerpts[category] = found
        out.append({"path": path, "name": path.name, "excerpts": excerpts})
    out = out[:limit] if limit else out
    for i, c in enumerate(out):
        c["half"] = "tuning" if i % 2 == 0 else "checking"
    return out


def first_hit_rank(hits: list[tuple[str, str]], excerpts: list[str], doc: str | None) -> int | None:
    """1-based rank of the first ``(doc key, text)`` holding one of ``excerpts`` (of ``doc`` if given)."""
    for rank, (key, text) in enumerate(hits[:K], start=1):
        if (doc is None or key == doc) and any(holds(text, e) for e in excerpts):
            return rank
    return None


def summarise(ranks: list[tuple[str, str, int | None]]) -> dict:
    """``ranks``: ``(half, category, rank)``; figures per half, overall and per category."""
    out: dict = {}
    for half in ("tuning", "checking"):
        chosen = [(c, r) for h, c, r in ranks if h == half]
        per: dict = defaultdict(list)
        for c, r in chosen:
            per[c].append(r)
        out[half] = {"overall": _figures([r for _, r in chosen]),
                     "categories": {c: _figures(rs) for c, rs in sorted(per.items())}}
    return out


def _figures(ranks: list[int | None]) -> dict:
    n = len(ranks)
    if not n:
        return {"n": 0, "hit@1": 0.0, "hit@5": 0.0, "mrr@5": 0.0}
    return {"n": n, "hit@1": sum(r == 1 for r in ranks) / n, "hit@5": sum(r is not None for r in ranks) / n,
            "mrr@5": sum(1.0 / r for r in ranks if r) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cuad", type=Path, default=CUAD)
    ap.add_argument("--limit", type=int, default=None, help="only the first N contracts by file name")
    ap.add_argument("--work", type=Path, default=None, help="keep the stores here (default: a temporary folder)")
    ap.add_argument("--json", type=Path, default=None, help="write every figure and rank here")
    args = ap.parse_args()
    if args.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-legal-")
        args.work = Path(tmp.name)
    args.work.mkdir(parents=True, exist_ok=True)
    contracts = load_contracts(args.cuad, args.limit)
    questions = sum(len(c["excerpts"]) for c in contracts)
    print(f"{len(contracts)} contracts ({sum(c['half'] == 'tuning' for c in contracts)} tuning), "
          f"{questions} questions", flush=True)
    files = [c["path"] for c in contracts]

    t0 = time.perf_counter()
    folio = bench_retrieval.FolioIngest(args.work, clock=False)
    report = folio.run(files)  # a kept --work store: unchanged contracts are skipped
    folio_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    reuse = (args.work / "baseline").exists()
    base_store, base_model = bench_retrieval.open_baseline(args.work, create=not reuse)
    if not reuse:
        bench_retrieval.baseline_pass(files, base_store, base_model, measure_tokens=False)
        bench_retrieval.tag_doc_keys(base_store)
    base_s = time.perf_counter() - t0
    print(f"ingest: folioflow {folio_s:.0f} s ({report['chunks']} chunks, {report['skipped']} skipped, failed "
          f"{report['failed']}), baseline {base_s:.0f} s{' (kept store reused)' if reuse else ''}", flush=True)

    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation import doc_key
    from folioflow.indexing.retriever import FolioRetriever
    from folioflow.indexing.store import open_store

    results: dict = {"contracts": [{"name": c["name"], "half": c["half"]} for c in contracts], "k": K,
                     "hold_share": HOLD_SHARE, "systems": {}}
    store = open_store(Pipeline.store_settings(Settings(data_dir=args.work / "folio")))
    embedder = Embedder(device="cpu").warm_up()
    ids = {doc_key(r.path): r.doc_id for r in store.list_documents()}
    search_base = bench_retrieval.baseline_searcher(base_store)

    def ask(c: dict, category: str, shared: bool) -> str:
        q = QUESTIONS[category]
        return f"In the {company_name(c['name'])} agreement: {q[0].lower()}{q[1:]}" if shared else q

    try:
        systems = {name: FolioRetriever(store=store, embedder=embedder, k=K, **kw) for name, kw in CONFIGS.items()}
        for setting in ("per-contract", "shared store"):
            shared = setting == "shared store"
            for name in [*systems, "LangChain baseline"]:
                ranks = []
                for c in contracts:
                    key = doc_key(c["name"])
                    for category, excerpts in c["excerpts"].items():
                        query = ask(c, category, shared)
                        if name == "LangChain baseline":
                            found = search_base(query, K, None if shared else [key])
                            hits = [(h.doc, h.text) for h in found]
                        elif key not in ids:
                            hits = []  # folioflow failed on this contract: every question misses
                        else:
                            docs = systems[name].invoke(query, **({} if shared else {"doc_ids": [ids[key]]}))
                            hits = [(doc_key(d.metadata.get("path") or ""), d.page_content) for d in docs]
                        ranks.append((c["half"], category, first_hit_rank(hits, excerpts, key if shared else None)))
                results["systems"].setdefault(setting, {})[name] = summarise(ranks)
                results["systems"][setting][name]["ranks"] = ranks
    finally:
        store.close()
        base_store.client.close()
    print_tables(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str))


def print_tables(results: dict) -> None:
    """Overall figures per setting, system and half, then hit@5 per category (checking half)."""
    for setting, systems in results["systems"].items():
        print(f"\n## {setting} (k={K})\n")
        print("| system | half | questions | hit@1 | hit@5 | MRR@5 |\n| --- | --- | --- | --- | --- | --- |")
        for name, fig in systems.items():
            for half in ("tuning", "checking"):
                o = fig[half]["overall"]
                print(f"| {name} | {half} | {o['n']} | {o['hit@1']:.3f} | {o['hit@5']:.3f} | {o['mrr@5']:.3f} |")
        names = list(systems)
        cats = sorted({c for fig in systems.values() for h in ("tuning", "checking") for c in fig[h]["categories"]})
        for half in ("tuning", "checking"):
            print(f"\nper category, {half} half: hit@1 / hit@5 / MRR@5 (n)\n")
            print("| category | " + " | ".join(names) + " |\n| --- |" + " --- |" * len(names))
            for cat in cats:
                cells = []
                for name in names:
                    f = systems[name][half]["categories"].get(cat)
                    cells.append(f"{f['hit@1']:.2f} / {f['hit@5']:.2f} / {f['mrr@5']:.2f} ({f['n']})" if f else "-")
                print(f"| {cat} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
