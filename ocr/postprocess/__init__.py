"""Engine-independent post-processing of OCR output: recognised lines and words (with boxes) become
reading-ordered blocks (paragraphs, headings, tables, figures, page headers/footers) and Markdown.

Modules: :mod:`~ocr.postprocess.lines` (the shared line/word types), :mod:`~ocr.postprocess.reading_order`
(columns), :mod:`~ocr.postprocess.tables` (table cell structure), :mod:`~ocr.postprocess.blocks`
(paragraphs, headings, page furniture, Markdown) and :mod:`~ocr.postprocess.textmetrics`
(character error rate and word recall used by tests and benchmarks).
"""
