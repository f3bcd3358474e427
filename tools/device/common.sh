# Shared steps of the device scripts (source it from the repository root):
#   dak_configure CXX [CUDA]  configure build-gpu with those compiler flags (kept in the cache)
#   dak_build [TARGET...]   configure build-gpu (Ninja, Release) and build TARGETs (default: all);
#                           on failure print the first errors and exit 1
#   dak_build_probe         bench/tiered_gemm_probe.cu -> build-gpu/gemm_probe (-lineinfo, for Nsight
#                           Compute), linked against the libraries dak_build left; exit 1 on failure
#   dak_gpu_tests [SECONDS] [JOBS]  every `gpu` test (SECONDS per test, default 60; JOBS at a time,
#                           default 1) into $OUT/gpu-tests.log, then its summary lines
#   dak_l7_decode NAME ENV GEMM  Llama-2-7B decode TPOT at batch 1 and 8 (below)
#   dak_gtest FILTER SECONDS  the dak_gpu_tests cases matching the gtest FILTER into $OUT/tests.txt,
#                           then their pass / fail lines
#   dak_probe_variants NAME:FLAGS...  one probe binary per variant, build-gpu/probe-NAME, with the
#                           64-row tiles' translation unit compiled under FLAGS (e.g. -DX=1; the
#                           object overrides the library's copy), all in parallel
#   dak_offload_bench LABEL SECONDS FLAGS...  `dak bench --random-weights --repeats 5 --prompt-len 32
#                           --gen-len 8 FLAGS`; its offload rows, the text appended to $OUT/offload.txt
#                           and the JSON left in /tmp/bench-LABEL.json
#   dak_timeline NAME ENV FLAGS...  Llama-2-7B `dak bench` (prompt 32, gen 16, 5 repeats, FLAGS) under
#                           ENV with the CUPTI timeline (tools/timeline/; needs build-gpu/libdak_timeline.so),
#                           its summary appended to $OUT/timelines.txt
#   dak_bundle_decode       the dak_l7_decode outputs in $OUT bundled into decode.txt and decode.json
#                           (at most 8 files come back from a call)
#   dak_attention_probe NAME FLAGS  bench/tiered_attention_probe.cu -> build-gpu/ap-NAME with
#                           src/gpu/kernels/tiered_attention.cu compiled under FLAGS (e.g. -DDAK_ATT_TRACE;
#                           the object overrides the library's copy); needs dak_build's libraries
#   dak_cpu_tests_and_generate  every cpu test on this machine (its CLI11 / JSON versions differ from the
#                           CI machine's), then `dak generate --random-weights` on Llama-2-7B
#   dak_bench_point LABEL ENV SECONDS FLAGS...  `dak bench --random-weights --repeats 5 FLAGS` under the
#                           environment assignment ENV (X=1 for none); JSON in /tmp/s-LABEL.json, the text
#                           appended to $OUT/offload.txt
#   dak_tpot ENV LABEL ARGS...  `dak bench --random-weights --repeats 5 ARGS` (prompt 32) under the
#                           environment assignment ENV (X=1 for none) into /tmp/r-LABEL.txt; prints a line
#                           per result row: LABEL, batch, TPOT [min, max], TPOT / floor
#   left SECONDS            true while at least SECONDS remain of the call's limit (DAK_CALL_LIMIT, default
#                           560 s, counted from when this file was sourced)
#   dak_merge_points        every /tmp/s-*.json of this call into $OUT/offload.json, then the offload rows
#                           of $OUT/offload.txt, one line each
#   dak_att_rows LABEL ENV ARGS...  `dak bench attention --hbm-runs 5 ARGS` under the environment
#                           assignment ENV (X=1 for none): its B_g / B_h lines and its tiered rows as
#                           "LABEL model | B | ctx | b_h | time | % of ideal | split"

OUT=${OUT:-/tmp/dak-out}; mkdir -p "$OUT"
t0=$(date +%s)
limit=${DAK_CALL_LIMIT:-560}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }

# dak_configure CXX_FLAGS [CUDA_FLAGS]: configure build-gpu (Ninja, Release) with those compiler flags
# (e.g. -DDAK_DIAG_SKIP_KERNELS; they stay in the CMake cache, so a later dak_build keeps them).
dak_configure() {
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF "-DCMAKE_CXX_FLAGS=$1" \
    "-DCMAKE_CUDA_FLAGS=${2:-}" > cfg0.log 2>&1 || { tail -20 cfg0.log; exit 1; }
}

