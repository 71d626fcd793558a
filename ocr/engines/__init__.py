"""Page engines: each turns one rendered/opened page into a :class:`ocr.schema.Page`."""
