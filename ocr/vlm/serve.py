"""Serving plans: which ``vllm serve`` processes to start for a model on some GPUs (or CPU cores).

:func:`plan_servers` turns a :class:`ServeConfig` into :class:`ReplicaSpec` s (argv + environment +
endpoint); :mod:`folioflow.ocr.vlm.supervisor` runs them. Layout rules:

* ``--data-parallel-size M`` given: **one** server using vLLM's own data parallelism over all the GPUs
  (``--data-parallel-size M --tensor-parallel-size N``, ``M * N`` = number of GPUs); one endpoint.
* otherwise one server **per GPU group** of ``tensor_parallel_size`` GPUs (ports ``port``,
  ``port + 1``...), and folioflow's router spreads pages over the endpoints. The default tensor
  parallel size is 1 for models of at most :data:`SMALL_MODEL_B` billion parameters (one replica per
  GPU: tensor parallelism does not raise a small model's throughput, replicas do) and all the GPUs
  for larger ones; the size comes from ``params_b``, else the model name (``...-72B-...``), else the
  profile.
* no GPUs: ``replicas`` CPU servers (vLLM's CPU engine), each with its own OpenMP core binding
  (``VLLM_CPU_OMP_THREADS_BIND``) and KV-cache size (``VLLM_CPU_KVCACHE_SPACE``, GiB).

``model`` is a profile name (its default checkpoint, served name and recommended flags are used) or a
checkpoint path / Hugging Face id (flags of the profile its name matches, else the generic ones).
``extra_args`` go last, so they override any earlier flag (vLLM keeps the last occurrence).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from folioflow.ocr.errors import ConfigurationError
from folioflow.ocr.vlm.profiles import Profile, get_profile, profile_for_model, profile_names

__all__ = [
    "SMALL_MODEL_B",
    "ServeConfig",
    "ReplicaSpec",
    "load_serve_config",
    "resolve_vllm",
    "detect_gpus",
    "plan_servers",
    "format_command",
]

SMALL_MODEL_B = 9.0
REPO_ROOT = Path(__file__).resolve().parents[2]


class ServeConfig(BaseModel):
    """Everything ``folioflow ocr serve`` needs; the YAML files in ``infra/vllm/`` have these keys."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        description="Profile name (chandra, olmocr, deepseek-ocr, ...) or checkpoint path / HF id"
    )
    gpus: list[int] = Field(default_factory=list, description="GPU indices; empty = vLLM's CPU engine")
    tensor_parallel_size: int | None = Field(default=None, ge=1)
    data_parallel_size: int | None = Field(default=None, ge=1, description="Use vLLM's own data parallelism")
    replicas: int | None = Field(default=None, ge=1, description="CPU servers to start (CPU only)")
    params_b: float | None = Field(
        default=None,
        gt=0,
        description="Model size in billions (default: from the name, e.g. -72B-, else the profile)",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535, description="Port of the first server; others follow")
    served_model_name: list[str] | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    vllm: str | None = Field(default=None, description="vllm executable or a venv holding it")
    cpu_cores: list[int] | None = Field(
        default=None, description="Cores for CPU servers (default: all, shared out)"
    )
    pin_cpu_processes: bool = Field(
        default=False,
        description=(
            "CPU servers: run each replica's whole process tree (API server, engine core, worker) on "
            "its cores with taskset, not only the engine's OpenMP threads (VLLM_CPU_OMP_THREADS_BIND); "
            "keeps the servers' request handling and image preprocessing off the cores left to the client"
        ),
    )
    cpu_kvcache_gib: int = 1
    health_timeout_s: float = 1800.0
    max_restarts: int = 5
    log_dir: str | None = None


@dataclass
class ReplicaSpec:
    """One server to run: ``argv`` (executable first), extra ``env``, and its endpoint URL."""

    index: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int = 8000
    host: str = "127.0.0.1"
    gpus: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}/v1"


