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
:mod:`indexing.gpu_tokenize` (tokenized ahead, longest first, by a pool of tokenizer processes on
hosts with enough cores, else in-thread), page-locks them (**pinned** memory) and queues them; the
GPU thread copies them with ``non_blocking=True``, rebuilds the attention mask from the lengths on
the device and passes it as a prepared 4-D boolean mask (so transformers never inspects it on the
host), runs the model in **fp16**, pools and normalises on the device and scatters the rows into
one preallocated output: **one synchronisation per call**, at the end.
Several GPUs: :class:`GpuEncoderPool` runs one worker process per GPU (data parallelism, one model
replica each; processes, not threads, so kernel launches of the replicas never share a GIL) and
deals the texts out by length so each GPU gets the same amount of work.

Inputs longer than the model's limit are truncated like ``encode`` does (first ``max_tokens - 1``
tokens then ``[SEP]``) and **counted** (``EncodeResult.over_limit``); folioflow's chunker keeps
every chunk within the limit, so the count is 0 in ingestion.

Measured (``python tests/benchmarks/bench_gpu_embed.py --model <MiniLM fp16 copy> --text
<corpus pieces> --n 20000 --n-large 100000 --reps 5`` on ``nvidia-h200-x2``: 2 H200, 32 cores,
torch 2.11.0+cu130, sentence-transformers 6.0.1; texts are 20-220-word windows of FinanceBench and
CUAD text, mean 120 words; medians of 5, every output within cosine 0.99995 of plain fp32)::

    configuration                          20k texts/s   x fp32 b32  x fp16 b256   100k texts/s
    plain encode, fp32, batch 32                 1,999        1.00         0.67              -
    plain encode, fp16, batch 256                2,995        1.50         1.00              -
    fast, 1 GPU, tokenizer in-thread            19,253        9.63         6.43         19,908
    fast, 1 GPU, 16 tokenizer processes         16,269        8.14         5.43         21,157
    fast, 2 GPUs, tokenizer in-thread           30,636       15.33        10.23         29,427
    fast, 2 GPUs, 14 tokenizer procs each       24,473       12.24         8.17         33,898

