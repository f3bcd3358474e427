#!/usr/bin/env bash
# Device call 2 of session 32: the gpu tests after the fix of the two continuous-batching tests
# (graph_replays() counts from start(); session 32 call 1 had every id right and the count off by the
# first run's replays) and the removal of the combine-priced split rule; then `dak generate` on the GPU
# with random weights: 6 prompts of different lengths at --max-batch 2 (continuous batching through
# the CLI), the same prompts all at once (their first ids must agree), and the JSON timings.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
gen() {
  timeout 120 build-gpu/dak generate --random-weights --model llama-2-7b --device cuda -n 24 "$@" \
    --prompt-ids 1,2,3 --prompt-ids 4,5 --prompt-ids 6,7,8,9,10,11,12 --prompt-ids 13 \
    --prompt-ids 14,15,16,17 --prompt-ids 18,19,20,21,22,23,24,25,26 --output json
}
gen --max-batch 2 > "$OUT/gen-mb2.json" 2> "$OUT/gen-mb2.err"; echo "generate --max-batch 2 rc=$?"
gen > "$OUT/gen-all.json" 2> "$OUT/gen-all.err"; echo "generate (all at once) rc=$?"
gen --max-batch 2 > "$OUT/gen-mb2-b.json" 2> /dev/null; echo "generate --max-batch 2 (again) rc=$?"
python3 - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
a, b, c = (json.load(open(f"{o}/{n}.json")) for n in ("gen-mb2", "gen-all", "gen-mb2-b"))
ids = lambda r: [s["generated_ids"] if "generated_ids" in s else s.get("ids") for s in r["sequences"]]
print("timings (max-batch 2):", json.dumps(a.get("timings", {}))[:400])
print("timings (all at once):", json.dumps(b.get("timings", {}))[:400])
print("same ids in two --max-batch 2 runs:", ids(a) == ids(c))
print("first ids agree with the all-at-once run:", [x[0] == y[0] for x, y in zip(ids(a), ids(b))])
print("new tokens per sequence:", [len(x) for x in ids(a)])
PY
echo "total $(( $(date +%s) - t0 )) s"
