"""Shared fixtures. The real-document corpus lives beside the project at ``../shared/corpus``
(override with ``FOLIOFLOW_CORPUS``); tests that need it skip with a clear reason when it is absent."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))

# The suite never touches the user's Prefect database (~/.prefect): the test process and the CLI
# subprocesses it starts get a Prefect home of their own, removed at exit. Tests that start
# ``folioflow ingest`` subprocesses give each one its own home as well, so that a killed run's
# ephemeral server cannot hold the database another run starts on. Set before Prefect is imported.
_PREFECT_HOME = tempfile.mkdtemp(prefix="folioflow-tests-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
atexit.register(shutil.rmtree, _PREFECT_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Path of the shared corpus; skips the test when it is absent."""
    if not (CORPUS / "MANIFEST.tsv").is_file():
        pytest.skip(f"corpus absent: {CORPUS} has no MANIFEST.tsv (set FOLIOFLOW_CORPUS to its path)")
    return CORPUS


@pytest.fixture(scope="session")
def prefect_harness():
    """A real Prefect API for flows run in this session (``prefect_test_harness``: a temporary
    server on loopback with its own database, torn down after the session)."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


# The session's vLLM fleet manager once started, and the node id of the last collected test that
# uses the fleet: each vLLM CPU server busy-polls one core, so two idle servers left up until the
# session ends would take both cores of a 2-core CI machine from every later test (Prefect's
# ephemeral server then failed to start in the reliability tests). The fleet stops after its last user.
_FLEET_MANAGERS: list = []
_LAST_FLEET_USER = pytest.StashKey[str]()


def pytest_collection_modifyitems(session, config, items):
    users = [item.nodeid for item in items if "vllm_fleet" in getattr(item, "fixturenames", ())]
    if users:
        config.stash[_LAST_FLEET_USER] = users[-1]


def pytest_runtest_teardown(item, nextitem):
    if item.nodeid == item.config.stash.get(_LAST_FLEET_USER, None):
        for manager in _FLEET_MANAGERS:
            manager.close()


@pytest.fixture(scope="session")
def _fleet_manager(tmp_path_factory):
    """The one vLLM CPU fleet manager of the session (see ``tests/ocr/vlm/conftest.py``): shared by
    every suite, so never more than two servers run; stopped after the last test that uses it."""
    from tests.ocr.vlm.conftest import start_manager

    manager = start_manager(tmp_path_factory)
    _FLEET_MANAGERS.append(manager)
    yield manager
    manager.close()


@pytest.fixture
def vllm_fleet(_fleet_manager):
    """Two running vLLM CPU servers (``tests/ocr/vlm/conftest.py``); one fleet per session."""
    return _fleet_manager.current()