Where the time went (same 20k texts): plain fp16 spends 5.9 s tokenizing (sentence-transformers'
per-input preprocessing) and 5.3 s in forward calls for a 6.7 s call: the two are serial. The fast
path: tokenize+pad+pin alone 0.64 s, GPU loop alone 0.46 s, overlapped to 1.04 s. One GPU: 9.6x
plain encode (goal 4x met). Two GPUs: 1.59x one GPU at 20k texts, 1.60x at 100k (goal 1.8x **not
met**): the host, not the GPUs, is the limit. HF tokenizers' BERT WordPiece costs ~0.3 ms per
120-word text per core, so tokenization already outruns one GPU's model time, and two GPUs with
their tokenizer processes saturate the 32 cores. Reaching 1.8x needs cheaper tokenization (reuse
the chunker's token ids, which it already computes to count tokens) or more cores per GPU.
Tokenizer processes pay off only for large calls (at 100k texts, not at 20k): ``pool_min_texts``
(default 32768 texts per GPU) switches between the two producers.

Later session (another ``nvidia-h200-x2`` machine, same image): the pool's hand-off. Workers used to
pickle their rows back through the result queue (15 MB per GPU at 20k texts, 77 MB at 100k); they
now write them into one shared-memory array (where /dev/shm has room). ``python
tests/benchmarks/bench_gpu_pool.py --model <MiniLM fp16 copy> --text <corpus pieces> --n 20000
--n-large 100000 --reps 5`` (both pools alive, alternating; medians; in-thread tokenizers)::

    configuration                          texts   texts/s  call s  worker s  x 1 device
    1 device                               20000     26538   0.754         -        1.00
    1 device                              100000     24368   4.104         -        1.00
    2 devices, rows via queue              20000     25891   0.772     0.661        0.98
    2 devices, rows via queue             100000     27467   3.641     3.026        1.13
    2 devices, rows via shared memory      20000     27933   0.716     0.663        1.05
    2 devices, rows via shared memory     100000     30687   3.259     2.992        1.26

Shared memory is 8-12% faster than the queue, but two GPUs are far from twice one (the 1.8x goal
is not met; this machine's single GPU also ran faster than in the table above). The per-worker
time says where it goes: each of two workers takes 0.66 s for its 10k texts, against 0.75 s for
all 20k on one GPU alone, so two workers on one host slow each other down (host-side tokenization
and the Python side of kernel launches); the hand-off itself (sort, sending texts, final copy) is
0.05 s at 20k and 0.27 s at 100k.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from indexing.gpu_tokenize import TokenizerPool, fast_tokenizer, token_batches

__all__ = ["EncodeResult", "GpuEncoder", "GpuEncoderPool", "auto_tokenizer_workers", "shared_memory_fits"]

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
        self.token_budget, self.max_batch, self.prefetch = token_budget, max_batch, prefetch
        self.pool_min_texts = pool_min_texts
        if tokenizer_workers is None:
            tokenizer_workers = auto_tokenizer_workers(gpus_on_host) if self.cuda else 0
        self.tokenizer_workers = tokenizer_workers
        self.pool: TokenizerPool | None = None  # started on the first call large enough to use it

    def batches(self, texts: Sequence[str], counter: list[int] | None = None) -> Iterator[_Batch]:
        """Token batches of ``texts`` (pinned on CUDA), longest first; ``counter[0]`` accumulates
        truncated inputs."""
        torch = self.torch
        order = np.argsort([-len(t) for t in texts], kind="stable")
        if self.tokenizer_workers > 0 and len(texts) >= self.pool_min_texts:
            if self.pool is None:
                self.pool = TokenizerPool(self.tokenizer, self.tokenizer_workers, token_budget=self.token_budget,
                                          max_batch=self.max_batch)
            source = self.pool.batches(texts, order, counter=counter)
        else:
            source = token_batches(self.tokenizer, texts, order, token_budget=self.token_budget,
                                   max_batch=self.max_batch, counter=counter)
        for rows, ids, lengths in source:
            tensors = [torch.from_numpy(np.ascontiguousarray(a)) for a in (rows, ids, lengths)]
            if self.cuda:
                tensors = [t.pin_memory() for t in tensors]
            yield _Batch(*tensors)

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

    def close(self) -> None:
        """Stop the tokenizer processes (idempotent)."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def _pool_worker(model_path: str, device: str, options: dict, inbox, outbox) -> None:
    """One GPU worker process: load the model on ``device``, then serve jobs. A job is
    ``(job_id, shm_name, n, rows, texts)``: the embeddings of ``texts`` are written straight into
    rows ``rows`` of the caller's ``(n, dim)`` float32 shared-memory array ``shm_name`` (or, when
    ``shm_name`` is None, sent back); the worker answers ``(job_id, over_limit, (seconds,
    embeddings or None))`` or ``(job_id, None, error)``."""
    import os
    import time
    from multiprocessing import shared_memory

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer

        encoder = GpuEncoder(SentenceTransformer(model_path, device=device), device, **options)
        encoder.encode(["warm up"] * 64)
        if encoder.cuda:
            encoder.torch.cuda.synchronize()
        outbox.put(("ready", device, encoder.dimension))
    except BaseException as exc:  # reported to the parent
        outbox.put(("error", device, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        job = inbox.get()
        if job is None:
            encoder.close()
            return
        job_id, shm_name, n, rows, texts = job
        try:
            t0 = time.perf_counter()
            res = encoder.encode(texts)
            if shm_name is None:  # no room in shared memory: the rows travel back through the pipe
                outbox.put((job_id, res.over_limit, (time.perf_counter() - t0, res.embeddings)))
                continue
            shm = shared_memory.SharedMemory(name=shm_name)
            try:
                out = np.ndarray((n, encoder.dimension), dtype=np.float32, buffer=shm.buf)
                out[rows] = res.embeddings
                del out
            finally:
                shm.close()
            outbox.put((job_id, res.over_limit, (time.perf_counter() - t0, None)))
        except BaseException as exc:
            outbox.put((job_id, None, f"{type(exc).__name__}: {exc}"))


def shared_memory_fits(nbytes: int, path: str = "/dev/shm") -> bool:
    """Whether ``nbytes`` (plus a quarter to spare) fit in the free space of ``path``. Containers
    often get a 64 MB /dev/shm (Docker's default): a shared-memory array larger than its free space
    is still created (sparse), and the first write past it kills the writer with SIGBUS."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= nbytes * 1.25


class GpuEncoderPool:
    """Data parallelism over several GPUs: one worker process (and model replica) per device.

    ``model_path``: a local sentence-transformers folder. ``devices``: e.g. ``["cuda:0", "cuda:1"]``.
    Starting loads one replica per GPU (seconds); :meth:`encode` then splits the texts so each GPU
    gets the same share of long and short texts, and the workers write their rows into one
    shared-memory array (``use_shared_memory``: None = when :func:`shared_memory_fits`, else the
    rows come back pickled through the result queue). Raises ``RuntimeError`` when a worker fails.
    Close it (or use it as a context manager) to stop the workers.
    """

    def __init__(self, model_path: str, devices: Sequence[str], *, use_shared_memory: bool | None = None,
                 **options: Any):
        import torch.multiprocessing as mp

        self.use_shared_memory = use_shared_memory

        ctx = mp.get_context("spawn")
        self.devices = list(devices)
        self._outbox = ctx.Queue()
        self._inboxes = [ctx.Queue() for _ in self.devices]
        options = {"gpus_on_host": len(self.devices), **options}
        # Not daemonic: each worker starts its own tokenizer processes.
        self._procs = [ctx.Process(target=_pool_worker, args=(model_path, d, options, q, self._outbox))
                       for d, q in zip(self.devices, self._inboxes)]
        for p in self._procs:
            p.start()
        dims = set()
        for _ in self._procs:
            kind, device, info = self._outbox.get()
            if kind == "error":
                self.close()
                raise RuntimeError(f"GPU worker on {device} failed to start: {info}")
            dims.add(int(info))
        self.dimension = dims.pop()
        self._job = 0
        self.last_worker_seconds: list[float] = []

    def encode(self, texts: Sequence[str]) -> EncodeResult:
        """Embed ``texts`` across all workers; same output as :meth:`GpuEncoder.encode`.

        The workers write their rows into one shared-memory array (no result travels through a
        pipe: 100k MiniLM rows are 154 MB); ``last_worker_seconds`` keeps each worker's own encode
        time of the call, so callers can tell worker time from hand-off overhead."""
        from multiprocessing import shared_memory

        texts = list(texts)
        n = len(texts)
        if n == 0:
            return EncodeResult(np.zeros((0, self.dimension), dtype=np.float32), 0)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        shares = [order[i::len(self._procs)] for i in range(len(self._procs))]
        nbytes = n * self.dimension * 4
        use_shm = self.use_shared_memory if self.use_shared_memory is not None else shared_memory_fits(nbytes)
        shm = shared_memory.SharedMemory(create=True, size=nbytes) if use_shm else None
        try:
            pending: dict[int, np.ndarray] = {}
            for share, inbox in zip(shares, self._inboxes):
                self._job += 1
                pending[self._job] = share
                inbox.put((self._job, shm.name if shm else None, n, share, [texts[i] for i in share]))
            out = None if shm else np.empty((n, self.dimension), dtype=np.float32)
            over, seconds, errors = 0, [], []
            while pending:
                job_id, over_limit, extra = self._outbox.get()
                if job_id not in pending:  # a late answer to an earlier call that failed
                    continue
                rows = pending.pop(job_id)
                if over_limit is None:
                    errors.append(extra)
                    continue
                over += int(over_limit)
                secs, emb = extra
                seconds.append(float(secs))
                if out is not None and emb is not None:
                    out[rows] = emb
            if errors:
                raise RuntimeError(f"GPU worker failed: {errors[0]}")
            self.last_worker_seconds = seconds
            if shm is not None:
                view = np.ndarray((n, self.dimension), dtype=np.float32, buffer=shm.buf)
                out = view.copy()
                del view
        finally:
            if shm is not None:
                shm.close()
                shm.unlink()
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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
