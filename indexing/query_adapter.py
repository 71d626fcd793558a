"""Query adapters: a learned linear map applied to a question's dense vector before search.

A bi-encoder such as all-MiniLM-L6-v2 places "Which state's law governs this agreement?" near
chunks that share its everyday words, not always near the clause that answers it in a contract's
drafting words ("construed in accordance with the laws of the State of Delaware"). A query
adapter moves the question's vector toward the clauses of its kind, and leaves the stored
chunk vectors as they are, so an existing index needs no re-embedding (the linear adapter of
"Embedding Adapters", Chroma research, Jan 2024, and LlamaIndex's ``EmbeddingAdapterFinetuneEngine``;
here a residual form):

    v' = (q + A q) / || q + A q ||

``q``: the question's L2-normalised dense vector, shape ``(d,)``; ``A``: a ``(d, d)`` matrix
learned with a softmax (InfoNCE) loss over a contract's own chunks, the chunks that hold the
annotated clause as positives, plus an L2 penalty on ``A`` (so it stays near the identity map).

An adapter belongs to one embedding model: :func:`load_adapter` returns ``None`` for a
question embedded with another one (any sentence-transformers model still works; it is
searched with its own vectors, unadapted).

Bundled adapter ``legal`` (``adapters/legal-all-MiniLM-L6-v2.npz``, with a term expansion, below): for
``sentence-transformers/all-MiniLM-L6-v2``, learned on the tuning half of folioflow's legal
benchmark (CUAD contracts, ``tests/benchmarks/train_legal_adapter.py``, which documents the
data, the constants and how they were chosen); the legal retrieval profile uses it
(:mod:`folioflow.indexing.profiles`). A file path names an adapter of your own: an ``.npz``
with ``matrix`` (``(d, d)``) and ``model`` (the embedding model's name) arrays.

Learned term expansion (optional in the file; the bundled ``legal`` adapter has one). A question's
BM25 query holds only its own words (weight 1 each; Qdrant applies the IDF), so a clause drafted in
other words ("construed in accordance with", "shall continue in force for") scores nothing there.
An adapter may also hold a map from the question's dense vector to weights of BM25 terms, learned
like ``A`` (the same contracts, positives and loss, on the BM25 score of the question's terms plus
the expansion's), in the manner of learned sparse query expansion (SPLADE: Formal et al., SIGIR 2021,
here with the terms' document weights fixed to BM25's):

    w = E q,  the query's sparse vector += the ``top`` terms with the largest positive ``w``

``E``: ``expansion``, ``(V, d)``; ``terms``: ``(V,)`` uint32 BM25 term ids (Qdrant's BM25 tokenizer,
:mod:`folioflow.indexing.sparse`) of the language in ``sparse_language``; a collection whose BM25
encoder has another language is searched without the expansion.
"""

from __future__ import annotations

import logging
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from folioflow.ocr.errors import ConfigurationError

__all__ = ["ADAPTERS", "QueryAdapter", "load_adapter"]

log = logging.getLogger(__name__)
_HERE = Path(__file__).resolve().parent / "adapters"
#: Bundled adapters by name: the file under ``adapters/``.
ADAPTERS = {"legal": _HERE / "legal-all-MiniLM-L6-v2.npz"}


@dataclass(frozen=True, eq=False)
class QueryAdapter:
    """A residual linear map for the query vectors of one embedding model (module docstring).

    ``matrix``: ``(d, d)`` float32, ``A`` above (read-only); ``model``: the name of the embedding
    model whose vectors it maps (``sentence-transformers/all-MiniLM-L6-v2``); ``expansion``
    (``(V, d)`` float32) and ``terms`` (``(V,)`` uint32): the learned term expansion, both ``None``
    when it has none; ``sparse_language``: the BM25 tokenizer language of ``terms``."""

    matrix: np.ndarray
    model: str
    expansion: np.ndarray | None = None
    terms: np.ndarray | None = None
    sparse_language: str = "english"

    def apply(self, vector: np.ndarray) -> np.ndarray:
        """``(q + A q) / ||q + A q||`` for ``vector`` ``q`` of shape ``(d,)``: a new ``(d,)``
        float32 array (``q`` itself is not changed). Raises ``ValueError`` when ``d`` is not the
        adapter's."""
        q = np.asarray(vector, dtype=np.float32)
        if q.shape != (self.matrix.shape[1],):
            raise ValueError(f"query adapter for {self.model} maps vectors of {self.matrix.shape[1]} dimensions, "
                             f"not {q.shape}")
        out = q + self.matrix @ q
        norm = float(np.linalg.norm(out))
        return (out / norm if norm > 0 else q.copy()).astype(np.float32)

    def expand(self, vector: np.ndarray, top: int) -> tuple[list[int], list[float]]:
        """The learned expansion of the question whose dense vector (as embedded, before
        :meth:`apply`) is ``vector`` (``(d,)``): up to ``top`` BM25 term ids and their weights
        (positive, largest first; ties by term id), to add to the question's sparse query. Empty
        when the adapter has no expansion or ``top`` < 1. Raises ``ValueError`` when ``d`` is not
        the adapter's."""
        if self.expansion is None or self.terms is None or top < 1:
            return [], []
        q = np.asarray(vector, dtype=np.float32)
        if q.shape != (self.expansion.shape[1],):
            raise ValueError(f"term expansion for {self.model} reads vectors of {self.expansion.shape[1]} dimensions, "
                             f"not {q.shape}")
        weights = self.expansion @ q
        order = np.lexsort((self.terms, -weights))[:top]
        order = order[weights[order] > 0]
        return [int(t) for t in self.terms[order]], [float(w) for w in weights[order]]


