#!/usr/bin/env bash
# Device call 2 of session 17: the tiered attention requests the steps before the new key
# (len - 1) before its dependency wait. The GPU build, every gpu test, Llama-2-7B decode at batch
# 1 / 8: the tree's default, DAK_ATTN_EARLY_KV=0 (every load after the wait) and
# DAK_ATTN_COMBINE=kernel, interleaved twice (A/B in one call); `dak bench attention --quick` with
# and without the early loads. A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
for r in 1 2; do
  dak_l7_decode default$r X=1 auto
  dak_l7_decode late$r DAK_ATTN_EARLY_KV=0 auto
  dak_l7_decode kernel$r DAK_ATTN_COMBINE=kernel auto
done
for e in X=1 DAK_ATTN_EARLY_KV=0; do
  env $e timeout 150 build-gpu/dak bench attention --quick > "$OUT/attention-${e%%=*}.txt" 2>&1
  echo "bench attention $e rc=$?"
done
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
for f in "$OUT"/attention-*.txt; do echo "=== $f"; grep -E "^\| llama|^targets|^B_g" "$f" | cut -c1-200; done
echo "total $(( $(date +%s) - t0 )) s"
