"""Heading-path hygiene of a kept folioflow store: how many chunks carry a lead-in sentence (a
title that :func:`folioflow.ocr.layout.blocks.reads_as_sentence` flags: "... as follows:", "See accompanying
notes ... statements.") somewhere in their heading path, and the most frequent such titles.

For filings it also counts the levels a reader navigates by (Part > Item > Note):

* chunks whose path holds an ``Item N`` heading, and a ``PART`` heading above it;
* chunks whose path holds a heading that names a Part and an Item together ("Part I - Financial
  Information Item 1. Financial Statements": the Items after it read as its children);
* in documents with ``Note N`` headings, the chunks from the first such chunk to the next chunk of
  another Item (in chunk order): the share whose path still names a note. A heading set at the top
  of every notes page ("NOTES TO CONSOLIDATED FINANCIAL STATEMENTS (Continued)") closes the note it
  stands in and lowers this share. A heuristic: a notes section's own sub-headings keep the note.

Run after ``bench_retrieval.py --keep`` (or on any data directory):
``python tests/benchmarks/heading_paths.py --work STORE [--top 20]`` (``STORE/folio`` or ``STORE``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    from folioflow.flows.pipeline import Pipeline
    from folioflow.flows.settings import Settings
    from folioflow.indexing.store import open_store
    from folioflow.ocr.layout.blocks import reads_as_sentence

    data = args.work / "folio" if (args.work / "folio").is_dir() else args.work
    store = open_store(Pipeline.store_settings(Settings(data_dir=data)))
    total = flagged = 0
    titles: Counter[tuple[str, str]] = Counter()
    levels: Counter[str] = Counter()
    try:
        for record in store.list_documents():
            paths = [p["metadata"].get("heading_path") or []
                     for p in sorted(store.payloads(record.doc_id), key=lambda p: p["metadata"].get("chunk_index", 0))]
            for path in paths:
                total += 1
                bad = [t for t in path if reads_as_sentence(t)]
                flagged += bool(bad)
                for title in bad:
                    titles[(Path(record.path).name, title)] += 1
            _count_levels(paths, levels)
    finally:
        store.close()
    print(f"{data}: {total} chunks, {flagged} ({flagged / max(total, 1):.1%}) with a lead-in sentence in the heading path")
    print(f"Item in the path: {levels['item']} chunks, of which under a PART heading: {levels['part_item']}; "
          f"a heading naming a Part and an Item: {levels['glued']} chunks")
    print(f"notes sections ({levels['notes_docs']} documents with 'Note N' headings): {levels['in_notes']} chunks, "
          f"{levels['named_note']} ({levels['named_note'] / max(levels['in_notes'], 1):.1%}) with a note in the path")
    for (doc, title), n in titles.most_common(args.top):
        print(f"{n:6}  {doc}  {title[:100]}")


_ITEM = re.compile(r"^(?:Item|ITEM)\s+\d{1,2}[A-D]?\b")
_PART = re.compile(r"^PART\s+(?:[IVX]{1,4}|\d)\b", re.IGNORECASE)
_GLUED = re.compile(r"^PART\s+(?:[IVX]{1,4}|\d)\b.*\b(?:Item|ITEM)\s+\d", re.IGNORECASE)
_NOTE = re.compile(r"^(?:NOTE|Note)\s+\d{1,2}\b")


def _count_levels(paths: list[list[str]], levels: Counter[str]) -> None:
    """Add one document's Part / Item / Note counts (see the module docstring) to ``levels``;
    ``paths``: its chunks' heading paths in chunk order."""
    for path in paths:
        items = [i for i, t in enumerate(path) if _ITEM.match(t)]
        levels["item"] += bool(items)
        levels["part_item"] += bool(items) and any(_PART.match(t) for t in path[:items[0]])
        levels["glued"] += any(_GLUED.match(t) for t in path)
    if not any(_NOTE.match(t) for path in paths for t in path):
        return
    levels["notes_docs"] += 1
    inside, item = False, None
    for path in paths:
        here = next((t for t in path if _ITEM.match(t)), None)
        if any(_NOTE.match(t) for t in path) and not inside:
            inside, item = True, here
        elif inside and here != item:
            inside = False
        if inside:
            levels["in_notes"] += 1
            levels["named_note"] += any(_NOTE.match(t) for t in path)


if __name__ == "__main__":
    main()
