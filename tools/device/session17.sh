#!/usr/bin/env bash
# Device call 1 of session 17: split sequences merged inside the tiered attention's CTA (2 or 4
# splits) instead of a combine kernel; `dak bench attention` times cells under 256 MiB as an
# 8-layer graph stack. The GPU build, every gpu test, Llama-2-7B decode at batch 1 / 8 with the plan
# (CTA merge) and DAK_ATTN_COMBINE=kernel, interleaved twice (A/B in one call); decode at batch 8
# with DAK_ATTN_HBM_COPY=bulk (session 16's unrun A/B: bulk rows at short lengths); the timeline of
# one batch-1 layer; `dak bench attention --quick`. A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 60 4
dak_l7_decode cta X=1 auto
dak_l7_decode kernel DAK_ATTN_COMBINE=kernel auto
dak_l7_decode cta2 X=1 auto
dak_l7_decode kernel2 DAK_ATTN_COMBINE=kernel auto
dak_l7_decode bulk DAK_ATTN_HBM_COPY=bulk auto
dak_timeline cta X=1 --batch 1
dak_timeline kernel DAK_ATTN_COMBINE=kernel --batch 1
timeout 150 build-gpu/dak bench attention --quick --json "$OUT/attention-quick.json" > "$OUT/attention-quick.txt" 2>&1
echo "bench attention rc=$?"
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
grep -E "^=== |layer period|^ +[0-9]+ |before the layers" "$OUT/timelines.txt" | cut -c1-90 | head -40
grep -E "^\| llama|^targets|^B_g" "$OUT/attention-quick.txt" | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
