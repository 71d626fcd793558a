"""Conversion fidelity: does a page's result hold what the page shows? Measured on every page.

A converted page is compared with evidence that does not come from the engine that produced it:

* **the text layer** (route ``text``): ``chars_recall``, the share of the layer's visible letters
  and digits (as a multiset, case-folded) that reach the page's blocks, headers and footers
  included; ``words_recall``, the share of the layer's words (runs of letters) that reach the page
  whole (letters all there but words broken or run together: overlapping text runs in a table
  cell read letter by letter); ``order``, the share of adjacent word pairs of the output that are also adjacent in
  the layer's *content* order (a low value alone is no failure: a newspaper drawn in scrambled
  order is read by geometry, and only plausibility says whether that worked); ``figures_recall``
  and ``ocr_figures_recall``, the share of the layer's figures (:func:`figures_recall`) the page
  and OCR's re-reading hold, when a page that lost letters is re-read;
* **plausibility of the text**: ``plausibility``, the share of the output's words (runs of letters,
  case-folded) found in the lexicon of the document's language (text read by OCR must reach
  :data:`MIN_OCR_PLAUSIBILITY`, a text layer :data:`MIN_PLAUSIBILITY`), and ``spaced_letters``, the share
  of one-letter words that are no word ("T h e c i t y"). Lexicons: the word-frequency lists
  pyspellchecker ships (MIT; 12 languages: en, de, fr, es, pt, it, nl, ru, ar, lv, eu, fa), read
  offline from the installed package. The configured languages' lexicons are tried first; when
  they know fewer than 80% of a page's words the language is detected from the 150 most frequent words of each
  list and the page is judged again with that language's list, so a French filing under the
  default ``eng`` setting is not taken for garbage. Scripts without a list (Chinese, Japanese,
  Korean, ...) are not judged (``plausibility`` absent). Decision: pyspellchecker's lists over
  tesseract's (Debian's traineddata carries no word list) and over a character n-gram model
  (which would need training text committed here, and judges a misspelled but readable scan worse
  than a lexicon does);
* **the rendered page's ink** (routes ``ocr``): ``ink_read``, the share of the page's ink
  (Otsu-binarised, ruling lines and layout figures removed) that lies inside the boxes of words
  the recogniser read with confidence >= 0.5 (computed in the OCR pipeline from its own image:
  no second render). A handwritten letter whose printed letterhead alone is read scores low;
* **images on a text-layer page**: ``image_share``, the share of the page under images of at
  least 2% of the page each. A page whose images cover :data:`MIN_IMAGE_SHARE` or more has its
  image regions cropped from a 300 DPI render and OCR'd; their text joins the page as paragraphs
  (``attributes["source"] = "image_ocr"``) at the figure's place (``image_words``). When what the
  images yield reads as non-words (``image_plausibility`` under :data:`MIN_OCR_PLAUSIBILITY`:
  handwritten notes pasted as pictures), it is kept and the page is ``partial``. That share counts
  words of :data:`MIN_JUDGED_LETTERS` letters or more, and needs :data:`MIN_WORDS` of them: a
  photo read as text gives one- and two-letter fragments, which say the image holds no text, not
  that its text was lost (the page stays ``ok``). A region the orientation detector turns is read
  upright too, and when tesseract's reading of the regions is mostly non-words, rapidocr reads
  them as well and each region keeps the reading with more lexicon words
  (:func:`folioflow.ocr.finish.ocr_regions`);
* **OCR confidence per line**: ``ocr_confidence`` (mean), and the share of lines under 0.5;
* **each paragraph of an OCR page**: ``implausible_blocks`` (:func:`_block_measures`), paragraphs
  read as non-words on a page that reads as words overall (a paragraph of a script the OCR
  languages do not cover, read as Latin letters).

A page that fails a check is **re-routed** (:class:`FidelityReview`): a text-layer page whose text
is implausible or lost goes to CPU OCR; an OCR page that reads implausibly or leaves most ink
unread goes to the other recogniser (tesseract <-> rapidocr, when it covers the languages); the
result with more plausible words is kept. A text layer refused only as implausible (few lexicon
words, no letters lost) gives way to OCR only when OCR reads the page as plausible text: when OCR
reads few lexicon words too, the words are not the lexicon's (a table of names and codes, placeholder
Latin, a script the OCR languages do not cover) rather than a garbled layer, which OCR reads as words,
and the layer is kept, ``partial``, never ``failed`` unless its letters are spaced apart. A layer
that lost letters is kept likewise when OCR holds fewer of its figures than the page does (a table
of numbers misread). Arabic and
Cyrillic letters are judged with their script's list (``ar``, ``ru``) whatever the configured
languages. When the kept result still fails, the page is
``partial`` (content indexed, reason recorded) or, when nothing plausible was read from an inked
page, ``failed`` (its content is not indexed: garbage in the index misleads more than a gap that
says why). Reasons carry the measured numbers, e.g. ``"fidelity: 31% of the page's ink read
(handwriting, stamps or pictures not read)"``.

Thresholds (:data:`MIN_PLAUSIBILITY` and the rest) were set on the tuning half of the shared
corpus (even-numbered documents of each type) with ``tests/benchmarks/bench_fidelity.py``; its
docstring gives both halves' figures.

VLM pages: measured (plausibility), status unchanged. The VLM's own validity ladder
(:mod:`folioflow.ocr.vlm.validity`) judges them, and the only VLM engine here has random weights,
so no plausibility threshold for VLM output could be set or checked.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from folioflow.ocr.schema import Block, BlockType, Page, PageFidelity, PageStatus

__all__ = [
    "FIDELITY_VERSION",
    "MIN_CHARS_RECALL",
    "MIN_FIGURES",
    "MIN_IMAGE_SHARE",
    "MIN_INK_READ",
    "MIN_OCR_PLAUSIBILITY",
    "MIN_WORDS_RECALL",
    "MIN_PLAUSIBILITY",
    "FAIL_PLAUSIBILITY",
    "LEXICON_LANGUAGES",
    "FidelityReview",
    "Plausibility",
    "chars_recall",
    "figures_recall",
    "ink_read",
    "lexicon",
    "page_text",
    "plausibility",
    "word_order_agreement",
    "words",
    "words_recall",
]

#: Bump when a measure, threshold or re-routing rule changes: part of the OCR settings' fingerprint
#: (``folioflow.flows.stages.ocr_identity``), so the next ingest converts documents again. 5: a text
#: layer refused as implausible is kept unless OCR reads plausible text; script lexicons; a table's
#: HTML tags are not words of the page. 6: a layer that lost letters keeps its page when OCR would
#: lose more of its figures (:data:`MIN_FIGURES`); each paragraph of an OCR page is judged.
FIDELITY_VERSION = "6"
#: A text-layer page whose output holds less than this share of the layer's letters and digits lost text.
MIN_CHARS_RECALL = 0.97
#: A text-layer page whose output holds less than this share of the layer's words whole (its letters
#: all there, its words broken or run together: overlapping text runs read letter by letter) lost text.
MIN_WORDS_RECALL = 0.9
#: The most consecutive text-layer fragments that may spell one output word (Pepsico's 10-K exhibits
#: cut "Equalization" into 7: "e q u aliz a tio n").
MAX_FRAGMENTS = 8
#: A text-layer page that lost letters is re-read by OCR, and OCR's reading replaces it unless it
#: holds fewer of the layer's figures than the page does: the layer's figures are exact, a figure OCR
#: misreads is a silent error ("4.5" read as "45"), and letters the page lost are a visible gap (a
#: dense table of scores read by tesseract held 67% of the layer's 363 figures, the page 100%; an
#: earnings release's reconciliation table 95% against 99%, its page short of 6% of its letters).
#: Figures a text layer must hold before OCR's share of them is judged (a few decide nothing).
MIN_FIGURES = 10
#: Share of known words below which a page's text is implausible (re-routed, then ``partial``).
MIN_PLAUSIBILITY = 0.5
#: The same for text read by OCR (stricter: a recogniser turns handwriting into short real words,
#: "the", "of", "in", so a handwritten letter read wrong still scored 0.51-0.53 on the tuning half,
#: where the lowest correctly read OCR page scored 0.84; chosen between the two).
MIN_OCR_PLAUSIBILITY = 0.65
#: ... and below which, after re-routing, nothing plausible was read (``failed``).
FAIL_PLAUSIBILITY = 0.2
#: Share of one-letter non-words above which text is letters spaced apart (a scrambled text layer).
MAX_SPACED_LETTERS = 0.3
#: Below this share of known words the language is detected too (the configured one may not be the text's).
DETECT_BELOW = 0.8
#: Words a page must have before its plausibility is judged.
MIN_WORDS = 12
#: Share of the ink an OCR page must read (words of confidence >= 0.5) to be ``ok``.
MIN_INK_READ = 0.5
#: Share of the page ink must cover before ``ink_read`` is judged (a few specks decide nothing).
MIN_INK_SHARE = 0.002
#: Images covering this share of a text-layer page get their regions OCR'd.
MIN_IMAGE_SHARE = 0.25
#: Letters a word read from a text-layer page's images needs to count in their plausibility (shorter
#: ones are what pictures read as: fragments the lexicon holds by chance).
MIN_JUDGED_LETTERS = 3
#: Word confidence counted as read by :func:`ink_read`.
READ_CONFIDENCE = 0.5

#: tesseract language code -> pyspellchecker list (ISO 639-1)
LEXICON_LANGUAGES = {"eng": "en", "deu": "de", "fra": "fr", "spa": "es", "por": "pt", "ita": "it", "nld": "nl",
                     "rus": "ru", "ara": "ar", "lav": "lv", "eus": "eu", "fas": "fa"}
_ONE_LETTER_WORDS = frozenset("aiouyeàåäøé")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_LOCK = threading.Lock()


def _resources() -> Path | None:
    try:
        import spellchecker
    except ImportError:  # pragma: no cover - pyspellchecker is a core dependency
        return None
    return Path(spellchecker.__file__).parent / "resources"


@lru_cache(maxsize=16)
def _frequencies(code: str) -> dict[str, int] | None:
    root = _resources()
    path = root / f"{code}.json.gz" if root else None
    if path is None or not path.is_file():
        return None
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


@lru_cache(maxsize=16)
def lexicon(code: str) -> frozenset[str] | None:
    """The words of language ``code`` (ISO 639-1, one of :data:`LEXICON_LANGUAGES`' values),
    lower case, or ``None`` when no list is installed for it. Loaded once per process (about
    0.1 s and 160,000 words for English)."""
    with _LOCK:
        freq = _frequencies(code)
        return frozenset(w for w in freq if _WORD.fullmatch(w)) | _ONE_LETTER_WORDS if freq else None


@lru_cache(maxsize=1)
def _stop_words() -> dict[str, frozenset[str]]:
    """The 150 most frequent words of every installed list (language detection)."""
    out = {}
    for code in sorted(set(LEXICON_LANGUAGES.values())):
        with _LOCK:
            freq = _frequencies(code)
        if freq:
            top = sorted(freq.items(), key=lambda kv: -kv[1])[:150]
            out[code] = frozenset(w for w, _ in top)
    _frequencies.cache_clear()  # only the lists in use stay loaded
    return out


def words(text: str) -> list[str]:
    """The words of ``text``: maximal runs of letters (any script), case-folded. Digits,
    punctuation and Markdown marks are separators."""
    return _WORD.findall(text.casefold())


@dataclass
class Plausibility:
    """``rate``: share of words in the lexicon; ``spaced``: share of one-letter non-words;
    ``words``: words judged; ``language``: the list used (ISO 639-1)."""

    rate: float
    spaced: float
    words: int
    language: str

    @property
    def plausible(self) -> bool:
        return self.rate >= MIN_PLAUSIBILITY and self.spaced <= MAX_SPACED_LETTERS


def _judge(tokens: list[str], code: str) -> Plausibility | None:
    known = lexicon(code)
    if known is None:
        return None
    hits = sum(1 for t in tokens if t in known)
    spaced = sum(1 for t in tokens if len(t) == 1 and t not in _ONE_LETTER_WORDS)
    return Plausibility(hits / len(tokens), spaced / len(tokens), len(tokens), code)


@dataclass(frozen=True)
class _Scripts:
    """Letter counts of the first 400 tokens of a text, by script."""

    letters: int
    covered: int  # Latin (with Latin Extended Additional), Cyrillic or Arabic: scripts the lists cover
    arabic: int
    cyrillic: int

    @classmethod
    def of(cls, tokens: list[str]) -> _Scripts:
        letters = "".join(tokens[:400])
        arabic = sum(1 for ch in letters if "\u0600" <= ch <= "\u06ff")
        cyrillic = sum(1 for ch in letters if "\u0400" <= ch <= "\u04ff")
        latin = sum(1 for ch in letters if ch < "\u0250" or "\u1e00" <= ch <= "\u1eff")
        return cls(len(letters), latin + arabic + cyrillic, arabic, cyrillic)

    @property
    def covered_by_lists(self) -> bool:
        """Whether most letters are of scripts the lists cover (Latin, Cyrillic, Arabic)."""
        return self.covered >= 0.8 * max(1, self.letters)

    @property
    def lexicon(self) -> str | None:
        """The lexicon of the script most letters are written in, when that script has one list
        (Arabic letters: ``ar``; Cyrillic: ``ru``); None for Latin letters, whose languages share a
        script and are told apart by their words (:func:`_stop_words`)."""
        if max(self.arabic, self.cyrillic) < 0.5 * max(1, self.letters):
            return None
        return "ar" if self.arabic > self.cyrillic else "ru"


def _lexicon_codes(languages: list[str] | None) -> list[str]:
    """The lexicon codes (ISO 639-1) of ``languages`` (tesseract codes; default ``["eng"]``), each
    once, in order; languages without a lexicon are left out."""
    return list(dict.fromkeys(LEXICON_LANGUAGES[lang] for lang in (languages or ["eng"]) if lang in LEXICON_LANGUAGES))


def plausibility(text: str, languages: list[str] | None = None) -> Plausibility | None:
    """Judge ``text`` against the lexicons of ``languages`` (tesseract codes; default ``["eng"]``),
    then, when it reads as implausible, against the detected language's (see module docstring).
    ``None`` when there are fewer than :data:`MIN_WORDS` words or the script has no lexicon."""
    tokens = words(text)
    if len(tokens) < MIN_WORDS:
        return None
    scripts = _Scripts.of(tokens)
    if not scripts.covered_by_lists:
        return None
    best: Plausibility | None = None
    for code in _lexicon_codes(languages):
        judged = _judge(tokens, code)
        if judged is not None and (best is None or judged.rate > best.rate):
            best = judged
    script = scripts.lexicon
    if script is not None and (best is None or best.language != script):
        judged = _judge(tokens, script)  # Arabic or Cyrillic letters under a Latin-script setting
        if judged is not None and (best is None or judged.rate > best.rate):
            best = judged
    if best is None or best.rate < DETECT_BELOW or not best.plausible:
        stops = _stop_words()
        counts = {code: sum(1 for t in tokens if t in s) for code, s in stops.items()}
        if counts:
            detected = max(counts, key=lambda c: counts[c])
            if counts[detected] and (best is None or detected != best.language):
                judged = _judge(tokens, detected)
                if judged is not None and (best is None or judged.rate > best.rate):
                    best = judged
    return best


def known_words(text: str, languages: list[str] | None = None,
                min_letters: int = MIN_JUDGED_LETTERS) -> tuple[int, int]:
    """``(known, judged)``: how many of ``text``'s words of ``min_letters`` letters or more are in
    the lexicon of one of ``languages`` (the best list), and how many were judged. No minimum
    count (unlike :func:`plausibility`): it compares two readings of the same few words.
    ``(0, 0)`` when no listed language has a lexicon."""
    tokens = [w for w in words(text) if len(w) >= min_letters]
    if not tokens:
        return 0, 0
    judged = [j for j in (_judge(tokens, code) for code in _lexicon_codes(languages)) if j is not None]
    if not judged:
        return 0, 0
    return max(round(j.rate * j.words) for j in judged), len(tokens)


def page_text(page: Page, furniture: bool = True) -> str:
    """All text a page holds: its blocks (headers and footers too, when ``furniture``), else its
    Markdown. A table's HTML tags are left out (``<td rowspan="2">`` is no word of the page: a
    table of 300 cells read 600 "td"s as non-words and judged an OCR reading implausible)."""
    if page.blocks:
        return "\n".join(_TAG.sub(" ", b.text) if b.type == BlockType.TABLE else b.text for b in page.blocks
                         if furniture or b.type not in (BlockType.PAGE_HEADER, BlockType.PAGE_FOOTER))
    return _TAG.sub(" ", page.markdown)


def _alnum(text: str) -> Counter[str]:
    """Letters and digits of ``text``, case-folded, accents apart from their letters (NFKD), so an
    accent drawn as a glyph of its own and composed by the text engine ("a´" -> "á") counts as
    the same letter on both sides."""
    return Counter(ch for ch in unicodedata.normalize("NFKD", text.casefold()) if ch.isalnum())


def chars_recall(reference: str, output: str) -> float:
    """Share of the letters and digits of ``reference`` (a multiset, case-folded) found in
    ``output``; 1.0 for a reference without any."""
    ref = _alnum(reference)
    total = sum(ref.values())
    if not total:
        return 1.0
    out = _alnum(output)
    return sum(min(n, out[ch]) for ch, n in ref.items()) / total


_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def figures_recall(reference: str, output: str) -> float | None:
    """Share of the figures of ``reference`` (runs of digits with their inner ``.`` and ``,``:
    "1,234.5", "0.40", as a multiset) found in ``output``; None when ``reference`` holds fewer than
    :data:`MIN_FIGURES`."""
    ref = Counter(_FIGURE.findall(reference))
    total = sum(ref.values())
    if total < MIN_FIGURES:
        return None
    found = Counter(_FIGURE.findall(output))
    return sum(min(n, found[f]) for f, n in ref.items()) / total


def _bare(text: str) -> str:
    """``text`` without accents: NFD, combining marks and spacing accents dropped (category Sk and
    the Spacing Modifier Letters block: the "´" and "ˇ" of a TeX layer's "Ja´n Mina´cˇ", which
    the text engine composes into "Ján Mináč")."""
    return "".join(ch for ch in unicodedata.normalize("NFD", text)
                   if not unicodedata.combining(ch) and unicodedata.category(ch) != "Sk"
                   and not "\u02b0" <= ch <= "\u02ff")


def words_recall(reference: str, output: str) -> float | None:
    """Share of the words (runs of letters, case-folded, accents dropped, as a multiset) of ``reference`` found
    whole in ``output`` (up to :data:`MAX_FRAGMENTS` consecutive reference words whose concatenation
    is an output word count as found: an accent or a line-end hyphen the layer draws apart, a layer
    that cuts its words into pieces, "Equ aliz atio n"); None when ``reference`` has fewer than :data:`MIN_WORDS` words or when at
    least half of them are single letters (a layer that draws each glyph as a text object of its
    own: its words are made by geometry, and :func:`chars_recall` checks its letters)."""
    ref = words(_bare(reference))
    if len(ref) < MIN_WORDS or sum(1 for w in ref if len(w) == 1) >= 0.5 * len(ref):
        return None
    found = Counter(words(_bare(output)))
    whole = 0
    i = 0
    while i < len(ref):
        # a word the layer splits (an accent drawn apart, "ja ´ n"; a hyphenated line end) counts
        # when its parts joined are one output word
        for span in range(1, MAX_FRAGMENTS + 1):
            word = "".join(ref[i:i + span])
            if i + span <= len(ref) and found[word] > 0:
                found[word] -= 1
                whole += span
                i += span
                break
        else:
            i += 1
    return whole / len(ref)


def word_order_agreement(reference: list[str], output: list[str]) -> float:
    """Share of adjacent word pairs of ``output`` that are adjacent in ``reference`` too (1.0 for
    fewer than two output words)."""
    if len(output) < 2:
        return 1.0
    pairs = set(zip(reference, reference[1:], strict=False))
    return sum(1 for p in zip(output, output[1:], strict=False) if p in pairs) / (len(output) - 1)


def ink_read(gray: np.ndarray, boxes: list[tuple[float, float, float, float, float]],
             exclude: list[tuple[float, float, float, float]] | None = None) -> tuple[float, float]:
    """``(ink_read, ink_share)`` of a grayscale page image (H, W uint8): the share of its ink
    pixels inside ``boxes`` (x0, y0, x1, y1, confidence, in pixels; only boxes of confidence >=
    :data:`READ_CONFIDENCE` count, padded by a fifth of their height), and the share of the page
    that is ink. Ink: Otsu-binarised dark pixels, with ruling lines (horizontal and vertical runs
    longer than a 30th of the page) and the ``exclude`` regions (figures) removed, on a copy
    downscaled to at most 1200 px."""
    import cv2

    h, w = gray.shape[:2]
    scale = min(1.0, 1200.0 / max(h, w, 1))
    small = cv2.resize(gray, (max(1, int(w * scale)), max(1, int(h * scale))), interpolation=cv2.INTER_AREA) \
        if scale < 1.0 else gray
    _, ink = cv2.threshold(small, 0, 255, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    sh, sw = ink.shape
    for kernel in ((max(8, sw // 30), 1), (1, max(8, sh // 30))):
        rules = cv2.morphologyEx(ink, cv2.MORPH_OPEN, cv2.getStructuringElement(cv2.MORPH_RECT, kernel))
        ink = cv2.subtract(ink, rules)
    mask = ink > 0
    for x0, y0, x1, y1 in exclude or []:
        mask[max(0, int(y0 * scale)):int(y1 * scale) + 1, max(0, int(x0 * scale)):int(x1 * scale) + 1] = False
    total = int(mask.sum())
    if not total:
        return 1.0, 0.0
    read = np.zeros_like(mask)
    for x0, y0, x1, y1, conf in boxes:
        if conf < READ_CONFIDENCE:
            continue
        pad = 0.2 * (y1 - y0)
        read[max(0, int((y0 - pad) * scale)):int((y1 + pad) * scale) + 1,
             max(0, int((x0 - pad) * scale)):int((x1 + pad) * scale) + 1] = True
    return float((mask & read).sum()) / total, total / float(mask.size)


# ---------------------------------------------------------------------------------------- review

#: Converts one page by another route: ``(route, page number) -> Page`` (``"ocr"``, ``"ocr:rapidocr"``,
#: ``"ocr:tesseract"``), or ``None`` when that route is unavailable.
Reroute = Callable[[str, int], "Page | None"]
#: OCR of a page's image regions: ``(page number, regions in points) -> blocks in page points``.
RegionOcr = Callable[[int, list[tuple[float, float, float, float]]], "tuple[str, list[Block]] | None"]


def _score(page: Page, languages: list[str]) -> tuple[float, Plausibility | None]:
    """Plausible words of a page (the ranking of alternatives) and its plausibility."""
    judged = plausibility(page_text(page), languages)
    if judged is None:  # no lexicon (Chinese, Japanese, ...): a character of those scripts is a word
        text = page_text(page)
        return (len(words(text)) + sum(1 for ch in text if _CJK.match(ch))) * 0.5, None
    return judged.rate * judged.words * (0.0 if judged.spaced > MAX_SPACED_LETTERS else 1.0), judged


class FidelityReview:
    """Checks one page, re-routes it when a check fails, and sets ``Page.fidelity`` and the status.

    ``languages``: the converter's (tesseract codes). ``reroute``/``region_ocr``: how the converter
    converts a page by another route / OCRs image regions (see :data:`Reroute`, :data:`RegionOcr`).
    """

    def __init__(self, languages: list[str], reroute: Reroute, region_ocr: RegionOcr | None = None):
        self.languages = list(languages or ["eng"])
        self.reroute = reroute
        self.region_ocr = region_ocr

    def review(self, page: Page, route: str, analysis=None) -> Page:
        """The page to keep (``page`` or a re-routed one), with ``fidelity`` set and its status
        following the verdict (module docstring). ``analysis``: the text-layer analysis of the page
        (:class:`~folioflow.ocr.engines.text_layer.TextLayerAnalysis`) when there is one."""
        if page.status == PageStatus.FAILED:
            return page
        if route == "vlm" or page.engine.startswith("vlm"):
            judged = plausibility(page_text(page), self.languages)
            page.fidelity = PageFidelity(kept="vlm", measures=_plausibility_measures(judged),
                                         language=judged.language if judged else None)
            return page
        if route == "text":
            return self._text(page, analysis)
        return self._ocr(page, [], _own_layer(analysis, self.languages))

    # -- text layer ---------------------------------------------------------------------------
    def _text(self, page: Page, analysis) -> Page:
        measures: dict[str, float] = {}
        problems: list[str] = []
        output = page_text(page)
        content = getattr(analysis, "content", None)
        layer = ""
        if content is not None:
            layer = content.text(invisible=False)
            measures["chars_recall"] = round(chars_recall(layer, output), 4)
            measures["order"] = round(word_order_agreement(words(layer), words(output)), 4)
            recalled = words_recall(layer, output)
            if recalled is not None:
                measures["words_recall"] = round(recalled, 4)
            if measures["chars_recall"] < MIN_CHARS_RECALL:
                problems.append(f"{measures['chars_recall']:.0%} of the text layer's letters and digits reached the page")
            elif recalled is not None and recalled < MIN_WORDS_RECALL:
                problems.append(f"{recalled:.0%} of the text layer's words reached the page whole")
        quality = getattr(analysis, "quality", None)
        image_share = float(getattr(quality, "image_coverage", 0.0) or 0.0)
        measures["image_share"] = round(image_share, 4)
        judged = plausibility(output, self.languages)
        measures.update(_plausibility_measures(judged))
        if judged is not None and not judged.plausible:
            problems.append(_implausible(judged))
        fidelity = PageFidelity(kept="text", measures=measures, language=judged.language if judged else None)
        page.fidelity = fidelity
        if problems:
            page = self._replace_text(page, problems, fidelity, judged, layer, analysis)
        elif image_share >= MIN_IMAGE_SHARE and self.region_ocr is not None:
            self._image_regions(page, analysis)
        return page

    def _replace_text(self, page: Page, problems: list[str], fidelity: PageFidelity,
                      judged: Plausibility | None, layer: str = "", analysis=None) -> Page:
        """Re-read a failing text-layer page with CPU OCR; keep the better of the two.

        A page whose letters all arrived but whose words did not (``words_recall`` under
        :data:`MIN_WORDS_RECALL`) keeps the reading that holds more of the layer's words whole; the
        layer's words are the evidence there, not plausibility (OCR of a dense exhibit table reads
        plausible words and fewer of them), unless OCR reads the page as non-words where the layer
        reads as words. Kept under the threshold, the page is ``partial``."""
        fidelity.rerouted.append("ocr")
        other = self.reroute("ocr", page.number)
        words_lost = "words_recall" in fidelity.measures and fidelity.measures["words_recall"] < MIN_WORDS_RECALL \
            and not any("letters and digits" in p for p in problems)
        if words_lost and other is not None and other.status != PageStatus.FAILED:
            theirs_recall = words_recall(layer, page_text(other)) or 0.0
            fidelity.measures["ocr_words_recall"] = round(theirs_recall, 4)
            # OCR that holds more of the layer's few words but reads the rest of the page as
            # non-words (a table of figures read as letters) is no better reading
            their_judgement = plausibility(page_text(other), self.languages)
            garbled = their_judgement is not None and not their_judgement.plausible \
                and (judged is None or judged.plausible)
            if theirs_recall > fidelity.measures["words_recall"] and not garbled:
                checked = self._take_ocr(other, problems, fidelity)
                if theirs_recall < MIN_WORDS_RECALL:
                    return self._verdict(checked, [f"{theirs_recall:.0%} of the text layer's words read whole by OCR, "
                                                   f"{fidelity.measures['words_recall']:.0%} from the layer"],
                                         plausibility(page_text(checked), self.languages))
                return checked
            return self._verdict(page, problems, judged)
        if other is not None and other.status != PageStatus.FAILED:
            mine, _ = _score(page, self.languages)
            theirs, their_judgement = _score(other, self.languages)
            lost_text = any("text layer" in p for p in problems)
            their_words = their_judgement is not None and their_judgement.plausible
            if lost_text:
                # more known words from a reading whose share of them is lower is no better reading (a
                # table of figures read as letters yields hundreds of words, a few of them the lexicon's)
                no_worse = their_judgement is None or judged is None or their_judgement.rate >= judged.rate
                if their_words or (theirs > mine and no_worse):
                    # letters lost on the way to the page: the layer itself reads as text, so it is
                    # still the evidence the OCR reading is checked against (an implausible layer is none)
                    checked = self._take_ocr(other, problems, fidelity, _own_layer(analysis, self.languages))
                    # the layer's figures are evidence too: an OCR reading (the other recogniser's
                    # when the check chose it) that misreads numbers the page holds is no better reading
                    # for having more of the letters
                    my_figures = figures_recall(layer, page_text(page))
                    their_figures = figures_recall(layer, page_text(checked))
                    if my_figures is None or their_figures is None:
                        return checked
                    figures = {"figures_recall": round(my_figures, 4), "ocr_figures_recall": round(their_figures, 4)}
                    if their_figures >= my_figures:
                        assert checked.fidelity is not None
                        checked.fidelity.measures.update({f"text_{k}": v for k, v in figures.items()})
                        return checked
                    fidelity.measures.update(figures)
                    assert checked.fidelity is not None
                    fidelity.rerouted = list(checked.fidelity.rerouted)
                    return self._verdict(page, [*problems, f"OCR read {their_figures:.0%} of the text layer's figures, "
                                                           f"the page holds {my_figures:.0%}"], judged, own_layer=True)
            elif their_words and theirs > mine:
                return self._take_ocr(other, problems, fidelity)
            else:
                # The layer reads as few lexicon words, and so does OCR of the page: the words are not
                # the lexicon's (a table of names and codes, Latin placeholder text, a script OCR is
                # not set up for), not a garbled layer, which OCR would have read as words. The
                # document's own text is kept, partial, with both readings' figures.
                seen = _implausible(their_judgement) if their_judgement is not None else \
                    f"{len(words(page_text(other)))} words, too few to judge"
                return self._verdict(page, [*problems, f"OCR read no more plausible text ({seen})"], judged,
                                     own_layer=True)
        elif other is not None:
            problems.append("OCR failed too: " + "; ".join(other.errors)[:200])
        else:
            problems.append("no OCR engine to re-read it")
        return self._verdict(page, problems, judged)

    def _take_ocr(self, other: Page, problems: list[str], fidelity: PageFidelity, layer: str = "") -> Page:
        """``other``, the OCR reading of a text-layer page that failed with ``problems``, checked
        as an OCR page (against ``layer`` when given) and carrying the text check's measures."""
        other.attributes["text_layer_rejected"] = "; ".join(problems)
        other.attributes.setdefault("route", "ocr")
        other.attributes["route_reason"] = "fidelity: " + problems[0]
        checked = self._ocr(other, ["ocr"], layer)
        assert checked.fidelity is not None
        checked.fidelity.measures.update({f"text_{k}": v for k, v in fidelity.measures.items()})
        checked.fidelity.rerouted = ["ocr", *[r for r in checked.fidelity.rerouted if r != "ocr"]]
        return checked

    def _image_regions(self, page: Page, analysis) -> None:
        """OCR the figure regions of a mixed page and add their text at the figure's place."""
        assert self.region_ocr is not None and page.fidelity is not None
        boxes = [b.bbox for b in page.blocks if b.type == BlockType.FIGURE and b.bbox is not None]
        regions = [(box.x0, box.y0, box.x1, box.y1) for box in boxes]
        if not regions and analysis is not None and getattr(analysis, "content", None) is not None:
            regions = [(r.x0, r.y0, r.x1, r.y1) for r in analysis.content.images
                       if (r.x1 - r.x0) * (r.y1 - r.y0) >= 0.02 * page.width * page.height]
        if not regions:
            return
        page.fidelity.rerouted.append(f"image_regions:{len(regions)}")
        result = self.region_ocr(page.number, regions)
        if result is None:
            page.fidelity.measures["image_words"] = 0
            self._verdict(page, [f"{page.fidelity.measures['image_share']:.0%} of the page is images and "
                                 "no OCR engine could read them"], None)
            return
        engine, blocks = result
        known = Counter(words(page_text(page)))
        added: list[Block] = []
        for block in blocks:
            ws = words(block.text)
            if not ws:
                continue
            present = sum(1 for w in ws if known[w] > 0)
            if present >= 0.8 * len(ws):  # the text layer has it already (text over the picture)
                continue
            block.attributes.update({"source": "image_ocr", "engine": engine})
            added.append(block)
        page.fidelity.measures["image_words"] = sum(len(words(b.text)) for b in added)
        if not added:
            return
        unread = None
        # judged on its words of 3 letters or more: a photo or chart read as text gives fragments
        # ("er AT", "Mn A", "de PL") that the lexicon happens to hold (two-letter abbreviations),
        # and a handful of them decided a photo page "partial" with all its text there
        judged = _plausibility_of_long_words("\n".join(b.text for b in added), self.languages)
        if judged is not None:
            page.fidelity.measures["image_plausibility"] = round(judged.rate, 4)
            if judged.rate < MIN_OCR_PLAUSIBILITY or judged.spaced > MAX_SPACED_LETTERS:
                # handwriting or a picture of text the recogniser could not read: what it made of it
                # is kept (searchable, marked image_ocr), the page says it is not all there
                unread = "text in the page's images not read: " + _implausible(judged)
        out: list[Block] = []
        pending = list(added)
        for block in page.blocks:
            out.append(block)
            if block.type == BlockType.FIGURE and block.bbox is not None:
                inside = [b for b in pending if b.bbox is not None and _centre_in(b, block)]
                out.extend(inside)
                pending = [b for b in pending if b not in inside]
        footers = [i for i, b in enumerate(out) if b.type == BlockType.PAGE_FOOTER]
        at = footers[0] if footers else len(out)
        out[at:at] = pending
        page.blocks = out
        from folioflow.ocr.layout.blocks import page_markdown

        page.markdown = page_markdown(out)
        page.attributes["image_ocr_engine"] = engine
        if unread:
            self._verdict(page, [unread], None)

    # -- OCR ----------------------------------------------------------------------------------
    def _ocr(self, page: Page, tried: list[str], layer: str = "") -> Page:
        """Check an OCR page; ``layer``: the page's own text layer when it reads as text (an OCR
        layer under a scan, or a layer refused for another reason), the evidence of what the page
        says: an OCR reading that holds under :data:`MIN_WORDS_RECALL` of its words fails."""
        retried = str((page.attributes.get("auto") or {}).get("retried", ""))
        if retried:  # auto OCR re-read the page with another recogniser already (its low-confidence retry)
            tried = [*tried, f"ocr:{retried.split(':', 1)[0]}"]
        measures = {**_ocr_measures(page), **_layer_measures(layer, page), **_block_measures(page, self.languages)}
        judged = plausibility(page_text(page), self.languages)
        measures.update(_plausibility_measures(judged))
        page.fidelity = PageFidelity(kept=f"ocr:{page.engine}", measures=measures, rerouted=list(tried),
                                     language=judged.language if judged else None)
        problems = _ocr_problems(measures, judged)
        if not problems:
            return page
        alternative = _other_recogniser(page.engine)
        auto = page.attributes.get("auto") or {}
        if alternative and (str(auto.get("retried", "")).startswith(alternative) or auto.get("primary") == alternative):
            # auto OCR read it that way already and kept this
            alternative = None
        route = f"ocr:{alternative}" if alternative else None
        if route and route not in tried:
            other = self.reroute(route, page.number)
            tried = [*tried, route]
            page.fidelity.rerouted.append(route)
            if other is not None and other.status != PageStatus.FAILED:
                mine, _ = _score(page, self.languages)
                theirs, their_judgement = _score(other, self.languages)
                other_measures = {**_ocr_measures(other), **_layer_measures(layer, other),
                                  **_block_measures(other, self.languages), **_plausibility_measures(their_judgement)}
                other_problems = _ocr_problems(other_measures, their_judgement)
                if theirs > mine or (len(other_problems) < len(problems) and theirs >= mine):
                    other.attributes["route_reason"] = f"fidelity: {problems[0]} with {page.engine}"
                    other.fidelity = PageFidelity(kept=route, measures=other_measures, rerouted=list(tried),
                                                  language=their_judgement.language if their_judgement else None)
                    page, problems, judged = other, other_problems, their_judgement
            if not problems:
                return page
        return self._verdict(page, problems, judged)

    # -- verdict ------------------------------------------------------------------------------
    def _verdict(self, page: Page, problems: list[str], judged: Plausibility | None,
                 own_layer: bool = False) -> Page:
        """``partial`` (content kept), or ``failed`` (content dropped) when no plausible text was
        read at all. ``own_layer``: ``page`` is the document's own text layer, kept because OCR read
        nothing more plausible; it fails only as letters spaced apart (a scrambled layer)."""
        assert page.fidelity is not None
        low = judged is not None and judged.rate < FAIL_PLAUSIBILITY and not own_layer
        garbage = low or (judged is not None and judged.spaced > 2 * MAX_SPACED_LETTERS) or not words(page_text(page))
        reason = "fidelity: " + "; ".join(problems)
        page.fidelity.verdict = "failed" if garbage else "partial"
        page.fidelity.reason = reason
        if garbage:
            page.attributes["rejected_markdown"] = page.markdown[:2000]
            page.markdown, page.blocks = "", []
            page.status = PageStatus.FAILED
        elif page.status == PageStatus.OK or page.status == PageStatus.FALLBACK:
            page.status = PageStatus.PARTIAL
        if reason not in page.errors:
            page.errors.append(reason)
        return page


