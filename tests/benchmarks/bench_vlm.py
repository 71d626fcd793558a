"""Benchmark: folioflow's VLM path against a raw client flooding the same vLLM servers.

Prints pages/s, output tokens/s and p50/p95 latency of both clients on the same pages, run side by
side and alternating; folioflow's efficiency (its pages/s / the raw client's) on one endpoint and
on all, the scaling from one endpoint to all, and optionally a sweep over in-flight requests (plot).

    # on running servers (GPU or CPU):
    python tests/benchmarks/bench_vlm.py --endpoint http://gpu1:8000/v1 --endpoint http://gpu1:8001/v1 --pages 256
    # self-contained on the CPU engine (starts 2 tiny-model servers, stops them after):
    python tests/benchmarks/bench_vlm.py --cpu-replicas 2 --pages 48 --plot /tmp/vlm_sweep.png
    # client and server on separate cores, as on a GPU host (server and its preprocessing on core 0,
    # this client and its render pool on core 1):
    python tests/benchmarks/bench_vlm.py --cpu-replicas 1 --server-cores 0 --client-cores 1 --pages 32

On a small CPU machine the server's image preprocessing and the client's rendering share cores, so
the efficiency ratio then measures CPU contention rather than the client; ``--server-cores`` runs
each CPU server's whole process tree on those cores (``pin_cpu_processes``) and ``--client-cores``
keeps this process and its render workers (which inherit the affinity) on the others.

Same as ``folioflow ocr bench`` plus the CPU fleet. Needs ``bash infra/vllm/setup_cpu_engine.sh`` for
the CPU mode.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from folioflow.ocr.vlm.bench import BenchSettings, pages_needed, plot_sweep, print_report, run_bench  # noqa: E402
from folioflow.ocr.vlm.bench_doc import write_bench_pdf  # noqa: E402
from folioflow.ocr.vlm.serve import load_serve_config, plan_servers  # noqa: E402
from folioflow.ocr.vlm.supervisor import Supervisor  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", action="append", default=[], help="vLLM endpoint (repeat)")
    parser.add_argument("--cpu-replicas", type=int, default=0, help="start N CPU servers with the tiny model")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--pages", type=int, default=48)
    parser.add_argument("--profile", default="markdown")
    parser.add_argument("--in-flight", type=int, default=None)
    parser.add_argument("--fixed-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--render-workers", type=int, default=1)
    parser.add_argument("--image-format", choices=["png", "jpeg"], default=None)
    parser.add_argument("--sweep", default="", help="in-flight levels, e.g. 1,2,4,8")
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--server-cores", default="", help="CPU servers: cores for their whole process trees, e.g. 0")
    parser.add_argument("--client-cores", default="", help="cores for this client and its render workers, e.g. 1")
    args = parser.parse_args()

    def cores(text):
        return [int(c) for c in text.split(",") if c]

    if args.client_cores:
        os.sched_setaffinity(0, cores(args.client_cores))

    supervisor = None
    endpoints = list(args.endpoint)
    if args.cpu_replicas:
        model = os.environ.get(
            "FOLIOFLOW_TINY_VLM", str(Path.home() / ".cache" / "folioflow" / "tiny-qwen2-vl")
        )
        config = load_serve_config(
            ROOT / "infra" / "vllm" / "cpu-test.yaml", model=model, replicas=args.cpu_replicas, port=args.port
        )
        if args.server_cores:
            config = config.model_copy(update={"cpu_cores": cores(args.server_cores), "pin_cpu_processes": True})
        specs = plan_servers(config)
        supervisor = Supervisor(specs, log_dir=tempfile.mkdtemp(prefix="bench-vllm-"), echo=lambda line: None)
        supervisor.start()
        if not supervisor.wait_ready(300):
            supervisor.stop()
            sys.exit("CPU servers did not become healthy")
        endpoints += [s.url for s in specs]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = BenchSettings(
                endpoints=endpoints,
                pdf=Path(tmp) / "bench.pdf",
                pages=args.pages,
                profile=args.profile,
                in_flight=args.in_flight,
                fixed_tokens=args.fixed_tokens or None,
                repeats=args.repeats,
                render_workers=args.render_workers,
                image_format=args.image_format,
                sweep=[int(x) for x in args.sweep.split(",") if x],
            )
            write_bench_pdf(settings.pdf, pages_needed(settings))  # fresh pages for every run
            result = run_bench(settings)
    finally:
        if supervisor is not None:
            supervisor.stop()
    print_report(result)
    if args.plot and result.get("sweep"):
        print(f"plot: {plot_sweep(result['sweep'], args.plot)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
