"""The GPU fast path from token ids and the pool's CPU-side parts (work split, CPU shares), on the
real default model's tokenizer and weights, on the CPU."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from folioflow.ocr.samples import SAMPLE_FACTS


@pytest.fixture(scope="module")
def encoder():
    from sentence_transformers import SentenceTransformer

    from folioflow.indexing.embedder import default_model_path
    from folioflow.indexing.gpu_encode import GpuEncoder

    enc = GpuEncoder(SentenceTransformer(default_model_path(), device="cpu"), "cpu", token_budget=512,
                     tokenizer_workers=0)
    yield enc
    enc.close()


def _texts() -> list[str]:
    texts = [f"{v} (item {i})" * (1 + i % 5) for i, v in enumerate(list(SAMPLE_FACTS.values()) * 4)]
    return texts + ["indemnification " * 400, "a"]  # one over the 256-token limit, one tiny


def test_encode_ids_gives_the_rows_encode_gives(encoder):
    """Token ids from the model's tokenizer (untruncated, as the chunker counts them) embed to the
    same rows as the texts, truncated the same way and counted."""
    from folioflow.indexing.gpu_tokenize import tokenize_ids

    texts = _texts()
    ids = tokenize_ids(encoder.tokenizer, texts)
    assert int(ids.lengths.max()) > encoder.max_tokens  # really untruncated
    from_texts = encoder.encode(texts)
    from_ids = encoder.encode_ids(ids)
    assert from_ids.over_limit == from_texts.over_limit == 1
    assert from_ids.embeddings.shape == from_texts.embeddings.shape
    assert float((from_ids.embeddings * from_texts.embeddings).sum(1).min()) > 0.99999
    as_lists = encoder.encode_ids([e.ids for e in encoder.tokenizer.encode_batch(texts[:3])])
    assert float((as_lists.embeddings * from_texts.embeddings[:3]).sum(1).min()) > 0.99999
    assert encoder.encode_ids([]).embeddings.shape == (0, encoder.dimension)


def test_encode_ids_rejects_ids_the_model_cannot_take(encoder):
    with pytest.raises(ValueError, match="vocabulary"):
        encoder.encode_ids([[101, encoder.vocab_size, 102]])
    with pytest.raises(ValueError, match="vocabulary"):
        encoder.encode_ids([[101, -1, 102]])
    with pytest.raises(ValueError, match="at least one id"):
        encoder.encode_ids([[101, 102], []])


def test_id_batches_pad_and_truncate_like_the_tokenizer(encoder):
    """Every batch row is exactly what the truncating tokenizer gives for that text ([CLS], the
    first 254 word pieces, [SEP] for a long one), padded with 0 to the batch's width, longest
    first, within the token budget."""
    from folioflow.indexing.gpu_tokenize import id_batches, tokenize_ids

    texts = _texts()
    ids = tokenize_ids(encoder.tokenizer, texts)
    want = [e.ids for e in encoder.tokenizer.encode_batch(texts)]  # truncating at 256
    counter = [0]
    seen, widths = [], []
    for rows, batch, lengths in id_batches(ids, max_tokens=256, tail=encoder.tail, token_budget=512,
                                           counter=counter):
        assert batch.shape[0] * batch.shape[1] <= max(512, batch.shape[1])
        widths.append(batch.shape[1])
        for row, line, length in zip(rows, batch, lengths, strict=True):
            assert list(line[:length]) == want[row] and not line[length:].any()
            seen.append(int(row))
    assert sorted(seen) == list(range(len(texts))) and counter[0] == 1
    assert widths == sorted(widths, reverse=True) and widths[0] == 256 and encoder.tail == 1


def test_token_ids_take_and_lists_round_trip():
    from folioflow.indexing.gpu_tokenize import TokenIds

    lists = [[1, 2, 3], [4], [5, 6], [7, 8, 9, 10]]
    ids = TokenIds.from_lists(lists)
    assert len(ids) == 4 and ids.flat.dtype == np.int32 and list(ids.starts) == [0, 3, 4, 6]
    picked = ids.take(np.array([3, 1, 0]))
    assert [list(picked.flat[a:a + n]) for a, n in zip(picked.starts, picked.lengths, strict=True)] == [lists[3], lists[1], lists[0]]
    assert len(ids.take(np.array([], dtype=np.int64))) == 0
    with pytest.raises(ValueError):
        TokenIds(np.arange(5), np.array([2, 2]))


def test_split_even_gives_contiguous_ranges_of_equal_work():
    from folioflow.indexing.gpu_pool import split_even

    rng = np.random.default_rng(0)
    weights = rng.integers(20, 256, size=10_001)
    for parts in (2, 3, 8):
        ranges = split_even(weights, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(weights)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        sums = [int(weights[lo:hi].sum()) for lo, hi in ranges]
        assert max(sums) - min(sums) <= 2 * 256  # within an item or two of even
    assert split_even(np.ones(1), 2) == [(0, 1), (1, 1)]
    assert split_even(np.ones(0), 2) == [(0, 0), (0, 0)]


def test_cpu_shares_are_disjoint_and_cover_the_cpus():
    from folioflow.indexing.gpu_pool import cpu_shares

    assert cpu_shares(2, range(32)) == [list(range(16)), list(range(16, 32))]
    assert cpu_shares(3, range(8)) == [[0, 1, 2], [3, 4], [5, 6, 7]]
    assert cpu_shares(2, [5]) == [[5], [5]]  # fewer CPUs than workers: they share
    mine = sorted(os.sched_getaffinity(0))
    assert sorted(c for share in cpu_shares(2) for c in share) == mine


_CONFINE = r"""
import json, os, sys
sys.path.insert(0, {root!r})
from folioflow.indexing.gpu_pool import confine_to
import torch
confine_to([{cpu}])
from tokenizers import Tokenizer
print(json.dumps({{"affinity": sorted(os.sched_getaffinity(0)), "torch": torch.get_num_threads(),
                  "rayon": os.environ["RAYON_NUM_THREADS"]}}))
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity")
def test_confine_to_sets_affinity_and_thread_pools_in_a_fresh_process():
    """What a pinned pool worker does first: affinity, rayon's and torch's thread counts."""
    cpu = max(os.sched_getaffinity(0))
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run([sys.executable, "-c", _CONFINE.format(root=root, cpu=cpu)], capture_output=True,
                         text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"affinity": [cpu], "torch": 1, "rayon": "1"}


def test_encode_writes_into_the_array_given(encoder):
    """``out=``: the rows land in the caller's array (the pool's shared-memory slab), the same rows
    as without it; a wrong shape or dtype is refused before any work."""
    from folioflow.indexing.gpu_tokenize import tokenize_ids

    texts = _texts()[:7]
    ids = tokenize_ids(encoder.tokenizer, texts)
    want = encoder.encode_ids(ids).embeddings
    slab = np.full((9, encoder.dimension), np.nan, dtype=np.float32)
    got = encoder.encode_ids(ids, out=slab[1:8])
    assert np.shares_memory(got.embeddings, slab)
    assert np.isnan(slab[0]).all() and np.isnan(slab[8]).all() and not np.isnan(slab[1:8]).any()
    assert float((slab[1:8] * want).sum(1).min()) > 0.99999
    again = encoder.encode(texts, out=np.empty((7, encoder.dimension), dtype=np.float32))
    assert float((again.embeddings * want).sum(1).min()) > 0.99999
    with pytest.raises(ValueError, match="out"):
        encoder.encode_ids(ids, out=np.empty((6, encoder.dimension), dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        encoder.encode(texts, out=np.empty((7, encoder.dimension), dtype=np.float64))
