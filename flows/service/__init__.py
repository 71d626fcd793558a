"""folioflow as a service: the HTTP API (FastAPI on uvicorn) over one warm process that loads the
embedder once, owns the store and runs ingestion jobs through the existing Prefect flow.

:func:`create_app` builds the ASGI app (``folioflow api`` serves it with uvicorn);
:class:`ApiSettings` holds the server's own settings (API keys, upload and page limits, the
server-side roots that may be ingested by path). See ``docs/service.md``.
"""

from __future__ import annotations

from folioflow.flows.service.app import create_app
from folioflow.flows.service.config import ApiKey, ApiSettings

__all__ = ["ApiKey", "ApiSettings", "create_app"]
