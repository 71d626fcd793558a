"""``folioflow ocr serve`` (start and supervise vLLM servers) and ``folioflow ocr bench``."""

from __future__ import annotations

import json
import signal
import tempfile
from pathlib import Path
from typing import Any

import typer

from folioflow.flows.cli import app
from folioflow.flows.cli.options import need

ocr_app = typer.Typer(
    help="OCR on vLLM: serve document VLMs on GPUs, benchmark endpoints.", no_args_is_help=True,
)
app.add_typer(ocr_app, name="ocr")


def _gpu_list(text: str | None) -> list[int] | None:
    if text is None:
        return None
    text = text.strip()
    if text.lower() in ("", "cpu", "none"):
        return []
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"--gpus takes indices like 0,1,2,3 (got {text!r})") from None


@ocr_app.command("serve", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def serve(
    ctx: typer.Context,
    model: str | None = typer.Option(
        None, "--model", help="Profile (chandra, olmocr, deepseek-ocr, ...) or checkpoint path / HF id"
    ),
    gpus: str | None = typer.Option(
        None,
        "--gpus",
        help="GPU indices, e.g. 0,1,2,3, or 'cpu' (default: every GPU nvidia-smi lists, else cpu)",
    ),
    tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "-tp", min=1),
    data_parallel_size: int | None = typer.Option(
        None, "--data-parallel-size", "-dp", min=1, help="One server with vLLM's own data parallelism"
    ),
    port: int | None = typer.Option(None, "--port", help="Port of the first server (default 8000)"),
    host: str | None = typer.Option(None, "--host", help="Interface to listen on (default 127.0.0.1)"),
    replicas: int | None = typer.Option(None, "--replicas", min=1, help="CPU servers to start (CPU only)"),
    served_model_name: list[str] | None = typer.Option(None, "--served-model-name"),
    config: Path | None = typer.Option(
        None, "--config", exists=True, dir_okay=False, help="YAML from infra/vllm/"
    ),
    node: str | None = typer.Option(None, "--node", help="Node section of a multi-node config"),
    vllm: str | None = typer.Option(
        None,
        "--vllm",
        help="vllm executable or venv (default: $FOLIOFLOW_VLLM, $FOLIOFLOW_VLLM_VENV, ./.venv-vllm, PATH)",
    ),
    log_dir: Path | None = typer.Option(
        None, "--log-dir", help="Server logs (default: a temporary folder)"
    ),
    max_restarts: int | None = typer.Option(None, "--max-restarts", min=0),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the exact commands and exit"),
) -> None:
    """Start vLLM servers for a model, wait until they answer, print the endpoints, restart any that
    crashes, stop them all on Ctrl-C. Arguments after -- go to every vllm serve."""
    need("vlm", "folioflow ocr serve")
    from folioflow.ocr.errors import ConfigurationError
    from folioflow.ocr.vlm.serve import (
        ServeConfig,
        detect_gpus,
        format_command,
        load_serve_config,
        plan_servers,
    )
    from folioflow.ocr.vlm.supervisor import Supervisor

    overrides: dict[str, Any] = dict(
        model=model,
        gpus=_gpu_list(gpus),
        tensor_parallel_size=tensor_parallel_size,
        data_parallel_size=data_parallel_size,
        port=port,
        host=host,
        replicas=replicas,
        served_model_name=served_model_name or None,
        vllm=vllm,
        log_dir=str(log_dir) if log_dir else None,
        max_restarts=max_restarts,
    )
    try:
        if config is not None:
            cfg = load_serve_config(config, node, **overrides)
        else:
            if model is None:
                raise typer.BadParameter("--model (or --config) is required")
            if overrides["gpus"] is None and replicas is None:
                overrides["gpus"] = detect_gpus()
            cfg = ServeConfig(**{k: v for k, v in overrides.items() if v is not None})
        if ctx.args:
            cfg = cfg.model_copy(update={"extra_args": cfg.extra_args + list(ctx.args)})
        specs = plan_servers(cfg)
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    endpoints = " ".join(f"--ocr-endpoint {s.url}" for s in specs)
    if dry_run:
        for spec in specs:
            typer.echo(format_command(spec))
        typer.echo(f"# endpoints: {endpoints}")
        return
    logs = Path(cfg.log_dir) if cfg.log_dir else Path(tempfile.mkdtemp(prefix="folioflow-vllm-"))
    sup = Supervisor(
        specs,
        log_dir=logs,
        health_timeout_s=cfg.health_timeout_s,
        max_restarts=cfg.max_restarts,
        echo=lambda line: typer.echo(line),
    )

    def _terminate(signum, frame):  # SIGTERM behaves like Ctrl-C
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    # Python turns SIGINT into KeyboardInterrupt only when SIGINT was not ignored at start-up, and a
    # shell ignores it for commands it runs in the background (`cmd &` without job control): the
    # launcher would then never stop its servers on SIGINT. Install the handler explicitly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    typer.echo(f"logs: {logs}")
    try:
        sup.start()
        if sup.wait_ready():
            typer.echo(f"endpoints: {endpoints}")
        else:
            typer.echo("not every server became healthy; still supervising (see logs)")
        sup.run()
    except KeyboardInterrupt:
        typer.echo("stopping servers")
    finally:
        sup.stop()
        typer.echo("all servers stopped")


