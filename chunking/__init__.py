"""Structure-aware chunking: typed documents in, chunks with heading paths and page spans out."""
