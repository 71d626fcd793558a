"""Text normalisation and repetition detection as olmOCR-bench defines them.

Source: allenai/olmocr, ``olmocr/bench/tests.py`` (``normalize_text``) and ``olmocr/repeatdetect.py``
(``RepeatDetector``), read at commit f7cfe4c (2026-03-25). The rules are re-implemented here, not
imported: olmocr's bench module pulls in Playwright and a headless browser.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ngram_repeats", "normalize_text"]

# Fancy punctuation -> ASCII, and the micro sign -> Greek mu (olmOCR-bench's replacement table).
_REPLACEMENTS = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201c": '"', "\u201d": '"', "\u201e": '"',
                 "\uff3f": "_", "\u2013": "-", "\u2014": "-", "\u2011": "-", "\u2012": "-", "\u2212": "-",
                 "\u00b5": "\u03bc"}
_BR = re.compile(r"<br/?>")
_BOLD_STARS = re.compile(r"\*\*(.*?)\*\*")
_BOLD_UNDERSCORES = re.compile(r"__(.*?)__")
_HTML_B_I = re.compile(r"</?[bi]>")
_PAIRED_EMPHASIS = re.compile(r"(\*\*|__)(.*?)\1")
_SINGLE_EMPHASIS = re.compile(r"(\*|_)(.*?)\1")
_SPACE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """olmOCR-bench's text normalisation, applied to both the OCR output and the test strings.

    In order: ``<br>``/``<br/>`` -> space; Markdown bold (``**x**``, ``__x__``) and HTML ``<b>``/``<i>``
    tags removed; remaining paired ``*``/``_`` emphasis removed (line-local, as the original's
    regexes); whitespace runs -> one space; Unicode NFC; curly quotes, en/em dashes, non-breaking
    and figure hyphens, the minus sign -> ASCII; micro sign -> Greek mu.
    """
    text = _BR.sub(" ", text)
    text = _BOLD_STARS.sub(r"\1", text)
    text = _BOLD_UNDERSCORES.sub(r"\1", text)
    text = _HTML_B_I.sub("", text)
    text = _PAIRED_EMPHASIS.sub(r"\2", text)
    text = _SINGLE_EMPHASIS.sub(r"\2", text)
    text = _SPACE.sub(" ", text)
    text = unicodedata.normalize("NFC", text)
    for fancy, plain in _REPLACEMENTS.items():
        text = text.replace(fancy, plain)
    return text


def ngram_repeats(text: str, max_ngram_size: int = 5) -> list[int]:
    """For n = 1..``max_ngram_size``: how many times the last n characters repeat back to back at the
    end of ``text`` (whitespace collapsed first). ``"abcabc"`` -> ``[1, 1, 2, 1, 1]``.

    olmOCR-bench's ``RepeatDetector.ngram_repeats``: a baseline test fails when a count exceeds
    ``max_repeats`` (30), the signature of a model stuck repeating itself.
    """
    result = [0] * max_ngram_size
    data = _SPACE.sub(" ", text)
    for size in range(1, max_ngram_size + 1):
        if len(data) < size:
            continue
        target = data[-size:]
        count, pos = 0, len(data) - size
        while pos >= 0 and data[pos:pos + size] == target:
            count += 1
            pos -= size
        result[size - 1] = count
    return result
