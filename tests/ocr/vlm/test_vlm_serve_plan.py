"""Serving plans (what ``folioflow ocr serve`` starts) and the ready-made configs in infra/vllm/."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from folioflow.flows.cli import app
from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.serve import ServeConfig, format_command, load_serve_config, plan_servers

INFRA = Path(__file__).resolve().parents[3] / "infra" / "vllm"


def flag(argv, name):
    return argv[argv.index(name) + 1]


def test_small_model_gets_one_replica_per_gpu_with_profile_flags():
    specs = plan_servers(ServeConfig(model="chandra", gpus=[0, 1, 2, 3], port=9000, vllm=None))
    assert [s.port for s in specs] == [9000, 9001, 9002, 9003]
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["0", "1", "2", "3"]
    argv = specs[0].argv
    assert argv[1:3] == ["serve", "datalab-to/chandra"]
    assert flag(argv, "--max-num-seqs") == "32" and flag(argv, "--max-model-len") == "32768"
    assert flag(argv, "--served-model-name") == "chandra" and "--tensor-parallel-size" not in argv
    assert [s.url for s in specs][-1] == "http://127.0.0.1:9003/v1"


def test_tensor_parallel_groups():
    specs = plan_servers(ServeConfig(model="olmocr", gpus=[4, 5, 6, 7], tensor_parallel_size=2))
    assert [s.env["CUDA_VISIBLE_DEVICES"] for s in specs] == ["4,5", "6,7"]
    assert all(flag(s.argv, "--tensor-parallel-size") == "2" for s in specs)
    with pytest.raises(ConfigurationError, match="do not split"):
        plan_servers(ServeConfig(model="olmocr", gpus=[0, 1, 2], tensor_parallel_size=2))


def test_large_model_defaults_to_tensor_parallel_over_all_gpus():
    specs = plan_servers(ServeConfig(model="Qwen/Qwen2.5-VL-72B-Instruct", gpus=[0, 1, 2, 3]))
    assert len(specs) == 1 and flag(specs[0].argv, "--tensor-parallel-size") == "4"
    assert len(plan_servers(ServeConfig(model="Qwen/Qwen2.5-VL-7B-Instruct", gpus=[0, 1]))) == 2
    assert len(plan_servers(ServeConfig(model="/models/custom", gpus=[0, 1], params_b=30))) == 1


def test_vllm_data_parallel_is_one_server():
    specs = plan_servers(ServeConfig(model="deepseek-ocr", gpus=list(range(8)), data_parallel_size=8))
    assert len(specs) == 1
    argv = specs[0].argv
    assert flag(argv, "--data-parallel-size") == "8" and flag(argv, "--tensor-parallel-size") == "1"
    assert specs[0].env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor" in argv
    with pytest.raises(ConfigurationError, match="!= 8 GPUs"):
        plan_servers(ServeConfig(model="deepseek-ocr", gpus=list(range(8)), data_parallel_size=3))


def test_cpu_replicas_get_their_own_cores_and_extra_args_win():
    specs = plan_servers(
        ServeConfig(
            model="/models/tiny",
            replicas=2,
            cpu_cores=[0, 1],
            port=8011,
            extra_args=["--max-model-len", "4096"],
            vllm=None,
        )
    )
    assert [s.env["VLLM_CPU_OMP_THREADS_BIND"] for s in specs] == ["0", "1"]
    assert specs[0].argv[2] == "/models/tiny" and "--served-model-name" not in specs[0].argv
    assert specs[0].argv[-2:] == ["--max-model-len", "4096"]  # after the profile's 16384: vLLM keeps the last


def test_pinned_cpu_replicas_run_their_whole_process_tree_on_their_cores():
    import os
    import subprocess
    import sys

    cores = sorted(os.sched_getaffinity(0))
    specs = plan_servers(
        ServeConfig(model="/models/tiny", replicas=1, cpu_cores=cores[:1], pin_cpu_processes=True, vllm=None)
    )
    argv = specs[0].argv
    assert Path(argv[0]).name == "taskset" and argv[1:3] == ["-c", str(cores[0])]
    assert specs[0].env["VLLM_CPU_OMP_THREADS_BIND"] == str(cores[0])
    assert "taskset -c" in format_command(specs[0])
    # the prefix really pins what it starts, children included (vLLM's engine core is a child)
    child = "import os, subprocess, sys; print(sorted(os.sched_getaffinity(0)), subprocess.run([sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'], capture_output=True, text=True).stdout.strip())"
    out = subprocess.run(argv[:3] + [sys.executable, "-c", child], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [f"[{cores[0]}]", f"[{cores[0]}]"]
    unpinned = plan_servers(ServeConfig(model="/models/tiny", replicas=1, cpu_cores=cores[:1], vllm=None))
    assert "taskset" not in unpinned[0].argv[0]


def test_executable_comes_from_config_or_environment(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "vllm").write_text("#!/bin/sh\n")
    assert plan_servers(ServeConfig(model="chandra", gpus=[0], vllm=str(venv)))[0].argv[0] == str(
        venv / "bin" / "vllm"
    )
    monkeypatch.setenv("FOLIOFLOW_VLLM_VENV", str(venv))
    assert plan_servers(ServeConfig(model="chandra", gpus=[0]))[0].argv[0] == str(venv / "bin" / "vllm")
    with pytest.raises(ConfigurationError, match="not found"):
        plan_servers(ServeConfig(model="chandra", gpus=[0], vllm=str(tmp_path / "missing")))


@pytest.mark.parametrize("name, replicas", [("1gpu", 1), ("2gpu", 2), ("4gpu", 4), ("8gpu", 8)])
def test_infra_configs_plan_one_replica_per_gpu(name, replicas):
    specs = plan_servers(load_serve_config(INFRA / f"{name}.yaml"))
    assert len(specs) == replicas and all(s.host == "0.0.0.0" for s in specs)
    assert [s.port for s in specs] == list(range(8000, 8000 + replicas))


def test_multinode_config_needs_a_node_and_lists_client_endpoints():
    import yaml

    with pytest.raises(ConfigurationError, match="pick one with --node"):
        load_serve_config(INFRA / "multinode.yaml")
    planned = [
        s.port
        for node in ("gpu-node-1", "gpu-node-2")
        for s in plan_servers(load_serve_config(INFRA / "multinode.yaml", node))
    ]
    clients = yaml.safe_load((INFRA / "multinode.yaml").read_text())["clients"]["endpoints"]
    assert len(planned) == len(clients) == 12
    assert [int(u.rsplit(":", 1)[1].split("/")[0]) for u in clients] == planned


def test_cli_dry_run_prints_exact_commands():
    result = CliRunner().invoke(
        app,
        [
            "ocr",
            "serve",
            "--model",
            "chandra",
            "--gpus",
            "0,1",
            "--port",
            "8100",
            "--dry-run",
            "--",
            "--enable-prefix-caching",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    expected = [
        format_command(s)
        for s in plan_servers(
            ServeConfig(model="chandra", gpus=[0, 1], port=8100, extra_args=["--enable-prefix-caching"])
        )
    ]
    assert lines[:2] == expected
    assert lines[0].startswith("CUDA_VISIBLE_DEVICES=0 ") and lines[0].endswith("--enable-prefix-caching")
    assert (
        lines[2]
        == "# endpoints: --ocr-endpoint http://127.0.0.1:8100/v1 --ocr-endpoint http://127.0.0.1:8101/v1"
    )


def test_cli_reports_bad_layouts_in_one_line():
    result = CliRunner().invoke(
        app, ["ocr", "serve", "--model", "chandra", "--gpus", "0,1,2", "-tp", "2", "--dry-run"]
    )
    assert result.exit_code == 2 and "do not split into groups" in result.output


def test_gpus_default_to_the_visible_ones(monkeypatch):
    from folioflow.ocr.vlm.serve import detect_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert detect_gpus() == [2, 3]
    result = CliRunner().invoke(app, ["ocr", "serve", "--model", "olmocr", "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("CUDA_VISIBLE_DEVICES=2 ") and lines[1].startswith("CUDA_VISIBLE_DEVICES=3 ")


def test_bench_page_supply_never_repeats_a_page_until_the_pdf_runs_out():
    from folioflow.ocr.vlm.bench import PageSupply

    supply = PageSupply(10)
    runs = [supply.take(4), supply.take(4)]
    assert runs == [[1, 2, 3, 4], [5, 6, 7, 8]] and not supply.reused
    assert supply.take(4) == [9, 10, 1, 2] and supply.reused
