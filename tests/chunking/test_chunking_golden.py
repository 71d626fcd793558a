"""Golden files: the exact chunks of a few documents, so any change in chunking shows up as a diff
to review.

Regenerate after an intended change (then review ``git diff tests/chunking/golden``)::

    FOLIOFLOW_REGEN_GOLDEN=1 PYTHONPATH=$PWD python -m pytest tests/chunking/test_chunking_golden.py

``filing_excerpt`` ships with the repository (``tests/chunking/data``); the others read
``../shared/corpus`` and skip without it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from folioflow.chunking.chunker import Chunker, ChunkerOptions
from folioflow.chunking.tokens import default_counter
from tests.chunking import corpus_docs

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
REGEN = os.environ.get("FOLIOFLOW_REGEN_GOLDEN") == "1"


def summary(chunks) -> list[dict]:
    return [{"index": c.index, "kind": c.kind.value, "heading_path": c.heading_path, "pages": [c.page_start, c.page_end],
             "part": list(c.part) if c.part else None, "token_count": c.token_count,
             "metadata": {k: v for k, v in sorted(c.metadata.items())}, "text": c.text} for c in chunks]


def compare(name: str, chunks) -> None:
    path = GOLDEN / f"{name}.json"
    got = summary(chunks)
    if REGEN:
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.is_file(), f"no golden file {path}: regenerate (see module docstring)"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert got == expected


def test_golden_filing_excerpt():
    doc = corpus_docs.markdown_document(HERE / "data" / "filing_excerpt.md")
    chunks = Chunker(default_counter(), ChunkerOptions(max_tokens=128, furniture_min_pages=2)).chunk(doc)
    compare("filing_excerpt", chunks)


@pytest.mark.corpus
@pytest.mark.parametrize("name,loader", [
    ("docling_multi_page", lambda c: corpus_docs.docling_document(c / corpus_docs.DOCLING / "multi_page.json")),
    ("omnidocbench_chroma", lambda c: corpus_docs.markdown_document(
        c / corpus_docs.OMNIDOC / "docstructbench_llm-raw-scihub-o.O-j.chroma.2005.05.085.pdf_4.md")),
    ("icdar_eu_004", lambda c: corpus_docs.icdar_document(c / corpus_docs.ICDAR / "eu-004-str.xml")),
])
def test_golden_corpus_documents(corpus, name, loader):
    compare(name, Chunker(default_counter()).chunk(loader(corpus)))
