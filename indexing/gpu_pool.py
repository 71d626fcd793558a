"""Data parallelism for the GPU fast path: :class:`GpuEncoderPool`, one worker process per GPU.

Each worker loads its own model replica and runs :class:`folioflow.indexing.gpu_encode.GpuEncoder` on its
device (processes, not threads, so the replicas' kernel launches never share a GIL). A call deals
the inputs out as **contiguous ranges of equal work** (token counts for token ids, characters for
texts), so a worker reads one slice of the input and writes one slab of the output. Inputs and
rows travel through two **shared-memory arenas** the pool keeps between calls (grown when a call
needs more): the caller's token ids are copied in once, the workers write their rows straight
into the output arena, and the caller copies each slab out as soon as its worker answers (while
the other workers may still run). Texts still travel pickled (each worker tokenizes its own range).
Where /dev/shm has no room (containers often get 64 MB) inputs and rows go through the pipes.

Why this shape (measured with ``tests/benchmarks/bench_gpu_pool.py`` on two H200s; the runs are in
``docs/benchmarks.md``, "GPU embedding in detail"): with texts, the host's tokenizer is the limit,
so two GPUs fed texts stay well short of twice one; from token ids they scale once the hand-off is
small, which the arenas kept between calls and the contiguous ranges achieve (an earlier hand-off,
a fresh shared-memory block per call with rows dealt round-robin by length, cost a large share of
each call). Pinning each worker to its own half of the cores (``pin_cpus``) made it slower, not
faster, so it is off by default.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections.abc import Callable, Sequence
from typing import Any, Self

import numpy as np

from folioflow.indexing.gpu_encode import EncodeResult, GpuEncoder
from folioflow.indexing.gpu_tokenize import TokenIds

__all__ = ["GpuEncoderPool", "confine_to", "cpu_shares", "shared_memory_fits", "split_even"]


def cpu_shares(count: int, cpus: Sequence[int] | None = None) -> list[list[int]]:
    """Split ``cpus`` (default: the CPUs this process may run on) into ``count`` disjoint shares of
    consecutive CPUs, as even as possible; with fewer CPUs than shares, shares repeat CPUs."""
    if cpus is None:
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    cpus = list(cpus)
    if count <= 0 or not cpus:
        return []
    if len(cpus) < count:
        return [[cpus[i % len(cpus)]] for i in range(count)]
    bounds = [round(i * len(cpus) / count) for i in range(count + 1)]
    return [cpus[bounds[i]:bounds[i + 1]] for i in range(count)]


def confine_to(cpus: Sequence[int]) -> None:
    """Confine this process to ``cpus`` before it starts any thread pool: its affinity (inherited
    by tokenizer processes it spawns), rayon's threads (``tokenizers``' ``encode_batch``) and
    torch's intra-op threads, all sized to the share."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, list(cpus))
    for var in ("RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS", "OMP_NUM_THREADS"):
        os.environ[var] = str(len(cpus))
    import torch

    torch.set_num_threads(len(cpus))


