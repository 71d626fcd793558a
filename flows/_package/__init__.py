"""folioflow: document ingestion for legal and finance knowledge bases.

The distribution installs one import root, ``folioflow``, whose sub-packages live in the
repository's top-level folders (``pyproject.toml`` maps them with setuptools ``package-dir``):

* :mod:`folioflow.ocr` (``ocr/``): rendering and OCR, documents in, typed pages out;
* :mod:`folioflow.chunking` (``chunking/``): structure-aware chunking;
* :mod:`folioflow.indexing` (``indexing/``): embedding, the Qdrant store, the LangChain retriever;
* :mod:`folioflow.flows` (``flows/``): settings, Prefect flows, the CLI;
* :mod:`folioflow.infra` (``infra/``): deployment templates, shipped as package data.

This root module itself lives in ``flows/_package/``.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("folioflow")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
