"""Token batches for the GPU fast path (:mod:`folioflow.indexing.gpu_encode`): tokenize, sort, pad.

Texts are ordered longest first (by characters), split into consecutive blocks, tokenized with the
model's Rust tokenizer (truncating at the model's limit and counting what it truncates), sorted by
token count inside the block and cut into **token-budget batches**: rows x padded width <=
``token_budget`` (at most ``max_batch`` rows), so short texts travel in long batches and padding
stays small. A batch carries int32 ids and the row lengths; the attention mask is rebuilt from the
lengths on the device.

Two producers yield the same batches from texts:

* :func:`token_batches`: in the calling thread (``encode_batch`` parallelises with rayon);
* :class:`TokenizerPool`: blocks go to worker *processes* (one single-threaded tokenizer each),
  which return padded numpy arrays.

A third, :func:`id_batches`, starts from token ids that were computed before (:class:`TokenIds`:
folioflow's chunker tokenizes every chunk with the model's tokenizer to count its tokens) and only
sorts, truncates and pads them, in numpy: no tokenizer runs. On a host with two GPUs tokenization, not the GPU,
limits throughput from texts (``docs/benchmarks.md``, "GPU embedding in detail").
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Block", "TokenIds", "TokenizerPool", "encode_many", "fast_tokenizer", "id_batches", "token_batches",
           "tokenize_block", "tokenize_ids"]


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


def encode_many(tok: Any, texts: Sequence[str]) -> list:
    """``tok.encode_batch_fast`` where ``tokenizers`` has it (0.20+: the same ids, overflow and
    special-token masks, but no character offsets, which the fast path never reads; on
    ``nvidia-h200-x2`` 3,558 against 2,831 texts/s in one process, 64,072 against 51,729 texts/s
    in 32, ``bench_tokenizer_scaling.py``), else ``tok.encode_batch``."""
    fast = getattr(tok, "encode_batch_fast", None)
    return (fast or tok.encode_batch)(list(texts))


def tokenize_block(tok: Any, texts: Sequence[str], token_budget: int, max_batch: int) -> Block:
    """Tokenize one block and cut it into token-budget batches (longest first)."""
    encs = encode_many(tok, texts)
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


@dataclass(frozen=True)
class TokenIds:
    """Token ids of ``n`` texts, ragged: ``flat`` (total,) int32 holds the ids text after text and
    ``lengths`` (n,) int64 the ids per text. Ids are what ``tokenizer(text)["input_ids"]`` gives:
    special tokens included, not truncated. Two numpy arrays pickle in one piece, which is how
    :class:`~folioflow.indexing.gpu_encode.GpuEncoderPool` sends a share to a worker."""

    flat: np.ndarray
    lengths: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "flat", np.ascontiguousarray(self.flat, dtype=np.int32))
        object.__setattr__(self, "lengths", np.ascontiguousarray(self.lengths, dtype=np.int64))
        if self.lengths.ndim != 1 or self.flat.ndim != 1 or int(self.lengths.sum()) != len(self.flat):
            raise ValueError(f"token ids: {len(self.flat)} ids do not add up to the lengths given")

    @classmethod
    def from_lists(cls, ids: Sequence[Sequence[int]]) -> TokenIds:
        """From one list of ids per text."""
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(itertools.chain.from_iterable(ids), dtype=np.int32, count=int(lengths.sum()))
        return cls(flat, lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def starts(self) -> np.ndarray:
        """(n,) int64 offset of each text's first id in ``flat``."""
        starts = np.zeros(len(self.lengths), dtype=np.int64)
        np.cumsum(self.lengths[:-1], out=starts[1:])
        return starts

    def take(self, idx: np.ndarray) -> TokenIds:
        """The texts at positions ``idx``, in that order (vectorised gather)."""
        idx = np.asarray(idx, dtype=np.int64)
        lengths = self.lengths[idx]
        if not len(idx):
            return TokenIds(np.zeros(0, dtype=np.int32), lengths)
        out_starts = np.zeros(len(idx), dtype=np.int64)
        np.cumsum(lengths[:-1], out=out_starts[1:])
        src = np.repeat(self.starts[idx] - out_starts, lengths) + np.arange(int(lengths.sum()))
        return TokenIds(self.flat[src], lengths)


def tokenize_ids(tok: Any, texts: Sequence[str]) -> TokenIds:
    """Token ids of ``texts`` with a ``tokenizers.Tokenizer`` (truncation off: the caller's ids
    carry every token, as the chunker's counter sees them)."""
    if tok.truncation is not None:
        tok = type(tok).from_str(tok.to_str())
        tok.no_truncation()
    return TokenIds.from_lists([e.ids for e in encode_many(tok, texts)])


def id_batches(ids: TokenIds, *, max_tokens: int, tail: int = 1, token_budget: int = 32768,
               max_batch: int = 1024, counter: list[int] | None = None
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Producer from token ids: yield ``(rows, ids, lengths)`` like :func:`token_batches`
    (``rows`` positions in ``ids``, longest first, token-budget batches, int32 ids padded with 0).

    Texts longer than ``max_tokens`` are truncated as the tokenizer would (the first ``max_tokens -
    tail`` ids, then the last ``tail`` ids: BERT's ``[SEP]``, ``tail=1``) and counted in
    ``counter[0]``. Raises ``ValueError`` for a text with no ids."""
    if len(ids) and int(ids.lengths.min()) < 1:
        raise ValueError("token ids: every text needs at least one id")
    lengths = np.minimum(ids.lengths, max_tokens)
    if counter is not None:
        counter[0] += int((ids.lengths > max_tokens).sum())
    starts, ends = ids.starts, ids.starts + ids.lengths
    order = np.argsort(-lengths, kind="stable")
    i = 0
    while i < len(order):
        width = int(lengths[order[i]])
        rows = max(1, min(max_batch, token_budget // width, len(order) - i))
        sel = order[i:i + rows]
        ln = lengths[sel]
        cols = np.arange(width)
        src = starts[sel][:, None] + cols
        cut = ids.lengths[sel] > max_tokens
        if tail and cut.any():  # the end of a truncated text: its own last ``tail`` ids
            src[np.ix_(cut, cols[width - tail:])] = ends[sel][cut][:, None] - tail + np.arange(tail)
        mask = cols < ln[:, None]
        batch = np.zeros((rows, width), dtype=np.int32)
        batch[mask] = ids.flat[src[mask]]
        yield sel, batch, ln
        i += rows


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
