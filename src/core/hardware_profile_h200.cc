// The H200 default hardware profile compiled into dak, so `dak plan` works from any directory.
// This text is a verbatim copy of profiles/h200-default.json (the file cites the measurement
// behind each value); the test HardwareProfile.CompiledInDefaultMatchesShippedFile keeps the two
// identical. Edit the JSON file, then paste it here.
#include "core/hardware_profile.h"

namespace dak {

const char* HardwareProfile::h200_default_json() {
  return R"json(
{
  "format": "dak.hardware_profile",
  "version": 1,
  "name": "h200-default",
  "device": "NVIDIA H200 SXM (132 SMs, 141 GB HBM3e), PCIe Gen5 x16 to pinned host memory",
  "sm_count": 132,
  "hbm": {
    "capacity_bytes": 150109880320,
    "free_after_context_bytes": 149557477376,
    "reserve_bytes": 2147483648,
    "read_gbps": 4623.0
  },
  "host_link": {
    "sm_read_gbps": 51.4,
    "copy_engine_gbps": 55.5,
    "shared_total_gbps": 53.2,
    "latency_us": 2.31,
    "inflight_cap_bytes": 1048576,
    "stage_bytes": 32768,
    "max_stages_per_cta": 6,
    "max_multicast_cluster": 4,
    "hbm_slowdown_during_copy": 0.073
  },
  "contention": [
    {"host_ctas": 0, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4517},
    {"host_ctas": 2, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4464},
    {"host_ctas": 4, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4507},
    {"host_ctas": 8, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4438},
    {"host_ctas": 12, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4449},
    {"host_ctas": 16, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4276},
    {"host_ctas": 24, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4094},
    {"host_ctas": 32, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 3448},
    {"host_ctas": 0, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4341},
    {"host_ctas": 2, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4295},
    {"host_ctas": 4, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4328},
    {"host_ctas": 8, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4037},
    {"host_ctas": 12, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4160},
    {"host_ctas": 16, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 3115},
    {"host_ctas": 24, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 352},
    {"host_ctas": 32, "stages_per_cta": 4, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 221}
  ],
  "compute": {
    "kernel_overhead_us": 1.966,
    "step_kernel_overhead_us": 4.3,
    "linear_hbm_fraction": 0.917,
    "mma_min_rows": 64,
    "tensor_tflops": [
      {"max_tokens": 256, "tflops": 717.2},
      {"max_tokens": 512, "tflops": 787.3},
      {"max_tokens": 8192, "tflops": 798.6},
      {"max_tokens": 0, "tflops": 720.7}
    ]
  },
  "host_memory": {
    "pinnable_bytes": 128849018880,
    "pin_gib_per_s": 2.86
  },
  "sources": {
    "sm_count": "shared/tools/h200_probe/results-2026-11-29.log: device NVIDIA H200 SMs=132 L2=60 MB smemOptin=227 KB",
    "hbm.capacity_bytes": "tools/planner_probe/results-2026-11-29.log: [hbm] total 150109880320 bytes (139.80 GiB)",
    "hbm.free_after_context_bytes": "tools/planner_probe/results-2026-11-29.log: [hbm] free after context 149557477376 bytes (139.29 GiB)",
    "hbm.reserve_bytes": "planner policy, not a measurement: 2 GiB kept for cuBLAS workspace, CUDA graphs and allocator slack",
    "hbm.read_gbps": "shared/tools/h200_probe/results-2026-11-29.log: [tma-hbm] stages=6 CTAs=132 bulk1D 4623 GB/s (best HBM read, TMA bulk)",
    "host_link.sm_read_gbps": "shared/tools/h200_probe/results-2026-11-29.log: [tma-host] stages=4 CTAs=  1 bulk1D 51.4 (plateau of every [tma-host] and [ld] zero-copy line)",
    "host_link.copy_engine_gbps": "shared/tools/h200_probe/results-2026-11-29.log: [copy] H2D 55.5 GB/s",
    "host_link.shared_total_gbps": "shared/tools/h200_probe/results-2026-11-29.log: [hybrid] tmaCTAs=8 stages=2 ce_share=50% TMA 26.6 GB/s CE 26.6 GB/s link total 53.2 GB/s",
    "host_link.latency_us": "shared/tools/h200_probe/results-2026-11-29.log: [tma-host] stages=1 CTAs=  1 bulk1D 14.2 GB/s, i.e. one 32768-byte stage per 2.31 us",
    "host_link.inflight_cap_bytes": "dak profile on the H200, 2026-12-01 (profiles/h200-measured.json): every contention point up to 1 MiB of host bytes in flight keeps >= 97 % of its HBM baseline (16 host CTAs x 2 x 32 KiB: 4240 of 4268 GB/s; 8 x 4: 4055 of 4094), 24 x 2 (1.5 MiB) only 95 %; the probe's [contention] stages=2 hostCTAs=4 point (256 KiB, the value shipped before) saturates the link",
    "host_link.stage_bytes": "shared/tools/h200_probe/tma_host_probe.cu: tile_bytes = 32768 in every [tma-host] and [contention] run",
    "host_link.max_stages_per_cta": "shared/tools/h200_probe/results-2026-11-29.log: deepest ring probed, [tma-host] stages=6 (6 x 32 KiB fits the 227 KB SMEM)",
    "host_link.max_multicast_cluster": "shared/tools/h200_probe/results-2026-11-29.log: [multicast] cluster=4 mc=1 clusters=16 consumed 205.6 GB/s unique-tile 51.4 GB/s mismatches=0",
    "host_link.hbm_slowdown_during_copy": "shared/tools/h200_probe/results-2026-11-29.log: [copy-contention] HBM read alone 4568 GB/s, with concurrent H2D copy 4258 GB/s (7.3% slower)",
    "contention": "shared/tools/h200_probe/results-2026-11-29.log: the 16 [contention] lines (stages=2 and 4, hbmCTAs=100, hostCTAs 0..32)",
    "compute.kernel_overhead_us": "tools/planner_probe/results-2026-11-29.log: [stream] fit t = 1.966 us + S / 4524.4 GB/s (graph-replayed HBM reads, 256 KiB..1 GiB); empty kernels: [graph] 0.55 us",
    "compute.step_kernel_overhead_us": "fitted, session 7 (docs/perf-notes.md): Llama-2-7B decode TPOT with cuBLASLt linears, batch 1 and 8 (4.315-4.319 and 4.492-4.504 ms, docs/results/2026-12-02/session7/call1, call3) less the linears at linear_hbm_fraction, over the step's kernels",
    "compute.linear_hbm_fraction": "fitted, session 7: cuBLASLt at x = 0 in dak bench gemm's graph-replayed 8-layer stacks at N = 8 (docs/results/2026-12-02/session7/sweeps/gemm.json): Llama-2-7B 113.2 us per layer (404.8 MB), Llama-2-70B 420.6 (1711.3 MB), OPT-30B 311.8 (1233.1 MB); least squares t = 4 a + bytes / (f x 4623 GB/s): f = 0.917, a = 4.65 us",
    "compute.mma_min_rows": "PTX ISA: wgmma.mma_async has M = 64 rows per warpgroup instruction",
    "compute.tensor_tflops": "tools/planner_probe/results-2026-11-29.log: [gemm] cuBLAS bf16 M=K=8192, random data: N=256 717.2, N=512 787.3, N=1024..8192 min 798.6, N=16384 720.7 TFLOP/s (N<=128 is HBM-bound there, so the N=256 rate bounds it)",
    "host_memory.pinnable_bytes": "shared/DESIGN.md section 1: cudaHostRegister of 16...120 GiB succeeds on the GPU machine",
    "host_memory.pin_gib_per_s": "shared/DESIGN.md section 1: about 0.35 s per GiB pinned"
  }
}
)json";
}

}  // namespace dak
