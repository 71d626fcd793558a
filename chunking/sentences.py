"""Split text into spans that fit a token budget: sentences, then words, then characters.

Sentence boundaries come from pysbd (rule-based "Golden Rules" segmenter, offline, lossless with
``clean=False``), language configurable. Two guards on top:

* a boundary inside inline math (``$...$``, ``\\(...\\)``) or inline code (backticks) is ignored,
  so a formula like ``$ x. y $`` is never cut; a ``$`` followed by a digit never closes math
  (Pandoc's rule), so dollar amounts do not glue sentences together;
* pysbd slows down superlinearly on very long inputs, so text is fed to it in windows cut at line
  breaks (a line break is a safe boundary in every engine's Markdown).

A sentence still over the budget is split after a comma, semicolon or colon followed by a space
(or their CJK full-width forms and the ideographic comma, which need none), then between words,
and a word over the budget (a URL, a base64 blob, a long CJK run without punctuation) between
characters, at the longest prefix that fits
(binary search with the counter). All spans are ``(start, end)`` offsets into the input, so the
pieces are exact slices of the document's Markdown.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

__all__ = ["sentence_spans", "split_to_budget"]

# Inline math: $$...$$, \(...\), and $...$ whose closing $ is not followed by a digit (Pandoc's
# rule) and whose opening $ does not start an amount ("$4,210 million"), so that currency is not
# mistaken for math.
_PROTECTED = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$(?!\$|\d[\d,.]*(?:\s|$))[^$\n]{1,500}?(?<!\\)\$(?![\d$])"
                        r"|\\\(.+?\\\)|`[^`\n]+`", re.DOTALL)
_WINDOW = 3000
_WORD = re.compile(r"\S+\s*")
_CLAUSE = re.compile(r".+?(?:[,;:]\s+|[\uff0c\uff1b\uff1a\u3001\u3002]\s*|$)", re.DOTALL)


# pysbd's Segmenter is not thread-safe: ``segment`` keeps the text in ``self.original_text`` and
# locates the sentences in it afterwards, so two threads sharing one instance get sentences of each
# other's text (the flow chunks documents on several threads). One segmenter per thread and language.
_LOCAL = threading.local()


def _segmenter(language: str):
    cache = getattr(_LOCAL, "segmenters", None)
    if cache is None:
        cache = _LOCAL.segmenters = {}
    seg = cache.get(language)
    if seg is None:
        import pysbd

        try:
            seg = pysbd.Segmenter(language=language, clean=False)
        except ValueError:  # unsupported language: English rules are the closest general fallback
            seg = pysbd.Segmenter(language="en", clean=False)
        cache[language] = seg
    return seg


def _windows(text: str) -> list[tuple[int, int]]:
    """Windows of at most ~_WINDOW characters, cut after a line break, else after the last ". "
    (a likely sentence end), else after the last space: never inside a word."""
    out, start, n = [], 0, len(text)
    while start < n:
        end = min(n, start + _WINDOW)
        if end < n:
            lo = start + _WINDOW // 3
            cut = text.rfind("\n", lo, end)
            if cut < 0:
                cut = text.rfind(". ", lo, end)
                cut = cut + 1 if cut >= 0 else text.rfind(" ", lo, end)
            end = cut + 1 if cut >= 0 else end
        out.append((start, end))
        start = end
    return out


def sentence_spans(text: str, language: str = "en") -> list[tuple[int, int]]:
    """Sentence ``(start, end)`` offsets covering ``text`` completely (trailing whitespace belongs
    to the sentence before it)."""
    if not text:
        return []
    seg = _segmenter(language)
    bounds: list[int] = []
    for lo, hi in _windows(text):
        pos = lo
        for sent in seg.segment(text[lo:hi]):
            pos += len(sent)
            bounds.append(pos)
    if not bounds or bounds[-1] != len(text):  # pysbd is lossless with clean=False; be defensive
        bounds = [b for b in bounds if b < len(text)] + [len(text)]
    protected = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
    if protected:
        bounds = [b for b in bounds if not any(s < b < e for s, e in protected)]
    spans, start = [], 0
    for b in bounds:
        if b > start:
            spans.append((start, b))
            start = b
    return spans


def _clause_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans ending after a comma, semicolon or colon (ASCII or CJK full-width, or the
    ideographic comma) - the next-best boundary after a sentence, and the only one in CJK text."""
    spans = [(start + m.start(), start + m.end()) for m in _CLAUSE.finditer(text[start:end]) if m.end() > m.start()]
    if not spans:
        return [(start, end)]
    spans[-1] = (spans[-1][0], end)
    return spans


