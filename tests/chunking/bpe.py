"""A real byte-level BPE tokenizer trained here in a second on text from the corpus-like samples:
token counts of joined texts are *not* the sum of the parts' counts (merges across joins), which
exercises the chunker's exact-check-and-repair pass that WordPiece (MiniLM) rarely needs."""

from __future__ import annotations

from functools import lru_cache

from folioflow.chunking.tokens import HFTokenCounter


@lru_cache(maxsize=1)
def bpe_counter(max_tokens: int = 128) -> HFTokenCounter:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    from tests.chunking.helpers import SENTENCES, pipe_table

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = SENTENCES * 20 + [pipe_table(30)] * 5 + ["$$\\int_a^b f(x)\\,dx = F(b) - F(a)$$"] * 5
    tok.train_from_iterator(corpus, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")
    return HFTokenCounter(fast, max_tokens, name="test-bpe")
