"""BM25 sparse vectors: Qdrant's tokenizer, the client-side TF part of the formula, query weights."""

from __future__ import annotations

import math

import pytest

from folioflow.indexing.sparse import BM25Encoder, measure_avg_len


def _tf_weight(tf: int, length: float, k=1.2, b=0.75, avg=100.0) -> float:
    return tf * (k + 1) / (tf + k * (1 - b + b * length / avg))


def test_document_weights_follow_bm25_saturation_and_length():
    enc = BM25Encoder()
    text = "Revenue grew. Revenues grew again; revenue growth drove the margin."
    vec = enc.encode_documents([text])[0]
    q = enc.encode_query("revenue")
    assert len(q) == 1 and q.values == [1.0]
    weight = dict(zip(vec.indices, vec.values, strict=True))[q.indices[0]]
    # "revenue", "revenues", "revenue" stem alike: tf=3; stop words ("the", "again"?) dropped
    length = measure_avg_len([text])
    assert math.isclose(weight, _tf_weight(3, length), rel_tol=1e-4)
    assert weight > max(v for i, v in zip(vec.indices, vec.values, strict=True) if i != q.indices[0])


def test_stop_words_only_gives_an_empty_vector():
    assert len(BM25Encoder().encode_documents(["the of and to"])[0]) == 0


def test_config_round_trip():
    enc = BM25Encoder(k=1.5, b=0.5, avg_len=80)
    again = BM25Encoder.from_config(enc.config())
    text = "The governing law is the law of the State of Delaware."
    assert again.encode_documents([text]) == enc.encode_documents([text])


def test_bad_language_is_refused():
    with pytest.raises(ValueError):
        BM25Encoder(language="klingon")