@lru_cache(maxsize=8)
def _read(path: str, mtime_ns: int, size: int) -> QueryAdapter:
    """The adapter in the ``.npz`` at resolved ``path``, cached per file version (its
    modification time and size are part of the key, so a rewritten file is read again)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            matrix = np.array(data["matrix"], dtype=np.float32)
            model = str(np.asarray(data["model"]).reshape(-1)[0])
            expansion = np.array(data["expansion"], dtype=np.float32) if "expansion" in data.files else None
            terms = np.array(data["terms"]) if "terms" in data.files else None
            language = (str(np.asarray(data["sparse_language"]).reshape(-1)[0])
                        if "sparse_language" in data.files else "english")
    except (OSError, KeyError, ValueError, TypeError, IndexError, AttributeError, zipfile.BadZipFile) as exc:
        raise ConfigurationError(f"cannot read query adapter {path}: an .npz with 'matrix' and 'model' arrays "
                                 f"is needed ({type(exc).__name__}: {exc})") from exc
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ConfigurationError(f"query adapter {path}: matrix must be square, not {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ConfigurationError(f"query adapter {path}: matrix holds NaN or infinite values")
    if (expansion is None) != (terms is None):
        raise ConfigurationError(f"query adapter {path}: 'expansion' and 'terms' go together")
    if expansion is not None and terms is not None:
        if expansion.ndim != 2 or expansion.shape[1] != matrix.shape[0] or terms.shape != (expansion.shape[0],):
            raise ConfigurationError(f"query adapter {path}: expansion must be (V, {matrix.shape[0]}) with V terms, "
                                     f"not {expansion.shape} and {terms.shape}")
        if not np.isfinite(expansion).all():
            raise ConfigurationError(f"query adapter {path}: expansion holds NaN or infinite values")
        if terms.dtype.kind not in "iu" or (terms.size and (terms.min() < 0 or terms.max() > 0xFFFFFFFF)):
            raise ConfigurationError(f"query adapter {path}: terms must be uint32 BM25 term ids")
        terms = terms.astype(np.uint32)
        expansion.setflags(write=False)
        terms.setflags(write=False)
    matrix.setflags(write=False)
    return QueryAdapter(matrix=matrix, model=model, expansion=expansion, terms=terms, sparse_language=language)


def load_adapter(name: str | None, model: str) -> QueryAdapter | None:
    """The adapter ``name`` (a bundled name of :data:`ADAPTERS` or an ``.npz`` path) for embedding
    model ``model`` (the embedder's recorded name, ``Embedder.model_name``), or ``None`` when
    ``name`` is ``None`` or the adapter was learned for another model (logged once per pair: the
    question is then searched with its vector as embedded). Raises
    :class:`~folioflow.ocr.errors.ConfigurationError` for an unknown name or a file that is not an
    adapter."""
    if not name:
        return None
    path = ADAPTERS.get(name) or Path(name)
    if name not in ADAPTERS and not path.is_file():
        raise ConfigurationError(f"unknown query adapter {name!r}: use one of {', '.join(ADAPTERS)} or an .npz file")
    resolved = path.resolve()
    try:
        stat = resolved.stat()
    except OSError as exc:
        raise ConfigurationError(f"cannot read query adapter {path}: {exc}") from exc
    adapter = _read(str(resolved), stat.st_mtime_ns, stat.st_size)
    if adapter.model != model:
        _skipped(str(name), adapter.model, model)
        return None
    return adapter


@lru_cache(maxsize=64)
def _skipped(name: str, learned_for: str, model: str) -> None:
    log.warning("query adapter %s was learned for %s, not %s: searching with the question's vector as embedded",
                name, learned_for, model)
