set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace.txt" 2>&1; echo "trace rc=$?"
DAK_NO_PDL=1 timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace-nopdl.txt" 2>&1; echo "trace (no PDL) rc=$?"
cat "$OUT/trace.txt"; echo "--- no PDL"; cat "$OUT/trace-nopdl.txt"
