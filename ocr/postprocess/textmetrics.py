"""Text-quality measures for OCR output against a reference (tests and benchmarks).

* :func:`plain_text` strips the Markdown our engines write (heading marks, pipe-table rules and
  pipes, HTML tags, the figure comment) so text can be compared with plain references.
* :func:`normalize` applies Unicode NFKC, collapses whitespace and removes spaces next to CJK
  characters (spacing around Chinese/Japanese is not part of the text).
* :func:`cer`: character error rate = Levenshtein distance / reference length (rapidfuzz), the
  usual OCR measure (e.g. ICDAR/ISRI OCR evaluation); it is order-sensitive, so a reading-order
  difference counts as errors.
* :func:`word_recall`: share of the reference's word tokens (multiset, case-folded) found in the
  output, order-free; CJK characters and Hangul syllables count as one token each (OCR spacing
  of Korean is unreliable, and Chinese/Japanese have none).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from rapidfuzz.distance import Levenshtein

__all__ = ["cer", "normalize", "plain_text", "tokens", "word_recall"]

_CJK = r"\u3000-\u30ff\u3400-\u9fff\uf900-\ufaff\uff00-\uffef"
_TAG = re.compile(r"<[^>]+>")
_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}.*$", re.MULTILINE)
_HEADING = re.compile(r"^#{1,6}\s+", re.MULTILINE)
_TOKEN = re.compile(rf"[{_CJK}\uac00-\ud7af]|[^\W_]+", re.UNICODE)


def plain_text(markdown: str) -> str:
    """Markdown (as written by the CPU OCR engines) -> plain text, one line per line."""
    text = markdown.replace("<!-- figure -->", " ")
    text = _TAG.sub(" ", text)
    text = _TABLE_RULE.sub(" ", text)
    text = _HEADING.sub("", text)
    text = text.replace("\\|", "\x00").replace("|", " ").replace("\x00", "|")
    return text


def normalize(text: str) -> str:
    """NFKC, whitespace collapsed to single spaces, no spaces adjacent to CJK characters."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(rf"\s+(?=[{_CJK}])", "", text)
    text = re.sub(rf"(?<=[{_CJK}])\s+", "", text)
    return text


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate of ``hypothesis`` against ``reference`` (both normalised first).
    0.0 is perfect; can exceed 1.0 when the output is much longer. An empty reference gives 0.0
    for empty output and 1.0 otherwise."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    return Levenshtein.distance(ref, hyp) / len(ref)


def tokens(text: str) -> list[str]:
    """Case-folded word tokens; each CJK character and each Hangul syllable is a token."""
    return [t.casefold() for t in _TOKEN.findall(unicodedata.normalize("NFKC", text))]


def word_recall(reference: str, hypothesis: str) -> float:
    """Fraction of reference tokens present in the hypothesis (multiset intersection); 1.0 for an
    empty reference."""
    ref = Counter(tokens(reference))
    total = sum(ref.values())
    if not total:
        return 1.0
    hyp = Counter(tokens(hypothesis))
    return sum(min(n, hyp[t]) for t, n in ref.items()) / total
