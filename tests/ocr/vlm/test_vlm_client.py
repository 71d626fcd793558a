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


# A fuller /metrics answer in vLLM's exposition format (vLLM docs, "Production Metrics": HELP and TYPE
# lines, gauges and counters labelled engine/model_name, histograms with buckets, _sum, _count,
# _created, info gauges whose labels carry the configuration; the made-up label draft_max_num_seqs
# ends with the name of the one read, which the regular expression used before took for it).
VLLM_METRICS = r"""# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="datalab-to/chandra"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="datalab-to/chandra"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="datalab-to/chandra"} 0.0421
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="datalab-to/chandra"} 48213.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{engine="0",model_name="datalab-to/chandra"} 1.7648e+09
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="datalab-to/chandra"} 91.25
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="datalab-to/chandra"} 0.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="5.0",model_name="datalab-to/chandra"} 17.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="datalab-to/chandra"} 21.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="datalab-to/chandra"} 21.0
# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql-lora,chat-lora",waiting_lora_adapters="",draft_max_num_seqs="7"} 1.7648e+09
# HELP vllm:scheduler_config_info Information of the scheduler configuration.
# TYPE vllm:scheduler_config_info gauge
vllm:scheduler_config_info{engine="0",max_num_batched_tokens="8192",max_num_seqs="32"} 1.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",kv_cache_max_concurrency="41.25",num_gpu_blocks="10312"} 1.0
"""


def test_limits_from_metrics():
    limits = parse_limits(METRICS)
    assert limits.kv_cache_max_concurrency == 512.0 and limits.max_num_seqs is None
    assert parse_limits('vllm:scheduler_config_info{max_num_seqs="48"} 1.0').max_num_seqs == 48
    assert parse_limits("") == parse_limits("# nothing")


def test_limits_from_a_full_vllm_metrics_answer():
    """Labels are read by name by the exposition-format parser: ``draft_max_num_seqs="7"`` is not
    ``max_num_seqs`` (the regular expression used before matched it inside the longer name)."""
    limits = parse_limits(VLLM_METRICS)
    assert limits.max_num_seqs == 32
    assert limits.kv_cache_max_concurrency == 41.25


@pytest.mark.parametrize("text", ["<html><body>404 Not Found</body></html>", "vllm:x{a=\"1\" 3", "\x00\x01"])
def test_limits_from_text_that_is_not_metrics_are_empty(text):
    assert parse_limits(text) == parse_limits("")
    assert parse_limits(VLLM_METRICS + text).max_num_seqs == 32  # what came before the bad line stays


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
