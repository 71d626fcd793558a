"""Benchmark: hand-written code against the maintained libraries that replaced it (issue 22).

Three measurements, side by side in one process, each checking that both sides give the same
answers before timing them:

* **tables**: the HTML table row scanner of :mod:`folioflow.chunking.tables` (``_RowScanner``, an
  ``html.parser.HTMLParser``) against the same scan through BeautifulSoup 4 (``html.parser``
  tree builder, the only bs4 backend that records source positions, which the row markup needs;
  lxml is timed too when installed, parse only) on every HTML table of the corpus: OmniDocBench
  ground truth (``OmniDocBench_demo.json`` and ``mds/*.md``) and the ICDAR 2013 tables with spans;
* **sniff**: MIME sniffing of the first 1024 bytes of corpus files: the magic-byte checks folioflow
  had (copied below) against ``filetype`` as :func:`folioflow.ocr.render.sniff_mime_type` uses it;
* **metrics**: reading ``max_num_seqs``/``kv_cache_max_concurrency`` from a vLLM ``/metrics``
  answer: the regular expression folioflow had against ``prometheus_client.parser``.

Run: ``PYTHONPATH=.:$PYTHONPATH python tests/benchmarks/bench_swaps.py [--repeat N] [--only NAME]`` (needs ``../shared/corpus``
or ``FOLIOFLOW_CORPUS``; a few seconds; ``$PYTHONPATH`` as ``/work/wt/devenv.sh`` or the editable
install sets it, so that ``folioflow`` is this checkout's).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))
_TABLE = re.compile(r"<table\b.*?</table>", re.S | re.I)


def corpus_tables() -> list[str]:
    """Every HTML table (outermost ``<table>...</table>``) of the corpus sources named above."""
    from tests.chunking.corpus_docs import ICDAR, OMNIDOC, icdar_table_markdown

    texts: list[str] = []

    def walk(value) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and "<table" in value.lower():
            texts.append(value)

    walk(json.loads((CORPUS / OMNIDOC).parent.joinpath("OmniDocBench_demo.json").read_text()))
    texts += [p.read_text() for p in sorted((CORPUS / OMNIDOC).glob("*.md"))]
    for path in sorted((CORPUS / ICDAR).glob("*-str.xml")):
        for region in ET.parse(path).getroot().iter("region"):
            texts.append(icdar_table_markdown(region))
    return [m.group(0) for text in texts for m in _TABLE.finditer(text)]


def hand_rows(text: str) -> list[dict]:
    """Rows as folioflow's scanner finds them: source span, cell texts and spans, thead flag."""
    from folioflow.chunking.tables import _RowScanner

    scanner = _RowScanner(text)
    scanner.feed(text)
    scanner.close()
    scanner._close_row(len(text))
    return [{"start": r["start"], "end": r["end"], "thead": r["thead"],
             "cells": [(c["text"], c["th"], c["rowspan"], c["colspan"]) for c in r["cells"]]} for r in scanner.rows]


def bs4_rows(text: str) -> list[dict]:
    """The same rows through BeautifulSoup (html.parser builder, which records ``sourceline`` and
    ``sourcepos`` of start tags; a row ends at its last ``</tr>`` before the next row)."""
    from bs4 import BeautifulSoup, NavigableString, Tag

    from folioflow.chunking.tables import _int

    soup = BeautifulSoup(text, "html.parser")
    outer = [t for t in soup.find_all("table") if t.find_parent("table") is None]
    if not outer:
        return []
    table = outer[0]
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    lower = text.lower()

    def offset(tag: Tag) -> int:
        return line_starts[(tag.sourceline or 1) - 1] + (tag.sourcepos or 0)

    trs = [tr for tr in table.find_all("tr") if tr.find_parent("table") is table]
    rows = []
    for i, tr in enumerate(trs):
        start = offset(tr)
        limit = offset(trs[i + 1]) if i + 1 < len(trs) else lower.find("</table", start) if "</table" in lower[start:] else len(text)
        close = lower.rfind("</tr", start, limit)
        end = lower.find(">", close) + 1 if close >= 0 else limit
        cells = []
        for cell in tr.find_all(["td", "th"]):
            if cell.find_parent("tr") is not tr:
                continue
            parts = [" " if isinstance(node, Tag) and node.name == "br" else str(node)
                     for node in cell.descendants if isinstance(node, NavigableString) or (isinstance(node, Tag) and node.name == "br")]
            cells.append((" ".join("".join(parts).split()), cell.name == "th",
                          _int(cell.get("rowspan")), _int(cell.get("colspan"))))  # type: ignore[arg-type]
        head = tr.find_parent("thead")
        rows.append({"start": start, "end": end, "thead": head is not None and head.find_parent("table") is table,
                     "cells": cells})
    return rows


