"""The CLI's side of the API server: finding a running server (the discovery file it writes in
the data directory) and calling it. Imports no server package (FastAPI), only httpx."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["DISCOVERY_FILE", "ServerError", "announce", "discover_server", "query_server"]

#: File in the data directory that announces a running server (:func:`announce`).
DISCOVERY_FILE = "api.json"


class ServerError(Exception):
    """The server could not be reached, or answered an error (``str()``: the reason, one line)."""


def announce(data_dir: Path, url: str, collection: str = "folioflow") -> Path:
    """Write ``<data_dir>/api.json`` (``{"url", "pid", "collection"}``): CLI commands on the same
    data directory and collection then go through the server at ``url`` (:func:`discover_server`).
    Returns the file's path."""
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


def discover_server(data_dir: Path, collection: str = "folioflow") -> str | None:
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


def query_server(url: str, body: dict[str, Any], api_key: str | None = None, timeout: float = 60.0) -> list[dict]:
    """``POST {url}/v1/query`` with ``body`` (:class:`~folioflow.flows.service.models.QueryRequest`
    fields); returns the hits (``query --json`` objects). Raises :class:`ServerError` with the
    server's ``detail`` on a 4xx/5xx, or the connection error."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        answer = httpx.post(f"{url.rstrip('/')}/v1/query", json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise ServerError(f"cannot reach the folioflow API at {url}: {type(exc).__name__}: {exc}") from exc
    if answer.status_code >= 400:
        try:
            detail = answer.json().get("detail")
        except ValueError:
            detail = answer.text[:200]
        raise ServerError(f"the folioflow API at {url} answered {answer.status_code}: {detail}")
    return list(answer.json())
