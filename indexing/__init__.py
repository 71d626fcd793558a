"""Embedding, the Qdrant store and the LangChain retriever."""
