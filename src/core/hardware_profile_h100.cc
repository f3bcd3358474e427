// The H100 default hardware profile compiled into dak: the profile `dak profile --name h100-default
// --pin-test-gib 110` measured on the NVIDIA H100 80GB HBM3 (SXM, 132 SMs) of our device machine on
// 2026-12-06 (docs/results/2026-12-06/session33/call3). This text is a verbatim copy of
// profiles/h100-default.json; the test HardwareProfile.CompiledInH100DefaultMatchesShippedFile keeps
// the two identical. Re-measure with the same command, then paste the file here.
#include "core/hardware_profile.h"

namespace dak {

const char* HardwareProfile::h100_default_json() {
  return R"json(
{
  "compute": {
    "kernel_overhead_us": 3.084909833270396,
    "linear_hbm_fraction": 0.917,
    "mma_min_rows": 64,
    "multicast_round_factor": 1.25,
    "step_kernel_overhead_us": 4.3,
    "tensor_tflops": [
      {
        "max_tokens": 256,
        "tflops": 601.1992366684265
      },
      {
        "max_tokens": 512,
        "tflops": 761.2490614230313
      },
      {
        "max_tokens": 1024,
        "tflops": 789.2258913199244
      },
      {
        "max_tokens": 8192,
        "tflops": 793.4541457708893
      },
      {
        "max_tokens": 0,
        "tflops": 790.7788799355584
      }
    ],
    "tiered_step_kernel_overhead_us": 2.5
  },
  "contention": [
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3130.40231494446,
      "host_ctas": 0,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3115.932266381733,
      "host_ctas": 2,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3113.1120909723836,
      "host_ctas": 4,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3126.2439115337106,
      "host_ctas": 8,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3115.281003251277,
      "host_ctas": 12,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3117.6703000441585,
      "host_ctas": 16,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 1360.2936702699415,
      "host_ctas": 24,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 339.4374928832602,
      "host_ctas": 32,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2848.793747876317,
      "host_ctas": 0,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2878.3795382370613,
      "host_ctas": 2,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2971.3374385327606,
      "host_ctas": 4,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2919.2200557103065,
      "host_ctas": 8,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2178.440352073793,
      "host_ctas": 12,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 466.16786964091483,
      "host_ctas": 16,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 194.2919216424666,
      "host_ctas": 24,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 115.53102726016874,
      "host_ctas": 32,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    }
  ],
  "device": "NVIDIA H100 80GB HBM3 (132 SMs, 79.2 GiB HBM), measured by dak profile on 2026-12-06",
  "format": "dak.hardware_profile",
  "hbm": {
    "capacity_bytes": 85017493504,
    "free_after_context_bytes": 84465090560,
    "read_gbps": 3173.370928182885,
    "reserve_bytes": 2147483648
  },
  "host_link": {
    "cluster4_ctas": 120,
    "copy_engine_gbps": 55.17841054419983,
    "hbm_slowdown_during_copy": 0.06847470747947904,
    "inflight_cap_bytes": 1048576,
    "latency_us": 2.5218750000000005,
    "loaded_latency_us": 3.9,
    "loaded_start_us": 15.0,
    "max_multicast_cluster": 4,
    "max_stages_per_cta": 7,
    "shared_total_gbps": 43.80929973472735,
    "sm_read_gbps": 34.68316078457315,
    "stage_bytes": 32768
  },
  "host_memory": {
    "pin_gib_per_s": 3.6822930363841317,
    "pinnable_bytes": 118111600640
  },
  "name": "h100-default",
  "sm_count": 132,
  "sources": {
    "compute.kernel_overhead_us": "dak profile 2026-12-06: least-squares fit t = 3.085 us + S / 3166.5 GB/s over graph-replayed TMA bulk HBM streams, each launch on its own region (per kernel, medians of 5 replays: 256 KiB 3.004 us, 1024 KiB 3.358 us, 4096 KiB 4.636 us, 16384 KiB 8.423 us, 65536 KiB 24.285 us, 262144 KiB 87.792 us, 1048576 KiB 342.192 us)",
    "compute.linear_hbm_fraction": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 7: cuBLASLt at x = 0 in dak bench gemm's graph-replayed 8-layer stacks at N = 8 (docs/results/2026-12-02/session7/sweeps/gemm.json): Llama-2-7B 113.2 us per layer (404.8 MB), Llama-2-70B 420.6 (1711.3 MB), OPT-30B 311.8 (1233.1 MB); least squares t = 4 a + bytes / (f x 4623 GB/s): f = 0.917, a = 4.65 us)",
    "compute.mma_min_rows": "an ISA constant; copied from profile 'h200-default' (PTX ISA: wgmma.mma_async has M = 64 rows per warpgroup instruction)",
    "compute.multicast_round_factor": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 23 (docs/perf-notes.md): --offload direct, Llama-2-7B batch 512 at 10 %, eager per layer (docs/results/2026-12-04/session23/call1/offload.txt): qkv_proj with 4 host m-tiles 141.7 us, gate_up_proj with 6 153.0 us, whose host sides (3.9 / 15 us) would take 98 / 140 us; the HBM sides' rounds (4 of 128 x 128 in clusters of 4, 3 of 128 x 256 in clusters of 2) at tiered_gemm_round_cost 111 / 129 us unclustered)",
    "compute.step_kernel_overhead_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 7 (docs/perf-notes.md): Llama-2-7B decode TPOT with cuBLASLt linears, batch 1 and 8 (4.315-4.319 and 4.492-4.504 ms, docs/results/2026-12-02/session7/call1, call3) less the linears at linear_hbm_fraction, over the step's kernels)",
    "compute.tensor_tflops": "dak profile 2026-12-06: cuBLASLt bf16 GEMM M = K = 8192, random data, TFLOP/s medians of 5 runs: N=256 601.2, N=512 761.2, N=1024 789.2, N=8192 793.5, N=16384 790.8 (each N is the upper end of its class, the largest N the unlimited class)",
    "compute.tiered_step_kernel_overhead_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 21 call 6 (docs/perf-notes.md, sessions 21-22): all-HBM decode TPOT on the tiered GEMM (--gemm auto, prompt 32, gen 8): Llama-2-7B batch 1 / 8 3.723 / 3.869 ms, OPT-6.7B and OPT-30B batch 8 3.865 / 15.460 ms, predicted 3.869 / 3.914 / 3.832 / 15.221 at 2.5 us)",
    "contention": "dak profile 2026-12-06: one launch, 100 CTAs streaming HBM while k CTAs stream host memory with the same stages of 32768 B until the HBM CTAs finish (kernels/link_probe.h, global-timer spans, medians of 5 runs); k x stages HBM GB/s: 0x2 3130, 2x2 3116 (host 34.6), 4x2 3113 (host 34.7), 8x2 3126 (host 34.7), 12x2 3115 (host 34.7), 16x2 3118 (host 34.7), 24x2 1360 (host 34.5), 32x2 339 (host 34.7), 0x4 2849, 2x4 2878 (host 33.7), 4x4 2971 (host 34.6), 8x4 2919 (host 34.7), 12x4 2178 (host 34.5), 16x4 466 (host 34.5), 24x4 194 (host 34.6), 32x4 116 (host 34.6)",
    "hbm.capacity_bytes": "dak profile 2026-12-06: cudaMemGetInfo total 85017493504 bytes",
    "hbm.free_after_context_bytes": "dak profile 2026-12-06: cudaMemGetInfo free 84465090560 bytes right after context creation",
    "hbm.read_gbps": "dak profile 2026-12-06: TMA bulk HBM stream (kernels/hbm_stream.h, all SMs) of 4.00 GiB: best single launch 3173 GB/s at 32 KiB x 6 stages, median of that configuration 3169 GB/s, 5 timed launches per configuration",
    "hbm.reserve_bytes": "planner policy, not a measurement; copied from profile 'h200-default' (planner policy, not a measurement: 2 GiB kept for cuBLAS workspace, CUDA graphs and allocator slack)",
    "host_link.cluster4_ctas": "dak profile 2026-12-06: cudaOccupancyMaxActiveClusters of the tiered GEMM's 128 x 128 kernel in clusters of 4: 120 CTAs of the 132 SMs",
    "host_link.copy_engine_gbps": "dak profile 2026-12-06: cudaMemcpyAsync H2D of 1024 MiB from pinned host memory into HBM, median of 5 runs (min 55.1, max 55.3 GB/s)",
    "host_link.hbm_slowdown_during_copy": "dak profile 2026-12-06: TMA bulk HBM stream (all SMs) alone 3174 GB/s, during a concurrent H2D copy 2957 GB/s (medians of 5 runs)",
    "host_link.inflight_cap_bytes": "dak profile 2026-12-06: largest host bytes in flight at which every contention point at or below it keeps >= 97 % of its HBM baseline; the link saturates (>= 97 % of the best SM read) from 131072 bytes in flight",
    "host_link.latency_us": "dak profile 2026-12-06: 1 CTA x 1 stage reads 12.99 GB/s, i.e. one 32768-byte stage per 2.522 us",
    "host_link.loaded_latency_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 23 (docs/perf-notes.md): --offload direct, Llama-2-7B batch 512 at 10 %, eager per-operator times per layer (docs/results/2026-12-04/session21/call5/offload.txt): qkv 141.2, o_proj 78.5, gate_up 199.4, down 182.8 us with 5 / 3 / 7 / 3 host m-tiles on 2 / 3 / 3 / 3 read streams of 96 / 96 / 64 / 96 KiB; predicted with 3.9 and 15 us: 139.8 / 76.2 / 202.2 / 179.5)",
    "host_link.loaded_start_us": "not measured by dak profile; copied from profile 'h200-default' (fitted with host_link.loaded_latency_us (same points))",
    "host_link.max_multicast_cluster": "not measured by dak profile (shared/tools/h200_probe measures it); copied from profile 'h200-default' (shared/tools/h200_probe/results-2026-11-29.log: [multicast] cluster=4 mc=1 clusters=16 consumed 205.6 GB/s unique-tile 51.4 GB/s mismatches=0)",
    "host_link.max_stages_per_cta": "dak profile 2026-12-06: 7 stages of 32768 bytes (+ an 8-byte mbarrier each) fit the 232448-byte per-CTA SMEM opt-in",
    "host_link.shared_total_gbps": "dak profile 2026-12-06: an H2D copy and 8 TMA host-read CTAs x 2 stages at once: copy engine 21.8 + SMs 22.0 GB/s (medians of 5 runs)",
    "host_link.sm_read_gbps": "dak profile 2026-12-06: best point of the TMA bulk host read sweep (kernels/link_probe.h, CTAs x stages of 32768 B, GB/s medians of 5 runs): 1x1 13.0, 2x1 26.1, 4x1 34.5, 8x1 34.6, 1x2 26.1, 2x2 34.7, 4x2 34.6, 8x2 34.6, 1x4 34.6, 2x4 34.6, 4x4 34.6, 8x4 34.6",
    "host_link.stage_bytes": "dak profile 2026-12-06: the TMA chunk of every host read, shared-link and contention run",
    "host_memory.pin_gib_per_s": "dak profile 2026-12-06: mmap + cudaHostRegister(mapped, portable) of 110.00 GiB of fresh anonymous memory took 29.873 s",
    "host_memory.pinnable_bytes": "dak profile 2026-12-06: the size this run pinned (110.00 GiB, cudaHostRegister succeeded): a tested amount, not the machine's maximum; pass --pin-test-gib to test more",
    "sm_count": "dak profile 2026-12-06: cudaDevAttrMultiProcessorCount of NVIDIA H100 80GB HBM3",
    "tiered_gemm": "dak profile 2026-12-06: fastest of host CTAs {1, 2, 4, ...} x host stages {1, 2, 4, ...} (HBM CTAs = the other SMs) per shape and host row count, medians of 5 CUDA-event-timed runs with the L2 flushed before each; output bits checked against the all-HBM run",
    "zero_copy.attention_gbps": "dak profile 2026-12-06: attention_decode (8 sequences, 32 heads x 128, MHA) with K and V in pinned mapped host memory: 268435456 bytes / median of 5 CUDA-event-timed launches",
    "zero_copy.gemm": "dak profile 2026-12-06: cuBLASLt bf16 y[N, rows] = x[N, K] W^T with W in pinned mapped host memory, host bytes / median of 5 CUDA-event-timed runs, GB/s: N=8 K=4096 rows=128 23.4, N=8 K=4096 rows=256 25.4, N=8 K=4096 rows=384 11.1, N=8 K=4096 rows=512 27.0, N=8 K=4096 rows=640 15.1, N=8 K=4096 rows=768 28.3, N=8 K=4096 rows=896 18.4, N=8 K=4096 rows=1024 28.4, N=8 K=4096 rows=1152 20.0, N=8 K=4096 rows=1280 28.6, N=8 K=4096 rows=1408 21.2, N=8 K=4096 rows=1536 28.6, N=8 K=4096 rows=1664 22.7, N=8 K=4096 rows=1792 29.4, N=8 K=4096 rows=1920 23.2, N=8 K=4096 rows=2048 34.2, N=8 K=4096 rows=3072 34.3, N=8 K=4096 rows=4096 34.5, N=8 K=4096 rows=6144 34.4, N=8 K=4096 rows=8192 34.6, N=8 K=4096 rows=12288 34.4, N=8 K=4096 rows=16384 34.6, N=8 K=8192 rows=128 26.0, N=8 K=8192 rows=256 27.2, N=8 K=8192 rows=384 11.7, N=8 K=8192 rows=512 28.7, N=8 K=8192 rows=640 15.4, N=8 K=8192 rows=768 29.2, N=8 K=8192 rows=896 19.1, N=8 K=8192 rows=1024 31.6, N=8 K=8192 rows=1152 23.4, N=8 K=8192 rows=1280 34.3, N=8 K=8192 rows=1408 25.2, N=8 K=8192 rows=1536 32.8, N=8 K=8192 rows=1664 25.2, N=8 K=8192 rows=1792 32.9, N=8 K=8192 rows=1920 26.5, N=8 K=8192 rows=2048 34.5, N=8 K=8192 rows=3072 33.0, N=8 K=8192 rows=4096 34.5, N=8 K=8192 rows=6144 34.2, N=8 K=8192 rows=8192 34.4, N=8 K=8192 rows=12288 34.5, N=8 K=8192 rows=16384 33.2, N=8 K=16384 rows=128 28.3, N=8 K=16384 rows=256 28.3, N=8 K=16384 rows=384 11.8, N=8 K=16384 rows=512 30.7, N=8 K=16384 rows=640 16.9, N=8 K=16384 rows=768 29.7, N=8 K=16384 rows=896 20.6, N=8 K=16384 rows=1024 34.4, N=8 K=16384 rows=1152 32.4, N=8 K=16384 rows=1280 32.8, N=8 K=16384 rows=1408 33.3, N=8 K=16384 rows=1536 31.6, N=8 K=16384 rows=1664 31.4, N=8 K=16384 rows=1792 34.3, N=8 K=16384 rows=1920 34.2, N=8 K=16384 rows=2048 34.3, N=8 K=16384 rows=3072 31.9, N=8 K=16384 rows=4096 34.0, N=8 K=16384 rows=6144 34.3, N=8 K=16384 rows=8192 32.8, N=8 K=16384 rows=12288 31.8, N=8 K=16384 rows=16384 31.2, N=512 K=4096 rows=128 7.1, N=512 K=4096 rows=256 7.5, N=512 K=4096 rows=384 8.3, N=512 K=4096 rows=512 4.2, N=512 K=4096 rows=640 16.6, N=512 K=4096 rows=768 4.3, N=512 K=4096 rows=896 16.9, N=512 K=4096 rows=1024 4.3, N=512 K=4096 rows=1152 8.2, N=512 K=4096 rows=1280 8.5, N=512 K=4096 rows=1408 13.5, N=512 K=4096 rows=1536 8.6, N=512 K=4096 rows=1664 16.2, N=512 K=4096 rows=1792 8.5, N=512 K=4096 rows=1920 17.1, N=512 K=4096 rows=2048 8.5, N=512 K=4096 rows=3072 8.6, N=512 K=4096 rows=4096 8.6, N=512 K=4096 rows=6144 17.2, N=512 K=4096 rows=8192 17.2, N=512 K=4096 rows=12288 17.2, N=512 K=4096 rows=16384 17.2, N=512 K=8192 rows=128 4.1, N=512 K=8192 rows=256 4.3, N=512 K=8192 rows=384 16.3, N=512 K=8192 rows=512 4.3, N=512 K=8192 rows=640 13.6, N=512 K=8192 rows=768 8.4, N=512 K=8192 rows=896 17.0, N=512 K=8192 rows=1024 4.3, N=512 K=8192 rows=1152 17.1, N=512 K=8192 rows=1280 9.3, N=512 K=8192 rows=1408 13.6, N=512 K=8192 rows=1536 8.5, N=512 K=8192 rows=1664 5.3, N=512 K=8192 rows=1792 17.2, N=512 K=8192 rows=1920 17.0, N=512 K=8192 rows=2048 8.6, N=512 K=8192 rows=3072 8.5, N=512 K=8192 rows=4096 8.6, N=512 K=8192 rows=6144 17.1, N=512 K=8192 rows=8192 17.1, N=512 K=8192 rows=12288 17.1, N=512 K=8192 rows=16384 17.2, N=512 K=16384 rows=128 4.1, N=512 K=16384 rows=256 4.3, N=512 K=16384 rows=384 8.4, N=512 K=16384 rows=512 8.5, N=512 K=16384 rows=640 8.4, N=512 K=16384 rows=768 8.5, N=512 K=16384 rows=896 8.5, N=512 K=16384 rows=1024 13.4, N=512 K=16384 rows=1152 7.3, N=512 K=16384 rows=1280 8.4, N=512 K=16384 rows=1408 13.9, N=512 K=16384 rows=1536 8.5, N=512 K=16384 rows=1664 33.5, N=512 K=16384 rows=1792 8.5, N=512 K=16384 rows=1920 13.6, N=512 K=16384 rows=2048 8.4, N=512 K=16384 rows=3072 8.3, N=512 K=16384 rows=4096 8.4, N=512 K=16384 rows=6144 16.8, N=512 K=16384 rows=8192 16.5, N=512 K=16384 rows=12288 16.5, N=512 K=16384 rows=16384 16.3"
  },
  "tiered_gemm": [
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2198.272608427573,
      "hbm_ctas": 132,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 45.791998505592346
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 307.83128621557614,
      "hbm_ctas": 130,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 1280,
      "time_us": 327.00800895690924
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 65.7593071812018,
      "hbm_ctas": 96,
      "hbm_stages": 5,
      "host_ctas": 1,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 6144,
      "time_us": 1530.784010887146
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 32.866257435925654,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 1,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 12288,
      "time_us": 3062.8159046173096
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1108.4313065590798,
      "hbm_ctas": 132,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 90.81599861383438
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 276.474610820259,
      "hbm_ctas": 112,
      "hbm_stages": 6,
      "host_ctas": 8,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 1280,
      "time_us": 364.0959858894348
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 60.1937999316651,
      "hbm_ctas": 116,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 6144,
      "time_us": 1672.320008277893
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 29.87395960327704,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 12288,
      "time_us": 3369.6000576019287
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 1491.5732619574917,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 2,
      "m_host": 0,
      "time_us": 22.495999932289124
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 316.8860634481786,
      "hbm_ctas": 116,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 5,
      "k_splits": 2,
      "m_host": 384,
      "time_us": 105.8880016207695
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 65.9979862870619,
      "hbm_ctas": 64,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 2,
      "m_host": 2048,
      "time_us": 508.41599702835083
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 33.172286328875124,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 2,
      "m_host": 4096,
      "time_us": 1011.520028114319
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 905.5060683489645,
      "hbm_ctas": 128,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 37.05599904060364
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 300.27949193917226,
      "hbm_ctas": 116,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 384,
      "time_us": 111.7440015077591
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 60.70255963519501,
      "hbm_ctas": 64,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 2048,
      "time_us": 552.7679920196533
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 29.616608819953207,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 4096,
      "time_us": 1132.9599618911743
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2468.72369407464,
      "hbm_ctas": 132,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 73.05599749088287
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 327.432522223625,
      "hbm_ctas": 130,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 2176,
      "time_us": 550.815999507904
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 66.01421907570005,
      "hbm_ctas": 131,
      "hbm_stages": 5,
      "host_ctas": 1,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 11008,
      "time_us": 2732.0640087127686
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 33.175949485157915,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 1,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 22016,
      "time_us": 5436.319828033447
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1211.803107321386,
      "hbm_ctas": 132,
      "hbm_stages": 4,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 148.83199334144592
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 265.1157561901519,
      "hbm_ctas": 128,
      "hbm_stages": 4,
      "host_ctas": 4,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 2176,
      "time_us": 680.2880167961121
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 52.63149105603959,
      "hbm_ctas": 128,
      "hbm_stages": 4,
      "host_ctas": 4,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 11008,
      "time_us": 3426.7520904541016
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 26.603177056169592,
      "hbm_ctas": 0,
      "hbm_stages": 4,
      "host_ctas": 4,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 22016,
      "time_us": 6779.456138610841
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2088.9903207968173,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 2,
      "m_host": 0,
      "time_us": 43.168000876903534
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 326.7681063512933,
      "hbm_ctas": 116,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 2,
      "m_host": 384,
      "time_us": 275.9679853916168
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 63.79571445365019,
      "hbm_ctas": 64,
      "hbm_stages": 5,
      "host_ctas": 1,
      "host_stages": 5,
      "k_splits": 2,
      "m_host": 2048,
      "time_us": 1413.5359525680542
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 31.802104390946134,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 2,
      "host_stages": 4,
      "k_splits": 2,
      "m_host": 4096,
      "time_us": 2835.5839252471924
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1173.2090431113977,
      "hbm_ctas": 128,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 76.86399668455124
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 329.288134587483,
      "hbm_ctas": 116,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 384,
      "time_us": 273.8560140132904
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 63.5697709051462,
      "hbm_ctas": 64,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 2048,
      "time_us": 1418.5600280761719
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 31.92134273970685,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 4,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 4096,
      "time_us": 2824.9919414520264
    }
  ],
  "version": 1,
  "zero_copy": {
    "attention_gbps": 12.042907569105738,
    "gemm": [
      {
        "K": 4096,
        "N": 8,
        "gbps": 23.439197995945786,
        "rows": 128
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 25.38187350485274,
        "rows": 256
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 11.138001757599287,
        "rows": 384
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 27.00844875496352,
        "rows": 512
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 15.062976691177138,
        "rows": 640
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 28.321522095735055,
        "rows": 768
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 18.408988938849404,
        "rows": 896
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 28.447530935084846,
        "rows": 1024
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 19.992678015414082,
        "rows": 1152
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 28.573422246568065,
        "rows": 1280
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 21.239055435352128,
        "rows": 1408
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 28.597527427685954,
        "rows": 1536
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 22.723994714861874,
        "rows": 1664
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 29.403409710518062,
        "rows": 1792
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 23.172881821066465,
        "rows": 1920
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.175608516281386,
        "rows": 2048
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.32701763577606,
        "rows": 3072
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.528977565658245,
        "rows": 4096
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.44956853360496,
        "rows": 6144
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.64305486977342,
        "rows": 8192
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.37090163854357,
        "rows": 12288
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.57822445862836,
        "rows": 16384
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 26.006348211394695,
        "rows": 128
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 27.159552647771335,
        "rows": 256
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 11.704249960635407,
        "rows": 384
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 28.674687536359066,
        "rows": 512
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 15.40935802414738,
        "rows": 640
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 29.23321741705382,
        "rows": 768
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 19.139388212641975,
        "rows": 896
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 31.572204109693047,
        "rows": 1024
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 23.428957662240688,
        "rows": 1152
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.304857296493054,
        "rows": 1280
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 25.212324673201767,
        "rows": 1408
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 32.82133447092856,
        "rows": 1536
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 25.192738291950057,
        "rows": 1664
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 32.93620991955649,
        "rows": 1792
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 26.518479497259644,
        "rows": 1920
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.51193084330271,
        "rows": 2048
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 33.04891635833799,
        "rows": 3072
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.47675395233726,
        "rows": 4096
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.242942290746605,
        "rows": 6144
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.391945131559176,
        "rows": 8192
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 34.538456893644984,
        "rows": 12288
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 33.19341840534736,
        "rows": 16384
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 28.278747823338062,
        "rows": 128
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 28.339891526661802,
        "rows": 256
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 11.762720805437414,
        "rows": 384
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 30.687033843847,
        "rows": 512
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 16.85813561687743,
        "rows": 640
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 29.74289883302962,
        "rows": 768
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 20.601401920898805,
        "rows": 896
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.41564909382583,
        "rows": 1024
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 32.35014365322896,
        "rows": 1152
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 32.81886998732088,
        "rows": 1280
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 33.32929676044253,
        "rows": 1408
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 31.6395245777956,
        "rows": 1536
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 31.395069330787297,
        "rows": 1664
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.34800790994147,
        "rows": 1792
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.223645901096425,
        "rows": 1920
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.266069273483915,
        "rows": 2048
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 31.871932742845633,
        "rows": 3072
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.04108316270333,
        "rows": 4096
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 34.31971545763965,
        "rows": 6144
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 32.83328327735113,
        "rows": 8192
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 31.793013941147613,
        "rows": 12288
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 31.173406743430135,
        "rows": 16384
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 7.100325052533354,
        "rows": 128
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 7.5181832464776255,
        "rows": 256
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.292896639892598,
        "rows": 384
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 4.166306640766306,
        "rows": 512
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 16.58803279667579,
        "rows": 640
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 4.315364487144028,
        "rows": 768
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 16.92312195631222,
        "rows": 896
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 4.315411769973716,
        "rows": 1024
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.23845575231695,
        "rows": 1152
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.527559326267893,
        "rows": 1280
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 13.49386025033415,
        "rows": 1408
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.555613270340807,
        "rows": 1536
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 16.224253118927294,
        "rows": 1664
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.528415306032684,
        "rows": 1792
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 17.110035509771933,
        "rows": 1920
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.464176172716058,
        "rows": 2048
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.62646861324854,
        "rows": 3072
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 8.621527036990221,
        "rows": 4096
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 17.172128589903362,
        "rows": 6144
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 17.177802689303917,
        "rows": 8192
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 17.198135204715882,
        "rows": 12288
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 17.222451232154505,
        "rows": 16384
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 4.089865436995943,
        "rows": 128
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 4.274737435052477,
        "rows": 256
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 16.32143451610053,
        "rows": 384
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 4.2677781835111865,
        "rows": 512
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 13.595551943212122,
        "rows": 640
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 8.371998286348628,
        "rows": 768
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 16.970074039462613,
        "rows": 896
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 4.271951064535173,
        "rows": 1024
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.101801390542956,
        "rows": 1152
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 9.294436544171457,
        "rows": 1280
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 13.589759675247,
        "rows": 1408
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 8.544087303221314,
        "rows": 1536
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 5.319048814865122,
        "rows": 1664
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.160833778116938,
        "rows": 1792
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 16.99467480486503,
        "rows": 1920
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 8.565817611981501,
        "rows": 2048
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 8.546130111292833,
        "rows": 3072
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 8.552124430546687,
        "rows": 4096
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.10480736496125,
        "rows": 6144
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.134014987518206,
        "rows": 8192
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.145921988682403,
        "rows": 12288
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 17.156968442857615,
        "rows": 16384
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 4.130463713000609,
        "rows": 128
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 4.258418813534086,
        "rows": 256
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.37413767108231,
        "rows": 384
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.466363103090428,
        "rows": 512
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.444490611083383,
        "rows": 640
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.519835922449907,
        "rows": 768
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.52263219310343,
        "rows": 896
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 13.449317211384058,
        "rows": 1024
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 7.321321760001834,
        "rows": 1152
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.401081720675391,
        "rows": 1280
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 13.942616248199462,
        "rows": 1408
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.469919255004207,
        "rows": 1536
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 33.4511765698862,
        "rows": 1664
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.457193349865975,
        "rows": 1792
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 13.564411338954853,
        "rows": 1920
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.434016983235281,
        "rows": 2048
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.26835299008626,
        "rows": 3072
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 8.359616543433955,
        "rows": 4096
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 16.797866720620256,
        "rows": 6144
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 16.46497338524537,
        "rows": 8192
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 16.491646265568132,
        "rows": 12288
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 16.306828801118257,
        "rows": 16384
      }
    ]
  }
}
)json";
}

}  // namespace dak
