"""``--help`` reads as written: docstring paragraphs reflow to the terminal's width instead of
breaking where the source lines end, and bracketed text in option help ("[default: the
profile's]") is shown, not swallowed as console markup."""

from __future__ import annotations

import os
import subprocess
import sys


def _help(*command: str) -> str:
    env = dict(os.environ, COLUMNS="250", NO_COLOR="1", TERM="dumb")
    done = subprocess.run([sys.executable, "-m", "folioflow.flows.cli", *command, "--help"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_help_paragraphs_reflow_and_keep_bracketed_defaults() -> None:
    ingest = _help("ingest")
    # One docstring paragraph, several source lines: on a wide terminal it is one line of help.
    assert "else the same content hash, with the same embedding model, chunking and OCR settings; --force processes them again." in ingest
    query = _help("query")
    assert "[default: the profile's]" in query
    assert "uri (the document's URI)" in query
    # Inline code in docstrings is rendered, not printed with its backticks.
    assert "`folioflow status`" not in query and "folioflow status" in query
