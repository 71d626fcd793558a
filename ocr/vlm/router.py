"""Least-loaded routing over a fleet of vLLM endpoints, with failover and health probes.

Data parallelism across GPUs, servers and nodes is this router: every page request goes to the
healthy endpoint with the lowest ``in_flight / capacity``, and never more than ``capacity`` requests
are in flight on one endpoint (vLLM batches what it holds; more would only queue there and hide the
load from the other endpoints).

Failure handling (:meth:`Router.complete`), with retries driven by tenacity:

* a ``connect`` failure marks the endpoint **down** at once; a ``disconnect`` or ``timeout`` marks it
  down when an immediate ``/health`` probe also fails (a server that died refuses the probe; a slow
  page, or a keep-alive connection the server closed just as it was reused, does not take a healthy
  server out); three server errors (HTTP 5xx) in a row mark it down.
* The failed request is re-sent to another endpoint (up to ``failovers`` times, short jittered
  back-off). Requests in flight on a dying server all fail this way and move to the survivors, so a
  fleet of 4 keeps serving on 3. Each page is one request at a time, so no page is answered twice.
* A background task probes down endpoints every ``probe_interval_s`` (``/health`` and ``/v1/models``
  must still serve the model) and brings them back.
* When every endpoint is down, requests wait up to ``unavailable_timeout_s`` for one to come back,
  then fail with :class:`~folioflow.ocr.errors.EngineUnavailableError` listing each endpoint's reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential_jitter

from folioflow.ocr.errors import EndpointError, EngineUnavailableError
from folioflow.ocr.vlm.client import ChatResult, EndpointClient, EndpointFailure

__all__ = ["EndpointState", "Router"]

log = logging.getLogger(__name__)


@dataclass
class EndpointState:
    """Live state of one endpoint (mutated only on the router's event loop)."""

    client: EndpointClient
    capacity: int = 16
    in_flight: int = 0
    healthy: bool = True
    reason: str | None = None
    down_since: float | None = None
    leased: int = 0
    completed: int = 0
    failures: int = 0
    server_errors_in_row: int = 0
    served: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.client.url


class Router:
    """Routes requests over ``clients``; call :meth:`survey`, then :meth:`activate`, then
    :meth:`complete` any number of times, then :meth:`close`."""

    def __init__(
        self,
        clients: list[EndpointClient],
        *,
        probe_interval_s: float = 5.0,
        unavailable_timeout_s: float = 120.0,
        failovers: int | None = None,
    ):
        self.endpoints = [EndpointState(client=c) for c in clients]
        self.probe_interval_s = probe_interval_s
        self.unavailable_timeout_s = unavailable_timeout_s
        self.failovers = failovers if failovers is not None else len(clients) + 2
        self.model: str | None = None
        self.events: list[tuple[float, str, str, str]] = []  # (time, url, "down"|"up", reason)
        self._cond = asyncio.Condition()
        self._probe_task: asyncio.Task | None = None

    async def survey(self) -> dict[str, list[str] | str]:
        """Health + models of every endpoint concurrently: url -> served ids, or the failure reason
        (such endpoints start down)."""

        async def one(ep: EndpointState) -> list[str] | str:
            try:
                await ep.client.health()
                ep.served = await ep.client.models()
                return ep.served
            except EndpointError as exc:
                self._set_down(ep, str(exc))
                return str(exc)

        results = await asyncio.gather(*(one(ep) for ep in self.endpoints))
        return {ep.url: r for ep, r in zip(self.endpoints, results, strict=True)}

    async def activate(self, model: str, capacities: dict[str, int]) -> None:
        """Route requests for ``model`` with the given per-endpoint capacities. Endpoints that do not
        serve ``model`` start down (and are probed like any other). Raises
        :class:`EngineUnavailableError` when no endpoint is healthy."""
        self.model = model
        for ep in self.endpoints:
            ep.capacity = max(1, capacities.get(ep.url, ep.capacity))
            if ep.healthy and model not in ep.served:
                self._set_down(ep, f"{ep.url} serves {ep.served or 'nothing'}, not {model!r}")
        if not any(ep.healthy for ep in self.endpoints):
            raise EngineUnavailableError("no usable VLM endpoint: " + self.down_summary())
        self._probe_task = asyncio.get_running_loop().create_task(self._probe_loop())

    def down_summary(self) -> str:
        """One line naming each down endpoint and why."""
        return "; ".join(ep.reason or ep.url for ep in self.endpoints if not ep.healthy) or "none down"

    def _pick(self) -> EndpointState | None:
        ready = [ep for ep in self.endpoints if ep.healthy and ep.in_flight < ep.capacity]
        if not ready:
            return None
        return min(ready, key=lambda ep: (ep.in_flight / ep.capacity, ep.in_flight, ep.leased))

    async def _acquire(self) -> EndpointState:
        async with self._cond:
            while True:
                ep = self._pick()
                if ep is not None:
                    ep.in_flight += 1
                    ep.leased += 1
                    return ep
                if any(ep.healthy for ep in self.endpoints):
                    await self._cond.wait()
                    continue
                last_down = max((ep.down_since or 0.0) for ep in self.endpoints)
                remaining = last_down + self.unavailable_timeout_s - time.monotonic()
                if remaining <= 0:
                    raise EngineUnavailableError(
                        f"all {len(self.endpoints)} VLM endpoints down for "
                        f"{self.unavailable_timeout_s:g}s: {self.down_summary()}"
                    )
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._cond.wait(), remaining)

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[EndpointState]:
        """Hold one request slot on the least-loaded healthy endpoint."""
        ep = await self._acquire()
        try:
            yield ep
        finally:
            async with self._cond:
                ep.in_flight -= 1
                self._cond.notify_all()

    async def complete(self, body: dict) -> ChatResult:
        """Send one chat completion (``body`` without ``model``: the routed model is set here) to the
        least-loaded healthy endpoint, failing over on endpoint errors (see module docstring).
        Raises :class:`EndpointError` after ``failovers`` re-sends, :class:`EngineUnavailableError`
        when the fleet stays down, :class:`~folioflow.ocr.errors.RequestRejectedError` on HTTP 4xx."""
        body = {**body, "model": self.model}
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.failovers + 1),
            reraise=True,
            wait=wait_exponential_jitter(initial=0.05, max=2.0),
            retry=retry_if_exception_type(EndpointError),
        )
        async for attempt in retrying:
            with attempt:
                async with self.lease() as ep:
                    try:
                        result = await ep.client.chat(body)
                    except EndpointFailure as exc:
                        ep.failures += 1
                        await self._on_failure(ep, exc)
                        raise
                    ep.completed += 1
                    ep.server_errors_in_row = 0
                    return result
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def _on_failure(self, ep: EndpointState, exc: EndpointFailure) -> None:
        if exc.kind == "connect":
            await self._mark_down(ep, str(exc))
        elif exc.kind in ("disconnect", "timeout"):
            try:
                await ep.client.health()
            except EndpointError as probe:
                await self._mark_down(ep, f"{exc} (and /health failed: {probe})")
        else:
            ep.server_errors_in_row += 1
            if ep.server_errors_in_row >= 3:
                await self._mark_down(ep, f"3 server errors in a row, last: {exc}")

    def _set_down(self, ep: EndpointState, reason: str) -> None:
        if ep.healthy:
            ep.healthy = False
            ep.down_since = time.monotonic()
            self.events.append((time.time(), ep.url, "down", reason))
            log.warning("VLM endpoint down: %s", reason)
        ep.reason = reason

    async def _mark_down(self, ep: EndpointState, reason: str) -> None:
        async with self._cond:
            self._set_down(ep, reason)
            self._cond.notify_all()

    async def _probe(self, ep: EndpointState) -> None:
        try:
            await ep.client.health()
            served = await ep.client.models()
        except EndpointError as exc:
            ep.reason = str(exc)
            return
        if self.model not in served:
            ep.reason = f"{ep.url} serves {served or 'nothing'}, not {self.model!r}"
            return
        async with self._cond:
            ep.served, ep.healthy, ep.reason, ep.down_since = served, True, None, None
            ep.server_errors_in_row = 0
            self.events.append((time.time(), ep.url, "up", "probe passed"))
            log.warning("VLM endpoint back: %s", ep.url)
            self._cond.notify_all()

    async def _probe_loop(self) -> None:
        while True:
            await asyncio.sleep(self.probe_interval_s)
            down = [ep for ep in self.endpoints if not ep.healthy]
            if down:
                await asyncio.gather(*(self._probe(ep) for ep in down))

    def snapshot(self) -> list[dict]:
        """Per-endpoint figures: url, healthy, reason, capacity, in_flight, completed, failures."""
        return [
            {
                "url": ep.url,
                "healthy": ep.healthy,
                "reason": ep.reason,
                "capacity": ep.capacity,
                "in_flight": ep.in_flight,
                "completed": ep.completed,
                "failures": ep.failures,
            }
            for ep in self.endpoints
        ]

    async def close(self) -> None:
        """Stop probing and close every client."""
        if self._probe_task is not None:
            self._probe_task.cancel()
            with suppress(asyncio.CancelledError):
                await self._probe_task
        await asyncio.gather(*(ep.client.aclose() for ep in self.endpoints), return_exceptions=True)
