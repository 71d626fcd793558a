"""folioflow as a service: the HTTP API (FastAPI on uvicorn) over one warm process that loads the
embedder once, owns the store and runs ingestion jobs through the existing Prefect flow.

:func:`create_app` builds the ASGI app (``folioflow api`` serves it with uvicorn);
:class:`ApiSettings` holds the server's own settings (API keys, upload and page limits, the
server-side roots that may be ingested by path). See ``docs/service.md``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ApiKey", "ApiSettings", "create_app"]


def __getattr__(name: str) -> Any:
    """Import the server (FastAPI) on first use, so :mod:`folioflow.flows.service.client` stays light."""
    if name == "create_app":
        from folioflow.flows.service.app import create_app

        return create_app
    if name in ("ApiKey", "ApiSettings"):
        from folioflow.flows.service import config

        return getattr(config, name)
    raise AttributeError(name)
