"""Token batches for the GPU fast path (:mod:`indexing.gpu_encode`): tokenize, sort, pad.

Texts are ordered longest first (by characters), split into consecutive blocks, tokenized with the
model's Rust tokenizer (truncating at the model's limit and counting what it truncates), sorted by
token count inside the block and cut into **token-budget batches**: rows x padded width <=
``token_budget`` (at most ``max_batch`` rows), so short texts travel in long batches and padding
stays small. A batch carries int32 ids and the row lengths; the attention mask is rebuilt from the
lengths on the device.

Two producers yield the same batches:

* :func:`token_batches`: in the calling thread (``encode_batch`` parallelises with rayon);
* :class:`TokenizerPool`: blocks go to worker *processes* (one single-threaded tokenizer each),
  which return padded numpy arrays. Measured on an H200 host (``bench_gpu_embed.py``), the
  in-process tokenizer could not keep one GPU busy (tokenize+pad 1.06 s vs GPU 0.62 s for 20k
  texts), and two GPUs sharing the host's rayon threads scaled only 1.3-1.6x: tokenization, not the
  GPU, was the limit.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Block", "TokenizerPool", "fast_tokenizer", "token_batches", "tokenize_block"]


@dataclass
class Block:
    """Padded batches of one block: ``batches`` is a list of ``(rows, ids, lengths)`` with ``rows``
    positions inside the block, ``ids`` (B, L) int32 and ``lengths`` (B,) int64; ``over`` counts
    truncated texts."""

    batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    over: int


def fast_tokenizer(tokenizer: Any, max_tokens: int):
    """A private ``tokenizers.Tokenizer`` copy of a transformers tokenizer, truncating at
    ``max_tokens`` (special tokens included, as sentence-transformers does), without padding.
    Raises ``TypeError`` for a tokenizer without a Rust backend."""
    from tokenizers import Tokenizer

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError("the fast path needs a fast (Rust) tokenizer")
    tok = Tokenizer.from_str(backend.to_str())
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    return tok


def tokenize_block(tok: Any, texts: Sequence[str], token_budget: int, max_batch: int) -> Block:
    """Tokenize one block and cut it into token-budget batches (longest first)."""
    encs = tok.encode_batch(list(texts))
    lengths = np.fromiter((len(e) for e in encs), dtype=np.int64, count=len(encs))
    over = sum(1 for e in encs if e.overflowing)
    by_len = np.argsort(-lengths, kind="stable")
    out, i = [], 0
    while i < len(by_len):
        width = int(lengths[by_len[i]])
        rows = max(1, min(max_batch, token_budget // max(width, 1), len(by_len) - i))
        sel = by_len[i:i + rows]
        ids = np.zeros((rows, width), dtype=np.int32)
        for r, j in enumerate(sel):
            ids[r, :lengths[j]] = encs[j].ids
        out.append((sel, ids, lengths[sel]))
        i += rows
    return Block(out, over)


def _blocks(n_texts: int, first: int, size: int) -> Iterator[tuple[int, int]]:
    start, step = 0, first
    while start < n_texts:
        yield start, min(n_texts, start + step)
        start, step = start + step, size


def token_batches(tok: Any, texts: Sequence[str], order: np.ndarray, *, token_budget: int = 32768,
                  max_batch: int = 1024, block: int = 2048, first_block: int = 256,
                  counter: list[int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """In-thread producer: yield ``(rows, ids, lengths)`` with ``rows`` positions in ``texts``.
    ``order`` is the processing order (longest first); ``counter[0]`` accumulates truncations."""
    for lo, hi in _blocks(len(order), first_block, block):
        idx = order[lo:hi]
        res = tokenize_block(tok, [texts[i] for i in idx], token_budget, max_batch)
        if counter is not None:
            counter[0] += res.over
        for sel, ids, lengths in res.batches:
            yield idx[sel], ids, lengths


_WORKER: dict[str, Any] = {}


def _init_worker(tok_json: str, token_budget: int, max_batch: int) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    _WORKER.update(tok=Tokenizer.from_str(tok_json), budget=token_budget, max_batch=max_batch)


def _work(texts: list[str]) -> Block:
    return tokenize_block(_WORKER["tok"], texts, _WORKER["budget"], _WORKER["max_batch"])


class TokenizerPool:
    """``workers`` single-threaded tokenizer processes (spawned once, reused across calls).

    ``tok``: the truncating ``tokenizers.Tokenizer`` (see :func:`fast_tokenizer`); its JSON is sent
    to each worker. :meth:`batches` keeps ``2 * workers`` blocks in flight and yields batches as
    blocks finish, in block order. Close it to stop the processes.
    """

    def __init__(self, tok: Any, workers: int, *, token_budget: int = 32768, max_batch: int = 1024):
        import multiprocessing as mp

        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                         initializer=_init_worker, initargs=(tok.to_str(), token_budget, max_batch))
        list(self._pool.map(_work, [["warm up"]] * workers))  # start every process now

    def batches(self, texts: Sequence[str], order: np.ndarray, *, block: int = 256, first_block: int = 64,
                counter: list[int] | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Same output as :func:`token_batches`, tokenized in the worker processes."""
        spans = _blocks(len(order), first_block, block)
        pending: deque[tuple[np.ndarray, Future]] = deque()

        def submit() -> bool:
            span = next(spans, None)
            if span is None:
                return False
            idx = order[span[0]:span[1]]
            pending.append((idx, self._pool.submit(_work, [texts[i] for i in idx])))
            return True

        for _ in range(2 * self.workers):
            if not submit():
                break
        while pending:
            idx, fut = pending.popleft()
            res = fut.result()
            submit()
            if counter is not None:
                counter[0] += res.over
            for sel, ids, lengths in res.batches:
                yield idx[sel], ids, lengths

    def close(self) -> None:
        """Stop the worker processes (idempotent)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