def split_even(weights: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges ``(lo, hi)`` covering ``weights`` (n,) with sums as equal as
    one item allows (some may be empty when there are fewer items than parts)."""
    n = len(weights)
    if n == 0 or parts <= 1:
        return [(0, n)] + [(n, n)] * max(0, parts - 1)
    cum = np.cumsum(np.asarray(weights, dtype=np.float64))
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="left") + 1
    bounds = [0, *np.minimum(np.maximum.accumulate(cuts), n).tolist(), n]
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(parts)]


def shared_memory_fits(nbytes: int, path: str = "/dev/shm") -> bool:
    """Whether ``nbytes`` (plus a quarter to spare) fit in the free space of ``path``. Containers
    often get a 64 MB /dev/shm (Docker's default): a shared-memory array larger than its free space
    is still created (sparse), and the first write past it kills the writer with SIGBUS."""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= nbytes * 1.25


class _Arena:
    """One shared-memory block the pool reuses across calls; replaced by a larger one (a quarter
    to spare) when a call needs more. Kept mapped, so calls after the first fault no pages in."""

    def __init__(self) -> None:
        self.shm: Any = None

    def ensure(self, nbytes: int):
        """The block, at least ``nbytes`` large, or None when /dev/shm has no room for it."""
        from multiprocessing import shared_memory

        if self.shm is not None and self.shm.size >= nbytes:
            return self.shm
        self.release()
        size = max(nbytes + nbytes // 4, 1 << 20)
        if not shared_memory_fits(size):
            return None
        self.shm = shared_memory.SharedMemory(create=True, size=size)
        return self.shm

    def release(self) -> None:
        if self.shm is not None:
            self.shm.close()
            self.shm.unlink()
            self.shm = None


def _pool_worker(model_path: str, device: str, options: dict, inbox, outbox, cpus: list[int] | None = None) -> None:
    """One GPU worker process: confine itself to ``cpus`` (:func:`confine_to`; None: no change),
    load the model on ``device``, then serve jobs ``(job_id, inputs, out)``. ``inputs``: a list of
    texts, a :class:`TokenIds`, or ``("shm", name, n, total, lo, hi, id_lo, id_hi)``: rows
    ``lo:hi`` of the ids in the input arena ``name`` ((n,) int64 lengths, then (total,) int32 ids).
    ``out``: ``("shm", name, n, lo)``: write the rows at ``lo`` of the (n, dim) float32 output
    arena, or None: send them back. Answers ``(job_id, over_limit, (seconds, rows or None))`` or
    ``(job_id, None, error)``."""
    from multiprocessing import shared_memory

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        if cpus:
            confine_to(cpus)
        from sentence_transformers import SentenceTransformer

        from folioflow.indexing.embedder import quiet_model_load

        with quiet_model_load():  # no "Loading weights" bar per worker
            model = SentenceTransformer(model_path, device=device)
        encoder = GpuEncoder(model, device, **options)
        encoder.encode(["warm up"] * 64)
        if encoder.cuda:
            encoder.torch.cuda.synchronize()
        outbox.put(("ready", device, (encoder.dimension, encoder.max_tokens)))
    except BaseException as exc:  # noqa: BLE001 - a worker process reports any failure to the parent
        outbox.put(("error", device, f"{type(exc).__name__}: {exc}"))
        return
    attached: dict[str, tuple[str, Any]] = {}  # "in"/"out" -> (name, block)

    def arena(role: str, name: str):
        if role in attached and attached[role][0] != name:  # the parent replaced it with a larger one
            attached.pop(role)[1].close()
        if role not in attached:
            attached[role] = (name, shared_memory.SharedMemory(name=name))
        return attached[role][1].buf

    while True:
        job = inbox.get()
        if job is None:
            encoder.close()
            for _, shm in attached.values():
                shm.close()
            return
        job_id, inputs, out = job
        ids = buf = rows = res = None  # views into the arenas: dropped before an arena can be replaced
        try:
            t0 = time.perf_counter()
            if isinstance(inputs, tuple):
                _, name, n, total, lo, hi, id_lo, id_hi = inputs
                buf = arena("in", name)
                ids = TokenIds(np.ndarray((total,), np.int32, buf, offset=8 * n)[id_lo:id_hi],
                               np.ndarray((n,), np.int64, buf)[lo:hi])
            elif isinstance(inputs, TokenIds):
                ids = inputs
            count = len(ids) if ids is not None else len(inputs)
            if out is not None:  # the device's rows are copied straight into this worker's slab
                _, name, n, lo = out
                rows = np.ndarray((n, encoder.dimension), np.float32, arena("out", name))[lo:lo + count]
            res = encoder.encode_ids(ids, out=rows) if ids is not None else encoder.encode(inputs, out=rows)
            if out is None:  # no room in shared memory: the rows travel back through the pipe
                outbox.put((job_id, res.over_limit, (time.perf_counter() - t0, res.embeddings)))
                continue
            outbox.put((job_id, res.over_limit, (time.perf_counter() - t0, None)))
        except BaseException as exc:  # noqa: BLE001 - the parent raises it for this job
            outbox.put((job_id, None, f"{type(exc).__name__}: {exc}"))
        finally:
            ids = buf = rows = res = None


class GpuEncoderPool:
    """Data parallelism over several GPUs: one worker process (and model replica) per device.

    ``model_path``: a local sentence-transformers folder. ``devices``: e.g. ``["cuda:0",
    "cuda:1"]``. Starting loads one replica per GPU (seconds). :meth:`encode` (texts) and
    :meth:`encode_ids` (token ids) deal the inputs out as contiguous ranges of equal work
    (:func:`split_even`) and the workers write their rows into a shared-memory arena the pool keeps
    (where :func:`shared_memory_fits`; ``use_shared_memory=False``: rows and ids travel through the
    pipes). The arenas stay allocated until :meth:`close` (about 1.25x the largest call's rows, 154
    MB for 100k MiniLM rows, and its ids). ``pin_cpus``: give each worker its own share of the
    host's CPUs (:func:`cpu_shares`, :func:`confine_to`; measured slower on ``nvidia-h200-x2``,
    hence off). ``options`` go to each worker's :class:`GpuEncoder`. Raises ``RuntimeError`` when a
    worker fails to start, fails a call, or exits. Close it (or use it as a context manager) to
    stop the workers.
    """

    def __init__(self, model_path: str, devices: Sequence[str], *, use_shared_memory: bool | None = None,
                 pin_cpus: bool = False, **options: Any):
        import torch.multiprocessing as mp

        self.use_shared_memory = use_shared_memory
        ctx = mp.get_context("spawn")
        self.devices = list(devices)
        self._outbox = ctx.Queue()
        self._inboxes = [ctx.Queue() for _ in self.devices]
        self.cpus = cpu_shares(len(self.devices)) if pin_cpus else [None] * len(self.devices)
        options = {"gpus_on_host": 1 if pin_cpus else len(self.devices), **options}
        # Not daemonic: each worker starts its own tokenizer processes.
        self._procs = [ctx.Process(target=_pool_worker, args=(model_path, d, options, q, self._outbox, c))
                       for d, q, c in zip(self.devices, self._inboxes, self.cpus, strict=True)]
        for p in self._procs:
            p.start()
        self._in, self._out = _Arena(), _Arena()
        self._job = 0
        self._outstanding: set[int] = set()
        self.last_worker_seconds: list[float] = []
        self.last_send_seconds = 0.0
        infos = set()
        try:
            for _ in self._procs:
                kind, device, info = self._get()
                if kind == "error":
                    raise RuntimeError(f"GPU worker on {device} failed to start: {info}")
                infos.add(tuple(info))
        except BaseException:
            self.close()
            raise
        (self.dimension, self.max_tokens), = infos

    def _get(self):
        """The next answer from a worker; ``RuntimeError`` when a worker has exited instead."""
        while True:
            try:
                return self._outbox.get(timeout=1.0)
            except queue.Empty:
                dead = [d for d, p in zip(self.devices, self._procs, strict=True) if not p.is_alive()]
                if dead:
                    raise RuntimeError(f"GPU worker on {dead[0]} exited") from None

    def encode(self, texts: Sequence[str]) -> EncodeResult:
        """Embed ``texts`` across all workers (each tokenizes its own range); same output as
        :meth:`GpuEncoder.encode`. ``last_worker_seconds`` keeps each worker's own seconds for the
        call and ``last_send_seconds`` the time to deal the inputs out, so callers can tell worker
        time from hand-off."""
        t0 = time.perf_counter()
        self._drain()
        texts = list(texts)
        weights = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        return self._run(len(texts), weights, lambda lo, hi: texts[lo:hi], t0)

    def encode_ids(self, ids: TokenIds | Sequence[Sequence[int]]) -> EncodeResult:
        """Embed texts given as token ids across all workers; same output as
        :meth:`GpuEncoder.encode_ids` (and, for the ids of texts, as :meth:`encode`). No tokenizer
        runs; the ids are copied once into the input arena, each worker reads its range there."""
        t0 = time.perf_counter()
        self._drain()
        ids = ids if isinstance(ids, TokenIds) else TokenIds.from_lists(ids)
        n, total = len(ids), len(ids.flat)
        starts = np.append(ids.starts, total)
        use = self.use_shared_memory is not False
        shm = self._in.ensure(8 * n + 4 * total) if use and n else None
        if shm is None:
            return self._run(n, np.minimum(ids.lengths, self.max_tokens),
                             lambda lo, hi: TokenIds(ids.flat[starts[lo]:starts[hi]], ids.lengths[lo:hi]), t0)
        lengths = np.ndarray((n,), np.int64, shm.buf)
        flat = np.ndarray((total,), np.int32, shm.buf, offset=8 * n)
        lengths[:] = ids.lengths
        flat[:] = ids.flat
        del lengths, flat
        return self._run(n, np.minimum(ids.lengths, self.max_tokens),
                         lambda lo, hi: ("shm", shm.name, n, total, lo, hi, int(starts[lo]), int(starts[hi])), t0)

    def _drain(self) -> None:
        """Wait for answers still owed by an earlier call that stopped early (they write into the
        arenas this call is about to reuse)."""
        while self._outstanding:
            self._outstanding.discard(self._get()[0])

    def _run(self, n: int, weights: np.ndarray, inputs: Callable[[int, int], Any], t0: float) -> EncodeResult:
        if n == 0:
            return EncodeResult(np.zeros((0, self.dimension), dtype=np.float32), 0)
        use = self.use_shared_memory is not False
        shm = self._out.ensure(n * self.dimension * 4) if use else None
        pending: dict[int, tuple[int, int]] = {}
        for (lo, hi), inbox in zip(split_even(weights, len(self._procs)), self._inboxes, strict=True):
            if hi <= lo:
                continue
            self._job += 1
            pending[self._job] = (lo, hi)
            self._outstanding.add(self._job)
            inbox.put((self._job, inputs(lo, hi), ("shm", shm.name, n, lo) if shm is not None else None))
        self.last_send_seconds = time.perf_counter() - t0
        out = np.empty((n, self.dimension), dtype=np.float32)
        view = np.ndarray((n, self.dimension), np.float32, shm.buf) if shm is not None else None
        over, seconds, errors = 0, [], []
        try:
            while pending:
                job_id, over_limit, extra = self._get()
                self._outstanding.discard(job_id)
                if job_id not in pending:  # a late answer to an earlier call
                    continue
                lo, hi = pending.pop(job_id)
                if over_limit is None:
                    errors.append(extra)
                    continue
                over += int(over_limit)
                secs, emb = extra
                seconds.append(float(secs))
                if emb is None:
                    assert view is not None  # the worker wrote its rows into shared memory
                    emb = view[lo:hi]
                out[lo:hi] = emb  # while the other workers run
        finally:
            del view
        if errors:
            raise RuntimeError(f"GPU worker failed: {errors[0]}")
        self.last_worker_seconds = seconds
        return EncodeResult(out, over)

    def close(self) -> None:
        """Stop the workers and free the arenas (idempotent)."""
        for inbox in self._inboxes:
            with contextlib.suppress(OSError, ValueError):
                inbox.put(None)
        for p in self._procs:
            p.join(timeout=10)
            if p.is_alive():
                p.terminate()
        self._procs = []
        for arena in (getattr(self, "_in", None), getattr(self, "_out", None)):
            if arena is not None:
                arena.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
