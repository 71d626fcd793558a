"""Prefect flows, settings, sources and the ``folioflow`` CLI (the only package importing Prefect)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from folioflow.ocr.lazy import lazy_exports

#: public name -> defining module, imported on first use (so importing this package stays cheap)
_EXPORTS: dict[str, str] = {
    "Settings": "folioflow.flows.settings",
    "load_settings": "folioflow.flows.settings",
    "run_ingest": "folioflow.flows.ingest",
    "ingest_flow": "folioflow.flows.ingest",
}

__all__ = [
    "Settings", "load_settings", "run_ingest", "ingest_flow",
]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)

if TYPE_CHECKING:
    from folioflow.flows.ingest import ingest_flow, run_ingest
    from folioflow.flows.settings import Settings, load_settings
