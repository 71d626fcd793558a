"""Output parsers: raw model answer -> :class:`~folioflow.ocr.vlm.parsers.base.ParsedOutput`.

* :func:`~folioflow.ocr.vlm.parsers.markdown.parse_markdown`: any Markdown answer (generic profile).
* :func:`~folioflow.ocr.vlm.parsers.html_layout.make_html_layout_parser`: chandra's HTML layout blocks.
* :func:`~folioflow.ocr.vlm.parsers.grounding.parse_grounding`: DeepSeek-OCR's grounding tags.
* :func:`~folioflow.ocr.vlm.parsers.front_matter.parse_front_matter`: olmOCR's YAML front matter + Markdown.
"""

from folioflow.ocr.vlm.parsers.base import ParsedOutput
from folioflow.ocr.vlm.parsers.front_matter import parse_front_matter
from folioflow.ocr.vlm.parsers.grounding import parse_grounding
from folioflow.ocr.vlm.parsers.html_layout import make_html_layout_parser
from folioflow.ocr.vlm.parsers.markdown import parse_markdown

__all__ = [
    "ParsedOutput",
    "parse_markdown",
    "make_html_layout_parser",
    "parse_grounding",
    "parse_front_matter",
]
