"""Every store backend through the same behaviour suite (:mod:`tests.indexing.store_suite`).

Edge and local mode run here; a Qdrant server runs the suite when ``QDRANT_URL`` is set
(e.g. ``docker run -p 6333:6333 qdrant/qdrant`` then ``QDRANT_URL=http://localhost:6333``)."""

from __future__ import annotations

import os

import pytest

from .store_suite import ChunkStoreSuite


class TestEdgeStore(ChunkStoreSuite):
    backend = "edge"


class TestLocalStore(ChunkStoreSuite):
    backend = "local"


@pytest.mark.skipif(not os.environ.get("QDRANT_URL"), reason="no Qdrant server: set QDRANT_URL to run the suite on one")
class TestServerStore(ChunkStoreSuite):
    backend = "server"
    url = os.environ.get("QDRANT_URL")
