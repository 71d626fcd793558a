"""Rendering and OCR: documents in, typed pages of structured Markdown out (see :mod:`folioflow.ocr.schema`)."""
