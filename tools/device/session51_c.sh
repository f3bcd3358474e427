#!/usr/bin/env bash
# Session 51, third call. Calls 1-2 (H100): the norm-out epilogue costs the o_proj / down at 64 tokens
# about what the separate norm kernel does (fused 6.556 ms, unfused 6.528), and forcing whole rounds
# on qkv (2:128) / gate_up (3:129) made them slower (59.7 / 83.5 us against 49.0 / 65.7): the k-split
# costs more than the partial round. Here: are the other epilogues the cost of the 64-token qkv
# (tiered 48.5 us with RoPE + KV append against cuBLASLt's 38.2 + a 4.7 us RoPE kernel)?
# DAK_ROPE_EPILOGUE=0 / DAK_ACT_EPILOGUE=0 under --gemm tiered at 40 / 64 tokens, and qkv (then also
# o_proj) on cuBLASLt with the rest tiered (DAK_GEMM_CUBLASLT, new; the norms then unfused, so beside
# DAK_NO_FUSED_NORM=1); then the current tree's `dak bench gemm --quick` (issue 4) and `dak bench
# attention --quick` (issue 5). Prediction: RoPE-epilogue off +1 % (session 34 measured it a gain at
# batch 1 / 8); qkv on cuBLASLt -3 % against nofuse at 64 tokens (cuBLASLt's qkv + RoPE + norm 46.4
# us a layer against 53.0), o_proj on it ~0 more (its 4 us gain against the attention's overlap lost).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
# On an H200 (none since session 43) its owed call instead: issue 3 / 7 / 5 (session48_c.sh).
if echo "$gpu" | grep -q H200; then exec bash tools/device/session48_c.sh; fi
dak_configure "" ""
dak_build dak dak_timeline
l7() { dak_tpot "$1" "$2" --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered; }
{
  l7 X=1 tiered
  l7 DAK_ROPE_EPILOGUE=0 rope-off
  l7 DAK_ACT_EPILOGUE=0 act-off
  l7 DAK_GEMM_CUBLASLT=qkv_proj=1 lt-qkv
  l7 DAK_GEMM_CUBLASLT=qkv_proj=1,o_proj=1 lt-qkv-o
  l7 DAK_NO_FUSED_NORM=1 nofuse
  l7 X=1 tiered-r2
} | tee "$OUT/epilogues.txt"
grep -E "B_g|floor" /tmp/r-tiered.txt | head -2
left 250 && dak_timeline lt-qkv64 DAK_GEMM_CUBLASLT=qkv_proj=1 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -12
left 150 && timeout 140 build-gpu/dak bench gemm --quick --json "$OUT/gemm-quick.json" > "$OUT/gemm-quick.txt" 2>&1
echo "gemm rc=$?"; grep -E "^targets|^B_|met|MISSED" "$OUT/gemm-quick.txt" | tail -12
left 100 && timeout 90 build-gpu/dak bench attention --quick > "$OUT/attention-quick.txt" 2>&1
echo "attention rc=$?"; grep -E "^targets|^B_|MISSED" "$OUT/attention-quick.txt" | head -12
echo "total $(( $(date +%s) - t0 )) s"
