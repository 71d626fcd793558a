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

This module removes each: a producer thread tokenizes ahead with the model's Rust tokenizer
(``encode_batch`` runs in parallel and outside the GIL), sorts by token length and cuts
**token-budget batches** (rows x padded length <= ``token_budget``: long batches for short texts,
hardly any padding), pads them into **pinned** buffers and queues them; the GPU thread copies them
with ``non_blocking=True``, passes a prepared 4-D boolean attention mask (so transformers never
inspects the mask on the host), runs the model in **fp16**, pools and normalises on the device and
scatters the rows into one preallocated output: **one synchronisation per call**, at the end.
Several GPUs: :class:`GpuEncoderPool` runs one worker process per GPU (data parallelism, one model
replica each; processes, not threads, so kernel launches of the replicas never share a GIL) and
deals the texts out by length so each GPU gets the same amount of work.

Inputs longer than the model's limit are truncated like ``encode`` does (first ``max_tokens - 1``
tokens then ``[SEP]``) and **counted** (``EncodeResult.over_limit``); folioflow's chunker keeps
every chunk within the limit, so the count is 0 in ingestion.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["EncodeResult", "GpuEncoder", "GpuEncoderPool", "token_batches"]

log = logging.getLogger(__name__)


@dataclass
class EncodeResult:
    """``embeddings``: (n, dim) float32, L2-normalised, in input order. ``over_limit``: inputs
    longer than the model's token limit (truncated)."""

    embeddings: np.ndarray
    over_limit: int = 0


@dataclass
class _Batch:
    rows: np.ndarray          # (B,) int64 positions in the caller's list
    input_ids: Any            # (B, L) int64 tensor (pinned on CUDA)
    attention_mask: Any       # (B, L) int64
    token_type_ids: bool      # the model takes token type ids (all 0: one segment per text)


def _fast_tokenizer(tokenizer: Any, max_tokens: int):
    """A private copy of the model's Rust tokenizer truncating at ``max_tokens`` (special tokens
    included, as ``encode`` does), without padding."""
    from tokenizers import Tokenizer

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError("the fast path needs a fast (Rust) tokenizer")
    tok = Tokenizer.from_str(backend.to_str())
    tok.no_padding()
    tok.enable_truncation(max_length=max_tokens)
    return tok


