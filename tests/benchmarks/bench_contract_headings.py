"""Heading paths of contract chunks: CUAD contracts (``../shared/corpus/B_legal/cuad/pdfs``) through
the text-layer engine and the default chunker; per contract and in total, the share of chunks with a
non-empty heading path, the share whose path names a clause (a title starting with a clause number,
"Article", "Section", a recital, exhibit or schedule), and the chunks marked with a ``role``
(``metadata["role"]``: ``parties``, ``definitions``, ``signature``).

Run (the same command on ``main`` and on a branch compares them)::

    python tests/benchmarks/bench_contract_headings.py [--contracts 10] [--every 9] [--show 0]

Contracts: every ``--every``-th PDF of the corpus in sorted path order from ``--offset``,
``--contracts`` of them (offset 0 is the set the clause rules were developed on; another offset
gives contracts they were not looked at on).
``--show N`` prints the first N chunks' heading paths of each contract.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

#: A heading-path title that names a clause.
CLAUSE_TITLE = re.compile(r"^\s*(\(?[0-9]{1,3}(\.[0-9]{1,3})*[.)]?|\(?[a-z]\)|\(?[ivx]{1,5}\)|article\b|section\b|"
                          r"recitals?\b|whereas\b|exhibit\b|schedule\b|annex\b|appendix\b|§)", re.IGNORECASE)


def contracts(corpus: Path, count: int, every: int, offset: int = 0) -> list[Path]:
    """``count`` contract PDFs: every ``every``-th in sorted path order, from index ``offset``."""
    pdfs = sorted(p for p in (corpus / "B_legal/cuad/pdfs").rglob("*") if p.suffix.lower() == ".pdf")
    return pdfs[offset::max(1, every)][:count]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--contracts", type=int, default=10)
    ap.add_argument("--every", type=int, default=9)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--show", type=int, default=0)
    args = ap.parse_args()
    from folioflow.chunking.chunker import Chunker
    from folioflow.chunking.tokens import default_counter
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import SourceRef

    corpus = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared/corpus"))
    files = contracts(corpus, args.contracts, args.every, args.offset)
    if not files:
        sys.exit(f"no CUAD contracts under {corpus}")
    converter = DocumentConverter(ConvertOptions(engine="text", guard=False, fidelity=False))
    chunker = Chunker(default_counter())
    total, headed, clause = 0, 0, 0
    shares: list[tuple[float, float]] = []
    roles: Counter[str] = Counter()
    started = time.perf_counter()
    print(f"{'contract':60} {'chunks':>6} {'path':>6} {'clause':>6}  roles")
    for path in files:
        document = converter.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
        chunks = chunker.chunk(document)
        n = len(chunks)
        h = sum(1 for c in chunks if c.heading_path)
        k = sum(1 for c in chunks if any(CLAUSE_TITLE.match(t) for t in c.heading_path))
        r = Counter(str(c.metadata["role"]) for c in chunks if c.metadata.get("role"))
        total, headed, clause = total + n, headed + h, clause + k
        shares.append((h / max(n, 1), k / max(n, 1)))
        roles.update(r)
        print(f"{path.name[:60]:60} {n:6d} {h / max(n, 1):6.2f} {k / max(n, 1):6.2f}  {dict(r)}")
        for c in chunks[:args.show]:
            print(f"    {c.index:3d} {c.metadata.get('role', ''):11} {' > '.join(c.heading_path)[:110]!r}  "
                  f"{c.text[:50]!r}")
    print(f"{'total':60} {total:6d} {headed / max(total, 1):6.2f} {clause / max(total, 1):6.2f}  {dict(roles)}")
    print(f"{len(files)} contracts, {total} chunks; non-empty heading path {headed}/{total} "
          f"({headed / max(total, 1):.1%}), naming a clause {clause}/{total} ({clause / max(total, 1):.1%}); "
          f"mean per contract {sum(a for a, _ in shares) / len(shares):.1%} / {sum(b for _, b in shares) / len(shares):.1%}; "
          f"contracts with most chunks pathless {sum(1 for a, _ in shares if a < 0.5)}; "
          f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
