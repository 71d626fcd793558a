"""Benchmark: conversion fidelity over the shared corpus, folioflow against two baselines, in one run.

For every page of every document selected, per document type:

* **reference words**: born-digital filings (``filings``, FinanceBench) and contracts
  (``contracts``, CUAD): the page's text layer as plain pypdfium2 extracts it
  (``get_text_range()``); contracts also against CUAD's own reference text (``txt/``, one figure per
  document: ``contracts_txt``). Scans with ground truth: OmniDocBench demo pages (``omnidocbench``:
  its Markdown), olmOCR-bench pages (``olmocr``: the text of its ``present`` and ``order`` tests,
  a part of each page) and OCRmyPDF's ``linn`` scan (``scans``: ``linn.txt``);
* **what reaches the index**: folioflow converts the document (``engine=auto``, CPU OCR, fidelity
  check on) and chunks it with the default chunker; a page's words are those of every chunk whose
  page span covers it (its text and heading path, both in the embedded text) plus the page
  headers/footers the chunks carry as metadata (the BM25 index
  searches both: ``folioflow.indexing.indexer``), those of a page no chunk covers (a blank page
  printed with its page number) counted for that page (``metadata["furniture_pages"]``). Embedding
  is left out: it stores the same text.
* **baselines**: ``pypdfium2`` (plain text extraction of the page; zero on image-only pages) and
  ``tesseract`` (the page rendered at 300 DPI, tesseract's own ``GetUTF8Text``, no pipeline).

Reference text as the page shows it (issue 23's diagnosis: 4 of the 8 OmniDocBench pages reported
``ok`` under 90% were measured wrong, not read wrong): OmniDocBench's Markdown loses its image links
(``![](./imgs/<page>_0.jpg)`` counted the file name's pieces as words), its literal ``\t`` escapes
and its LaTeX formulas (``$...$``, ``$$...$$``: ``\\mathrm{\\ s i l i c a}`` counted "mathrm" and
seven one-letter words; formulas are scored apart by OmniDocBench itself and by olmOCR-bench's
``math`` tests); olmOCR-bench snippets count once per page (its ``order`` tests repeat the same
heading in two tests, and quote a ``present`` sentence again) and lose a last word they may cut
(its tests are substring matches); both sides are NFKC-normalised (full-width digits).

Figures per type: word recall (multiset: a reference word counts as often as it occurs in both),
pages whose status matches the truth (``ok`` exactly when the page holds at least 90% of its
reference words), pages reported ``ok`` with under 90% (the issue's goal: 0), pages partial /
failed, pages re-routed, and the three recalls side by side. Words: letters and digits runs,
case-folded, with each CJK character a word of its own; a word hyphenated across a line break in
the text layer is joined first. A text layer that puts most characters on a line of their own
(each glyph its own text object: tables of J&J's and Kraft Heinz's 10-Ks) has its words rebuilt
from the characters' boxes, for the reference and the pypdfium2 baseline alike.

Halves: documents of each type are sorted by name and alternately put in a *tuning* half (even
positions, where the thresholds of ``folioflow.ocr.fidelity`` were chosen) and a *checking* half
(odd positions); every figure is printed for both and for all.

``--overhead`` also times the text-layer route with and without the fidelity check on the filings'
pages (CPU seconds, alternating per document, as ``bench_text_layer.py`` does).

Run: ``PYTHONPATH=. HF_HUB_OFFLINE=1 python tests/benchmarks/bench_fidelity.py [--types filings,contracts,...]
[--limit N] [--max-pages P] [--docs NAME,...] [--tesseract-pages T] [--overhead] [--json out.json]`` (needs
``../shared/corpus``; ``FOLIOFLOW_CORPUS`` overrides). ``--limit`` takes N documents per type,
``--docs`` only those whose file name holds one of the comma-separated parts (after ``--limit``),
``--max-pages`` the first P pages of each document, ``--tesseract-pages`` runs the tesseract
baseline on the first T pages of each born-digital document (it is slow; scans always get it).

Measured: see the module's section in the report of issue 23 and docs/benchmarks.md (the machine
was shared while these ran; only ratios and recalls are meaningful, not seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("FOLIOFLOW_CORPUS", ROOT.parent / "shared" / "corpus"))
TYPES = ("filings", "contracts", "scans", "omnidocbench", "olmocr")
BORN_DIGITAL = ("filings", "contracts")

_CJK = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
_HYPHEN_BREAK = re.compile(r"(\w)-\s*\r?\n\s*(\w)")


_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+?\$", re.DOTALL)
_LITERAL_ESCAPE = re.compile(r"\\[tn](?![a-z])")


def tokens(text: str) -> list[str]:
    """Reference/output words (module docstring). NFKC first, so full-width digits and letters
    of CJK pages ("２０１９", "ＳＨ") are the ASCII ones OCR outputs."""
    text = unicodedata.normalize("NFKC", text)
    text = _HYPHEN_BREAK.sub(r"\1\2", text)
    # HTML tables of ground truth / VLM output: tags only (a name after "<"), so "u < 0 ... v > c"
    # in OCR'd mathematics is not taken for one long tag and dropped
    text = re.sub(r"</?[A-Za-z][^<>]*>|<!--.*?-->", " ", text, flags=re.DOTALL)
    return _TOKEN.findall(text.casefold())


def reference_markdown(text: str) -> tuple[str, int]:
    """The words a ground-truth Markdown page (OmniDocBench) shows as text, and how many words its
    formulas had: image links (``![](./imgs/page_0.jpg)``: a file name, not page text) and the
    literal ``\\t`` escapes of its lists go; LaTeX formulas (``$...$``, ``$$...$$``) go too,
    since their tokens are markup (``\\mathrm{\\ s i l i c a}`` is the word "silica" spelt as
    seven letters plus the command name), and formulas are not words: OmniDocBench scores them
    apart (CDM / edit distance), and so does olmOCR-bench (its ``math`` tests). A paragraph or list
    item of 10 words or more that repeats an earlier one verbatim is counted once: the eastmoney
    broker report's Markdown holds its "息差小幅收窄 ..." item twice, which the page prints once."""
    text = _MD_IMAGE.sub(" ", text)
    text = _LITERAL_ESCAPE.sub(" ", text)
    text = without_repeated_items(text)
    formulas = _MATH.findall(text)
    return _MATH.sub(" ", text), sum(len(tokens(re.sub(r"\\[a-zA-Z]+", " ", f))) for f in formulas)


