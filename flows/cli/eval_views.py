"""Implementation of ``folioflow eval``: run the evaluations, print rich tables, write JSON and plots."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from folioflow.flows.cli.options import fail
from folioflow.flows.cli.ui import stderr, stdout
from folioflow.flows.settings import Settings

if TYPE_CHECKING:
    from folioflow.indexing.store import Mode

__all__ = ["parse_engine", "run_eval_chunks", "run_eval_ocr", "run_eval_retrieval"]


def _write_json(path: Path | None, data: Any) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False))
        stderr.print(f"wrote {path}")


def _plot(path: Path | None, series: dict, title: str, ylabel: str, **kwargs) -> None:
    if path is None:
        return
    from folioflow.flows.cli.eval_plot import bar_chart
    from folioflow.ocr.errors import ConfigurationError

    try:
        stderr.print(f"wrote {bar_chart(series, path, title, ylabel, **kwargs)}")
    except ConfigurationError as exc:
        fail(str(exc))


def _progress(total: int, label: str, enabled: bool = True):
    bar = Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=stderr, transient=True, disable=not enabled)
    return bar, bar.add_task(label, total=total)


# ------------------------------------------------------------------------------------------- OCR
def parse_engine(spec: str) -> tuple[Literal["auto", "text", "ocr", "vlm"], str | None]:
    """``"auto"``, ``"text"``, ``"vlm"``, ``"ocr"`` or ``"ocr:NAME"`` -> (routing mode, CPU OCR engine)."""
    mode, _, cpu = spec.partition(":")
    if mode not in ("auto", "text", "ocr", "vlm") or (cpu and mode not in ("ocr", "auto")):
        fail(f"--engine {spec!r}: choose auto, text, ocr, ocr:NAME (a CPU OCR engine) or vlm")
    return cast(Literal["auto", "text", "ocr", "vlm"], mode), cpu or None  # checked above


def run_eval_ocr(tests_files: list[Path], pdfs: Path, engines: list[str], languages: list[str] | None,
                 dpi: int | None, endpoints: list[str], profile: str | None, show: int, json_out: Path | None,
                 plot: Path | None, progress: bool = True) -> None:
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter
    from folioflow.ocr.errors import ConfigurationError, FolioflowError
    from folioflow.ocr.evaluation import evaluate_ocr, load_tests

    if not pdfs.is_dir():
        fail(f"--pdfs {pdfs}: not a folder")
    tests = []
    try:
        for file in tests_files:
            tests += load_tests(file)
    except ConfigurationError as exc:
        fail(str(exc))
    if not tests:
        fail("no tests in " + ", ".join(map(str, tests_files)))
    vlm = None
    if endpoints or profile or any(e.startswith("vlm") for e in engines):
        if not endpoints:
            fail("--engine vlm / --profile need --ocr-endpoint URL (a vLLM server)")
        from folioflow.flows.cli.convert_cmd import _vlm_engine

        try:
            vlm = _vlm_engine(endpoints, profile, None)
        except Exception as exc:  # noqa: BLE001 - typer.BadParameter (no ocr.vlm) or pydantic errors of VlmOptions
            fail(f"VLM engine: {exc}")
    reports = []
    for spec in engines:
        mode, cpu = parse_engine(spec)
        extra: dict[str, Any] = {"cpu_engine": cpu} if cpu else {}
        options = ConvertOptions(engine=mode, languages=languages or ["eng"], dpi=dpi, **extra)
        label = spec if not (vlm and mode in ("auto", "vlm")) else f"{spec}+vlm"
        try:
            converter = DocumentConverter(options, vlm_engine=vlm if mode in ("auto", "vlm") else None)
            converter.warm_up()
        except FolioflowError as exc:
            fail(f"engine {spec}: {exc}")
        pages = len({(t.pdf, t.page) for t in tests})
        bar, task = _progress(pages, f"{label}: pages", progress)
        try:
            with bar:
                reports.append(evaluate_ocr(tests, pdfs, converter, label, on_page=partial(bar.advance, task)))
        finally:
            converter.close()
    if vlm is not None:  # one engine for every converter above (each leaves it open)
        vlm.close()
    print_ocr(reports, show)
    _write_json(json_out, {"tests": [str(f) for f in tests_files], "pdfs": str(pdfs),
                           "engines": [r.as_dict() for r in reports]})
    _plot(plot, {r.engine: {**{t: v["rate"] for t, v in r.by_type.items()}, "overall": r.overall} for r in reports},
          "OCR pass rate per olmOCR-bench test type", "tests passed")


def print_ocr(reports, show: int) -> None:
    """Pass rates per test type (rows) and engine (columns), then failing tests per engine."""
    types = list(dict.fromkeys(t for r in reports for t in r.by_type))
    table = Table(title="OCR evaluation (olmOCR-bench test types)", header_style="bold")
    table.add_column("test type")
    for r in reports:
        table.add_column(r.engine, justify="right")
    for t in types:
        cells = []
        for r in reports:
            row = r.by_type.get(t)
            cells.append(f"{row['rate']:.1%} ({row['passed']}/{row['total']})" if row else "-")
        table.add_row(t, *cells)
    table.add_row("[bold]overall", *(f"[bold]{r.overall:.1%}[/bold] ({sum(o.passed for o in r.outcomes)}/{len(r.outcomes)})"
                                     for r in reports))
    table.add_row("mean per PDF", *(f"{r.per_pdf_mean:.1%}" for r in reports))
    table.add_row("seconds", *(f"{r.seconds:.1f}" for r in reports))
    stdout.print(table)
    for r in reports:
        failed = r.failures()
        if not failed or show <= 0:
            continue
        ft = Table(title=f"{r.engine}: {len(failed)} failing tests" + (f" (first {show})" if len(failed) > show else ""),
                   header_style="bold red")
        for col in ("test", "page", "check", "why"):
            ft.add_column(col, overflow="fold")
        for o in failed[:show]:
            ft.add_row(o.id, f"{o.pdf} p.{o.page}", o.check, o.explanation)
        stdout.print(ft)


# ------------------------------------------------------------------------------------------- retrieval
def _open(settings: Settings, command: str):
    """The store for ``eval COMMAND``, which reads it itself (never through the API server)."""
    from folioflow.flows.cli.query_view import _open_store

    return _open_store(settings, direct=f"eval {command}")


def run_eval_retrieval(settings: Settings, questions_file: Path, k: str, modes: str, own_doc: bool,
                       limit: int | None, tenant: str | None, per_question: bool, json_out: Path | None,
                       plot: Path | None) -> None:
    from folioflow.indexing.embedder import Embedder
    from folioflow.indexing.evaluation import evaluate_retrieval, load_questions
    from folioflow.indexing.evaluation.folio import collection_docs, folio_searchers
    from folioflow.ocr.errors import FolioflowError

    try:
        ks = sorted({int(x) for x in k.split(",") if x.strip()})
    except ValueError:
        fail(f"--k {k!r}: expected comma-separated integers")
    if not ks or ks[0] < 1:
        fail("--k values must be >= 1")
    mode_list = [m.strip() for m in modes.split(",") if m.strip()]
    bad = [m for m in mode_list if m not in ("dense", "sparse", "hybrid")]
    if bad or not mode_list:
        fail(f"--modes: unknown {bad or modes!r}; choose from dense, sparse, hybrid")
    try:
        questions = load_questions(questions_file, limit)
    except FolioflowError as exc:
        fail(str(exc))
    store = _open(settings, "retrieval")
    try:
        info = store.collection_info()
        if info is None:
            fail(f"collection {settings.collection!r} does not exist (nothing ingested yet)")
        embedder = None
        if set(mode_list) - {"sparse"}:
            embedder = Embedder(model=settings.embedding_model or info.get("model"), device=settings.device, precision=settings.embedding_precision)
            embedder.warm_up()
        searchers = folio_searchers(store, embedder, cast("list[Mode]", mode_list), tenant=tenant)  # checked above
        bar, task = _progress(len(questions), "questions")
        try:
            with bar:
                report = evaluate_retrieval(questions, searchers, set(collection_docs(store)), ks, own_doc,
                                            on_question=lambda: bar.advance(task))
        except FolioflowError as exc:
            fail(str(exc))
    finally:
        store.close()
    print_retrieval(report, per_question)
    _write_json(json_out, {"questions_file": str(questions_file), **report.as_dict()})
    series = {}
    for scope in report.scopes:
        for mode, summary in report.summaries[scope].items():
            name = mode if scope == "shared" else f"{mode} (own doc)"
            series[name] = {f"page {key}": v for key, v in summary["page"].items()}
            if scope == "shared":
                series[name].update({f"doc {key}": v for key, v in summary["document"].items()})
    _plot(plot, series, "Retrieval: evidence page and document", "share of questions / MRR")


def print_retrieval(report, per_question: bool = False) -> None:
    evaluated = report.questions - len(report.skipped)
    stdout.print(f"{report.questions} questions, {evaluated} evaluated"
                 + (f", {len(report.skipped)} skipped: their documents are not in the collection "
                    f"({len(report.skipped_docs)} documents, e.g. {', '.join(report.skipped_docs[:3])})"
                    if report.skipped else ""))
    for scope in report.scopes:
        title = ("Whole collection" if scope == "shared" else "Within each question's own documents")
        table = Table(title=f"Retrieval: {title}", header_style="bold")
        table.add_column("mode")
        for level in ("page", "document"):
            if scope == "own" and level == "document":
                continue
            for key in [f"hit@{k}" for k in report.ks] + ["mrr"]:
                table.add_column(f"{level} {key if key != 'mrr' else f'MRR@{report.ks[-1]}'}", justify="right")
        for mode, summary in report.summaries[scope].items():
            cells = []
            for level in ("page", "document"):
                if scope == "own" and level == "document":
                    continue
                cells += [f"{summary[level][key]:.3f}" for key in [f"hit@{k}" for k in report.ks] + ["mrr"]]
            table.add_row(mode, *cells)
        stdout.print(table)
    if per_question:
        table = Table(title="Per question (rank of the first relevant hit; - = none in the top "
                            f"{report.ks[-1]})", header_style="bold")
        for col in ("question", "mode", "scope", "page rank", "doc rank", "top hits"):
            table.add_column(col, overflow="fold")
        for r in report.results:
            table.add_row(r.id, r.mode, r.scope, str(r.page_rank or "-"), str(r.doc_rank or "-"), ", ".join(r.top[:3]))
        stdout.print(table)


# ------------------------------------------------------------------------------------------- chunks
def run_eval_chunks(settings: Settings, documents: list[str], show: int, json_out: Path | None,
                    plot: Path | None, max_tokens: int | None = None) -> None:
    from folioflow.chunking.evaluation import CATEGORIES
    from folioflow.chunking.tokens import HFTokenCounter
    from folioflow.indexing.embedder import DEFAULT_MODEL, default_model_path
    from folioflow.indexing.evaluation.chunks import evaluate_collection_chunks, summarize_chunks
    from folioflow.ocr.errors import FolioflowError

    store = _open(settings, "chunks")
    try:
        info = store.collection_info()
        if info is None:
            fail(f"collection {settings.collection!r} does not exist (nothing ingested yet)")
        model = info.get("model") or DEFAULT_MODEL
        try:
            counter = HFTokenCounter.from_pretrained(default_model_path() if model == DEFAULT_MODEL else model)
        except FolioflowError as exc:
            fail(f"tokenizer of {model}: {exc}")
        keep = (lambda rec: any(d in (rec.path or rec.uri) for d in documents)) if documents else None
        total = len([r for r in store.list_documents() if r.status == "indexed" and (keep is None or keep(r))])
        bar, task = _progress(total, "documents")
        with bar:
            reports = evaluate_collection_chunks(store, settings.documents_dir, counter, keep,
                                                 on_document=lambda: bar.advance(task), max_tokens=max_tokens)
    finally:
        store.close()
    summary = summarize_chunks(reports)
    table = Table(title=f"Chunk invariants: {summary['documents']} documents, {summary['chunks']} chunks "
                        f"({summary['tables']} tables, {summary['formulas']} formulas in their Markdown)",
                  header_style="bold")
    table.add_column("document", overflow="fold")
    table.add_column("chunks", justify="right")
    for c in CATEGORIES:
        table.add_column(c.replace("_", " "), justify="right")
    for r in reports:
        table.add_row(r.path + (" [dim](no converted document)[/dim]" if r.note and "not found" in r.note else ""),
                      str(r.chunks), *(str(r.counts[c]) if r.counts[c] else "[green]0" for c in CATEGORIES))
    table.add_row("[bold]total", str(summary["chunks"]), *(f"[bold]{summary['failures'][c]}" for c in CATEGORIES))
    stdout.print(table)
    failed = [(r.path, cat, why) for r in reports for cat, why in r.failures]
    if failed and show > 0:
        ft = Table(title=f"{len(failed)} failures" + (f" (first {show})" if len(failed) > show else ""),
                   header_style="bold red")
        for col in ("document", "category", "detail"):
            ft.add_column(col, overflow="fold")
        for row in failed[:show]:
            ft.add_row(*row)
        stdout.print(ft)
    _write_json(json_out, {"summary": summary, "documents": [r.as_dict() for r in reports]})
    chunks = max(summary["chunks"], 1)
    _plot(plot, {"chunks failing (share)": {c: summary["failures"][c] / chunks for c in CATEGORIES
                                            if c not in ("tables_cut", "formulas_cut")},
                 "tables/formulas cut (share)": {"tables_cut": summary["failures"]["tables_cut"] / max(summary["tables"], 1),
                                                 "formulas_cut": summary["failures"]["formulas_cut"] / max(summary["formulas"], 1)}},
          "Chunk invariants: failures per category", "share", ylim=None)
