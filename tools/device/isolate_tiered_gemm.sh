#!/usr/bin/env bash
# Throwaway (session 2): keep only the tiered-GEMM work among the untracked files on the device copy.
keep=" src/core/tiered_gemm_schedule.cc src/core/tiered_gemm_schedule.h src/gpu/host_arena.cc src/gpu/host_arena.h src/gpu/kernels/tiered_gemm.cu src/gpu/kernels/tiered_gemm.h src/gpu/kernels/tiered_gemm_bm128.cu src/gpu/kernels/tiered_gemm_bm64.cu src/gpu/kernels/tiered_gemm_kernel.cuh tests/cpu/test_tiered_gemm_schedule.cc tests/gpu/test_host_arena.cc tests/gpu/test_tiered_gemm.cc tools/device/isolate_tiered_gemm.sh "
for f in $(git ls-files --others --exclude-standard); do
  [[ "$keep" == *" $f "* ]] || rm -f "$f"
done
git checkout -- src/core/hardware_profile.h src/core/hardware_profile.cc 2>/dev/null
for f in profile:profile_command:app bench_gemm:bench_gemm_command:bench bench_attention:bench_attention_command:bench; do
  IFS=: read name fn arg <<< "$f"
  printf '#include "cli/commands.h"\nnamespace dak::cli {\nvoid add_%s(CLI::App& %s) { (void)%s; }\n}\n' "$fn" "$arg" "$arg" > src/cli/cmd_$name.cc
done
