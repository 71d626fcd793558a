"""Build a tiny, randomly initialised Qwen2-VL (weights, tokenizer, processor) fully offline.

Usage: ``python infra/vllm/build_tiny_vlm.py OUT_DIR`` (run with the vLLM venv's Python, which has
transformers and tokenizers). About 1M parameters, 4 MB, ~10 s. Its output text is random: the
integration tests use it to exercise the real vLLM server (OpenAI API, image inputs, concurrency,
max-num-seqs, /metrics, finish_reason), never OCR quality.

* Tokenizer: byte-level BPE (vocabulary 2048) trained on the Python standard library's sources,
  which every interpreter ships, so nothing is downloaded; Qwen2-VL's special tokens are added.
* Chat template: Qwen2-VL's ``<|im_start|>`` format with ``<|vision_start|><|image_pad|><|vision_end|>``
  for each image part (``image`` or ``image_url``).
* Model: text hidden size 128 (2 heads of 64, 2 layers, mrope sections 8/12/12 summing to head_dim/2),
  vision tower depth 1, patch 14, spatial merge 2 (Qwen2-VL's own values for the last three).
"""

from __future__ import annotations

import glob
import os
import sys
import sysconfig

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
]

CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}{% if c['type'] in ('image', 'image_url') %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif c['type'] == 'video' %}"
    "<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in c %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def train_tokenizer():
    """A byte-level BPE tokenizer trained on up to 200 stdlib ``.py`` files, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    files = sorted(glob.glob(os.path.join(sysconfig.get_paths()["stdlib"], "*.py")))[:200]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=2048,
        special_tokens=SPECIAL_TOKENS,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train(files, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=SPECIAL_TOKENS[1:],
        chat_template=CHAT_TEMPLATE,
    )


def build(out_dir: str) -> None:
    """Write config, safetensors weights, tokenizer and processor of the tiny model to ``out_dir``."""
    import torch
    from transformers import (
        GenerationConfig,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    tokenizer = train_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=2048,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
        rope_parameters=dict(rope_type="default", rope_theta=1e6, mrope_section=[8, 12, 12]),
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    vision = dict(
        depth=1,
        embed_dim=64,
        hidden_size=128,
        num_heads=1,
        mlp_ratio=2,
        patch_size=14,
        spatial_merge_size=2,
        temporal_patch_size=2,
    )
    config = Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    # transformers' typed wrapper of Module.to() lists only the device overload
    model = Qwen2VLForConditionalGeneration(config).to(torch.float32).eval()  # type: ignore[arg-type]
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=False,
    )
    model.save_pretrained(out_dir)
    processor = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=CHAT_TEMPLATE,
    )
    processor.save_pretrained(out_dir)
    params = sum(p.numel() for p in model.parameters())
    print(f"[build_tiny_vlm] saved {out_dir} ({params:,} parameters)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: build_tiny_vlm.py OUT_DIR")
    build(sys.argv[1])
