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

Later session (``nvidia-h200-x2``, same image): token ids, CPU pinning, a new hand-off. ``python
tests/benchmarks/bench_gpu_pool.py --model <MiniLM fp16 copy> --text <corpus pieces> --n 20000
--n-large 100000 --reps 3`` first, on the hand-off above (rows round-robin by length, per-call
shared memory) with ``encode_ids`` added. That host's tokenizer capacity: ``encode_batch`` 3,789
texts/s on one core, 52,629 on all 32 (rayon), while one GPU alone embeds ~44k texts/s from ids;
so texts cannot feed two GPUs (1.33x at 20k, 1.38x at 100k), ids did better (1.51x, 1.55x), and
the hand-off was 0.27 s of the 1.47 s call at 100k. Pinning each worker to its own 16 cores
(rayon, torch threads and affinity sized to the share) was slower, not faster: 1.22x/1.35x texts,
1.37x/1.53x ids. Hence :mod:`folioflow.indexing.gpu_pool`'s design (contiguous ranges, arenas kept between
calls, slabs copied out as each worker answers; pinning off by default). The same command with
``--reps 5 --pin no``, twice in a row on one machine (whose tokenizer ran at 2,394 and 2,157
texts/s on one core, 29,915 and 28,501 on all: a slower or busier host than the first)::

    configuration       input   texts   run A texts/s  x 1 device   run B texts/s  x 1 device
    1 device            texts   20000          16,671        1.00          15,627        1.00
    2 devices           texts   20000          23,083        1.38          23,845        1.53
    1 device              ids   20000          38,069        1.00          33,418        1.00
    2 devices             ids   20000          57,301        1.51          55,337        1.66
    1 device            texts  100000          16,376        1.00          16,230        1.00
    2 devices           texts  100000          25,558        1.56          23,828        1.47
    1 device              ids  100000          35,891        1.00          39,200        1.00
    2 devices             ids  100000          65,905        **1.84**      59,053        1.51

For token ids the hand-off is now small (median call minus median slowest worker: 0.03 s at 20k,
0.04-0.05 s at 100k; dealing the inputs out 3 ms / 14 ms); texts still pay for pickling them to the
workers (0.04-0.05 s at 20k, 0.28 s at 100k). Every output is within cosine 0.99999 of one GPU's
from texts. The 1.8x goal is met once (token ids, 100k texts, run A) and not reliably: what is left
is the workers themselves, each taking longer for its half than half of one GPU's time (run B, ids,
100k: 1.65 s against 2.55 s / 2), i.e. two workers on one host still slow each other down, by 5% in
run A and 30% in run B on the same machine. Why is not measured yet; the host's CPUs are the
suspect (the same code varied this much on one machine, and the tokenizer's speed on all cores
ranged from 28.5k to 52.6k texts/s between machines). From texts, two GPUs stay capped by the
host's tokenizer throughput, whatever the hand-off.

With that pool merged, ``bench_gpu_embed.py --n 20000 --n-large 100000 --reps 3`` (plain and fast
paths side by side in one run; medians of 3), twice in a row on one ``nvidia-h200-x2`` machine::

    configuration                         run 1 20k   run 1 100k   run 2 20k   run 2 100k
    plain encode, fp32, batch 32               1,796            -       2,493            -
    plain encode, fp16, batch 256              3,004            -       4,650            -
    fast, 1 GPU, tokenizer in-thread          19,925       21,033      31,091       30,433
    fast, 1 GPU, 16 tokenizer processes       12,407       24,938      13,533       31,816
    fast, 2 GPUs, tokenizer in-thread         31,392       31,019      42,193       40,099
    fast, 2 GPUs, tokenizer processes         15,639       47,808      15,096       37,524
    best 2 GPUs / best 1 GPU                   1.58x        1.92x       1.36x        1.26x

One GPU: 11.1x and 12.5x plain fp32 ``encode`` (6.6x and 6.7x plain fp16): the 4x goal is met in
both runs. Two GPUs: 1.92x one at 100k texts in run 1, but 1.26-1.58x otherwise; the 1.8x goal is
not reliably met (same host, minutes apart: the single GPU ran 1.5x faster in run 2 while two did
not).

Later session (``nvidia-h200-x2``: 32 cores, one socket, one NUMA node, both GPUs on it, NV18
between them, so no pinning to a socket applies): where the two-GPU time goes. The host's
tokenizer (``bench_tokenizer_scaling.py``, 1,500 texts per process) ran 2,831 texts/s in one
process and 51,729 in 32 (``encode_batch``; ``encode_batch_fast``, now used: 3,558 and 64,072),
one process with rayon 44,333 on 32 threads: per-process speed falls by 40% as processes are
added. One GPU from token ids is GPU-bound at 41-44k texts/s (a 32k-token batch: 4.06 ms eager,
4.00 ms as a replayed CUDA graph, so launches cost nothing to remove), so 1.8x one well-fed GPU
needs 74-79k texts/s of tokenization, more than all 32 cores gave in any run (64k): from texts two
GPUs cannot reach 1.8x of one GPU that is fed well, on this host. From token ids the pool scales:
its workers take 1.22 s each for 50k texts against 2.26-2.31 s for 100k on one GPU, and the
hand-off (call minus slowest worker) is 0.03-0.06 s. After ``encode_batch_fast`` and rows copied
from the device straight into the pool's slab, ``bench_gpu_embed.py --n 20000 --n-large 100000
--reps 3`` (token-id rows added; ids computed before timing)::

    configuration                               20k texts/s   100k texts/s   min cos vs fp32
    plain encode, fp32, batch 32                      2,009              -           1.00000
    plain encode, fp16, batch 256                     2,967              -           0.99954
    fast, 1 GPU, tokenizer in-thread                 23,823         25,590           1.00000
    fast, 1 GPU, 16 tokenizer processes              12,209         26,965           1.00000
    fast, 1 GPU, token ids                           43,620         41,889           1.00000
    fast, 2 GPUs, tokenizer in-thread                33,191         34,196           1.00000
    fast, 2 GPUs, 14 tokenizer processes each        11,471         37,520           1.00000
    fast, 2 GPUs, token ids                          80,433         79,495           1.00000
    best 2 GPUs / best 1 GPU, texts                   1.39x          1.39x
    best 2 GPUs / best 1 GPU, token ids               1.84x          1.90x

(the same session's run before these changes: one GPU 18,722 and 25,879, two 27,457 and 32,298
texts/s, 1.47x and 1.25x). ``bench_gpu_pool.py`` right after, same machine: token ids 1.87x (20k)
and 1.84x (100k), texts 1.29x and 1.56x. One GPU: 11.9x (20k) and 13.4x (100k) plain fp32 from texts. Two GPUs:
the 1.8x goal is met from token ids (which folioflow's chunker has) in both benchmarks, and not
from texts, where the host's tokenizer is the limit. So on CUDA the ingest flow embeds from ids: the
chunker keeps the ids of its own token count on each chunk (``Chunk.token_ids``), and the indexer
hands them to ``Embedder.encode(texts, token_ids=...)`` (``Embedder.takes_token_ids``;
``tests/benchmarks/bench_gpu_token_ids.py`` checks that path on the device: same vectors, one H200
43,398 texts/s from ids against 25,358 from texts).
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