_ITEM_BREAK = re.compile(r"\n\s*\n|(?<=[。.!?！？;；])\s*-\s+")


def without_repeated_items(text: str, min_words: int = 10) -> str:
    """``text`` without the paragraphs and list items (split at blank lines and at a ``- `` marker
    after a sentence's end) of ``min_words`` words or more that repeat an earlier one verbatim."""
    seen: set[str] = set()
    kept = []
    for item in _ITEM_BREAK.split(text):
        key = " ".join(tokens(item))
        if len(tokens(item)) >= min_words and key in seen:
            continue
        seen.add(key)
        kept.append(item)
    return "\n\n".join(kept)


#: The most fragments one side may need to spell a word of the other (:func:`recall`): the fidelity
#: check's own limit (Pepsico's 10-K exhibits cut "Equalization" into 7 text objects).
MAX_FRAGMENTS = 8


def recall(reference: list[str], found: Counter) -> float:
    """Share of the ``reference`` words (in reading order) that ``found`` (a multiset) holds.

    First word for word (a reference word counts as often as it occurs on both sides). Then a word
    split or glued differently on the two sides counts too, for every system alike: up to
    :data:`MAX_FRAGMENTS` consecutive reference words left unmatched that spell one output word left
    unmatched (a text layer that draws a digit apart, "$ 1 1,036" for "$ 11,036"; a page number "1 08"),
    reference digit runs left unmatched, in any order, that spell a number left unmatched in the
    output (a layer that draws a number's leading digit as an object of its own, rows away in its
    order), and a reference word left unmatched that up to :data:`MAX_FRAGMENTS` output words left
    unmatched spell ("18Exhibit" where the page prints "18" and "Exhibit" apart). Only words neither side
    matched otherwise take part, so a system gains nothing from words it does not hold."""
    total = len(reference)
    if not total:
        return 1.0
    left = Counter(found)
    unmatched: list[str | None] = []
    for word in reference:
        if left[word] > 0:
            left[word] -= 1
            unmatched.append(None)
        else:
            unmatched.append(word)
    missing = sum(1 for w in unmatched if w is not None)
    if not missing:
        return 1.0
    i = 0
    while i < total:  # reference fragments that spell one output word
        if unmatched[i] is None:
            i += 1
            continue
        for span in range(MAX_FRAGMENTS, 1, -1):
            parts = unmatched[i:i + span]
            if len(parts) == span and all(w is not None for w in parts) and left["".join(parts)] > 0:  # type: ignore[arg-type]
                left["".join(parts)] -= 1  # type: ignore[arg-type]
                for j in range(i, i + span):
                    unmatched[j] = None
                missing -= span
                i += span
                break
        else:
            i += 1
    # a number whose digits the layer draws as objects of their own, out of its reading order
    # (J&J's earnings tables: the leading "1" of "11,036" comes rows away): the reference's digit
    # fragments left unmatched, in any order, that spell a number left unmatched in the output
    digits = Counter(w for w in unmatched if w is not None and w.isdigit())
    if digits:
        for word in sorted((w for w in left.elements() if w.isdigit() and len(w) > 1), key=lambda w: (-len(w), w)):
            split = _spelt_by(word, digits, MAX_FRAGMENTS)
            if split is None:
                continue
            left[word] -= 1
            for part in split:
                digits[part] -= 1
                unmatched[unmatched.index(part)] = None
                missing -= 1
    for i, word in enumerate(unmatched):  # a reference word that output fragments spell
        if word is None or len(word) < 2:
            continue
        split = _spelt_by(word, left, MAX_FRAGMENTS)
        if split:
            for part in split:
                left[part] -= 1
            unmatched[i] = None
            missing -= 1
    return (total - missing) / total


