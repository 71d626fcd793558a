"""Page engines: each turns one rendered/opened page into a :class:`folioflow.ocr.schema.Page`."""
