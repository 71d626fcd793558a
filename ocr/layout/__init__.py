"""Layout analysis of born-digital PDF pages: characters and graphics from PDFium
(:mod:`folioflow.ocr.layout.pdfpage`), quality of the text layer (:mod:`folioflow.ocr.layout.quality`), words and
lines (:mod:`folioflow.ocr.layout.lines`), reading order (:mod:`folioflow.ocr.layout.order`), block labelling
(:mod:`folioflow.ocr.layout.blocks`), tables (:mod:`folioflow.ocr.layout.tables`) and formulas
(:mod:`folioflow.ocr.layout.formulas`). All coordinates are page points in display space (top-left origin,
y down, ``/Rotate`` applied), as in :mod:`folioflow.ocr.schema`."""

#: the API is in the modules named above; nothing is re-exported here
__all__: list[str] = []