def _spelt_by(word: str, left: Counter, most: int) -> list[str] | None:
    """Up to ``most`` words of ``left`` (each at least once there) that spell ``word``, or None."""
    for cut in range(1, len(word)):
        head, tail = word[:cut], word[cut:]
        if left[head] <= 0:
            continue
        if left[tail] > (1 if tail == head else 0):
            return [head, tail]
        if most > 2:
            left[head] -= 1
            rest = _spelt_by(tail, left, most - 1)
            left[head] += 1
            if rest:
                return [head, *rest]
    return None


@dataclass
class PageResult:
    kind: str
    doc: str
    page: int
    half: str
    ref_words: int
    recall: float
    status: str
    engine: str
    rerouted: bool
    reason: str | None
    pdfium_recall: float | None = None
    tesseract_recall: float | None = None
    measures: dict = field(default_factory=dict)  # the page's fidelity measures (for tuning)


@dataclass
class DocTask:
    kind: str
    path: Path
    half: str
    references: dict[int, str] = field(default_factory=dict)  # page -> reference text (scans); empty: text layer
    doc_reference: str | None = None  # contracts: CUAD txt


def _halves(paths: list[Path]) -> list[tuple[Path, str]]:
    return [(p, "tuning" if i % 2 == 0 else "checking") for i, p in enumerate(sorted(paths, key=lambda p: p.name))]


