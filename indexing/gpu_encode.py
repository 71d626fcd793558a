"""Fast encoding of many texts on CUDA GPUs with a sentence-transformers text model.

Why plain ``SentenceTransformer.encode`` leaves an H200 mostly idle (profiled with
``tests/benchmarks/bench_gpu_embed.py``; MiniLM-L6 needs ~21 MFLOP per token, so 20k texts of
~165 tokens are ~70 TFLOP-ms of work: a few hundred milliseconds of tensor-core time):

1. **Tokenization on the critical path.** Each batch is tokenized in the loop, while the GPU waits.
2. **A host sync per batch.** ``encode`` copies each batch's embeddings to the CPU (``.cpu()``)
   before it tokenizes the next one, and transformers' SDPA mask helper checks
   ``padding_mask.all()`` on the device for every forward: two round-trips per batch during which
   the GPU drains and idles.
3. **Small fixed-size batches.** 32 texts (the default) is a few hundred microseconds of GPU work
   against a similar launch cost for the ~100 kernels of one forward pass.
4. **Pageable host memory.** Inputs are copied from pageable tensors (a staged, synchronous copy).

This module removes each: a producer thread gets **token-budget batches** from
:mod:`folioflow.indexing.gpu_tokenize` (tokenized ahead, longest first, by a pool of tokenizer processes on
hosts with enough cores, else in-thread), page-locks them (**pinned** memory) and queues them; the
GPU thread copies them with ``non_blocking=True``, rebuilds the attention mask from the lengths on
the device and passes it as a prepared 4-D boolean mask (so transformers never inspects it on the
host), runs the model in **fp16**, pools and normalises on the device and scatters the rows into
one preallocated output: **one synchronisation per call**, at the end.
:meth:`GpuEncoder.encode_ids` takes token ids instead of texts (folioflow's chunker already
tokenizes every chunk with the model's tokenizer to count it): no tokenizer runs, the ids are only
sorted, truncated and padded in numpy (:func:`folioflow.indexing.gpu_tokenize.id_batches`).
Several GPUs: :class:`folioflow.indexing.gpu_pool.GpuEncoderPool` (importable from here too) runs one
worker process per GPU (data parallelism, one model replica each) and deals the inputs out as
contiguous ranges of equal work.

Inputs longer than the model's limit are truncated like ``encode`` does (first ``max_tokens - 1``
tokens then ``[SEP]``) and **counted** (``EncodeResult.over_limit``); folioflow's chunker keeps
every chunk within the limit, so the count is 0 in ingestion.

What the measurements led to (the runs, with their commands, are in ``docs/benchmarks.md``, "GPU
embedding in detail"; ``tests/benchmarks/bench_gpu_embed.py`` and ``bench_gpu_pool.py`` re-measure):
one GPU is fed well from texts by an in-thread tokenizer; tokenizer processes pay off only for
large calls, so ``pool_min_texts`` (texts per GPU) switches between the two producers. Two GPUs
from texts are limited by the host's tokenizer throughput, not by the GPUs; from token ids they
scale, so on CUDA the ingest flow embeds from the ids the chunker keeps on each chunk
(``Chunk.token_ids``), through ``Embedder.encode(texts, token_ids=...)``
(``Embedder.takes_token_ids``; ``tests/benchmarks/bench_gpu_token_ids.py`` checks that path on a
device: the same vectors as from texts).
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from folioflow.indexing.gpu_tokenize import TokenIds, TokenizerPool, fast_tokenizer, id_batches, token_batches

__all__ = ["EncodeResult", "GpuEncoder", "TokenIds", "auto_tokenizer_workers"]

log = logging.getLogger(__name__)

@dataclass
class EncodeResult:
    """``embeddings``: (n, dim) float32, L2-normalised, in input order. ``over_limit``: inputs
    longer than the model's token limit (truncated)."""

    embeddings: np.ndarray
    over_limit: int = 0


@dataclass
class _Batch:
    rows: Any       # (B,) int64 positions in the caller's list (pinned tensor on CUDA)
    ids: Any        # (B, L) int32 (pinned on CUDA)
    lengths: Any    # (B,) int64 (pinned on CUDA)