def token_batches(
    tokenizer: Any,
    texts: Sequence[str],
    *,
    token_budget: int = 32768,
    max_batch: int = 1024,
    block: int = 2048,
    first_block: int = 256,
    pin: bool = False,
    with_token_types: bool = True,
    counter: list[int] | None = None,
) -> Iterator[_Batch]:
    """Tokenize ``texts`` (longest first, in blocks) and yield padded batches whose rows x padded
    length stay within ``token_budget`` (at most ``max_batch`` rows).

    ``tokenizer`` is a ``tokenizers.Tokenizer`` with truncation set (see :func:`_fast_tokenizer`).
    The first block is small (``first_block`` texts) so the GPU starts early; later blocks hold
    ``block`` texts. Attention masks come from the lengths (vectorised) and token type ids are 0
    (one segment per text), so the only per-row Python work is copying the ids.
    ``counter[0]`` is incremented for every truncated input. ``pin``: page-lock the buffers (CUDA).
    """
    import torch

    order = np.argsort([-len(t) for t in texts], kind="stable")
    start, size = 0, first_block
    while start < len(order):
        idx = order[start:start + size]
        start, size = start + size, block
        encs = tokenizer.encode_batch([texts[i] for i in idx])
        lengths = np.fromiter((len(e) for e in encs), dtype=np.int64, count=len(encs))
        if counter is not None:
            counter[0] += sum(1 for e in encs if e.overflowing)
        by_len = np.argsort(-lengths, kind="stable")
        i = 0
        while i < len(by_len):
            width = int(lengths[by_len[i]])
            rows = max(1, min(max_batch, token_budget // max(width, 1), len(by_len) - i))
            sel = by_len[i:i + rows]
            ids = np.zeros((rows, width), dtype=np.int64)
            for r, j in enumerate(sel):
                ids[r, :lengths[j]] = encs[j].ids
            mask = (np.arange(width)[None, :] < lengths[sel][:, None]).astype(np.int64)
            tensors = [torch.from_numpy(ids), torch.from_numpy(mask)]
            if pin:
                tensors = [t.pin_memory() for t in tensors]
            yield _Batch(idx[sel], tensors[0], tensors[1], with_token_types)
            i += rows


class GpuEncoder:
    """The fast path on one device (see module docstring).

    ``model``: a loaded ``SentenceTransformer`` whose first module is a Transformer (its
    ``auto_model``); it is moved to ``device`` and cast to fp16 when ``half`` (CUDA only).
    ``token_budget``: padded tokens per batch (32k suits MiniLM on an H200). ``prefetch``: batches
    tokenized ahead. Works on CPU too (no pinning, no fp16), which the tests use.
    """

    def __init__(self, model: Any, device: str = "cuda", *, half: bool = True, token_budget: int = 32768,
                 max_batch: int = 1024, block: int = 2048, prefetch: int = 8):
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
        self.tokenizer = _fast_tokenizer(self.model.tokenizer, self.max_tokens)
        dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dimension = int(dim())
        probe = getattr(self.model, "preprocess", None) or self.model.tokenize
        self.with_token_types = "token_type_ids" in probe(["probe"])
        self.token_budget, self.max_batch, self.block, self.prefetch = token_budget, max_batch, block, prefetch

    def _producer(self, texts: Sequence[str], out: queue.Queue, counter: list[int], stop: threading.Event) -> None:
        try:
            for batch in self.batches(texts, counter):
                if stop.is_set():
                    return
                out.put(batch)
        except BaseException as exc:  # surfaced by the consumer
            out.put(exc)
            return
        out.put(None)

    def _forward(self, batch: _Batch):
        torch = self.torch
        ids = batch.input_ids.to(self.device, non_blocking=True)
        mask = batch.attention_mask.to(self.device, non_blocking=True)
        kwargs = {"input_ids": ids}
        if batch.token_type_ids:
            kwargs["token_type_ids"] = torch.zeros_like(ids)
        # A prepared 4-D mask is used as is: no ``padding_mask.all()`` host sync inside transformers.
        width = ids.shape[1]
        kwargs["attention_mask"] = mask.bool()[:, None, None, :].expand(ids.shape[0], 1, width, width)
        hidden = self.auto_model(**kwargs, return_dict=True).last_hidden_state
        features = {"input_ids": ids, "attention_mask": mask, "token_embeddings": hidden}
        for module in self.rest:
            features = module(features)
        emb = features["sentence_embedding"].float()
        return torch.nn.functional.normalize(emb, p=2, dim=1)

    def run_batches(self, batches, n: int):
        """Run the model over ``batches`` (an iterable of token batches, or exceptions to raise,
        ``None`` ending it) and return the (n, dim) float32 device tensor of normalised rows,
        scattered to their positions. Launches asynchronously; does not synchronise."""
        torch = self.torch
        out = torch.empty((n, self.dimension), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            for item in batches:
                if item is None:
                    break
                if isinstance(item, BaseException):
                    raise item
                rows = torch.from_numpy(item.rows)
                if self.cuda:
                    rows = rows.pin_memory().to(self.device, non_blocking=True)
                out.index_copy_(0, rows, self._forward(item))
        return out

    def batches(self, texts: Sequence[str], counter: list[int] | None = None) -> Iterator[_Batch]:
        """Token batches of ``texts`` with this encoder's settings (see :func:`token_batches`)."""
        return token_batches(self.tokenizer, texts, token_budget=self.token_budget, max_batch=self.max_batch,
                             block=self.block, pin=self.cuda, with_token_types=self.with_token_types, counter=counter)

    def encode(self, texts: Sequence[str]) -> EncodeResult:
        """Embed ``texts``: (n, dim) float32 L2-normalised rows in input order, plus the count of
        truncated inputs. Raises whatever tokenization or the model raised."""
        n = len(texts)
        if n == 0:
            return EncodeResult(np.zeros((0, self.dimension), dtype=np.float32), 0)
        counter = [0]
        q: queue.Queue = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        worker = threading.Thread(target=self._producer, args=(list(texts), q, counter, stop), daemon=True)
        worker.start()
        try:
            result = self.run_batches(iter(q.get, None), n).cpu().numpy()  # the one synchronisation
        finally:
            stop.set()
            while worker.is_alive():
                try:
                    q.get_nowait()
                except queue.Empty:
                    worker.join(timeout=0.05)
        return EncodeResult(result, counter[0])


def _pool_worker(model_path: str, device: str, options: dict, inbox, outbox) -> None:
    """One GPU worker process: load the model on ``device``, then serve (job, texts) requests."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer

        encoder = GpuEncoder(SentenceTransformer(model_path, device=device), device, **options)
        encoder.encode(["warm up"] * 64)
        encoder.torch.cuda.synchronize()
        outbox.put(("ready", device, None))
    except BaseException as exc:  # reported to the parent
        outbox.put(("error", device, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        job = inbox.get()
        if job is None:
            return
        job_id, texts = job
        try:
            res = encoder.encode(texts)
            outbox.put((job_id, res.embeddings, res.over_limit))
        except BaseException as exc:
            outbox.put((job_id, None, f"{type(exc).__name__}: {exc}"))


class GpuEncoderPool:
    """Data parallelism over several GPUs: one worker process (and model replica) per device.

    ``model_path``: a local sentence-transformers folder. ``devices``: e.g. ``["cuda:0", "cuda:1"]``.
    Starting loads one replica per GPU (seconds); :meth:`encode` then splits the texts so each GPU
    gets the same share of long and short texts. Raises ``RuntimeError`` when a worker fails.
    Close it (or use it as a context manager) to stop the workers.
    """

    def __init__(self, model_path: str, devices: Sequence[str], **options: Any):
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.devices = list(devices)
        self._outbox = ctx.Queue()
        self._inboxes = [ctx.Queue() for _ in self.devices]
        self._procs = [ctx.Process(target=_pool_worker, args=(model_path, d, options, q, self._outbox), daemon=True)
                       for d, q in zip(self.devices, self._inboxes)]
        for p in self._procs:
            p.start()
        for _ in self._procs:
            kind, device, err = self._outbox.get()
            if kind == "error":
                self.close()
                raise RuntimeError(f"GPU worker on {device} failed to start: {err}")
        self._job = 0

    def encode(self, texts: Sequence[str]) -> EncodeResult:
        """Embed ``texts`` across all workers; same output as :meth:`GpuEncoder.encode`."""
        texts = list(texts)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        shares = [order[i::len(self._procs)] for i in range(len(self._procs))]
        jobs = {}
        for share, inbox in zip(shares, self._inboxes):
            self._job += 1
            jobs[self._job] = share
            inbox.put((self._job, [texts[i] for i in share]))
        out: np.ndarray | None = None
        over = 0
        for _ in shares:
            job_id, emb, extra = self._outbox.get()
            if emb is None:
                raise RuntimeError(f"GPU worker failed: {extra}")
            if out is None:
                out = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
            out[jobs[job_id]] = emb
            over += int(extra)
        assert out is not None
        return EncodeResult(out, over)

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        for inbox in self._inboxes:
            try:
                inbox.put(None)
            except (OSError, ValueError):
                pass
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
        self._procs = []

    def __enter__(self) -> "GpuEncoderPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
