"""``folioflow ingest``, ``query``, ``status`` and ``show`` (filled in by the ingestion spine)."""