def _centre_in(block: Block, figure: Block) -> bool:
    assert block.bbox is not None and figure.bbox is not None
    cx, cy = (block.bbox.x0 + block.bbox.x1) / 2, (block.bbox.y0 + block.bbox.y1) / 2
    f = figure.bbox
    return f.x0 - 2 <= cx <= f.x1 + 2 and f.y0 - 2 <= cy <= f.y1 + 2


def _plausibility_measures(judged: Plausibility | None) -> dict[str, float]:
    if judged is None:
        return {}
    return {"plausibility": round(judged.rate, 4), "spaced_letters": round(judged.spaced, 4), "words": judged.words}


def _implausible(judged: Plausibility) -> str:
    if judged.spaced > MAX_SPACED_LETTERS:
        return f"text is letters spaced apart ({judged.spaced:.0%} of {judged.words} words are single letters)"
    return f"text implausible: {judged.rate:.0%} of {judged.words} words are {judged.language} words"


def _ocr_measures(page: Page) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in ("ocr_confidence", "ink_read", "ink_share", "low_confidence_lines"):
        value = page.attributes.get(key)
        if isinstance(value, (int, float)):
            out[key] = round(float(value), 4)
    return out


def _own_layer(analysis, languages: list[str]) -> str:
    """The text of a page's own layer (visible and invisible characters) when it reads as text in
    ``languages`` (plausibility at least :data:`MIN_OCR_PLAUSIBILITY` over :data:`MIN_WORDS`
    words), else ``""``: a garbage layer is no evidence."""
    content = getattr(analysis, "content", None)
    if content is None or not content.chars:
        return ""
    layer = content.text()
    judged = plausibility(layer, languages)
    return layer if judged is not None and judged.rate >= MIN_OCR_PLAUSIBILITY else ""