def best_of(fn, items, repeat: int) -> float:
    """Best wall time (seconds) of ``repeat`` passes of ``fn`` over ``items``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for item in items:
            fn(item)
        best = min(best, time.perf_counter() - t0)
    return best


def bench_tables(repeat: int) -> None:
    tables = corpus_tables()
    same = sum(hand_rows(t) == bs4_rows(t) for t in tables)
    hand = best_of(hand_rows, tables, repeat)
    soup = best_of(bs4_rows, tables, repeat)
    kib = sum(len(t) for t in tables) / 1024
    print(f"tables: {len(tables)} HTML tables, {kib:.0f} KiB; bs4 rows equal to the hand scanner's on {same}")
    print(f"  hand HTMLParser scanner : {hand * 1000:8.1f} ms  ({hand / len(tables) * 1e6:.0f} us/table)")
    print(f"  bs4 html.parser scan    : {soup * 1000:8.1f} ms  ({soup / len(tables) * 1e6:.0f} us/table), {soup / hand:.2f}x the hand scanner")
    try:
        from bs4 import BeautifulSoup

        lxml = best_of(lambda t: BeautifulSoup(t, "lxml"), tables, repeat)
        print(f"  bs4 lxml, parse only    : {lxml * 1000:8.1f} ms (no source positions: cannot keep row markup)")
    except Exception as exc:  # noqa: BLE001 - bs4 raises FeatureNotFound without lxml
        print(f"  bs4 lxml                : not measured ({type(exc).__name__}: lxml not installed)")


# -- MIME sniffing: the checks folioflow had before filetype (ocr/render.py, ocr/diagnose.py) --------
def old_sniff(head: bytes) -> str | None:
    from folioflow.ocr.diagnose import heif_kind

    if b"%PDF-" in head[:1024]:
        return "application/pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    kind = heif_kind(head)
    return {"heic": "image/heic", "heif": "image/heif", "avif": "image/avif"}.get(kind or "")


def new_sniff(head: bytes) -> str | None:
    from folioflow.ocr.errors import UnsupportedFormatError
    from folioflow.ocr.render import sniff_mime_type

    try:
        return sniff_mime_type(head)
    except UnsupportedFormatError:
        return None


def bench_sniff(repeat: int) -> None:
    heads = []
    for path in sorted(CORPUS.rglob("*")):
        if path.is_file() and path.suffix.lower() in {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".heic", ".avif"}:
            with open(path, "rb") as fh:
                heads.append(fh.read(1024))
    differ = sum(old_sniff(h) != new_sniff(h) for h in heads)
    old = best_of(old_sniff, heads, repeat)
    new = best_of(new_sniff, heads, repeat)
    print(f"sniff: {len(heads)} corpus files (first 1024 bytes); answers differ on {differ}")
    print(f"  hand magic bytes : {old / len(heads) * 1e6:6.1f} us/file")
    print(f"  filetype         : {new / len(heads) * 1e6:6.1f} us/file ({new / old:.1f}x)")


# -- Prometheus text ---------------------------------------------------------------------------------
_OLD_LABEL = re.compile(r'(max_num_seqs|kv_cache_max_concurrency)="([0-9.]+)"')


def old_limits(text: str) -> tuple:
    found: dict[str, float] = {}
    for key, value in _OLD_LABEL.findall(text):
        found.setdefault(key, float(value))
    return found.get("max_num_seqs"), found.get("kv_cache_max_concurrency")


def bench_metrics(repeat: int) -> None:
    from folioflow.ocr.vlm.client import parse_limits
    from tests.ocr.vlm.test_vlm_client import VLLM_METRICS

    # a /metrics answer of realistic size: the sample's families repeated for 8 served models
    body = "".join(VLLM_METRICS.replace("datalab-to/chandra", f"model-{i}") for i in range(8))
    old = best_of(old_limits, [body] * 20, repeat) / 20
    new = best_of(parse_limits, [body] * 20, repeat) / 20
    limits = parse_limits(body)
    print(f"metrics: {len(body) / 1024:.1f} KiB of exposition text; regex read max_num_seqs={old_limits(body)[0]:.0f}, "
          f"parser {limits.max_num_seqs} (the label draft_max_num_seqs fooled the regex)")
    print(f"  regex             : {old * 1e6:8.1f} us per answer")
    print(f"  prometheus_client : {new * 1e6:8.1f} us per answer ({new / old:.0f}x; read once per endpoint at start)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed passes; the best is reported")
    parser.add_argument("--only", choices=["tables", "sniff", "metrics"], help="run one measurement")
    args = parser.parse_args()
    if not (CORPUS / "MANIFEST.tsv").is_file():
        raise SystemExit(f"corpus absent: {CORPUS} (set FOLIOFLOW_CORPUS)")
    for name, fn in (("tables", bench_tables), ("sniff", bench_sniff), ("metrics", bench_metrics)):
        if args.only in (None, name):
            fn(args.repeat)


if __name__ == "__main__":
    main()
