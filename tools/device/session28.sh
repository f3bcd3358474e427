#!/usr/bin/env bash
# Device call 1 of session 28 (main with the yarn RoPE attention factor, the GGUF and CLI work of the
# session): build, every gpu test (the new yarn / llama3-band fixtures and the m != 1 RoPE, fused
# append and fused attention tests among them), Llama-2-7B decode at batch 1 / 8 / 64 (prompt 32,
# gen 32, auto) against the floor. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-l7.json" > "$OUT/l7.txt" 2>/dev/null; echo "decode rc=$?"
dak_bundle_decode
echo "--- failed gpu tests (if any)"
grep -E "\*\*\*Failed|\(Failed\)|Timeout" "$OUT/gpu-tests.log" | head -20
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '{split($0,c,"|"); print "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