def _layer_measures(layer: str, page: Page) -> dict[str, float]:
    """``layer_words_recall``: the share of the page's own text layer's words an OCR reading holds."""
    recalled = words_recall(layer, page_text(page)) if layer else None
    return {} if recalled is None else {"layer_words_recall": round(recalled, 4)}


def _ocr_problems(measures: dict[str, float], judged: Plausibility | None) -> list[str]:
    problems = []
    if measures.get("layer_words_recall", 1.0) < MIN_WORDS_RECALL:
        problems.append(f"OCR read {measures['layer_words_recall']:.0%} of the words of the page's own text layer")
    if judged is not None and (not judged.plausible or judged.rate < MIN_OCR_PLAUSIBILITY):
        problems.append(_implausible(judged))
    elif measures.get("implausible_blocks", 0):
        # the page reads as words overall, and a paragraph of it does not: an English page with a
        # Korean paragraph read as "StS ofAl2, AS|E YGEAS" by an `eng` recogniser
        count = int(measures["implausible_blocks"])
        problems.append(f"{count} paragraph{'s' if count > 1 else ''} read as non-words (the worst: "
                        f"{measures['worst_block_plausibility']:.0%} known words): a script the OCR languages "
                        "do not cover, or handwriting")
    if measures.get("ink_share", 0.0) >= MIN_INK_SHARE and measures.get("ink_read", 1.0) < MIN_INK_READ:
        problems.append(f"{measures['ink_read']:.0%} of the page's ink read (handwriting, stamps or pictures "
                        "not read)")
    return problems


