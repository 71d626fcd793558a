"""Display formulas in the text layer: detection and a LaTeX rendering of what the glyphs say.

A line is a display formula when it stands on its own (centred or indented in its column, no
sentence around it), carries mathematical evidence (a math font such as Computer Modern
CMMI/CMSY/CMEX, STIX or Cambria Math; Greek letters; operators like = ≤ ∑ ∫ √; sub- or
superscripts) and has at most two ordinary words. The rendering maps sub/superscripts (smaller
glyphs below/above the main baseline) to ``_{}``/``^{}`` and Unicode symbols to LaTeX commands;
the text layer carries no fraction or radical layout, so those stay linear (``a / b``).
"""

from __future__ import annotations

import re
import statistics
import unicodedata

from folioflow.ocr.layout.lines import Line

__all__ = ["MATH_FONT_HINTS", "has_math_font", "is_display_formula", "to_latex"]

#: Substrings of font names used for mathematics (TeX Computer Modern, AMS, STIX, Office, Symbol).
MATH_FONT_HINTS = ("cmmi", "cmsy", "cmex", "msam", "msbm", "stix", "math", "symbol", "mtextra", "euclid", "rsfs")

_LATEX = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "ζ": r"\zeta",
    "η": r"\eta", "θ": r"\theta", "ι": r"\iota", "κ": r"\kappa", "λ": r"\lambda", "μ": r"\mu",
    "ν": r"\nu", "ξ": r"\xi", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "υ": r"\upsilon",
    "φ": r"\phi", "χ": r"\chi", "ψ": r"\psi", "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta",
    "Θ": r"\Theta", "Λ": r"\Lambda", "Ξ": r"\Xi", "Π": r"\Pi", "Σ": r"\Sigma", "Φ": r"\Phi",
    "Ψ": r"\Psi", "Ω": r"\Omega", "∑": r"\sum", "∏": r"\prod", "∫": r"\int", "√": r"\sqrt",
    "∞": r"\infty", "∂": r"\partial", "∇": r"\nabla", "≤": r"\leq", "≥": r"\geq", "≠": r"\neq",
    "≈": r"\approx", "±": r"\pm", "×": r"\times", "÷": r"\div", "·": r"\cdot", "→": r"\to",
    "∈": r"\in", "∀": r"\forall", "∃": r"\exists", "−": "-",
}
_OPERATORS = set("=<>≤≥≠≈±×÷∑∏∫√∞∂∇∈∀∃→") | {"−"}
_GREEK = re.compile(r"[\u0391-\u03a9\u03b1-\u03c9]")
_WORD = re.compile(r"[A-Za-z]{4,}")
_MATH_ALNUM = re.compile("[\U0001D400-\U0001D7FF]")  # Mathematical Alphanumeric Symbols block


def has_math_font(fonts: tuple[str, ...] | list[str]) -> bool:
    """True if any font name looks like a mathematics font (see :data:`MATH_FONT_HINTS`; text
    faces of math families such as STIX Two Text do not count)."""
    return any(h in f.lower() for f in fonts for h in MATH_FONT_HINTS if "text" not in f.lower())


def _scripts(line: Line) -> int:
    sizes = [c.size for c in line.chars]
    main = statistics.median(sizes) if sizes else 0
    return sum(1 for c in line.chars if c.size < 0.85 * main)


def is_display_formula(line: Line, column: tuple[float, float]) -> bool:
    """Whether ``line`` is a display formula within a column spanning ``column`` (x0, x1)."""
    text = line.text
    if len(text) > 160 or len(_WORD.findall(text)) > 2:
        return False
    signals = sum((any(ch in _OPERATORS for ch in text), bool(_GREEK.search(text)), bool(_scripts(line)),
                   bool(_MATH_ALNUM.search(text))))
    if signals == 0 or signals + has_math_font(line.fonts) < 2:
        return False
    left, right = column
    width = max(1.0, right - left)
    centre = (line.x0 + line.x1) / 2
    centred = abs(centre - (left + right) / 2) < 0.15 * width and line.width < 0.8 * width
    indented = line.x0 - left > 0.08 * width
    return centred or indented


def to_latex(line: Line) -> str:
    """LaTeX for a formula line: sub/superscripts from glyph size and baseline, Unicode symbols
    as commands. Returns the body without ``$$`` delimiters."""
    chars = [c for c in line.chars if c.text.strip()]
    if not chars:
        return ""
    main = statistics.median(c.size for c in chars)
    base = [c for c in chars if c.size >= 0.85 * main]
    mid = statistics.median((c.y0 + c.y1) / 2 for c in base) if base else (line.y0 + line.y1) / 2
    out: list[str] = []
    mode = ""
    prev = None
    for c in chars:
        script = ""
        if c.size < 0.85 * main:
            script = "_" if (c.y0 + c.y1) / 2 > mid else "^"
        if script != mode:
            if mode:
                out.append("}")
            if script:
                out.append(script + "{")
            mode = script
        elif prev is not None and not script and c.x0 - prev.x1 > 0.2 * main:
            out.append(" ")
        sym = _LATEX.get(c.text) or (unicodedata.normalize("NFKC", c.text) if _MATH_ALNUM.match(c.text) else c.text)
        after_command = bool(out) and re.fullmatch(r"\\[A-Za-z]+", out[-1]) is not None
        if (sym.startswith("\\") and out and out[-1] and out[-1][-1].isalpha()) or (after_command and sym[:1].isalpha()):
            out.append(" ")
        out.append(sym)
        prev = c
    if mode:
        out.append("}")
    latex = "".join(out)
    return re.sub(r"\s+", " ", latex).strip()
