"""Async client for one OpenAI-compatible vLLM endpoint (httpx).

:class:`EndpointClient` speaks the four routes folioflow uses: ``GET /health`` (vLLM answers 200 when
its engine is alive), ``GET /v1/models`` (served model ids), ``GET /metrics`` (Prometheus text; read for
the server's concurrency limits) and ``POST /v1/chat/completions``. Failures are mapped onto
folioflow's errors, one line each:

* :class:`EndpointFailure` (an :class:`~folioflow.ocr.errors.EndpointError`) with ``kind``:
  ``connect`` (refused, DNS, connect timeout), ``disconnect`` (the server dropped the connection,
  e.g. it died mid-request), ``timeout`` (no answer within the request timeout), ``server``
  (HTTP 5xx), ``protocol`` (a 200 whose body is not a chat completion);
* :class:`~folioflow.ocr.errors.RequestRejectedError` for HTTP 4xx (the request is wrong for this server).

This module does not retry: the router (:mod:`folioflow.ocr.vlm.router`) decides where a failed request goes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from folioflow.ocr.errors import EndpointError, RequestRejectedError

__all__ = ["EndpointFailure", "ChatResult", "ServerLimits", "EndpointClient", "normalise_url", "parse_limits"]


class EndpointFailure(EndpointError):
    """One request to one endpoint failed; ``kind`` is connect/disconnect/timeout/server/protocol."""

    def __init__(self, endpoint: str, kind: str, detail: str):
        super().__init__(f"{endpoint}: {kind}: {detail}")
        self.endpoint = endpoint
        self.kind = kind


@dataclass
class ChatResult:
    """One chat completion: the answer text, why generation stopped, token counts, who answered."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    model: str
    endpoint: str
    seconds: float


@dataclass
class ServerLimits:
    """Concurrency facts read from ``/metrics``: ``max_num_seqs`` when the server exposes it (newer
    vLLM builds label an info gauge with it), and ``kv_cache_max_concurrency`` (``vllm:cache_config_info``
    in vLLM >= 0.10: how many full-length requests fit in the KV cache)."""

    max_num_seqs: int | None = None
    kv_cache_max_concurrency: float | None = None


_LIMIT_LABELS = ("max_num_seqs", "kv_cache_max_concurrency")


def parse_limits(metrics: str) -> ServerLimits:
    """:class:`ServerLimits` from the Prometheus text exposition format (as vLLM's ``/metrics``
    answers; parsed by ``prometheus_client.parser``): labels ``max_num_seqs="..."`` and
    ``kv_cache_max_concurrency="..."`` on any sample, the first numeric value of each wins. Text
    that is not valid exposition format gives what was read before the bad line (never raises)."""
    found: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(metrics):
            for sample in family.samples:
                for key in _LIMIT_LABELS:
                    if key in sample.labels and key not in found:
                        try:
                            found[key] = float(sample.labels[key])
                        except ValueError:
                            continue
    except ValueError:  # prometheus_client's parser raises ValueError on a malformed line
        pass
    seqs = found.get("max_num_seqs")
    return ServerLimits(
        max_num_seqs=int(seqs) if seqs else None,
        kv_cache_max_concurrency=found.get("kv_cache_max_concurrency"),
    )


def normalise_url(url: str) -> str:
    """``http://host:port`` from a base URL given with or without ``/v1`` and trailing slashes."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[:-3]
    if "://" not in url:
        url = "http://" + url
    return url


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]


class EndpointClient:
    """HTTP client for the endpoint at ``url`` (``http://host:port`` or ``.../v1``).

    ``request_timeout_s``: seconds a chat completion may take (whole answer, not streamed);
    ``connect_timeout_s``: seconds to open a connection; ``health_timeout_s``: timeout of the
    health/models/metrics calls; ``max_connections``: pool size (at least the in-flight limit).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        request_timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        health_timeout_s: float = 5.0,
        max_connections: int = 256,
    ):
        self.url = normalise_url(url)
        self.health_timeout_s = health_timeout_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(request_timeout_s, connect=connect_timeout_s),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )

    async def _get(self, path: str) -> httpx.Response:
        try:
            response = await self._http.get(path, timeout=self.health_timeout_s)
        except httpx.ConnectError as exc:
            raise EndpointFailure(self.url, "connect", _short(exc)) from exc
        except httpx.TimeoutException as exc:
            raise EndpointFailure(
                self.url, "timeout", f"GET {path} took over {self.health_timeout_s:g}s"
            ) from exc
        except httpx.TransportError as exc:
            raise EndpointFailure(self.url, "disconnect", _short(exc)) from exc
        if response.status_code >= 400:
            raise EndpointFailure(self.url, "server", f"GET {path} answered HTTP {response.status_code}")
        return response

    async def health(self) -> None:
        """Raise :class:`EndpointFailure` unless ``GET /health`` answers 2xx."""
        await self._get("/health")

    async def models(self) -> list[str]:
        """Served model ids from ``GET /v1/models``."""
        data = (await self._get("/v1/models")).json()
        return [str(m["id"]) for m in data.get("data", []) if "id" in m]

    async def limits(self) -> ServerLimits:
        """Concurrency facts from ``GET /metrics``; empty when the route is missing or unreadable."""
        try:
            return parse_limits((await self._get("/metrics")).text)
        except EndpointError:
            return ServerLimits()

    async def chat(self, body: dict) -> ChatResult:
        """``POST /v1/chat/completions`` with ``body``; see the module docstring for errors."""
        started = time.perf_counter()
        try:
            response = await self._http.post("/v1/chat/completions", json=body)
        except httpx.ConnectError as exc:
            raise EndpointFailure(self.url, "connect", _short(exc)) from exc
        except httpx.TimeoutException as exc:
            raise EndpointFailure(
                self.url, "timeout", f"no answer within {self._http.timeout.read:g}s"
            ) from exc
        except httpx.TransportError as exc:  # RemoteProtocolError, ReadError...: the server went away
            raise EndpointFailure(self.url, "disconnect", _short(exc)) from exc
        if response.status_code >= 500:
            raise EndpointFailure(self.url, "server", f"HTTP {response.status_code}: {response.text[:200]}")
        if response.status_code >= 400:
            raise RequestRejectedError(
                f"{self.url} rejected the request: HTTP {response.status_code}: "
                f"{' '.join(response.text.split())[:300]}"
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return ChatResult(
                text=choice["message"].get("content") or "",
                finish_reason=choice.get("finish_reason"),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
                model=str(data.get("model", body.get("model", ""))),
                endpoint=self.url,
                seconds=time.perf_counter() - started,
            )
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise EndpointFailure(
                self.url, "protocol", f"not a chat completion: {response.text[:200]}"
            ) from exc

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()