dak_build() {
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > cfg.log 2>&1 &&
    cmake --build build-gpu -j16 "${targets[@]}" > build.log 2>&1 || { grep -E "error" build.log | head -30; exit 1; }
  echo "build $(( $(date +%s) - t0 )) s"
}

dak_build_probe() {
  nvcc -std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
    bench/tiered_gemm_probe.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt \
    -o build-gpu/gemm_probe || exit 1
}

dak_gpu_tests() {
  local per_test=${1:-60} jobs=${2:-1}
  DAK_REQUIRE_GPU=1 timeout 400 ctest --test-dir build-gpu -L gpu -j"$jobs" --timeout "$per_test" --output-on-failure \
    > "$OUT/gpu-tests.log" 2>&1
  echo "gpu tests rc=$? ($(( $(date +%s) - t0 )) s)"; grep -E "tests passed|\*\*\*Failed|Timeout|Exception" "$OUT/gpu-tests.log" | tail -n 20
  grep -E "Failure|Which is|differ" "$OUT/gpu-tests.log" | head -n 30
}

dak_gtest() {
  DAK_REQUIRE_GPU=1 timeout "$2" build-gpu/tests/dak_gpu_tests --gtest_filter="$1" > "$OUT/tests.txt" 2>&1
  echo "gpu tests $1 rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/tests.txt" | head -10
}

# dak_l7_decode NAME ENV GEMM: decode TPOT of Llama-2-7B (random weights, batch 1 and 8, prompt 32,
# gen 32) with `--gemm GEMM` under the environment assignment ENV (e.g. DAK_NO_PDL=1, or X=1 for
# none) into $OUT/l7-NAME.txt and $OUT/bench-l7-NAME.json; prints its rc and the two result rows.
dak_l7_decode() {
  env $2 timeout 45 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 --gemm "$3" --json "$OUT/bench-l7-$1.json" > "$OUT/l7-$1.txt" 2> /dev/null
  echo "$1 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-$1.txt"
}

dak_probe_variants() {
  for v in "$@"; do
    local name=${v%%:*} flags=${v#*:}
    nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
      $flags bench/tiered_gemm_probe.cu src/gpu/kernels/tiered_gemm_bm64.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a \
      -lcuda -lcublasLt -lcublas -lfmt -o "build-gpu/probe-$name" > /dev/null 2>&1 &
  done
  wait
  echo "probe variants built $(( $(date +%s) - t0 )) s"
}

dak_offload_bench() {
  local label=$1 limit=$2; shift 2
  timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --prompt-len 32 --gen-len 8 \
    --json "/tmp/bench-$label.json" "$@" > "/tmp/$label.txt" 2> /dev/null
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  sed -n '/^offload (mode/,/^$/p' "/tmp/$label.txt" | grep -E "^\| [0-9]"
  { echo "=== $label: $*"; cat "/tmp/$label.txt"; } >> "$OUT/offload.txt"
}

dak_timeline() {
  local name=$1 envs=$2; shift 2
  env $envs CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-$name.csv \
    timeout 120 build-gpu/dak bench --random-weights --model llama-2-7b --prompt-len 32 --gen-len 16 --repeats 5 "$@" \
    > /tmp/bench-$name.txt 2>&1
  echo "traced $name rc=$? ($(( $(date +%s) - t0 )) s)"
  { echo "=== $name: $envs $*"; python3 tools/timeline/summarize.py /tmp/tl-$name.csv --min-replays 20; } \
    >> "$OUT/timelines.txt" 2>&1
}

dak_bundle_decode() {
  for f in "$OUT"/l7-*.txt; do echo "=== $f"; cat "$f"; done > "$OUT/decode.txt" && rm -f "$OUT"/l7-*.txt
  python3 - "$OUT/decode.json" "$OUT"/bench-l7-*.json <<'PY'
import json, os, sys
json.dump({os.path.basename(f)[9:-5]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], 'w'), indent=1)
for f in sys.argv[2:]: os.remove(f)
PY
}

dak_attention_probe() {
  nvcc -std=c++20 -O3 --expt-relaxed-constexpr -lineinfo -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
    $2 bench/tiered_attention_probe.cu src/gpu/kernels/tiered_attention.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a \
    -lcuda -lfmt -o "build-gpu/ap-$1" > "/tmp/ap-$1.log" 2>&1 || { echo "variant $1 failed"; head -20 "/tmp/ap-$1.log"; }
}

