#!/usr/bin/env bash
# Device call after the build (tools/device/session26.sh or gpu_check.sh) and the model parts
# (tools/device/split_model.sh, three calls):
# assembles the default model, then runs it on the GPU and the CPU (README's first command,
# perplexity on both, the SmolLM2 tests of both labels) and prints a short table last.
set -uo pipefail
m=models/SmolLM2-135M-Instruct.Q4_1.gguf
cat models/.p1 models/.p2 models/.p3 > $m.part && mv $m.part $m
# models/.p3.sha256 travels with the last part (carry both); without it the sum is not checked.
if [[ ! -f models/.p3.sha256 ]]; then sum="not checked (models/.p3.sha256 was not carried)"
elif [[ "$(sha256sum $m | cut -d' ' -f1)" == "$(cat models/.p3.sha256)" ]]; then sum=ok; else sum=MISMATCH; fi
echo "model sha256 $sum"
d=build-gpu/dak
$d generate --prompt "The three primary colors are" -n 32 2> gen.err; gen_rc=$?; cat gen.err
$d generate --prompt "The three primary colors are" -n 32 --offload-ratio 0.6 2> gen-off.err; off_rc=$?; cat gen-off.err
$d perplexity --file tests/data/smollm2/paragraph.txt --device cuda --output json > ppl-gpu.json; g_rc=$?
$d perplexity --file tests/data/smollm2/paragraph.txt --device cpu --output json > ppl-cpu.json; c_rc=$?
$d generate --chat --prompt "What is the capital of France?" -n 40 2>/dev/null
DAK_REQUIRE_GPU=1 DAK_REQUIRE_MODEL=1 ctest --test-dir build-gpu -R "SmolLM2" --output-on-failure -V > smollm2-tests.log 2>&1; t_rc=$?
grep -E "\[smollm2\]|Passed|Failed|Failure|Which is" smollm2-tests.log
[[ -n "${OUT:-}" ]] && cp gen.err ppl-gpu.json ppl-cpu.json smollm2-tests.log "$OUT"/ 2>/dev/null
py() { python3 -c "import json,sys; d=json.load(open('$1')); print('%.4f in %.2f s (load %.2f s)' % (d['perplexity'], d['seconds'], d['load_s']))" 2>/dev/null || echo "failed"; }
echo
echo "| step | result |"
echo "|---|---|"
echo "| generate (auto) | rc=$gen_rc $(tail -n 1 gen.err) |"
echo "| generate --offload-ratio 0.6 | rc=$off_rc $(tail -n 1 gen-off.err) |"
echo "| perplexity gpu | rc=$g_rc $(py ppl-gpu.json) |"
echo "| perplexity cpu | rc=$c_rc $(py ppl-cpu.json) |"
echo "| SmolLM2 tests | rc=$t_rc $(grep -E 'tests passed' smollm2-tests.log) |"
