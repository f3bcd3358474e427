#!/usr/bin/env bash
# Device call 3 of session 10: every gpu test (4 at a time), then the split model A/B in one
# call. Tree A: this checkout (o_proj and down at S = 2). Tree B: a copy whose split epilogue is
# priced prohibitively (every Llama-2-7B / OPT-6.7B decode shape at S = 1, as in session 9).
# Each: decode TPOT at batch 1 / 8, and the offload points Llama-2-7B batch 8 at 10 % and OPT-6.7B
# at FlexGen's 1 GiB, alternating A, B, A, B. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
rm -rf /tmp/treeb && mkdir /tmp/treeb && cp -r CMakeLists.txt src tests tools bench configs profiles fuzz third_party /tmp/treeb/
sed -i 's/constexpr double kLastUnitEpilogue = 5, kUnitEpilogue = 2;/constexpr double kLastUnitEpilogue = 1e6, kUnitEpilogue = 2;/' \
  /tmp/treeb/src/core/tiered_gemm_schedule.cc
grep -c "kLastUnitEpilogue = 1e6" /tmp/treeb/src/core/tiered_gemm_schedule.cc
(cd /tmp/treeb && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > /tmp/cfgb.log 2>&1 &&
  cmake --build build -j16 --target dak > /tmp/buildb.log 2>&1) || { tail -5 /tmp/cfgb.log; grep error /tmp/buildb.log | head; exit 1; }
echo "tree B built $(( $(date +%s) - t0 )) s"
run() {  # run TREE LABEL
  local dak=$1/dak
  timeout 60 $dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32 \
    > /tmp/dec.txt 2> /dev/null
  echo "$2 decode rc=$? $(grep -E '^\| [0-9]+ \| 32 \| 32' /tmp/dec.txt | cut -d'|' -f2,7 | tr '\n' ' ')"
  { echo "=== $2 decode"; cat /tmp/dec.txt; } >> "$OUT/ab.txt"
  for pt in "llama-2-7b --batch 8 --offload-ratio 0.1" "opt-6.7b --batch 8 --cpu-offload-gb 1"; do
    timeout 60 $dak bench --random-weights --repeats 5 --prompt-len 32 --gen-len 8 --model $pt > /tmp/off.txt 2> /dev/null
    echo "$2 $pt rc=$? $(sed -n '/^offload (mode/,/^$/p' /tmp/off.txt | grep -E '^\| [0-9]' | cut -d'|' -f8,12)"
    { echo "=== $2 $pt"; cat /tmp/off.txt; } >> "$OUT/ab.txt"
  done
}
run build-gpu A; run /tmp/treeb/build B; run build-gpu A2; run /tmp/treeb/build B2
echo "total $(( $(date +%s) - t0 )) s"