def _plausibility_of_long_words(text: str, languages: list[str]) -> Plausibility | None:
    """:func:`plausibility` of ``text``'s words of :data:`MIN_JUDGED_LETTERS` letters or more: a photo,
    or a script read as Latin letters, gives fragments ("er AT", "as", "st") that the lexicon happens
    to hold as two-letter words."""
    return plausibility(" ".join(w for w in words(text) if len(w) >= MIN_JUDGED_LETTERS), languages)


def _block_measures(page: Page, languages: list[str]) -> dict[str, float]:
    """``implausible_blocks``: the OCR page's text blocks (tables and formulas apart) whose words of
    :data:`MIN_JUDGED_LETTERS` letters or more (at least :data:`MIN_WORDS` of them) hold a share of
    known words under :data:`MIN_PLAUSIBILITY` (more non-words than words: a paragraph of foreign
    names, "Servicios Integrales", reads 57% in English), and ``worst_block_plausibility``, the lowest
    share; empty when there is none. Short words are left out as for image text: a script read as
    Latin letters gives fragments ("as", "be", "st") that the lexicon happens to hold."""
    rates = []
    for block in page.blocks:
        if block.type in (BlockType.TABLE, BlockType.FORMULA):
            continue
        judged = _plausibility_of_long_words(block.text, languages)
        if judged is not None and judged.rate < MIN_PLAUSIBILITY:
            rates.append(judged.rate)
    if not rates:
        return {}
    return {"implausible_blocks": float(len(rates)), "worst_block_plausibility": round(min(rates), 4)}


def _other_recogniser(engine: str) -> str | None:
    return {"tesseract": "rapidocr", "rapidocr": "tesseract"}.get(engine)
