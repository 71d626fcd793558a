"""``folioflow convert``: documents to Markdown, HTML and JSON with the OCR engines, no indexing.

Outputs mirror the inputs' relative paths under ``--output``: ``report.pdf`` becomes
``OUT/report.md``, ``OUT/report.html``, ``OUT/report.json`` (and ``OUT/report_images/`` with
``--include-images``); ``OUT/document.schema.json`` is written with JSON output. A document
that fails is reported with its reason and the batch goes on; the exit code is non-zero only when
the run itself cannot proceed (bad options, engine unavailable, no input at all).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.options import VLM_PROFILE_HELP, need

FORMATS = ("markdown", "html", "json")
SUFFIX = {"markdown": ".md", "html": ".html", "json": ".json"}


def _formats(value: str) -> list[str]:
    formats = [f.strip().lower() for f in value.split(",") if f.strip()]
    formats = ["markdown" if f in ("md", "markdown") else f for f in formats]
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise typer.BadParameter(f"unknown format(s) {bad or value!r}; choose from {', '.join(FORMATS)}")
    return list(dict.fromkeys(formats))


def _vlm_engine(endpoints: list[str], profile: str | None, max_image_width: int | None):
    """Build the VLM engine for ``--ocr-endpoint``/``--profile`` (wired to :mod:`folioflow.ocr.vlm`).
    Raises :class:`~folioflow.ocr.errors.ConfigurationError` for an unknown profile."""
    need("vlm", "VLM OCR (--ocr-endpoint/--profile)")
    from folioflow.ocr.vlm import VlmEngine, VlmOptions

    fields: dict[str, Any] = {"endpoints": endpoints}
    if profile:
        fields["profile"] = profile
    if max_image_width:
        fields["max_image_width"] = max_image_width
    return VlmEngine(VlmOptions(**fields))


def _unique_base(output: Path, relative: str, taken: set[Path]) -> Path:
    base = output / Path(relative).with_suffix("")
    candidate, n = base, 2
    while candidate in taken:
        candidate = base.with_name(f"{base.name}-{n}")
        n += 1
    taken.add(candidate)
    return candidate


@app.command("convert")
def convert(
    paths: Annotated[list[str], typer.Argument(help="PDF/image files, folders (recursive) or globs.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder: files under a folder given as input keep their paths below it; files named directly are written at its top; a name already written gets -2, -3, ...")],
    format: Annotated[str, typer.Option("--format", "-f", help="Comma-separated: markdown,html,json.")] = "markdown",
    engine: Annotated[str, typer.Option(help="auto | text | ocr | vlm")] = "auto",
    ocr_endpoint: Annotated[list[str] | None, typer.Option("--ocr-endpoint", help="vLLM endpoint URL (repeatable).")] = None,
    profile: Annotated[str | None, typer.Option(help=VLM_PROFILE_HELP)] = None,
    cpu_engine: Annotated[str | None, typer.Option("--cpu-engine", help="CPU OCR engine for scans: auto, tesseract, rapidocr.")] = None,
    language: Annotated[list[str] | None, typer.Option("--lang", "--language", "-l", help="OCR language, e.g. eng, deu (repeatable).")] = None,
    page_range: Annotated[str | None, typer.Option("--page-range", help='Pages to convert, e.g. "1-5,9".')] = None,
    dpi: Annotated[int | None, typer.Option(help="Render resolution for OCR, dots per inch.")] = None,
    max_image_width: Annotated[int | None, typer.Option("--max-image-width", help="Cap on image width sent to OCR/VLM and on figure crops, pixels.")] = None,
    include_headers_footers: Annotated[bool, typer.Option("--include-headers-footers", help="Keep page headers/footers in Markdown/HTML.")] = False,
    include_images: Annotated[bool, typer.Option("--include-images", help="Save figure crops beside the Markdown and link them.")] = False,
    password: Annotated[str | None, typer.Option(help="Password for encrypted PDFs.")] = None,
) -> None:
    """Convert documents to Markdown, HTML and/or JSON without indexing them.

    A document that fails (unreadable, not a PDF or image, a path that does not exist) is listed
    with its reason in the failures table, and the others are converted. Exit codes follow
    `ingest`'s: 0 when every document was converted or failed with its reason; 1 when the run
    cannot proceed (no input document at all, a missing extra); 2 for a bad option (format,
    engine, page range) or an OCR engine that cannot start."""
    from pydantic import ValidationError
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from folioflow.flows.cli.convert_report import ConvertStats, print_summary, write_outputs
    from folioflow.flows.cli.ui import stdout
    from folioflow.flows.sources import discover
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.errors import ConfigurationError, FolioflowError
    from folioflow.ocr.export import write_schema
    from folioflow.ocr.schema import SourceRef

    console = Console(stderr=True)
    formats = _formats(format)
    if engine not in ("auto", "text", "ocr", "vlm"):
        raise typer.BadParameter(f"unknown engine {engine!r}; choose auto, text, ocr or vlm", param_hint="--engine")
    if engine == "ocr":
        need("ocr", "--engine ocr")
    if profile and not ocr_endpoint:  # VlmOptions would fail with a traceback ("endpoints: Field required")
        raise typer.BadParameter("a VLM output profile is used only with --ocr-endpoint (the vLLM server that runs "
                                 "the model)", param_hint="--profile")
    try:
        # an unknown profile raises ConfigurationError here: exit 2 below, as for other bad options
        vlm = _vlm_engine(ocr_endpoint, profile, max_image_width) if ocr_endpoint else None
        options = ConvertOptions(engine=cast(Literal["auto", "text", "ocr", "vlm"], engine), cpu_engine=cpu_engine, languages=language or ["eng"],
                                 dpi=dpi, max_image_width=max_image_width, page_range=page_range)
        converter = DocumentConverter(options, vlm_engine=vlm)
        converter.warm_up()
    except ValidationError as exc:
        console.print(f"[red]error:[/] {exc.errors()[0]['msg']}")
        raise typer.Exit(2) from None
    except (ConfigurationError, FolioflowError) as exc:
        console.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from None

    discovery = discover(paths)
    if not discovery.files and not discovery.errors:
        console.print("[red]error:[/] no input documents")
        raise typer.Exit(1)
    output.mkdir(parents=True, exist_ok=True)
    if "json" in formats:
        write_schema(output / "document.schema.json")
    stats = ConvertStats()
    for problem in discovery.errors:
        stats.fail(problem.display, problem.error)
    taken: set[Path] = set()
    started = time.perf_counter()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[pages]} pages"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("converting", total=len(discovery.files), pages=0)

        def on_page(_page) -> None:
            stats.page_done()
            progress.update(task, pages=stats.pages_done)

        for found in discovery.files:
            progress.update(task, description=f"converting {found.path[-40:]}")
            try:
                source = SourceRef(uri=found.uri, path=found.path, source="cli", size=found.size, mtime=found.mtime)
                local = found.local_path
                assert local is not None  # discover() lists local files only
                document = converter.convert(
                    DocumentInput(data=local, source=source, password=password), on_page=on_page)
                base = _unique_base(output, found.path, taken)
                write_outputs(document, local, base, formats, include_headers_footers, include_images,
                              password, dpi or 150, max_image_width)
                stats.add(found.display, document)
            except FolioflowError as exc:
                stats.fail(found.display, str(exc))
            except Exception as exc:  # noqa: BLE001 - a bug on one document must not stop the batch
                stats.fail(found.display, f"internal error: {type(exc).__name__}: {exc}")
            progress.advance(task)
    converter.close()
    if vlm is not None:  # the converter leaves the engine it was given open
        vlm.close()
    stats.seconds = time.perf_counter() - started
    print_summary(stdout, stats, output)
