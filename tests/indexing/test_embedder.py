"""The embedder and the GPU fast path's CPU-testable parts, on the real default model."""

from __future__ import annotations

import numpy as np
import pytest

from folioflow.indexing.embedder import DEFAULT_MODEL, Embedder
from folioflow.ocr.samples import SAMPLE_FACTS


def test_default_model_shapes_and_normalisation(embedder):
    assert embedder.model_name == DEFAULT_MODEL
    assert embedder.dimension == 384 and embedder.max_tokens == 256
    vecs = embedder.encode(list(SAMPLE_FACTS.values()))
    assert vecs.shape == (4, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


def test_related_texts_are_closer(embedder):
    law, revenue, query = embedder.encode([SAMPLE_FACTS["law"], SAMPLE_FACTS["revenue"],
                                           "Which state's law governs the contract?"])
    assert float(query @ law) > float(query @ revenue) + 0.2


def test_over_limit_inputs_are_counted_not_silent(embedder, caplog):
    before = embedder.over_limit
    long = " ".join(["indemnification"] * 400)
    embedder.encode([long, "short text"])
    assert embedder.over_limit == before + 1
    assert "exceed 256 tokens" in caplog.text


def test_token_counter_matches_the_model_limit(embedder):
    tokens = pytest.importorskip("folioflow.chunking.tokens", reason="folioflow.chunking.tokens not merged into this branch yet")
    counter = embedder.token_counter()
    assert isinstance(counter, tokens.HFTokenCounter) and counter.max_tokens == 256
    assert counter.count("hello world") == 4  # [CLS] hello world [SEP]


def test_unknown_model_is_a_clear_error():
    from folioflow.ocr.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        Embedder("/nonexistent/model-folder", device="cpu").warm_up()


@pytest.mark.parametrize("workers", [0, 2])
def test_fast_path_matches_plain_encode(embedder, workers):
    """The GPU fast path's pipeline (token-budget batches, masks from lengths, scatter back),
    run on the CPU: same vectors as sentence-transformers' encode, in input order."""
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.embedder import default_model_path
    from folioflow.indexing.gpu_encode import GpuEncoder

    texts = [f"{v} (item {i})" * (1 + i % 5) for i, v in enumerate(list(SAMPLE_FACTS.values()) * 6)]
    texts.append("x " * 600)  # over the limit: truncated and counted
    fast = GpuEncoder(SentenceTransformer(default_model_path(), device="cpu"), "cpu", token_budget=512,
                      tokenizer_workers=workers, pool_min_texts=0)
    try:
        res = fast.encode(texts)
    finally:
        fast.close()
    ref = embedder.model.encode(texts, normalize_embeddings=True)
    assert res.embeddings.shape == ref.shape
    assert float((res.embeddings * ref).sum(1).min()) > 0.9999
    assert res.over_limit == 1


def test_cpu_fast_path_is_the_default_and_matches_plain_encode(embedder):
    """On the CPU, ``Embedder`` runs the fast path by default; its vectors and its over-limit count
    equal plain ``encode``'s (``fast=False``) at the same precision, for texts of varied lengths."""
    texts = [" ".join(f"{v} (item {i})".split()[: 3 + 7 * (i % 9)]) for i, v in enumerate(list(SAMPLE_FACTS.values()) * 9)]
    texts += ["x " * 600, "y"]
    fast = embedder.inner if hasattr(embedder, "inner") else embedder
    assert fast._fast is not None and fast._fast.device.type == "cpu"
    plain = Embedder(device="cpu", fast=False).warm_up()
    assert plain._fast is None and plain.cpu_bf16 == fast.cpu_bf16
    before_fast, before_plain = fast.over_limit, plain.over_limit
    a, b = fast.encode(texts), plain.encode(texts)
    assert a.shape == b.shape == (len(texts), 384)
    assert float((a * b).sum(1).min()) > 0.9999
    assert fast.over_limit - before_fast == plain.over_limit - before_plain == 1


@pytest.mark.parametrize("shared", [True, False])
def test_multi_device_pool_matches_plain_encode_in_input_order(embedder, shared):
    """GpuEncoderPool's data parallelism (one worker process per device, contiguous ranges of equal
    work, rows written into the pool's shared-memory arena, or sent back when shared memory is
    off), run on two CPU workers: the same vectors as encode, in input order, over several calls
    of different sizes (the arenas grow; one text leaves a worker idle), from texts and from token
    ids, truncations counted across workers."""
    from folioflow.indexing.embedder import default_model_path
    from folioflow.indexing.gpu_encode import GpuEncoderPool
    from folioflow.indexing.gpu_tokenize import fast_tokenizer, tokenize_ids

    texts = [f"{v} (clause {i})" * (1 + i % 7) for i, v in enumerate(list(SAMPLE_FACTS.values()) * 5)]
    texts = ["x " * 600] + texts + ["y " * 700]  # over the limit: one lands on each worker
    ids = tokenize_ids(fast_tokenizer(embedder.model.tokenizer, 256), texts)
    with GpuEncoderPool(
        default_model_path(), ["cpu", "cpu"], use_shared_memory=shared, token_budget=512, tokenizer_workers=0
    ) as pool:
        first = pool.encode(texts)
        assert len(pool.last_worker_seconds) == 2
        second = pool.encode(texts[::-1])
        one = pool.encode(texts[1:2])
        assert len(pool.last_worker_seconds) == 1
        from_ids = pool.encode_ids(ids)
        from_lists = pool.encode_ids([list(map(int, ids.flat[a:a + n])) for a, n in zip(ids.starts[:3], ids.lengths[:3], strict=True)])
        assert pool.encode([]).embeddings.shape == (0, pool.dimension)
        assert pool.encode_ids([]).embeddings.shape == (0, pool.dimension)
        with pytest.raises(RuntimeError, match="vocabulary"):
            pool.encode_ids([[101, 10**7, 102]] * 3)
        again = pool.encode_ids(ids)  # the pool still works after a failed call
    ref = embedder.model.encode(texts, normalize_embeddings=True)
    assert first.embeddings.shape == ref.shape and first.over_limit == 2
    assert float((first.embeddings * ref).sum(1).min()) > 0.9999
    assert float((second.embeddings * ref[::-1]).sum(1).min()) > 0.9999
    assert float((one.embeddings * ref[1:2]).sum(1).min()) > 0.9999
    assert from_ids.over_limit == 2 and float((from_ids.embeddings * ref).sum(1).min()) > 0.9999
    assert float((from_lists.embeddings * ref[:3]).sum(1).min()) > 0.9999
    assert np.array_equal(again.embeddings, from_ids.embeddings)


def test_shared_memory_is_used_only_where_it_fits(tmp_path):
    from folioflow.indexing.gpu_encode import shared_memory_fits

    assert shared_memory_fits(1 << 20, str(tmp_path))  # 1 MiB: any disk has that
    assert not shared_memory_fits(1 << 60, str(tmp_path))  # an exbibyte: none has that
    assert not shared_memory_fits(1, str(tmp_path / "missing"))


_PROBE = r"""
import json, sys
import numpy as np
sys.path.insert(0, {root!r})
if {tesseract_first}:
    from folioflow.ocr.engines.tesseract import load_tesserocr
    load_tesserocr()  # sets OMP_THREAD_LIMIT=1 for tesseract
import torch
from folioflow.indexing.embedder import Embedder, torch_omp_thread_limit
from folioflow.ocr.samples import SAMPLE_FACTS
texts = [f"{{k}}: {{v}}" for k, v in SAMPLE_FACTS.items()] * 4 + ["Operating margin improved to 18.4 percent."] * 8
fp32 = Embedder(device="cpu", precision="fp32").encode(texts)
bf16 = Embedder(device="cpu", precision="bf16").encode(texts)
print(json.dumps({{"limit": torch_omp_thread_limit(), "threads": torch.get_num_threads(),
                   "min_cos": float((fp32 * bf16).sum(1).min())}}))
"""


def _probe(env_limit: str | None, tesseract_first: bool) -> dict:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    # Thread settings other tests' libraries leave behind (Dask's nanny sets *_NUM_THREADS=1) go too.
    env = {k: v for k, v in os.environ.items() if k != "OMP_THREAD_LIMIT" and not k.endswith("_NUM_THREADS")}
    env["HF_HUB_OFFLINE"] = "1"
    if env_limit:
        env["OMP_THREAD_LIMIT"] = env_limit
    out = subprocess.run([sys.executable, "-c", _PROBE.format(root=root, tesseract_first=tesseract_first)],
                         env=env, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_tesseract_thread_limit_does_not_reach_the_embedder():
    """Loading tesserocr through the tesseract engine (which sets OMP_THREAD_LIMIT=1) leaves torch's OpenMP
    runtime unlimited, and bf16 vectors stay equivalent to fp32."""
    control = _probe(None, tesseract_first=False)
    got = _probe(None, tesseract_first=True)
    assert got["limit"] is None or got["limit"] > 1
    assert got["threads"] == control["threads"]
    assert got["min_cos"] > 0.999


@pytest.mark.slow
def test_an_inherited_thread_limit_caps_torch_threads_and_keeps_vectors_right():
    """OMP_THREAD_LIMIT=1 in the environment: torch's runtime honours it, the embedder caps torch at
    one thread, and bf16 autocast still matches fp32 (with two threads it returned wrong vectors)."""
    got = _probe("1", tesseract_first=False)
    if got["limit"] is None:
        pytest.skip("this torch build carries no libgomp/libiomp5 to query")
    assert got["limit"] == 1 and got["threads"] == 1  # even where torch would take more
    assert got["min_cos"] > 0.999


def test_unknown_precision_is_a_clear_error():
    from folioflow.ocr.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match="precision"):
        Embedder(precision="fp8")


def test_token_ids_from_the_chunker_give_the_same_vectors(embedder, tmp_path):
    """``encode(texts, token_ids=...)`` embeds without tokenizing and gives the vectors the texts
    give; an Indexer with ``use_token_ids`` stores those vectors, so search is unchanged."""
    import numpy as np

    from folioflow.indexing.gpu_tokenize import TokenIds
    from folioflow.indexing.indexer import Indexer
    from folioflow.indexing.store import StoreSettings, open_store
    from folioflow.ocr.errors import EmbeddingError

    from .conftest import sample_documents

    model = embedder.inner if hasattr(embedder, "inner") else embedder
    assert model.takes_token_ids is False  # on the CPU the fast path tokenizes alongside the model
    counter = model.token_counter()
    texts = [f"{v} (item {i})" * (1 + i % 4) for i, v in enumerate(list(SAMPLE_FACTS.values()) * 5)]
    ids = counter.ids_batch(texts)
    a = model.encode(texts)
    b = model.encode(texts, token_ids=TokenIds.from_lists(ids))
    assert np.allclose(a, b, atol=1e-5)
    with pytest.raises(EmbeddingError, match="token ids for"):
        model.encode(texts, token_ids=TokenIds.from_lists(ids[:-1]))

    hits = {}
    for use in (False, True):
        store = open_store(StoreSettings(data_dir=tmp_path / str(use), backend="local"))
        try:
            indexer = Indexer(model, store, use_token_ids=use)
            for record, chunks in sample_documents():
                for c, chunk_ids in zip(chunks, counter.ids_batch([c.embed_text for c in chunks]), strict=True):
                    c.token_ids = np.asarray(chunk_ids, dtype=np.int32).tobytes()
                indexer.index(record, chunks)
            query = model.encode(["Which law governs the agreement?"])[0]
            hits[use] = [(h.id, round(h.score, 4)) for h in store.search(query, mode="dense", k=5)]
        finally:
            store.close()
    assert hits[True] == hits[False]


def test_ids_from_another_tokenizer_are_not_trusted(embedder, tmp_path, caplog):
    """Chunks whose token ids are not this embedder's ids of their text (counted with another
    tokenizer) are embedded from their texts, with a warning."""
    import numpy as np

    from folioflow.indexing.indexer import Indexer
    from folioflow.indexing.store import StoreSettings, open_store

    from .conftest import sample_documents

    model = embedder.inner if hasattr(embedder, "inner") else embedder
    record, chunks = sample_documents()[0]
    for c in chunks:
        c.token_ids = np.arange(2, 2 + c.token_count, dtype=np.int32).tobytes()  # ids of no text
    store = open_store(StoreSettings(data_dir=tmp_path, backend="local"))
    try:
        Indexer(model, store, use_token_ids=True).index(record, chunks)
        query = model.encode([chunks[0].embed_text])[0]
        top = store.search(query, mode="dense", k=1)[0]
        assert top.id == chunks[0].id and top.score > 0.999  # its vector is its text's
    finally:
        store.close()
    assert "do not match" in caplog.text


def test_models_the_fast_path_cannot_copy_take_plain_encode():
    """A default prompt (``encode`` prepends it) keeps a model off the fast path."""
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.embedder import _fast_path_unfit, default_model_path

    plain = SentenceTransformer(default_model_path(), device="cpu")
    assert _fast_path_unfit(plain) is None
    prompted = SentenceTransformer(default_model_path(), device="cpu", prompts={"query": "query: "},
                                   default_prompt_name="query")
    assert "default prompt" in _fast_path_unfit(prompted)


_QUIET_PROBE = """
import json, sys
sys.path.insert(0, {root!r})
from huggingface_hub.utils import are_progress_bars_disabled
from transformers.utils import logging as hf_logging
from folioflow.indexing.embedder import Embedder
Embedder(device="cpu").warm_up()
print(json.dumps({{"transformers_bars": hf_logging.is_progress_bar_enabled(),
                   "hub_bars_off": are_progress_bars_disabled()}}))
"""


@pytest.mark.slow
def test_loading_the_model_prints_no_progress_bar_and_leaves_the_switches_as_they_were():
    """A plain Python process (no CLI, no HF_HUB_DISABLE_PROGRESS_BARS) loads the Embedder: stderr
    holds no "Loading weights" bar (transformers drew one, 103/103, before the load was quieted),
    and transformers' and huggingface_hub's progress bars are on again afterwards."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY", "TQDM_DISABLE")}
    env["HF_HUB_OFFLINE"] = "1"
    out = subprocess.run([sys.executable, "-c", _QUIET_PROBE.format(root=root)], env=env, capture_output=True,
                         text=True, timeout=300, check=True)
    assert "Loading weights" not in out.stderr and "it/s]" not in out.stderr, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"transformers_bars": True, "hub_bars_off": False}
