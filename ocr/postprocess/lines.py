"""The shared output of every CPU OCR backend: text lines with word boxes.

Boxes are ``(x0, y0, x1, y1)`` tuples in the pixels of the image the backend saw (top-left origin,
y down) until :func:`scale_lines` converts them to page points. A backend that cannot split lines
into words (rapidocr without word boxes) reports each detected text box as one line with one word.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

__all__ = ["Box", "OcrLine", "OcrWord", "Region", "join_words", "median", "scale_lines", "union_box"]

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class OcrWord:
    """One recognised word: ``text``, ``box`` (x0, y0, x1, y1) and ``confidence`` in [0, 1]."""

    text: str
    box: Box
    confidence: float = 1.0


@dataclass
class OcrLine:
    """One text line: its words in reading order, its box and mean confidence in [0, 1].

    ``block_id`` is the backend's own block/paragraph grouping when it has one (tesseract), else -1.
    ``attrs["ink_height"]`` is the text height measured on the image.
    """

    words: list[OcrWord]
    box: Box
    confidence: float = 1.0
    block_id: int = -1
    attrs: dict = field(default_factory=dict)

    @property
    def text(self) -> str:
        return join_words([w.text for w in self.words])

    @property
    def height(self) -> float:
        return self.box[3] - self.box[1]

    @property
    def width(self) -> float:
        return self.box[2] - self.box[0]

    @property
    def cx(self) -> float:
        return (self.box[0] + self.box[2]) / 2

    @property
    def cy(self) -> float:
        return (self.box[1] + self.box[3]) / 2

    @classmethod
    def from_words(cls, words: list[OcrWord], block_id: int = -1) -> OcrLine:
        """A line spanning ``words`` (non-empty), confidence = mean word confidence."""
        box = union_box([w.box for w in words])
        conf = sum(w.confidence for w in words) / len(words)
        return cls(words=list(words), box=box, confidence=conf, block_id=block_id)


@dataclass(frozen=True)
class Region:
    """A layout region (rapid-layout's CDLA labels: text, title, figure, figure_caption, table,
    table_caption, header, footer, reference, equation), its ``box`` and detector ``score``."""

    label: str
    box: Box
    score: float = 1.0


def union_box(boxes: list[Box]) -> Box:
    """Smallest box containing every box in ``boxes`` (non-empty)."""
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _scale(box: Box, sx: float, sy: float) -> Box:
    return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)


def scale_lines(lines: list[OcrLine], sx: float, sy: float) -> list[OcrLine]:
    """Return copies of ``lines`` with every box multiplied by (sx, sy), e.g. pixels -> points."""
    out = []
    for line in lines:
        words = [replace(w, box=_scale(w.box, sx, sy)) for w in line.words]
        out.append(replace(line, words=words, box=_scale(line.box, sx, sy), attrs=dict(line.attrs)))
    return out


def median(values: list[float], default: float = 0.0) -> float:
    """Median of ``values`` (``default`` when empty)."""
    if not values:
        return default
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3000 <= code <= 0x30FF  # CJK punctuation, hiragana, katakana
        or 0x3400 <= code <= 0x9FFF  # CJK unified ideographs (+ extension A)
        or 0xAC00 <= code <= 0xD7AF  # Hangul syllables
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF  # full-width forms
    )


def join_words(texts: list[str]) -> str:
    """Join word texts with spaces, except between two CJK characters (Chinese and Japanese are
    written without spaces; tesseract reports each character as a "word")."""
    out = ""
    for text in texts:
        if not text:
            continue
        if out and not (_is_cjk(out[-1]) and _is_cjk(text[0]) and not _is_hangul(out[-1])):
            out += " "
        out += text
    return out


def cjk_joined(a: str, b: str) -> bool:
    """Whether text ending in character ``a`` and text starting with ``b`` join with no space:
    both Chinese or Japanese characters (Korean is written with spaces between words)."""
    return bool(a) and bool(b) and _is_cjk(a) and _is_cjk(b) and not _is_hangul(a)


def _is_hangul(ch: str) -> bool:
    return 0xAC00 <= ord(ch) <= 0xD7AF
