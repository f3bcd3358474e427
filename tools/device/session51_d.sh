#!/usr/bin/env bash
# Session 51, last call: every gpu test on the session's final tree (src/gpu: the DAK_GEMM_CUBLASLT
# lookup made once; core: generate() / perplexity() stop at an interrupt), and Ctrl-C on the GPU path:
# `dak generate --random-weights` (Llama-2-7B, one sequence, 2000 new tokens) interrupted once decoding
# runs, which must print the tokens so far, the timings and the interrupted line, and end by SIGINT
# (status 130). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 4
( env --default-signal=INT build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,2,3 -n 2000 \
    --ignore-eos > /tmp/int.out 2> /tmp/int.err & pid=$!
  # the InterruptScope is in place (SIGINT caught: bit 1 of SigCgt) once the weights are loaded
  for i in $(seq 1 600); do [ $(( 0x$(awk '/^SigCgt/ {print $2}' /proc/$pid/status) & 2 )) -ne 0 ] && break; sleep 0.1; done
  sleep 1; kill -INT $pid; wait $pid; echo "interrupted generate rc=$?" )
tail -c 300 /tmp/int.out; echo; tail -3 /tmp/int.err
echo "total $(( $(date +%s) - t0 )) s"
