"""``folioflow eval ocr | retrieval | chunks``: scores on your own labelled documents.

Command definitions only; the work is in :mod:`folioflow.flows.cli.eval_views` (imported inside each command so
``--help`` stays fast).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.ingest_cmd import Collection, Config, DataDir, QdrantUrl, _quiet_models

eval_app = typer.Typer(name="eval", no_args_is_help=True,
                       help="Evaluate OCR engines, retrieval and chunking on labelled documents (tables, JSON, plots).")
app.add_typer(eval_app, name="eval")

JsonOut = Annotated[Path | None, typer.Option("--json", help="Write the full results (per test/question/chunk) as JSON")]
PlotOut = Annotated[Path | None, typer.Option("--plot", help="Draw per-category bars to this PNG (needs matplotlib: pip install 'folioflow\\[plot]')")]


@eval_app.command("ocr")
def eval_ocr(
    tests: Annotated[list[Path], typer.Option("--tests", help="olmOCR-bench-format tests (JSONL), repeatable")],
    pdfs: Annotated[Path, typer.Option("--pdfs", help="Folder holding the PDFs the tests name")],
    engine: Annotated[list[str] | None, typer.Option("--engine", help="auto | text | ocr | ocr:NAME (CPU OCR engine) | vlm; repeat to compare engines")] = None,
    lang: Annotated[list[str] | None, typer.Option("--lang", help="OCR language (tesseract code), repeatable")] = None,
    dpi: Annotated[int | None, typer.Option("--dpi", help="Render resolution for OCR/VLM engines")] = None,
    ocr_endpoint: Annotated[list[str] | None, typer.Option("--ocr-endpoint", help="vLLM endpoint URL for the vlm engine, repeatable")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="VLM profile: chandra, deepseek-ocr[:MODE], olmocr, markdown (alias generic), or auto (from the served model id)")] = None,
    failures: Annotated[int, typer.Option("--failures", help="Failing tests listed per engine (all are in --json)")] = 25,
    json_out: JsonOut = None,
    plot: PlotOut = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar")] = True,
) -> None:
    """Run engines over the pages named in olmOCR-bench tests; pass rate per test type and overall.

    Test types: present, absent, order, table, math, baseline (semantics of olmOCR-bench, see
    ocr.evaluation.checks). Exits 1 on unreadable tests or a bad engine choice.
    """
    from folioflow.flows.cli.options import need

    if plot is not None:
        need("plot", "--plot")
    for name in engine or ["auto"]:
        if name == "ocr" or name.startswith("ocr:"):
            need("ocr", f"--engine {name}")
        elif name == "vlm" or ocr_endpoint:
            need("vlm", "--engine vlm")
    _quiet_models()
    from folioflow.flows.cli.eval_views import run_eval_ocr

    run_eval_ocr(tests, pdfs, engine or ["auto"], lang, dpi, ocr_endpoint or [], profile, failures, json_out, plot,
                 progress)


@eval_app.command("retrieval")
def eval_retrieval(
    questions: Annotated[Path, typer.Option("--questions", help="Questions with evidence: FinanceBench JSONL or folioflow's JSONL (see indexing.evaluation.questions)")],
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    k: Annotated[str, typer.Option("--k", help="Cut-offs for hit@k, comma-separated")] = "1,5,10",
    modes: Annotated[str, typer.Option("--modes", help="Retrieval modes, comma-separated: dense, sparse, hybrid")] = "dense,sparse,hybrid",
    own_doc: Annotated[bool, typer.Option("--own-doc/--no-own-doc", help="Also search within each question's own evidence documents")] = True,
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N questions")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="Tenant to search as (tenancy on)")] = None,
    per_question: Annotated[bool, typer.Option("--per-question/--no-per-question", help="Print the per-question table")] = False,
    json_out: JsonOut = None,
    plot: PlotOut = None,
    config: Config = None,
) -> None:
    """hit@k and MRR of the evidence page and document, per retrieval mode, over an ingested collection.

    FinanceBench's 0-based evidence pages are converted to folioflow's 1-based pages; questions whose
    documents are not in the collection are skipped and counted.
    """
    _quiet_models()
    from folioflow.flows.cli.eval_views import run_eval_retrieval
    from folioflow.flows.cli.options import build_settings, need, require_extras

    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    require_extras(settings)
    if plot is not None:
        need("plot", "--plot")
    run_eval_retrieval(settings, questions, k, modes, own_doc, limit, tenant, per_question, json_out, plot)


@eval_app.command("chunks")
def eval_chunks(
    data_dir: DataDir = None,
    qdrant_url: QdrantUrl = None,
    collection: Collection = None,
    document: Annotated[list[str] | None, typer.Option("--document", help="Only documents whose path contains this text, repeatable")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", help="Chunk limit to check (default: the embedding model's own)")] = None,
    failures: Annotated[int, typer.Option("--failures", help="Failures listed (all are in --json)")] = 25,
    json_out: JsonOut = None,
    plot: PlotOut = None,
    config: Config = None,
) -> None:
    """Chunk invariants over an ingested collection: tables or formulas cut, chunks over the token
    limit, chunks without a heading path, chunks whose heading path differs from the headings above
    their text in the converted Markdown, pages with words in no chunk.

    Heading paths are checked against the converted Markdown, so a line the conversion wrongly made
    a heading (or a title it left as body text) is not counted as wrong here: read the paths with
    `folioflow show DOC --chunks`. --json holds every failure: per document, its counts per
    category and a [category, reason] pair for each failure, the reason naming its chunk, page or table."""
    _quiet_models()
    from folioflow.flows.cli.eval_views import run_eval_chunks
    from folioflow.flows.cli.options import build_settings, need, require_extras

    settings = build_settings(config, data_dir=data_dir, qdrant_url=qdrant_url, collection=collection)
    require_extras(settings)
    if plot is not None:
        need("plot", "--plot")
    run_eval_chunks(settings, document or [], failures, json_out, plot, max_tokens)