def _word_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = [(start + m.start(), start + m.end()) for m in _WORD.finditer(text[start:end])]
    if spans and spans[0][0] > start:
        spans[0] = (start, spans[0][1])
    return spans or [(start, end)]


def _char_spans(text: str, start: int, end: int, budget: int, count: Callable[[str], int]) -> list[tuple[int, int]]:
    """Longest prefixes that fit ``budget`` content tokens (binary search on characters)."""
    out = []
    while start < end:
        lo, hi = start + 1, end
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if count(text[start:mid]) <= budget:
                lo = mid
            else:
                hi = mid - 1
        out.append((start, lo))
        start = lo
    return out


def _refine(text: str, spans: list[tuple[int, int]], budget: int, count: Callable[[str], int],
            count_batch: Callable[[list[str]], list[int]], fine: list[tuple[int, int]], fine_sizes: list[int],
            level: int) -> None:
    """Append to ``fine`` the spans of ``spans`` that fit, refining those that do not: clauses,
    then words, then characters."""
    for s, e in spans:
        if level >= 2:
            for c, d in _char_spans(text, s, e, budget, count):
                fine.append((c, d))
                fine_sizes.append(count(text[c:d]))
            continue
        subs = _clause_spans(text, s, e) if level == 0 else _word_spans(text, s, e)
        if len(subs) == 1 and level == 0:
            _refine(text, subs, budget, count, count_batch, fine, fine_sizes, level + 1)
            continue
        sizes = count_batch([text[a:b] for a, b in subs])
        for (a, b), n in zip(subs, sizes, strict=True):
            if n <= budget:
                fine.append((a, b))
                fine_sizes.append(n)
            else:
                _refine(text, [(a, b)], budget, count, count_batch, fine, fine_sizes, level + 1)


def _pack(spans: list[tuple[int, int]], sizes: list[int], budget: int) -> list[tuple[int, int]]:
    """Greedy: consecutive spans joined while their summed sizes fit the budget."""
    out: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_end = cur = 0  # cur_end is read only once cur_start is set
    for (s, e), n in zip(spans, sizes, strict=True):
        if cur_start is not None and cur + n <= budget:
            cur_end, cur = e, cur + n
            continue
        if cur_start is not None:
            out.append((cur_start, cur_end))
        cur_start, cur_end, cur = s, e, n
    if cur_start is not None:
        out.append((cur_start, cur_end))
    return out


def split_to_budget(text: str, start: int, end: int, budget: int, count: Callable[[str], int],
                    count_batch: Callable[[list[str]], list[int]], language: str = "en",
                    units: str = "sentences", pack: bool = True,
                    sizes_out: list[int] | None = None) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into consecutive spans whose content-token counts (``count``:
    tokens without special tokens) are each at most ``budget``.

    ``units``: ``"sentences"`` (prose) or ``"lines"`` (code): the first level tried; clauses (after
    a comma, semicolon or colon), words and then characters follow for any unit still too large. Neighbouring units are packed back together
    while they fit (``pack``), so spans are as large as the budget allows; with ``pack=False`` the
    units themselves are returned (the packer then joins them, and can overlap by sentences), and
    their counts are appended to ``sizes_out`` when given.
    """
    if budget < 1:
        raise ValueError("budget must be positive")
    segment = text[start:end]
    if units == "lines":
        rel = []
        pos = 0
        for line in segment.splitlines(keepends=True):
            rel.append((pos, pos + len(line)))
            pos += len(line)
    else:
        rel = sentence_spans(segment, language)
    spans = [(start + s, start + e) for s, e in rel] or [(start, end)]
    sizes = count_batch([text[s:e] for s, e in spans])
    fine: list[tuple[int, int]] = []
    fine_sizes: list[int] = []
    for (s, e), n in zip(spans, sizes, strict=True):
        if n <= budget:
            fine.append((s, e))
            fine_sizes.append(n)
            continue
        _refine(text, [(s, e)], budget, count, count_batch, fine, fine_sizes, level=0)
    if pack:
        return _pack(fine, fine_sizes, budget)
    if sizes_out is not None:
        sizes_out.extend(fine_sizes)
    return fine