dak_cpu_tests_and_generate() {
  ctest --test-dir build-gpu -L cpu -j16 --timeout 120 > "$OUT/cpu-tests.log" 2>&1
  echo "cpu tests rc=$?"; grep -E "tests passed|\*\*\*Failed" "$OUT/cpu-tests.log" | tail -n 8
  build-gpu/dak generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 -n 4 --seed 010 --output json \
    > "$OUT/gen.json" 2> "$OUT/gen.err"; echo "generate --random-weights rc=$?"; tail -n 2 "$OUT/gen.err"
}

dak_tpot() {
  local envs=$1 label=$2; shift 2
  env $envs timeout 90 build-gpu/dak bench --random-weights --repeats 5 "$@" 2> /dev/null > "/tmp/r-$label.txt"
  grep -E "^\| [0-9]+ \| 32 \| " "/tmp/r-$label.txt" | awk -F'|' -v l="$label" '{print l, "batch", $2, "TPOT", $7, "ratio", $10}'
}

dak_bench_point() {
  local label=$1 envs=$2 limit=$3; shift 3
  env $envs timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --json "/tmp/s-$label.json" "$@" \
    > "/tmp/s-$label.txt" 2> "/tmp/s-$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "error|fix" "/tmp/s-$label.log" | head -3
  { echo "=== $label: $envs $*"; cat "/tmp/s-$label.txt"; } >> "$OUT/offload.txt"
}

dak_merge_points() {
  python3 - "$OUT/offload.json" /tmp/s-*.json <<'PY'
import json, os, sys
out = {}
for f in sys.argv[2:]:
    try:
        out[os.path.basename(f)[2:-5]] = json.load(open(f))
    except Exception as e:
        out[os.path.basename(f)] = {"error": str(e)}
json.dump(out, open(sys.argv[1], "w"), indent=1)
PY
  echo "--- offload rows (host GB/step, staged GB/step, TPOT ms, predicted, TPOT/pred, floor, TPOT/floor)"
  awk '/^=== /{label=$2} /^\| [0-9]+ \| ([0-9.]+|-) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|/{n=split($0,c,"|"); print label, "ratio", c[3], "host", c[6], "staged", c[7], "TPOT", c[8], "pred", c[9], "t/p", c[10], "floor", c[11], "t/f", c[12]}' "$OUT/offload.txt"
}

# A short table of the offload rows of "$OUT/offload.txt" (dak_bench_point's output): per point
# TPOT, the prediction and the floor of the same run.
dak_point_table() {
  python3 - "$OUT/offload.txt" <<'PY'
import re, sys
label = None
print("| point | TPOT ms | predicted ms | TPOT / pred | floor ms | TPOT / floor |")
for line in open(sys.argv[1]):
    if line.startswith("=== "): label = line[4:].split(":")[0]
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if label and len(cells) == 11 and re.match(r"^[0-9.]+$", cells[6] or "x") and re.match(r"^[0-9]+$", cells[0]):
        print(f"| {label} | {cells[6]} | {cells[7]} | {cells[8]} | {cells[9]} | {cells[10]} |")
PY
}

# dak_attention_rows FILE...: one line per tiered point of `dak bench attention --output csv` files
# named att-LABEL.csv (LABEL first), sorted by model, batch and context: x, split, median us, of ideal
# and the schedule's end (which HBM load path and merge ran).
dak_attention_rows() {
  for f in "$@"; do
    python3 - "$f" <<'PY'
import csv, sys, os
name = os.path.basename(sys.argv[1])[4:-4]
for r in csv.DictReader(open(sys.argv[1])):
    if r["kernel"] != "tiered" or r["skipped"] == "true": continue
    print(f"{name:10s} {r['model']:11s} B={r['batch']:>3s} ctx={r['context']:>5s} x={float(r['ratio']):.3f} "
          f"split={r['split']:>8s} {1000 * float(r['time_ms']):9.1f} us of_ideal={float(r['of_ideal']):.3f} "
          f"{r['schedule'][-34:]}")
PY
  done | sort -k2,2 -k3,3 -k4,4 -s
}

dak_att_rows() {
  local label=$1 envs=$2; shift 2
  env $envs timeout 150 build-gpu/dak bench attention --hbm-runs 5 "$@" 2>/dev/null |
    grep -E "^\| (llama|opt).*tiered|^B_" | cut -d'|' -f2-4,7,9,13,15 | sed "s/^/$label /"
}
