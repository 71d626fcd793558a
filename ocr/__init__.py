"""Rendering and OCR: documents in, typed pages of structured Markdown out (see :mod:`ocr.schema`)."""