@ocr_app.command("bench")
def bench(
    ocr_endpoint: list[str] = typer.Option(..., "--ocr-endpoint", help="Endpoint URL (repeat for several)"),
    pages: int = typer.Option(32, "--pages", min=1),
    profile: str = typer.Option("auto", "--profile", help="VLM profile: chandra, deepseek-ocr[:MODE], olmocr, markdown (alias generic), or auto (from the served model id)"),
    pdf: Path | None = typer.Option(
        None, "--pdf", exists=True, dir_okay=False, help="Default: generated pages, as many as the runs need"
    ),
    in_flight: int | None = typer.Option(
        None, "--in-flight", min=1, help="Per endpoint (default: server limit)"
    ),
    fixed_tokens: int = typer.Option(
        64, "--fixed-tokens", min=0, help="Answer length forced with ignore_eos (0 = the model's own answers)"
    ),
    repeats: int = typer.Option(2, "--repeats", min=1),
    sweep: str | None = typer.Option(None, "--sweep", help="In-flight levels to sweep, e.g. 1,2,4,8"),
    plot: Path | None = typer.Option(None, "--plot", help="PNG of throughput vs in-flight requests"),
    json_out: Path | None = typer.Option(None, "--json", help="Write every figure as JSON"),
    render_workers: int = typer.Option(1, "--render-workers", min=0),
    image_format: str | None = typer.Option(
        None, "--image-format", help="png or jpeg (default: the profile's)"
    ),
) -> None:
    """folioflow's pages/s, tokens/s and p50/p95 latency against a raw flooding client sending the
    same request bodies; efficiency ratio and 1 -> N endpoint scaling. Every run sends pages no
    earlier run sent (the server's image and prefix caches would favour the later client)."""
    need("vlm", "folioflow ocr bench")
    if plot:
        need("plot", "--plot")
    from folioflow.ocr.vlm.bench import BenchSettings, pages_needed, plot_sweep, print_report, run_bench
    from folioflow.ocr.vlm.bench_doc import write_bench_pdf

    levels = [int(x) for x in sweep.split(",")] if sweep else ([1, 2, 4, 8, 16] if plot else [])
    with tempfile.TemporaryDirectory(prefix="folioflow-bench-") as tmp:
        settings = BenchSettings(
            endpoints=ocr_endpoint,
            pdf=Path(tmp) / "bench.pdf",
            pages=pages,
            profile=profile,
            in_flight=in_flight,
            fixed_tokens=fixed_tokens or None,
            repeats=repeats,
            render_workers=render_workers,
            sweep=levels,
            image_format=image_format,
        )
        # every run gets pages no earlier run sent (server caches), so generate enough of them
        settings.pdf = pdf or write_bench_pdf(settings.pdf, pages_needed(settings))
        result = run_bench(settings, echo=typer.echo)
    print_report(result)
    if plot and result.get("sweep"):
        typer.echo(f"plot: {plot_sweep(result['sweep'], plot)}")
    if json_out:
        json_out.write_text(json.dumps(result, indent=2, default=str))
