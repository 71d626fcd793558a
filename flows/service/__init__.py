"""folioflow as a service: the HTTP API (FastAPI on uvicorn) over one warm process that loads the
embedder once, owns the store and runs ingestion jobs through the existing Prefect flow.

:func:`create_app` builds the ASGI app (``folioflow api`` serves it with uvicorn);
:class:`ApiSettings` holds the server's own settings (API keys, upload and page limits, the
server-side roots that may be ingested by path). See ``docs/service.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

#: public name -> defining module, imported on first use (the server's FastAPI app only when asked
#: for, so :mod:`folioflow.flows.service.client` stays light)
_EXPORTS: dict[str, str] = {
    "ApiKey": "folioflow.flows.service.config",
    "ApiSettings": "folioflow.flows.service.config",
    "create_app": "folioflow.flows.service.app",
}

__all__ = ["ApiKey", "ApiSettings", "create_app"]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    from folioflow.flows.service.app import create_app
    from folioflow.flows.service.config import ApiKey, ApiSettings
