"""Throughput of folioflow's VLM path against a raw client that floods the same servers.

For N pages at a time (a generated PDF of distinct pages, :mod:`folioflow.ocr.vlm.bench_doc`, or the user's),
two clients run side by side, alternating, ``repeats`` times. Every run gets pages no earlier run
sent (:func:`pages_needed` says how many the PDF needs): vLLM caches processed images
(``--mm-processor-cache-gb``) and prefixes of the KV cache, so a page sent a second time costs the
server less, and whichever client ran second would look faster. A PDF with fewer pages is reused
from its start, and the result says so (``pages_reused``).

* **folioflow**: :class:`~folioflow.ocr.vlm.engine.VlmEngine` end to end (process-pool rendering, least-loaded
  routing, validation), one attempt per page;
* **raw**: the pages rendered beforehand, then every request fired at once with ``in_flight``
  requests per endpoint (round robin), no parsing: the most a client can get from these servers.

Both send identical request bodies (same image, prompt, sampling). With ``fixed_tokens`` set (the
default for the random CPU test model), every answer is exactly that many tokens (``ignore_eos``), so
both clients do the same work; pages then end "failed: truncated" in folioflow's view, which is
expected and reported. Figures: pages/s, output tokens/s, p50/p95 page latency (request sent to
answer received, for both clients; folioflow's pages also record their end-to-end time); folioflow
**efficiency** = its pages/s / the raw client's; **scaling** = pages/s on all endpoints / on the first
one; an optional sweep of pages/s against in-flight requests per endpoint, plotted with matplotlib.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import httpx

from folioflow.ocr.render import open_document
from folioflow.ocr.vlm.engine import VlmEngine
from folioflow.ocr.vlm.options import VlmOptions
from folioflow.ocr.vlm.render_pool import RenderPool, RenderRequest, render_handle
from folioflow.ocr.vlm.request import build_body

__all__ = [
    "RunResult",
    "BenchSettings",
    "folioflow_run",
    "raw_run",
    "run_bench",
    "pages_needed",
    "PageSupply",
    "print_report",
    "plot_sweep",
]


@dataclass
class RunResult:
    """One timed run of one client."""

    client: str
    endpoints: int
    in_flight: int
    pages: int
    seconds: float
    output_tokens: int
    latencies: list[float] = field(default_factory=list)
    ok: int = 0
    failed: int = 0

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class BenchSettings:
    """What to run: endpoints, profile, pages, per-endpoint in-flight, answer length, repeats, sweep."""

    endpoints: list[str]
    pdf: Path
    pages: int
    profile: str = "auto"
    in_flight: int | None = None
    fixed_tokens: int | None = 64
    repeats: int = 2
    render_workers: int = 1
    sweep: list[int] = field(default_factory=list)
    request_timeout_s: float = 600.0
    image_format: str | None = None


def _options(s: BenchSettings, endpoints: list[str], in_flight: int | None) -> VlmOptions:
    extra = {"ignore_eos": True} if s.fixed_tokens else {}
    return VlmOptions(
        endpoints=endpoints,
        profile=s.profile,
        max_in_flight=in_flight,
        max_attempts=1,
        max_tokens=s.fixed_tokens,
        extra_body=extra,
        orientation_check="off",
        render_workers=s.render_workers,
        request_timeout_s=s.request_timeout_s,
        image_format=cast(Literal["png", "jpeg"] | None, s.image_format),  # VlmOptions validates it
    )


class PageSupply:
    """Hands out page numbers 1..``total`` in order, so no two runs send the same page; starts over
    (and sets ``reused``) when they run out."""

    def __init__(self, total: int):
        self.total, self.next, self.reused = max(1, total), 0, False

    def take(self, n: int) -> list[int]:
        """The next ``n`` page numbers (1-based)."""
        numbers = []
        for _ in range(n):
            if self.next >= self.total:
                self.next, self.reused = 0, True
            self.next += 1
            numbers.append(self.next)
        return numbers


def folioflow_run(engine: VlmEngine, pdf: Path, numbers: list[int]) -> RunResult:
    """Time ``engine.convert_pages`` over ``numbers`` (1-based pages of ``pdf``; engine already warm)."""
    pages = len(numbers)
    before = engine.report().get("output_tokens", 0)
    with open_document(pdf) as doc:
        started = time.perf_counter()
        done = list(engine.convert_pages(doc, numbers))
        seconds = time.perf_counter() - started
    ok = sum(1 for p in done if p.status.value == "ok")
    capacity = engine.report()["endpoints"][0]["capacity"]
    latencies = [p.attributes.get("request_seconds", p.seconds or 0.0) for p in done]
    return RunResult(
        "folioflow",
        len(engine.options.endpoints),
        capacity,
        pages,
        seconds,
        engine.report()["output_tokens"] - before,
        latencies,
        ok,
        pages - ok,
    )


async def raw_run(
    endpoints: list[str],
    bodies: list[dict] | int,
    in_flight: int,
    timeout_s: float = 600.0,
    make_body: Callable[[int], Awaitable[dict]] | None = None,
    label: str = "raw",
) -> RunResult:
    """Fire every page at once, round robin over ``endpoints``, ``in_flight`` at a time per endpoint.

    ``bodies``: ready request bodies, or a page count with ``make_body(i)`` producing body ``i``
    inside the timed window (the raw client that renders its own pages)."""
    count = bodies if isinstance(bodies, int) else len(bodies)
    urls = [e.rstrip("/").removesuffix("/v1") for e in endpoints]
    clients = [
        httpx.AsyncClient(base_url=u, timeout=timeout_s, limits=httpx.Limits(max_connections=in_flight + 4))
        for u in urls
    ]
    gates = [asyncio.Semaphore(in_flight) for _ in urls]
    latencies: list[float] = []
    tokens = ok = 0

    async def one(i: int) -> None:
        nonlocal tokens, ok
        k = i % len(urls)
        body = await make_body(i) if make_body is not None else bodies[i]  # type: ignore[index]
        async with gates[k]:
            t0 = time.perf_counter()
            response = await clients[k].post("/v1/chat/completions", json=body)
            latencies.append(time.perf_counter() - t0)
        if response.status_code == 200:
            ok += 1
            tokens += (response.json().get("usage") or {}).get("completion_tokens", 0)

    started = time.perf_counter()
    try:
        await asyncio.gather(*(one(i) for i in range(count)))
    finally:
        seconds = time.perf_counter() - started
        await asyncio.gather(*(c.aclose() for c in clients))
    return RunResult(label, len(urls), in_flight, count, seconds, tokens, latencies, ok, count - ok)


async def raw_render_run(
    engine: VlmEngine, pdf: Path, numbers: list[int], in_flight: int, workers: int
) -> RunResult:
    """The raw client doing folioflow's CPU work too: each page of ``numbers`` rendered in a pool of
    ``workers`` processes (same sizing) inside the timed window, then sent at once; no validation or
    parsing."""
    assert engine.profile is not None
    profile, options = engine.profile, engine.options
    pool = RenderPool(workers)

    async def make_body(i: int) -> dict:
        req = RenderRequest(source=str(pdf), password=None, number=numbers[i], sizing=profile.sizing)
        rendered = await pool.render(req)
        body = build_body(
            profile, rendered.data_url, 0, max_tokens=options.max_tokens, extra=options.extra_body
        )
        return {**body, "model": engine.model}

    try:
        await pool.render(RenderRequest(source=str(pdf), password=None, number=1, sizing=profile.sizing))
        return await raw_run(
            options.endpoints, len(numbers), in_flight, options.request_timeout_s, make_body, "raw+render"
        )
    finally:
        pool.close()


def _bodies(engine: VlmEngine, pdf: Path, numbers: list[int]) -> list[dict]:
    """The exact request bodies folioflow sends for attempt 1 of each page (rendered here, untimed)."""
    assert engine.profile is not None
    bodies = []
    with open_document(pdf) as doc:
        for number in numbers:
            req = RenderRequest(source=None, password=None, number=number, sizing=engine.profile.sizing)
            rendered = render_handle(doc.page(number), req)
            body = build_body(
                engine.profile,
                rendered.data_url,
                0,
                max_tokens=engine.options.max_tokens,
                guided=engine.options.guided_decoding,
                extra=engine.options.extra_body,
            )
            bodies.append({**body, "model": engine.model})
    return bodies


def _runs(
    s: BenchSettings,
    endpoints: list[str],
    in_flight: int | None,
    pages: int,
    repeats: int,
    echo: Callable[[str], None],
    supply: PageSupply,
    render_baseline: bool = True,
) -> list[dict[str, RunResult]]:
    """``repeats`` rounds of each client, each run on ``pages`` pages of its own from ``supply``;
    the order of the clients rotates from round to round so drift in the machine's load does not
    favour one of them."""
    engine = VlmEngine(_options(s, endpoints, in_flight))
    try:
        engine.warm_up()
        limit = engine.report()["endpoints"][0]["capacity"]
        warm = _bodies(engine, s.pdf, supply.take(2 * len(endpoints)))
        asyncio.run(raw_run(endpoints, warm, limit, s.request_timeout_s))  # warm-up

        def raw() -> RunResult:
            bodies = _bodies(engine, s.pdf, supply.take(pages))  # rendered before the clock starts
            return asyncio.run(raw_run(endpoints, bodies, limit, s.request_timeout_s))

        clients: dict[str, Callable[[], RunResult]] = {
            "raw": raw,
            "folioflow": lambda: folioflow_run(engine, s.pdf, supply.take(pages)),
        }
        if render_baseline:
            clients["raw+render"] = lambda: asyncio.run(
                raw_render_run(engine, s.pdf, supply.take(pages), limit, max(1, s.render_workers))
            )
        names = list(clients)
        rounds = []
        for r in range(repeats):
            order = names[r % len(names) :] + names[: r % len(names)]
            results = {name: clients[name]() for name in order}
            echo(
                f"  round {r + 1}: "
                + ", ".join(f"{n} {results[n].pages_per_s:.2f} pages/s" for n in names)
                + f" ({len(endpoints)} endpoint(s), {limit} in flight each)"
            )
            rounds.append(results)
        return rounds
    finally:
        engine.close()


def _ratio(rounds: list[dict[str, RunResult]], base: str) -> dict:
    ratios = [r["folioflow"].pages_per_s / r[base].pages_per_s for r in rounds if r[base].pages_per_s]
    return {"mean": statistics.mean(ratios), "min": min(ratios), "max": max(ratios)} if ratios else {}


def _endpoint_sets(s: BenchSettings) -> list[list[str]]:
    """The endpoint sets the benchmark runs on: the first endpoint alone, then all (when several)."""
    return [s.endpoints[:1]] + ([s.endpoints] if len(s.endpoints) > 1 else [])


def _sweep_pages(s: BenchSettings, k: int) -> int:
    return min(s.pages, max(8, 4 * k * len(s.endpoints)))


def pages_needed(s: BenchSettings) -> int:
    """Pages the PDF needs so that no run of :func:`run_bench` sends a page an earlier run sent:
    per endpoint set (the first endpoint, then all), a warm-up of 2 pages per endpoint and
    ``pages`` per client per round; per sweep level, a warm-up and one run of each of two clients."""
    sets = _endpoint_sets(s)
    total = sum(2 * len(eps) + 3 * s.repeats * s.pages for eps in sets)
    total += sum(2 * len(s.endpoints) + 2 * _sweep_pages(s, k) for k in s.sweep)
    return total


def run_bench(s: BenchSettings, echo: Callable[[str], None] = print) -> dict:
    """Run the benchmark (see module docstring) and return every figure as a dict."""
    result: dict = {"pages": s.pages, "endpoints": s.endpoints, "fixed_tokens": s.fixed_tokens, "runs": []}
    sets = _endpoint_sets(s)
    with open_document(s.pdf) as doc:
        supply = PageSupply(doc.page_count)
    summary: dict[int, dict[str, Any]] = {}
    for endpoints in sets:
        echo(f"{len(endpoints)} endpoint(s): {', '.join(endpoints)}")
        rounds = _runs(s, endpoints, s.in_flight, s.pages, s.repeats, echo, supply)
        result["runs"] += [_row(run) for r in rounds for run in r.values()]
        summary[len(endpoints)] = {
            **{
                f"{name}_pages_per_s": statistics.mean(r[name].pages_per_s for r in rounds)
                for name in rounds[0]
            },
            "efficiency": _ratio(rounds, "raw"),
            "efficiency_vs_raw_render": _ratio(rounds, "raw+render"),
        }
    result["summary"] = summary
    if len(sets) > 1:
        one, many = summary[1], summary[len(s.endpoints)]
        result["scaling"] = {
            name: many[f"{name}_pages_per_s"] / one[f"{name}_pages_per_s"]
            for name in ("raw", "raw+render", "folioflow")
        }
    if s.sweep:
        result["sweep"] = []
        for k in s.sweep:
            pages = _sweep_pages(s, k)
            (r,) = _runs(s, s.endpoints, k, pages, 1, echo, supply, render_baseline=False)
            result["sweep"].append(
                {
                    "in_flight": k,
                    "pages": pages,
                    "raw_pages_per_s": r["raw"].pages_per_s,
                    "folioflow_pages_per_s": r["folioflow"].pages_per_s,
                }
            )
    result["pages_reused"] = supply.reused
    if supply.reused:
        echo(
            f"note: the PDF has {supply.total} pages, fewer than the {pages_needed(s)} the runs need; "
            "pages were sent again, so server-side caches may favour later runs"
        )
    return result


def _row(r: RunResult) -> dict:
    return {
        "client": r.client,
        "endpoints": r.endpoints,
        "in_flight": r.in_flight,
        "pages": r.pages,
        "seconds": r.seconds,
        "pages_per_s": r.pages_per_s,
        "output_tokens_per_s": r.tokens_per_s,
        "p50_s": r.percentile(0.5),
        "p95_s": r.percentile(0.95),
        "ok": r.ok,
        "failed": r.failed,
    }


def plot_sweep(sweep: list[dict], path: str | Path, title: str = "") -> Path:
    """Plot pages/s against in-flight requests per endpoint for both clients; write a PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [row["in_flight"] for row in sweep]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [row["raw_pages_per_s"] for row in sweep], marker="o", label="raw flooding client")
    ax.plot(xs, [row["folioflow_pages_per_s"] for row in sweep], marker="s", label="folioflow VlmEngine")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("requests in flight per endpoint")
    ax.set_ylabel("pages / s")
    ax.set_title(title or "VLM throughput vs in-flight requests")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def print_report(result: dict, console=None) -> None:
    """Print the runs as a table, then efficiency, scaling and sweep lines (rich)."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=120)
    tokens = result.get("fixed_tokens")
    table = Table(
        title=f"VLM throughput, {result['pages']} pages" + (f", {tokens} tokens each" if tokens else "")
    )
    for col in (
        "client",
        "endpoints",
        "in flight/ep",
        "seconds",
        "pages/s",
        "out tok/s",
        "p50 s",
        "p95 s",
        "ok/failed",
    ):
        table.add_column(col, justify="right")
    for r in result["runs"]:
        table.add_row(
            r["client"],
            str(r["endpoints"]),
            str(r["in_flight"]),
            f"{r['seconds']:.2f}",
            f"{r['pages_per_s']:.2f}",
            f"{r['output_tokens_per_s']:.0f}",
            f"{r['p50_s']:.2f}",
            f"{r['p95_s']:.2f}",
            f"{r['ok']}/{r['failed']}",
        )
    console.print(table)
    for n, summary in result["summary"].items():
        speeds = ", ".join(
            f"{key.removesuffix('_pages_per_s')} {value:.2f}"
            for key, value in summary.items()
            if key.endswith("_pages_per_s")
        )
        console.print(f"{n} endpoint(s), pages/s: {speeds}")
        for key, label in (
            ("efficiency", "raw (pre-rendered pages)"),
            ("efficiency_vs_raw_render", "raw+render"),
        ):
            e = summary.get(key) or {}
            if e:
                console.print(
                    f"  folioflow / {label} = {e['mean']:.3f} (min {e['min']:.3f}, max {e['max']:.3f})"
                )
    if "scaling" in result:
        console.print(
            f"scaling {len(result['endpoints'])} endpoints / 1: "
            + ", ".join(f"{name} x{value:.2f}" for name, value in result["scaling"].items())
        )
    for row in result.get("sweep", []):
        console.print(
            f"in flight {row['in_flight']:>3}/endpoint ({row['pages']} pages): "
            f"raw {row['raw_pages_per_s']:.2f} "
            f"pages/s, folioflow {row['folioflow_pages_per_s']:.2f} pages/s"
        )
