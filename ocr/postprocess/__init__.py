"""Engine-independent post-processing of OCR output: recognised lines and words (with boxes) become
reading-ordered blocks (paragraphs, headings, tables, figures, page headers/footers) and Markdown.

Modules: :mod:`~folioflow.ocr.postprocess.lines` (the shared line/word types), :mod:`~folioflow.ocr.postprocess.reading_order`
(columns), :mod:`~folioflow.ocr.postprocess.tables` (table cell structure), :mod:`~folioflow.ocr.postprocess.blocks`
(paragraphs, headings, page furniture, Markdown) and :mod:`~folioflow.ocr.postprocess.textmetrics`
(character error rate and word recall used by tests and benchmarks).
"""

#: the API is in the modules named above; nothing is re-exported here
__all__: list[str] = []
