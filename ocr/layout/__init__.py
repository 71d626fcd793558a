"""Layout analysis of born-digital PDF pages: characters and graphics from PDFium
(:mod:`ocr.layout.pdfpage`), quality of the text layer (:mod:`ocr.layout.quality`), words and
lines (:mod:`ocr.layout.lines`), reading order (:mod:`ocr.layout.order`), block labelling
(:mod:`ocr.layout.blocks`), tables (:mod:`ocr.layout.tables`) and formulas
(:mod:`ocr.layout.formulas`). All coordinates are page points in display space (top-left origin,
y down, ``/Rotate`` applied), as in :mod:`ocr.schema`."""
