"""Talking to a running folioflow API server (``folioflow api``) over HTTP with httpx: finding one
(the discovery file it writes in the data directory), and the bearer-authenticated JSON calls that
the retriever and the CLI make. No server package (FastAPI) is imported here.

It sits in :mod:`folioflow.indexing` because :class:`~folioflow.indexing.retriever.FolioRetriever`
searches through a server and the packages never import upward; the CLI's calls (status, show,
ingest jobs) are in :mod:`folioflow.flows.service.client`, over :class:`ApiClient`.

Discovery file ``<data_dir>/api.json``: ``{"url": ..., "pid": ..., "collection": ...}``, written
by the server when it starts and removed when it stops; a file whose process is gone (a killed
server) is ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from folioflow.ocr.errors import ServerError

__all__ = ["DISCOVERY_FILE", "ApiClient", "ServerError", "announce", "discover_server", "resolve_server"]

#: File in the data directory that announces a running server (:func:`announce`).
DISCOVERY_FILE = "api.json"


def announce(data_dir: Path, url: str, collection: str = "folioflow") -> Path:
    """Write ``<data_dir>/api.json`` (``{"url", "pid", "collection"}``): CLI commands and
    retrievers on the same data directory and collection then go through the server at ``url``
    (:func:`discover_server`). Returns the file's path."""
    path = Path(data_dir) / DISCOVERY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"url": url, "pid": os.getpid(), "collection": collection}))
    tmp.replace(path)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def discover_server(data_dir: Path | str, collection: str = "folioflow") -> str | None:
    """The URL announced in ``data_dir`` when the announcing process is alive on this machine and
    serves ``collection``; None otherwise (no file, an unreadable one, one a dead server left
    behind, or a server of another collection)."""
    try:
        found = json.loads((Path(data_dir) / DISCOVERY_FILE).read_text())
        url, pid = str(found["url"]), int(found["pid"])
        served = str(found.get("collection", "folioflow"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return url if served == collection and _alive(pid) else None


def resolve_server(api_url: str | None, data_dir: Path | str, collection: str = "folioflow",
                   qdrant_url: str | None = None) -> str | None:
    """The server to go through: ``api_url`` when given, else the one announced in ``data_dir``
    for ``collection`` (:func:`discover_server`), except with a Qdrant server by URL
    (``qdrant_url``), which every process opens itself; None: work on the store directly."""
    if api_url:
        return api_url
    return None if qdrant_url else discover_server(data_dir, collection)


class ApiClient:
    """JSON calls to the server at ``url`` with an optional bearer ``api_key`` (httpx, one
    connection pool; use as a context manager or call :meth:`close`). Every call raises
    :class:`ServerError` naming the URL: with the server's ``detail`` on a 4xx/5xx answer
    (``status`` set), or the connection error when none came."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 60.0):
        import httpx

        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            answer = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServerError(f"cannot reach the folioflow API at {self.url}: {type(exc).__name__}: {exc}") from exc
        if answer.status_code >= 400:
            try:
                detail = answer.json().get("detail")
            except (ValueError, AttributeError):
                detail = answer.text[:200]
            raise ServerError(f"the folioflow API at {self.url} answered {answer.status_code}: {detail}",
                              status=answer.status_code)
        return answer

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """``method path`` (``kwargs`` as httpx takes them: ``json``, ``files``, ``data``,
        ``params``); returns the answer's JSON. Raises :class:`ServerError`."""
        answer = self._send(method, path, **kwargs)
        try:
            return answer.json()
        except ValueError as exc:
            raise ServerError(f"the folioflow API at {self.url} answered {method} {path} with no JSON") from exc

    def request_bytes(self, method: str, path: str, **kwargs: Any) -> bytes:
        """As :meth:`request`, returning the answer's body as bytes."""
        return bytes(self._send(method, path, **kwargs).content)

    def query(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """``POST /v1/query`` with ``body`` (the ``QueryRequest`` fields of docs/service.md); the
        hits, best first (``query --json`` objects)."""
        return list(self.request("POST", "/v1/query", json=body))