def auto_tokenizer_workers(gpus_on_host: int = 1) -> int:
    """Tokenizer processes per GPU: the host's cores shared by its GPUs, two left for the GPU
    thread and the producer; 0 (tokenize in-thread) below 4 workers. At most 16."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = min(16, cores // max(1, gpus_on_host) - 2)
    return workers if workers >= 4 else 0


class GpuEncoder:
    """The fast path on one device (see module docstring).

    ``model``: a loaded ``SentenceTransformer`` whose first module is a Transformer (its
    ``auto_model``); it is moved to ``device`` and cast to fp16 when ``half`` (CUDA only).
    ``token_budget``: padded tokens per batch (32k suits MiniLM on an H200). ``prefetch``: batches
    queued ahead. ``tokenizer_workers``: tokenizer processes (``None``: :func:`auto_tokenizer_workers`
    on CUDA, 0 on CPU; 0: tokenize in the producer thread), used for calls of at least
    ``pool_min_texts`` texts (smaller calls tokenize in-thread: lower latency, see
    ``bench_gpu_embed.py``). Works on CPU too (no pinning, no fp16), which the tests use.
    :meth:`close` stops the tokenizer processes.
    """

    def __init__(self, model: Any, device: str = "cuda", *, half: bool = True, token_budget: int = 32768,
                 max_batch: int = 1024, prefetch: int = 8, tokenizer_workers: int | None = None,
                 gpus_on_host: int = 1, pool_min_texts: int = 32768):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        self.model = model.to(self.device).eval()
        if half and self.cuda:
            self.model.half()
        first = self.model[0]
        if not hasattr(first, "auto_model"):
            raise TypeError("the fast path needs a sentence-transformers model starting with a Transformer module")
        self.auto_model = first.auto_model
        self.rest = [m for i, m in enumerate(self.model) if i > 0]
        self.max_tokens = int(self.model.max_seq_length)
        self.tokenizer = fast_tokenizer(self.model.tokenizer, self.max_tokens)
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(dim())
        probe = getattr(self.model, "preprocess", None) or self.model.tokenize
        self.with_token_types = "token_type_ids" in probe(["probe"])
        # Special tokens the tokenizer appends (BERT's [SEP]): what truncating token ids keeps at the end.
        special = self.tokenizer.encode("probe").special_tokens_mask
        self.tail = 0
        while self.tail < len(special) - 1 and special[-1 - self.tail]:
            self.tail += 1
        self.vocab_size = int(self.auto_model.get_input_embeddings().num_embeddings)
        self.token_budget, self.max_batch, self.prefetch = token_budget, max_batch, prefetch
        self.pool_min_texts = pool_min_texts
        if tokenizer_workers is None:
            tokenizer_workers = auto_tokenizer_workers(gpus_on_host) if self.cuda else 0
        self.tokenizer_workers = tokenizer_workers
        self.pool: TokenizerPool | None = None  # started on the first call large enough to use it

    def batches(self, texts: Sequence[str], counter: list[int] | None = None) -> Iterator[_Batch]:
        """Token batches of ``texts`` (pinned on CUDA), longest first; ``counter[0]`` accumulates
        truncated inputs."""
        order = np.argsort([-len(t) for t in texts], kind="stable")
        if self.tokenizer_workers > 0 and len(texts) >= self.pool_min_texts:
            if self.pool is None:
                self.pool = TokenizerPool(self.tokenizer, self.tokenizer_workers, token_budget=self.token_budget,
                                          max_batch=self.max_batch)
            source = self.pool.batches(texts, order, counter=counter)
        else:
            source = token_batches(self.tokenizer, texts, order, token_budget=self.token_budget,
                                   max_batch=self.max_batch, counter=counter)
        yield from self._pinned(source)

    def id_batches(self, ids: TokenIds, counter: list[int] | None = None) -> Iterator[_Batch]:
        """Token batches of pre-computed token ids (pinned on CUDA), longest first, truncated at
        the model's limit like the tokenizer does; ``counter[0]`` accumulates truncated inputs."""
        yield from self._pinned(id_batches(ids, max_tokens=self.max_tokens, tail=self.tail,
                                           token_budget=self.token_budget, max_batch=self.max_batch,
                                           counter=counter))

    def _pinned(self, source) -> Iterator[_Batch]:
        torch = self.torch
        for rows, ids, lengths in source:
            tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in (rows, ids, lengths)]
            if self.cuda:
                tensors = [t.pin_memory() for t in tensors]
            yield _Batch(*tensors)

    def _producer(self, make_batches, out: queue.Queue, stop: threading.Event) -> None:
        try:
            for batch in make_batches():
                if stop.is_set():
                    return
                out.put(batch)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer thread, which raises it
            out.put(exc)
            return
        out.put(None)

    def _forward(self, batch: _Batch):
        torch = self.torch
        ids = batch.ids.to(self.device, non_blocking=True).long()
        lengths = batch.lengths.to(self.device, non_blocking=True)
        rows, width = ids.shape
        mask = torch.arange(width, device=self.device)[None, :] < lengths[:, None]
        kwargs = {"input_ids": ids}
        if self.with_token_types:
            kwargs["token_type_ids"] = torch.zeros_like(ids)  # one segment per text
        # A prepared 4-D mask is used as is: no ``padding_mask.all()`` host sync inside transformers.
        kwargs["attention_mask"] = mask[:, None, None, :].expand(rows, 1, width, width)
        hidden = self.auto_model(**kwargs, return_dict=True).last_hidden_state
        features = {"input_ids": ids, "attention_mask": mask.long(), "token_embeddings": hidden}
        for module in self.rest:
            features = module(features)
        emb = features["sentence_embedding"].float()
        return torch.nn.functional.normalize(emb, p=2, dim=1)

    def run_batches(self, batches, n: int):
        """Run the model over ``batches`` (token batches, or exceptions to raise) and return the
        (n, dim) float32 device tensor of normalised rows at their positions. Launches
        asynchronously; does not synchronise."""
        torch = self.torch
        out = torch.empty((n, self.dimension), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            for item in batches:
                if isinstance(item, BaseException):
                    raise item
                rows = item.rows.to(self.device, non_blocking=True)
                out.index_copy_(0, rows, self._forward(item))
        return out

    def encode(self, texts: Sequence[str], out: np.ndarray | None = None) -> EncodeResult:
        """Embed ``texts``: (n, dim) float32 L2-normalised rows in input order, plus the count of
        truncated inputs. ``out``: a C-contiguous (n, dim) float32 array to copy the rows into
        (returned as ``embeddings``; the pool passes its shared-memory slab), else a new one.
        Raises whatever tokenization or the model raised."""
        texts = list(texts)
        counter = [0]
        return self._encode(lambda: self.batches(texts, counter), len(texts), counter, out)

    def encode_ids(self, ids: TokenIds | Sequence[Sequence[int]], out: np.ndarray | None = None) -> EncodeResult:
        """Embed texts given as token ids (``tokenizer(text)["input_ids"]`` of this model's
        tokenizer, special tokens included; a :class:`TokenIds` or one list per text): the same
        rows :meth:`encode` gives for the texts, without tokenizing. Ids past the model's limit are
        truncated like the tokenizer does and counted. ``out`` as in :meth:`encode`. Raises
        ``ValueError`` for an id outside the vocabulary, a text without ids or an unfit ``out``
        (checked before anything reaches the device)."""
        ids = ids if isinstance(ids, TokenIds) else TokenIds.from_lists(ids)
        if len(ids.flat) and (int(ids.flat.min()) < 0 or int(ids.flat.max()) >= self.vocab_size):
            raise ValueError(f"token ids: outside this model's vocabulary of {self.vocab_size}")
        if len(ids) and int(ids.lengths.min()) < 1:
            raise ValueError("token ids: every text needs at least one id")
        counter = [0]
        return self._encode(lambda: self.id_batches(ids, counter), len(ids), counter, out)

    def _encode(self, make_batches, n: int, counter: list[int], out: np.ndarray | None = None) -> EncodeResult:
        if out is not None and (out.shape != (n, self.dimension) or out.dtype != np.float32
                                or not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f"out: needs a writeable C-contiguous ({n}, {self.dimension}) float32 array")
        if n == 0:
            return EncodeResult(np.zeros((0, self.dimension), dtype=np.float32) if out is None else out, 0)
        q: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        worker = threading.Thread(target=self._producer, args=(make_batches, q, stop), daemon=True)
        worker.start()
        try:
            rows = self.run_batches(iter(q.get, None), n)
            if out is None:
                result = rows.cpu().numpy()  # the one synchronisation
            else:  # straight into the caller's array: no second copy
                self.torch.from_numpy(out).copy_(rows)
                result = out
        finally:
            stop.set()
            while worker.is_alive():
                try:
                    q.get_nowait()
                except queue.Empty:
                    worker.join(timeout=0.05)
        return EncodeResult(result, counter[0])

    def close(self) -> None:
        """Stop the tokenizer processes (idempotent)."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


_POOL_NAMES = ("GpuEncoderPool", "cpu_shares", "shared_memory_fits")


def __getattr__(name: str) -> Any:
    """The pool lives in :mod:`folioflow.indexing.gpu_pool` (it builds on :class:`GpuEncoder`); its names
    stay importable from here, loaded on first use (no import cycle)."""
    if name in _POOL_NAMES:
        from folioflow.indexing import gpu_pool

        return getattr(gpu_pool, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
