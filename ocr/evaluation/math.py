"""Offline comparison of LaTeX formulas for olmOCR-bench ``math`` tests.

What olmOCR-bench does (allenai/olmocr ``olmocr/bench/tests.py`` ``MathTest`` and
``olmocr/bench/katex/render.py``, commit f7cfe4c): collect the formulas of the OCR output delimited
by ``\\(..\\)``, ``\\[..\\]``, ``$$..$$`` and ``$..$`` (dollar forms optional); pass when one equals the
reference string exactly; otherwise render the reference and each candidate with KaTeX in a headless
browser and pass when the reference's MathML is contained in the candidate's, or when every glyph of
the reference has a glyph of the same text in the candidate with the same glyphs above, below, left
and right of it.

What folioflow does offline (no browser here): each formula is converted to MathML with
``latex2mathml`` (pure Python) and *linearised* into a glyph string that keeps the 2-D structure
explicit: scripts as ``^{..}``/``_{..}``, fractions as ``{..}/{..}``, roots as ``√{..}``, under/over
scripts likewise; token text is NFKC-folded (so ``\\mathbf{E}`` and ``E`` give the same glyph, as
KaTeX's glyph spans do), attributes, spacing commands and fence sizes (``\\left(`` vs ``(``) vanish.
A candidate passes when the reference's glyph string is contained in its own. Known differences from
the KaTeX comparison: notations that render alike but parse into different trees are judged by tree
(rare for OCR output), and macros that KaTeX knows but ``latex2mathml`` does not are kept as literal
``\\name`` tokens, so they only match the same macro.
"""

from __future__ import annotations

import re
import unicodedata
import xml.etree.ElementTree as ET
from functools import lru_cache

__all__ = ["extract_formulas", "formula_matches", "linearize"]

_DELIMITED = [re.compile(r"\\\((.+?)\\\)", re.DOTALL), re.compile(r"\\\[(.+?)\\\]", re.DOTALL)]
_DOLLARS = [re.compile(r"\$\$(.+?)\$\$", re.DOTALL), re.compile(r"\$(.+?)\$", re.DOTALL)]
_NS = re.compile(r"\{[^}]*\}")


def extract_formulas(content: str, dollars: bool = True) -> list[str]:
    """Formulas of ``content`` in olmOCR-bench's order: ``\\(..\\)``, ``\\[..\\]``, then (when
    ``dollars``) ``$$..$$`` and ``$..$``; each pattern's matches are removed before the next runs."""
    found: list[str] = []
    for pattern in _DELIMITED + (_DOLLARS if dollars else []):
        found += [m.strip() for m in pattern.findall(content)]
        content = pattern.sub("", content)
    return found


def _tag(el: ET.Element) -> str:
    return _NS.sub("", el.tag)


def _glyphs(text: str | None) -> str:
    return "".join(unicodedata.normalize("NFKC", text or "").split())


# Scripts, limits, fractions and roots: tag -> (number of children, str.format template over the
# children's glyph strings), e.g. msup(x, 2) -> "x^{2}", mfrac(a, b) -> "{a}/{b}".
_TEMPLATES = {
    "msup": (2, "{0}^{{{1}}}"), "msub": (2, "{0}_{{{1}}}"), "msubsup": (3, "{0}_{{{1}}}^{{{2}}}"),
    "munder": (2, "{0}_{{{1}}}"), "mover": (2, "{0}^{{{1}}}"), "munderover": (3, "{0}_{{{1}}}^{{{2}}}"),
    "mfrac": (2, "{{{0}}}/{{{1}}}"), "mroot": (2, "√[{1}]{{{0}}}"),
}


def _lin(el: ET.Element) -> str:
    tag, kids = _tag(el), list(el)
    parts = [_lin(k) for k in kids]
    if tag in ("mi", "mn", "mo", "mtext", "ms"):
        return _glyphs("".join(el.itertext()))
    if tag in ("mspace", "annotation", "annotation-xml", "mprescripts", "none"):
        return ""
    arity, template = _TEMPLATES.get(tag, (None, ""))
    if arity == len(parts):
        return template.format(*parts)
    if tag == "msqrt":
        return f"√{{{''.join(parts)}}}"
    if tag == "mtr":
        return "&".join(parts) + ";"
    return "".join(parts)


@lru_cache(maxsize=4096)
def linearize(latex: str) -> str | None:
    """The glyph string of ``latex`` (see module docstring), or ``None`` when it does not convert."""
    try:
        from latex2mathml.converter import convert

        root = ET.fromstring(convert(latex))
    except Exception:  # noqa: BLE001 - latex2mathml raises many types on malformed input: unrenderable, as in KaTeX
        return None
    text = _lin(root)
    return text or None


def formula_matches(reference: str, content: str, dollars: bool = True) -> tuple[bool, str]:
    """olmOCR-bench ``math`` test on ``content``: ``(passed, explanation)``."""
    candidates = extract_formulas(content, dollars)
    if any(c == reference for c in candidates):
        return True, ""
    if not candidates:
        return False, "no delimited formula ($..$, $$..$$, \\(..\\), \\[..\\]) in the output"
    ref = linearize(reference)
    if ref is None:
        return False, f"reference formula does not convert offline: {reference[:60]!r}"
    for cand in candidates:
        lin = linearize(cand)
        if lin is not None and ref in lin:
            return True, ""
    return False, f"no formula matching {reference[:60]!r} among {len(candidates)} formulas"
