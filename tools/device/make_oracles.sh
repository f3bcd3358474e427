#!/usr/bin/env bash
# One device call: the transformers oracles (HF parity fixtures, tokenizer oracle).
# Run from the repo root on the GPU machine with .oracle carried (tools/make_vocab_gguf.py output
# and the gguf wheel). Results land in $OUT as one tarball.
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .oracle/whl/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=""
work=$(mktemp -d)
python3 tools/make_hf_parity_fixtures.py "$work/hf_parity"
python3 tools/make_tokenizer_oracle.py .oracle/smollm2-vocab.gguf tests/data/tokenizer/tricky_strings.json "$work/tokenizer"
tar -C "$work" -czf "$OUT/oracles.tgz" hf_parity tokenizer
ls -la "$OUT"
