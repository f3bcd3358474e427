#!/usr/bin/env bash
# Device call for the offload increment: build, every gpu test, then `dak generate` on Llama-2-7B
# random weights (batch 8, prompt 32, 32 new tokens) at several placements, and decode TPOT of the
# all-HBM engine. Prints a short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 120
d=build-gpu/dak
ids=$(seq -s, 1 32)
P=""; for i in 1 2 3 4 5 6 7 8; do P="$P --prompt-ids $ids"; done
run() {  # label, flags...
  local label=$1; shift
  timeout 120 $d generate --model llama-2-7b --random-weights $P --max-new-tokens 32 --ignore-eos "$@" \
    > "$OUT/gen-$label.txt" 2> "$OUT/gen-$label.log"
  local rc=$?
  local tpot=$(grep -oE "steps, TPOT [0-9.]+ ms" "$OUT/gen-$label.log" | head -1)
  local off=$(grep -oE "offload: .*" "$OUT/gen-$label.log" | head -1)
  local h=$(md5sum < "$OUT/gen-$label.txt" | cut -c1-8)
  echo "| $label | rc=$rc | $tpot | ids $h | $off |"
  [ $rc -ne 0 ] && tail -n 3 "$OUT/gen-$label.log"
}
echo "| run | rc | TPOT (mean of decode steps incl. eager + capture) | output | plan |"
run none --offload none
run r30 --offload-ratio 0.3
run cpu4 --cpu-offload-gb 4
run badlist --offload-ratio 0.1,0.2
bench() {  # label, flags...
  local label=$1; shift
  timeout 300 $d bench --random-weights --prompt-len 32 --gen-len 32 --repeats 5 "$@" \
    > "$OUT/bench-$label.txt" 2> "$OUT/bench-$label.log"; echo "bench $label rc=$?"
  grep -E "^\| (1|8|64|512) \|" "$OUT/bench-$label.txt" | head -12; grep -E "B_h =" "$OUT/bench-$label.txt" | cut -c1-60
  grep -E "error|fix" "$OUT/bench-$label.log" | head -4
}
bench l7 --model llama-2-7b --batch 8 --offload-ratio 0,0.1,0.3,0.6
bench opt1 --model opt-6.7b --batch 8 --cpu-offload-gb 1
bench opt6 --model opt-6.7b --batch 8 --cpu-offload-gb 6
bench opt0 --model opt-6.7b --batch 8
echo "total $(( $(date +%s) - t0 )) s"
