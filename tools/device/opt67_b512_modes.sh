#!/usr/bin/env bash
# Short device call (session 6): issue 7's mode comparison at batch 512 for OPT-6.7B at 10 % on the
# host (prompt 32, gen 8): --offload auto, prefetch and direct. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for m in auto prefetch direct; do
  timeout 45 build-gpu/dak bench --random-weights --repeats 5 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1 --offload $m --json "$OUT/bench-opt67-b512-$m.json" > "$OUT/$m.txt" 2> /dev/null
  echo "$m rc=$? ($(( $(date +%s) - t0 )) s)"; sed -n '/^offload (mode/,/^$/p' "$OUT/$m.txt" | grep -E "^\| [0-9]"
done
rm -f "$OUT"/*.txt
