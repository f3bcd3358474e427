#!/usr/bin/env bash
# Session 40, call 3. Call 2 (H100): an empty kernel holding the attention's SMEM costs no more than
# one without SMEM, so the attention's 6 (batch 1) / 9 (batch 8) us a layer are its own latency
# chain. This call traces it inside the decode graph: build-gpu with -DDAK_ATT_TRACE (CUDA and C++;
# plus the diagnostic skip flag of calls 1-2, harmless here), then `dak bench` prints, per batch,
# the per-warp stamps of the last decode step's last layer (start, before / after the dependency
# wait, q in registers, first step landed, last step done, end) in us after the first return from
# the wait, i.e. after qkv's completion. Llama-2-7B, prompt 32, gen 32, batch 1 and 8, three runs;
# then the same with the early KV loads off (DAK_ATTN_EARLY_KV=0). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure "-DDAK_DIAG_SKIP_KERNELS -DDAK_ATT_TRACE" -DDAK_ATT_TRACE
dak_build dak
for run in 1 2 3 early0; do
  e=X=1; [ $run = early0 ] && e=DAK_ATTN_EARLY_KV=0
  left 60 || break
  env $e timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 > "/tmp/t-$run.txt" 2> "/tmp/t-$run.log"
  echo "== run $run ($e) rc=$?"
  grep -E "^\| [0-9]+ \| 32 \| " "/tmp/t-$run.txt" | awk -F'|' '{print "batch", $2, "TPOT", $7, "ratio", $10}'
  grep "att trace" "/tmp/t-$run.log"
done | tee "$OUT/trace.txt"
echo "total $(( $(date +%s) - t0 )) s"
