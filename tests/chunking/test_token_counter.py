"""The token counter counts what the embedding model sees."""

from __future__ import annotations

import json

import pytest

from folioflow.chunking.tokens import HFTokenCounter, TokenCounter, default_counter
from folioflow.ocr.errors import ConfigurationError


def test_default_counter_is_minilm_with_its_sentence_transformers_limit():
    counter = default_counter()
    assert isinstance(counter, TokenCounter)
    assert counter.max_tokens == 256  # sentence_bert_config.json: max_seq_length
    assert counter.special_tokens == 2  # [CLS] ... [SEP]


def test_count_matches_the_tokenizer_without_truncation():
    counter = default_counter()
    text = "Total revenue grew 12% to $4,210 million in fiscal 2025. " * 40  # ~ 700 tokens
    expected = len(counter.tokenizer(text, truncation=False)["input_ids"])
    assert expected > 512  # beyond MiniLM's tokenizer.json truncation (128) and model_max_length (512)
    assert counter.count(text) == expected
    assert counter.count_batch([text, "", "a"]) == [expected, 2, 3]


def test_from_pretrained_reads_max_seq_length_of_any_local_model(tmp_path):
    counter = default_counter()
    counter.tokenizer.save_pretrained(tmp_path)
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    loaded = HFTokenCounter.from_pretrained(tmp_path)
    assert loaded.max_tokens == 128
    assert loaded.count("Operating margin improved.") == counter.count("Operating margin improved.")
    assert HFTokenCounter.from_pretrained(tmp_path, max_tokens=64).max_tokens == 64


def test_from_pretrained_without_st_config_uses_model_max_length(tmp_path):
    default_counter().tokenizer.save_pretrained(tmp_path)
    assert HFTokenCounter.from_pretrained(tmp_path).max_tokens == 512  # tokenizer_config model_max_length


def test_unknown_tokenizer_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="cannot load tokenizer"):
        HFTokenCounter.from_pretrained(tmp_path / "missing-model")
