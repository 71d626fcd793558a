"""Reliability tests run offline (no hub lookups, no Prefect analytics); tesseract single-threaded."""

from __future__ import annotations

import os

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_THREAD_LIMIT", "1")
