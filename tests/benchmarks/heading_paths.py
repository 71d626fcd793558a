"""Heading-path hygiene of a kept folioflow store: how many chunks carry a lead-in sentence (a
title that :func:`folioflow.ocr.layout.blocks.reads_as_sentence` flags: "... as follows:", "See accompanying
notes ... statements.") somewhere in their heading path, and the most frequent such titles.

Run after ``bench_retrieval.py --keep`` (or on any data directory):
``python tests/benchmarks/heading_paths.py --work STORE [--top 20]`` (``STORE/folio`` or ``STORE``).
"""

from __future__ import annotations

import argparse
import os
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
    try:
        for record in store.list_documents():
            for payload in store.payloads(record.doc_id):
                path = payload["metadata"].get("heading_path") or []
                total += 1
                bad = [t for t in path if reads_as_sentence(t)]
                flagged += bool(bad)
                for title in bad:
                    titles[(Path(record.path).name, title)] += 1
    finally:
        store.close()
    print(f"{data}: {total} chunks, {flagged} ({flagged / max(total, 1):.1%}) with a lead-in sentence in the heading path")
    for (doc, title), n in titles.most_common(args.top):
        print(f"{n:6}  {doc}  {title[:100]}")


if __name__ == "__main__":
    main()
