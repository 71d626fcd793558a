"""Page engines: each turns one rendered/opened page into a :class:`folioflow.ocr.schema.Page`."""

#: the API is in the modules named above; nothing is re-exported here
__all__: list[str] = []
