"""Prefect flows, settings, sources and the ``folioflow`` CLI (the only package importing Prefect)."""
