"""Endpoint URLs, server limits from /metrics, and an engine whose endpoints are all unreachable."""

import socket

import pytest

from folioflow.ocr.errors import EngineUnavailableError
from folioflow.ocr.vlm import VlmEngine, VlmOptions
from folioflow.ocr.vlm.client import normalise_url, parse_limits

# Lines of a real vLLM 0.32.0 /metrics answer (CPU engine, tiny Qwen2-VL), shortened.
METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
vllm:num_requests_running{engine="0",model_name="tiny-vlm"} 0.0
vllm:cache_config_info{_block_size_resolved="True",block_size="128",cache_dtype="auto",engine="0",gpu_memory_utilization="0.92",kv_cache_max_concurrency="512.0",kv_cache_memory_bytes="1073741824",num_gpu_blocks="16384"} 1.0
"""


def test_limits_from_metrics():
    limits = parse_limits(METRICS)
    assert limits.kv_cache_max_concurrency == 512.0 and limits.max_num_seqs is None
    assert parse_limits('vllm:scheduler_config_info{max_num_seqs="48"} 1.0').max_num_seqs == 48
    assert parse_limits("") == parse_limits("# nothing")


@pytest.mark.parametrize(
    "given, expected",
    [
        ("http://gpu1:8000/v1", "http://gpu1:8000"),
        ("http://gpu1:8000/v1/", "http://gpu1:8000"),
        ("gpu1:8000", "http://gpu1:8000"),
        ("https://ocr.example.com", "https://ocr.example.com"),
    ],
)
def test_urls_are_normalised(given, expected):
    assert normalise_url(given) == expected


def test_options_refuse_empty_and_duplicate_endpoints():
    with pytest.raises(ValueError):
        VlmOptions(endpoints=[])
    with pytest.raises(ValueError):
        VlmOptions(endpoints=["http://a:1/v1", "http://a:1/v1"])


def test_no_reachable_endpoint_fails_warm_up_with_each_reason():
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    engine = VlmEngine(
        VlmOptions(
            endpoints=[f"http://127.0.0.1:{p}/v1" for p in ports], profile="markdown", render_workers=0
        )
    )
    with pytest.raises(EngineUnavailableError) as info:
        engine.warm_up()
    message = str(info.value)
    assert message.startswith("no VLM endpoint answered: ")
    assert all(f"http://127.0.0.1:{p}: connect:" in message for p in ports)
    engine.close()