def tasks(kind: str, limit: int | None) -> list[DocTask]:
    out: list[DocTask] = []
    if kind == "filings":
        paths = sorted((CORPUS / "A_finance/financebench/pdfs").glob("*.pdf"))
        out = [DocTask(kind, p, h) for p, h in _halves(paths)]
    elif kind == "contracts":
        folder = CORPUS / "B_legal/cuad"
        paths = [p for p in (folder / "pdfs").rglob("*") if p.suffix.lower() == ".pdf"]
        for p, h in _halves(paths):
            txt = folder / "txt" / (p.stem + ".txt")
            out.append(DocTask(kind, p, h, doc_reference=txt.read_text(errors="replace") if txt.is_file() else None))
    elif kind == "scans":
        folder = CORPUS / "C_scanned_multilang/ocrmypdf"
        ref = (folder / "linn.txt").read_text(errors="replace")
        out = [DocTask(kind, folder / "linn.png", "tuning", {1: ref}), DocTask(kind, folder / "linn.pdf", "checking", {1: ref})]
    elif kind == "omnidocbench":
        folder = CORPUS / "C_scanned_multilang/omnidocbench_demo"
        for p, h in _halves(sorted((folder / "images").glob("*.jpg"))):
            md = folder / "mds" / (p.stem + ".md")
            if md.is_file():
                text, _formula_words = reference_markdown(md.read_text(errors="replace"))
                out.append(DocTask(kind, p, h, {1: text}))
    elif kind == "olmocr":
        folder = CORPUS / "D_layout_math_tables/olmocr_bench"
        refs: dict[tuple[str, int], list[str]] = defaultdict(list)
        for line in (folder / "dataset.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            test = json.loads(line)
            texts = [test.get("text")] if test["type"] == "present" else \
                [test.get("before"), test.get("after")] if test["type"] == "order" else []
            if any(texts):
                refs[(test["pdf"], int(test.get("page", 1)))] += [t for t in texts if t]
        by_pdf: dict[str, dict[int, str]] = defaultdict(dict)
        for (pdf, page), texts in refs.items():
            by_pdf[pdf][page] = "\n".join(distinct_snippets(texts))
        paths = [folder / "pdfs" / pdf for pdf in by_pdf if (folder / "pdfs" / pdf).is_file()]
        out = [DocTask(kind, p, h, by_pdf[str(p.relative_to(folder / "pdfs"))]) for p, h in _halves(paths)]
    return out[:limit] if limit else out


def distinct_snippets(texts: list[str]) -> list[str]:
    """olmOCR-bench snippets of one page, each text once: its ``order`` tests name the same line in
    two tests ("Pythagorean Theorem" after X and before Y) and quote the start of a ``present``
    sentence again, while the page shows it once. A snippet whose words run inside another's is
    dropped."""
    texts = [_uncut(t) for t in texts]
    keyed = {" ".join(tokens(t)): t for t in texts if tokens(t)}
    keys = sorted(keyed, key=len, reverse=True)
    kept: list[str] = []
    for key in keys:
        if not any(f" {key} " in f" {other} " for other in kept):
            kept.append(key)
    return [keyed[k] for k in kept]


def _uncut(snippet: str) -> str:
    """An olmOCR-bench snippet without its last word when the snippet stops on a letter or digit:
    its tests are substring matches, and a snippet may stop inside a word ("... kommutativen
    Ringe" on a page printing "Ringen"), which is no word of the page."""
    snippet = snippet.strip()
    if snippet and snippet[-1].isalnum() and len(tokens(snippet)) > 3:
        return snippet[: snippet.rstrip().rfind(" ")] if " " in snippet else snippet
    return snippet


def pdfium_pages(path: Path, numbers: list[int]) -> dict[int, str]:
    """Plain pypdfium2 text per page (the born-digital reference and the first baseline)."""
    import pypdfium2 as pdfium

    if path.suffix.lower() != ".pdf":
        return dict.fromkeys(numbers, "")
    pdf = pdfium.PdfDocument(path)
    out = {}
    for n in numbers:
        page = pdf[n - 1]
        tp = page.get_textpage()
        text = tp.get_text_range()
        if _letter_per_line(text):
            text = _words_by_geometry(tp)
        out[n] = text
        tp.close()
        page.close()
    pdf.close()
    return out


def _letter_per_line(text: str) -> bool:
    """Whether pypdfium2's text of a page puts most characters on a line of their own (a layer
    drawing each glyph as its own text object: J&J's and Kraft Heinz's 10-K tables), so its
    "words" are single letters and digits."""
    found = tokens(text)
    return len(found) >= 8 and sum(1 for t in found if len(t) == 1) >= 0.5 * len(found)


def _words_by_geometry(tp) -> str:
    """The page's characters joined into words by their boxes: a character continues the word
    when it sits on the same line (vertical centres within half a glyph height) and starts within
    0.3 glyph heights of the previous one's right edge; otherwise a space (or a line break, on a
    new line) comes first. Used only for letter-per-line layers (:func:`_letter_per_line`)."""
    parts: list[str] = []
    prev = None
    for i in range(tp.count_chars()):
        ch = tp.get_text_range(i, 1)
        if not ch or ch in "\r\n":
            continue
        x0, y0, x1, y1 = tp.get_charbox(i)
        if ch.isspace():
            parts.append(" ")
            prev = None
            continue
        h = max(y1 - y0, 1.0)
        if prev is not None:
            px1, pcy, ph = prev
            if abs((y0 + y1) / 2 - pcy) > 0.5 * max(h, ph):
                parts.append("\n")
            elif not (-0.3 * h <= x0 - px1 <= 0.3 * h):
                parts.append(" ")
        parts.append(ch)
        prev = (x1, (y0 + y1) / 2, h)
    return "".join(parts)


class Tesseract:
    """The tesseract-alone baseline: render at 300 DPI, ``GetUTF8Text`` with PSM auto."""

    def __init__(self, languages: str = "eng"):
        import tesserocr

        from folioflow.ocr.engines.tesseract import TESSDATA

        self.api = tesserocr.PyTessBaseAPI(path=TESSDATA, lang=languages)

    def page(self, path: Path, number: int) -> str:
        from folioflow.ocr.render import open_document

        with open_document(path) as doc:
            image = doc.page(number).render(dpi=300 if path.suffix.lower() == ".pdf" else 72.0 * 1)
            if path.suffix.lower() != ".pdf":
                handle = doc.page(number)
                image = handle.render(dpi=handle._image.width * 72.0 / max(handle.width, 1e-6))
        self.api.SetImage(image.convert("L"))
        return self.api.GetUTF8Text() or ""


class DiskPageCache:
    """``--page-cache DIR``: the engines' pages on disk (JSON per page), so a re-run re-checks the
    same OCR output without OCR'ing again (threshold tuning). Pages are stored as the engine made
    them, before the fidelity check (the converter stores before it reviews); keys include the
    engine's ``cache_key`` (recogniser, model, DPI, pipeline version)."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def _path(self, content_hash: str, number: int, key: str) -> Path:
        import hashlib

        return self.folder / f"{content_hash[:16]}-{number}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.json"

    def get(self, content_hash: str, page_number: int, cache_key: str):
        from folioflow.ocr.schema import Page

        path = self._path(content_hash, page_number, cache_key)
        return Page.model_validate_json(path.read_text()) if path.is_file() else None

    def put(self, content_hash: str, page_number: int, cache_key: str, page) -> None:
        self._path(content_hash, page_number, cache_key).write_text(page.model_dump_json())


def run_document(task: DocTask, converter, chunker, tess: Tesseract | None, max_pages: int | None,
                 tesseract_pages: int) -> tuple[list[PageResult], dict | None]:
    from folioflow.ocr.converter import DocumentInput
    from folioflow.ocr.schema import PageStatus, SourceRef

    options = converter.options
    if max_pages:
        converter.options = options.model_copy(update={"page_range": f"1-{max_pages}"})
    try:
        document = converter.convert(DocumentInput(data=task.path, source=SourceRef(uri=task.path.as_uri(), path=task.path.name)))
    finally:
        converter.options = options
    chunks = chunker.chunk(document)
    numbers = [p.number for p in document.pages]
    plain = pdfium_pages(task.path, numbers)
    found: dict[int, Counter] = defaultdict(Counter)
    furniture_of: dict[int, Counter] = defaultdict(Counter)
    whole: Counter = Counter()
    for chunk in chunks:
        # each field apart: joined by line breaks, a chunk text ending "-1-" and a heading path
        # starting "MANUFACTURING" read as "1-\nMANUFACTURING", a word hyphenated across a line
        words = sum((Counter(tokens(t)) for t in [chunk.text, *chunk.heading_path]), Counter())
        furniture = sum((Counter(tokens(t)) for t in chunk.metadata.get("page_headers", [])
                         + chunk.metadata.get("page_footers", [])), Counter())
        whole.update(words)  # the document's words: each chunk once
        for n in range(chunk.page_start, chunk.page_end + 1):
            found[n].update(words)
            furniture_of[n] |= furniture  # furniture once per page, not once per chunk
        for n in chunk.metadata.get("furniture_pages", []):  # a page with no body: its furniture rides here
            furniture_of[n] |= furniture
    for n, furniture in furniture_of.items():
        whole.update(furniture)
        found[n].update(furniture)  # in addition to the body: "EXACT SCIENCES" in the title and the footer is twice
    results = []
    for page in document.pages:
        text = task.references.get(page.number) if task.references else plain.get(page.number, "")
        if text is None:
            continue
        ref = tokens(text)
        if not ref:
            continue
        tess_recall = None
        if tess is not None and (task.kind not in BORN_DIGITAL or page.number <= tesseract_pages):
            try:
                tess_recall = recall(ref, Counter(tokens(tess.page(task.path, page.number))))
            except Exception:  # noqa: BLE001 - a baseline failing on a page is a zero, not a crash
                tess_recall = 0.0
        status = page.status.value if page.status != PageStatus.FALLBACK else "fallback"
        fidelity = page.fidelity
        results.append(PageResult(
            kind=task.kind, doc=task.path.name, page=page.number, half=task.half, ref_words=len(ref),
            recall=recall(ref, found.get(page.number, Counter())), status=status, engine=page.engine,
            rerouted=bool(fidelity and fidelity.rerouted), reason=(fidelity.reason if fidelity else None) or
            ("; ".join(page.errors) or None),
            pdfium_recall=recall(ref, Counter(tokens(plain.get(page.number, "")))), tesseract_recall=tess_recall,
            measures=dict(fidelity.measures) if fidelity else {}))
    doc_level = None
    if task.doc_reference:
        ref = tokens(task.doc_reference)
        whole_plain = Counter(tokens("\n".join(plain.values())))
        doc_level = {"doc": task.path.name, "half": task.half, "ref_words": len(ref),
                     "recall": recall(ref, whole), "pdfium_recall": recall(ref, whole_plain),
                     "partial_pages": max_pages is not None}
    return results, doc_level


def summarise(pages: list[PageResult], docs: list[dict]) -> list[dict]:
    rows = []
    for kind in TYPES:
        for half in ("tuning", "checking", "all"):
            sel = [p for p in pages if p.kind == kind and (half == "all" or p.half == half)]
            if not sel:
                continue
            ref_total = sum(p.ref_words for p in sel)

            def weighted(attr: str, sel=sel, ref_total=ref_total) -> float | None:
                have = [p for p in sel if getattr(p, attr) is not None]
                if not have:
                    return None
                return sum(getattr(p, attr) * p.ref_words for p in have) / max(1, sum(p.ref_words for p in have))

            engines = Counter(p.engine for p in sel)
            per_engine = {e: round(sum(p.recall * p.ref_words for p in sel if p.engine == e)
                                   / max(1, sum(p.ref_words for p in sel if p.engine == e)), 4) for e in engines}
            tess_sel = [p for p in sel if p.tesseract_recall is not None]
            rows.append({
                "type": kind, "half": half, "documents": len({p.doc for p in sel}), "pages": len(sel),
                "ref_words": ref_total, "recall": round(weighted("recall") or 0.0, 4),
                "pdfium_recall": round(weighted("pdfium_recall") or 0.0, 4),
                "tesseract_recall": round(weighted("tesseract_recall"), 4) if tess_sel else None,
                "folioflow_on_tesseract_pages": round(sum(p.recall * p.ref_words for p in tess_sel)
                                                       / max(1, sum(p.ref_words for p in tess_sel)), 4) if tess_sel else None,
                "tesseract_pages": len(tess_sel),
                "status_match": round(sum(1 for p in sel if (p.status == "ok") == (p.recall >= 0.9)) / len(sel), 4),
                "ok_under_90": sum(1 for p in sel if p.status == "ok" and p.recall < 0.9),
                "partial": sum(1 for p in sel if p.status == "partial"),
                "failed": sum(1 for p in sel if p.status == "failed"),
                "rerouted": sum(1 for p in sel if p.rerouted),
                "per_engine": per_engine,
            })
    for half in ("tuning", "checking", "all"):
        sel = [d for d in docs if half == "all" or d["half"] == half]
        if sel:
            total = sum(d["ref_words"] for d in sel)
            rows.append({"type": "contracts_txt", "half": half, "documents": len(sel), "pages": None, "ref_words": total,
                         "recall": round(sum(d["recall"] * d["ref_words"] for d in sel) / max(1, total), 4),
                         "pdfium_recall": round(sum(d["pdfium_recall"] * d["ref_words"] for d in sel) / max(1, total), 4)})
    return rows


def print_table(rows: list[dict]) -> None:
    head = ("type", "half", "docs", "pages", "recall", "pdfium", "tess", "ff@tess", "status=", "ok<90%",
            "partial", "failed", "rerouted")
    print(" ".join(f"{h:>12}" if i > 1 else f"{h:<13}" for i, h in enumerate(head)))
    for r in rows:
        cells = [r["type"], r["half"], r["documents"], r.get("pages"), r["recall"], r["pdfium_recall"], r.get("tesseract_recall"),
                 r.get("folioflow_on_tesseract_pages"), r.get("status_match"), r.get("ok_under_90"), r.get("partial"),
                 r.get("failed"), r.get("rerouted")]
        print(" ".join((f"{c:>12}" if i > 1 else f"{c!s:<13}") if not isinstance(c, float) else f"{c:>12.4f}"
                       for i, c in enumerate("-" if c is None else c for c in cells)))
        if r.get("per_engine"):
            print(" " * 27 + "recall per engine: " + ", ".join(f"{e} {v:.4f}" for e, v in sorted(r["per_engine"].items())))


def overhead(paths: list[Path], max_pages: int) -> dict:
    """CPU seconds of the text-layer route with and without the fidelity check (alternating)."""
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter, DocumentInput
    from folioflow.ocr.schema import SourceRef

    times = {"off": 0.0, "on": 0.0}
    pages = 0
    for path in paths:
        for flag in ("off", "on"):
            conv = DocumentConverter(ConvertOptions(engine="text", fidelity=flag == "on", guard=False,
                                                    page_range=f"1-{max_pages}"))
            t = time.process_time()
            doc = conv.convert(DocumentInput(data=path, source=SourceRef(uri=path.as_uri(), path=path.name)))
            times[flag] += time.process_time() - t
        pages += len(doc.pages)
    return {"pages": pages, "cpu_s_without": round(times["off"], 2), "cpu_s_with": round(times["on"], 2),
            "pages_per_cpu_s_without": round(pages / max(times["off"], 1e-9), 2),
            "pages_per_cpu_s_with": round(pages / max(times["on"], 1e-9), 2),
            "overhead": round(times["on"] / max(times["off"], 1e-9) - 1, 4)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--types", default=",".join(TYPES))
    parser.add_argument("--limit", type=int, default=None, help="documents per type")
    parser.add_argument("--max-pages", type=int, default=None, help="first P pages of each document")
    parser.add_argument("--docs", default=None,
                        help="comma-separated parts of file names: only documents whose name holds one "
                             "(case-insensitive), taken after --limit, so halves stay as in the full run")
    parser.add_argument("--tesseract-pages", type=int, default=3, help="tesseract baseline pages per born-digital document")
    parser.add_argument("--no-tesseract", action="store_true")
    parser.add_argument("--overhead", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--page-cache", type=Path, default=None,
                        help="keep the engines' pages in this folder and reuse them (the check itself always runs)")
    parser.add_argument("--verbose", action="store_true", help="print every page whose status does not match")
    args = parser.parse_args(argv)
    if not (CORPUS / "MANIFEST.tsv").is_file():
        print(f"corpus absent: {CORPUS} (set FOLIOFLOW_CORPUS)")
        return 0
    from folioflow.chunking.chunker import Chunker
    from folioflow.ocr.converter import ConvertOptions, DocumentConverter

    kinds = [k.strip() for k in args.types.split(",") if k.strip()]
    wanted = [w.strip().casefold() for w in (args.docs or "").split(",") if w.strip()]
    converter = DocumentConverter(ConvertOptions(engine="auto"),
                                  page_cache=DiskPageCache(args.page_cache) if args.page_cache else None)
    chunker = Chunker()
    tess = None if args.no_tesseract else Tesseract()
    pages: list[PageResult] = []
    docs: list[dict] = []
    started = time.perf_counter()
    for kind in kinds:
        for task in tasks(kind, args.limit):
            if wanted and not any(w in task.path.name.casefold() for w in wanted):
                continue
            t = time.perf_counter()
            try:
                got, doc_level = run_document(task, converter, chunker, tess, args.max_pages, args.tesseract_pages)
            except Exception as exc:  # noqa: BLE001 - a document that cannot be opened is reported, not fatal
                print(f"  {kind} {task.path.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            pages += got
            if doc_level:
                docs.append(doc_level)
            print(f"  {kind} {task.path.name}: {len(got)} pages, {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
    rows = summarise(pages, docs)
    print(f"\nfidelity benchmark ({time.perf_counter() - started:.0f} s; corpus {CORPUS})")
    print_table(rows)
    bad = [p for p in pages if (p.status == "ok") != (p.recall >= 0.9)]
    if args.verbose or len(bad) <= 25:
        for p in bad:
            print(f"  mismatch {p.kind} {p.doc} p{p.page}: status {p.status}, recall {p.recall:.3f} of {p.ref_words} "
                  f"words, engine {p.engine}; {p.reason or ''}"[:300])
    result = {"rows": rows, "pages": [p.__dict__ for p in pages]}
    if args.overhead:
        filings = [t.path for t in tasks("filings", args.limit or 3)]
        result["overhead"] = overhead(filings, args.max_pages or 80)
        print("\nfidelity check overhead on the text-layer route:", json.dumps(result["overhead"]))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