def load_serve_config(path: str | Path, node: str | None = None, **overrides) -> ServeConfig:
    """Read a YAML serving config. A multi-node file has a ``nodes:`` mapping; ``node`` picks one,
    whose keys override the top level. ``overrides`` (non-None values) win over the file."""
    data = yaml.safe_load(Path(path).read_text()) or {}
    nodes = data.pop("nodes", None)
    data.pop("clients", None)  # documentation for the ingest side (endpoints), not for the launcher
    if nodes is not None:
        if node is None or node not in nodes:
            raise ConfigurationError(f"{path} describes nodes {sorted(nodes)}; pick one with --node")
        data.update(nodes[node] or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    return ServeConfig(**data)


def detect_gpus() -> list[int]:
    """Indices of the NVIDIA GPUs ``nvidia-smi`` lists (honouring ``CUDA_VISIBLE_DEVICES`` when set);
    empty when there is none or no driver."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [int(x) for x in visible.split(",") if x.strip().isdigit()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [int(line) for line in out.split() if line.strip().isdigit()]


def resolve_vllm(configured: str | None) -> str:
    """The ``vllm`` executable: ``configured`` (a binary or a venv), else ``$FOLIOFLOW_VLLM``, else
    ``$FOLIOFLOW_VLLM_VENV/bin/vllm``, else ``<repo>/.venv-vllm/bin/vllm``, else ``vllm`` on PATH."""
    candidates = [
        configured,
        os.environ.get("FOLIOFLOW_VLLM"),
        os.environ.get("FOLIOFLOW_VLLM_VENV"),
        str(REPO_ROOT / ".venv-vllm"),
    ]
    for candidate in filter(None, candidates):
        path = Path(candidate)
        if path.is_dir() and (path / "bin" / "vllm").exists():
            return str(path / "bin" / "vllm")
        if path.is_file():
            return str(path)
        if candidate == configured:
            raise ConfigurationError(f"vllm executable not found at {candidate}")
    return shutil.which("vllm") or "vllm"


_SIZE = re.compile(r"(?<![0-9.])(\d+(?:\.\d+)?)[bB](?![a-zA-Z])")


def model_size_b(config: ServeConfig, model: str, profile: Profile) -> float:
    """Billions of parameters: ``config.params_b``, else a size in the model name (``-72B-``), else the
    profile's figure."""
    if config.params_b is not None:
        return config.params_b
    sizes = _SIZE.findall(Path(model).name)
    return float(sizes[-1]) if sizes else profile.params_b


def _model(config: ServeConfig) -> tuple[str, Profile, list[str] | None]:
    name = config.model.strip()
    if name.split(":")[0].lower() in profile_names():
        profile = get_profile(name)
        if not profile.default_model:
            raise ConfigurationError(f"profile {profile.name!r} has no default checkpoint; pass --model PATH")
        served = config.served_model_name or (
            [profile.served_model_name] if profile.served_model_name else None
        )
        return profile.default_model, profile, served
    name = os.path.expanduser(name)
    profile = profile_for_model(name)
    served = config.served_model_name or ([profile.served_model_name] if profile.served_model_name else None)
    return name, profile, served


def plan_servers(config: ServeConfig) -> list[ReplicaSpec]:
    """The servers for ``config`` (see module docstring). Raises :class:`ConfigurationError` for a
    layout that does not divide the GPUs."""
    model, profile, served = _model(config)
    base = [resolve_vllm(config.vllm), "serve", model]
    flags = list(profile.serve_flags)
    flags += [
        "--max-model-len",
        str(config.max_model_len or profile.max_model_len),
        "--max-num-seqs",
        str(config.max_num_seqs or profile.max_num_seqs),
    ]
    if served:
        flags += ["--served-model-name", *served]
    gpus = config.gpus
    if not gpus:
        return _cpu_plan(config, base, flags)
    if len(set(gpus)) != len(gpus):
        raise ConfigurationError(f"GPU list has duplicates: {gpus}")
    dp = config.data_parallel_size
    tp = config.tensor_parallel_size
    if dp:
        tp = tp or len(gpus) // dp
        if tp * dp != len(gpus):
            raise ConfigurationError(f"data parallel {dp} x tensor parallel {tp} != {len(gpus)} GPUs")
        argv = base + [
            "--host",
            config.host,
            "--port",
            str(config.port),
            *flags,
            "--tensor-parallel-size",
            str(tp),
            "--data-parallel-size",
            str(dp),
            *config.extra_args,
        ]
        env = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpus)), **config.env}
        return [ReplicaSpec(0, argv, env, config.port, config.host, list(gpus))]
    tp = tp or (1 if model_size_b(config, model, profile) <= SMALL_MODEL_B else len(gpus))
    if len(gpus) % tp:
        raise ConfigurationError(f"{len(gpus)} GPUs do not split into groups of tensor parallel size {tp}")
    specs = []
    for i in range(len(gpus) // tp):
        group = gpus[i * tp : (i + 1) * tp]
        argv = base + ["--host", config.host, "--port", str(config.port + i), *flags]
        if tp > 1:
            argv += ["--tensor-parallel-size", str(tp)]
        env = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, group)), **config.env}
        specs.append(ReplicaSpec(i, argv + list(config.extra_args), env, config.port + i, config.host, group))
    return specs


def _cpu_plan(config: ServeConfig, base: list[str], flags: list[str]) -> list[ReplicaSpec]:
    cores = config.cpu_cores or (sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0])
    replicas = config.replicas or 1
    share = max(1, len(cores) // replicas)
    specs = []
    for i in range(replicas):
        mine = cores[(i * share) % len(cores) :][:share] or cores[:1]
        env = {
            "VLLM_CPU_KVCACHE_SPACE": str(config.cpu_kvcache_gib),
            "VLLM_CPU_OMP_THREADS_BIND": ",".join(map(str, mine)),
            "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1",
            **config.env,
        }
        argv = base + ["--host", config.host, "--port", str(config.port + i), *flags, *config.extra_args]
        if config.pin_cpu_processes:
            taskset = shutil.which("taskset")
            if taskset is None:
                raise ConfigurationError("pin_cpu_processes needs taskset (Debian package util-linux)")
            argv = [taskset, "-c", ",".join(map(str, mine)), *argv]
        specs.append(ReplicaSpec(i, argv, env, config.port + i, config.host, []))
    return specs


def format_command(spec: ReplicaSpec) -> str:
    """The replica as one shell line: ``VAR=value ... vllm serve ...`` (what ``--dry-run`` prints)."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in spec.env.items())
    return (env + " " if env else "") + shlex.join(spec.argv)
