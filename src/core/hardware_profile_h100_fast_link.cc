// The second H100 profile compiled into dak: `dak profile` on another H100 80GB HBM3 (SXM, 132 SMs)
// of our device pool, on a host whose SMs read pinned memory at 51.3 GB/s (h100-default's host: 34.7;
// the copy engine moves ~54-55 GB/s on both), 2026-12-06 (docs/perf-notes.md session 33, call 7;
// `dak profile --name h100-measured`, renamed h100-fast-link when it was compiled in, session 37).
// This text is a verbatim copy of profiles/h100-fast-link.json; the test
// HardwareProfile.CompiledInH100FastLinkMatchesShippedFile keeps the two identical.
#include "core/hardware_profile.h"

namespace dak {

const char* HardwareProfile::h100_fast_link_json() {
  return R"json(
{
  "compute": {
    "kernel_overhead_us": 3.142128422296185,
    "linear_hbm_fraction": 0.917,
    "mma_min_rows": 64,
    "multicast_round_factor": 1.25,
    "step_kernel_overhead_us": 4.3,
    "tensor_tflops": [
      {
        "max_tokens": 256,
        "tflops": 625.3592322402752
      },
      {
        "max_tokens": 512,
        "tflops": 781.1872192029616
      },
      {
        "max_tokens": 1024,
        "tflops": 805.9612368515367
      },
      {
        "max_tokens": 8192,
        "tflops": 807.0971311671814
      },
      {
        "max_tokens": 0,
        "tflops": 808.730822296464
      }
    ],
    "tiered_step_kernel_overhead_us": 2.5
  },
  "contention": [
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3206.5017329986854,
      "host_ctas": 0,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3201.8331105594807,
      "host_ctas": 2,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3208.188840791142,
      "host_ctas": 4,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3192.0807157814584,
      "host_ctas": 8,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3201.9859645772663,
      "host_ctas": 12,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3199.3894294981874,
      "host_ctas": 16,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2112.2378283050957,
      "host_ctas": 24,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 953.1266652929851,
      "host_ctas": 32,
      "stage_bytes": 32768,
      "stages_per_cta": 2
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 3026.373378454597,
      "host_ctas": 0,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2965.163572060124,
      "host_ctas": 2,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2958.8195072457374,
      "host_ctas": 4,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2928.396786587495,
      "host_ctas": 8,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 2807.475774889601,
      "host_ctas": 12,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 1691.772183826868,
      "host_ctas": 16,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 348.1104141959627,
      "host_ctas": 24,
      "stage_bytes": 32768,
      "stages_per_cta": 4
    },
    {
      "hbm_ctas": 100,
      "hbm_gbps": 226.88970451431763,
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
    "read_gbps": 3232.059387460247,
    "reserve_bytes": 2147483648
  },
  "host_link": {
    "cluster4_ctas": 120,
    "copy_engine_gbps": 53.71639871009182,
    "hbm_slowdown_during_copy": 0.06773232005129093,
    "inflight_cap_bytes": 786432,
    "latency_us": 2.66659375,
    "loaded_latency_us": 3.9,
    "loaded_start_us": 15.0,
    "max_multicast_cluster": 4,
    "max_stages_per_cta": 7,
    "shared_total_gbps": 51.644344355845604,
    "sm_read_gbps": 51.336613546791995,
    "stage_bytes": 32768
  },
  "host_memory": {
    "pin_gib_per_s": 2.085241609175645,
    "pinnable_bytes": 118111600640
  },
  "name": "h100-fast-link",
  "sm_count": 132,
  "sources": {
    "compute.kernel_overhead_us": "dak profile 2026-12-06: least-squares fit t = 3.142 us + S / 3212.6 GB/s over graph-replayed TMA bulk HBM streams, each launch on its own region (per kernel, medians of 5 replays: 256 KiB 3.149 us, 1024 KiB 3.462 us, 4096 KiB 4.550 us, 16384 KiB 8.457 us, 65536 KiB 23.905 us, 262144 KiB 86.708 us, 1048576 KiB 337.376 us)",
    "compute.linear_hbm_fraction": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 7: cuBLASLt at x = 0 in dak bench gemm's graph-replayed 8-layer stacks at N = 8 (docs/results/2026-12-02/session7/sweeps/gemm.json): Llama-2-7B 113.2 us per layer (404.8 MB), Llama-2-70B 420.6 (1711.3 MB), OPT-30B 311.8 (1233.1 MB); least squares t = 4 a + bytes / (f x 4623 GB/s): f = 0.917, a = 4.65 us)",
    "compute.mma_min_rows": "an ISA constant; copied from profile 'h200-default' (PTX ISA: wgmma.mma_async has M = 64 rows per warpgroup instruction)",
    "compute.multicast_round_factor": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 23 (docs/perf-notes.md): --offload direct, Llama-2-7B batch 512 at 10 %, eager per layer (docs/results/2026-12-04/session23/call1/offload.txt): qkv_proj with 4 host m-tiles 141.7 us, gate_up_proj with 6 153.0 us, whose host sides (3.9 / 15 us) would take 98 / 140 us; the HBM sides' rounds (4 of 128 x 128 in clusters of 4, 3 of 128 x 256 in clusters of 2) at tiered_gemm_round_cost 111 / 129 us unclustered)",
    "compute.step_kernel_overhead_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 7 (docs/perf-notes.md): Llama-2-7B decode TPOT with cuBLASLt linears, batch 1 and 8 (4.315-4.319 and 4.492-4.504 ms, docs/results/2026-12-02/session7/call1, call3) less the linears at linear_hbm_fraction, over the step's kernels)",
    "compute.tensor_tflops": "dak profile 2026-12-06: cuBLASLt bf16 GEMM M = K = 8192, random data, TFLOP/s medians of 5 runs: N=256 625.4, N=512 781.2, N=1024 806.0, N=8192 807.1, N=16384 808.7 (each N is the upper end of its class, the largest N the unlimited class)",
    "compute.tiered_step_kernel_overhead_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 21 call 6 (docs/perf-notes.md, sessions 21-22): all-HBM decode TPOT on the tiered GEMM (--gemm auto, prompt 32, gen 8): Llama-2-7B batch 1 / 8 3.723 / 3.869 ms, OPT-6.7B and OPT-30B batch 8 3.865 / 15.460 ms, predicted 3.869 / 3.914 / 3.832 / 15.221 at 2.5 us)",
    "contention": "dak profile 2026-12-06: one launch, 100 CTAs streaming HBM while k CTAs stream host memory with the same stages of 32768 B until the HBM CTAs finish (kernels/link_probe.h, global-timer spans, medians of 5 runs); k x stages HBM GB/s: 0x2 3207, 2x2 3202 (host 32.7), 4x2 3208 (host 48.4), 8x2 3192 (host 50.7), 12x2 3202 (host 51.0), 16x2 3199 (host 50.5), 24x2 2112 (host 50.7), 32x2 953 (host 49.8), 0x4 3026, 2x4 2965 (host 48.0), 4x4 2959 (host 51.2), 8x4 2928 (host 51.2), 12x4 2807 (host 50.0), 16x4 1692 (host 51.0), 24x4 348 (host 49.3), 32x4 227 (host 51.3)",
    "hbm.capacity_bytes": "dak profile 2026-12-06: cudaMemGetInfo total 85017493504 bytes",
    "hbm.free_after_context_bytes": "dak profile 2026-12-06: cudaMemGetInfo free 84465090560 bytes right after context creation",
    "hbm.read_gbps": "dak profile 2026-12-06: TMA bulk HBM stream (kernels/hbm_stream.h, all SMs) of 4.00 GiB: best single launch 3232 GB/s at 64 KiB x 3 stages, median of that configuration 3231 GB/s, 5 timed launches per configuration",
    "hbm.reserve_bytes": "planner policy, not a measurement; copied from profile 'h200-default' (planner policy, not a measurement: 2 GiB kept for cuBLAS workspace, CUDA graphs and allocator slack)",
    "host_link.cluster4_ctas": "dak profile 2026-12-06: cudaOccupancyMaxActiveClusters of the tiered GEMM's 128 x 128 kernel in clusters of 4: 120 CTAs of the 132 SMs",
    "host_link.copy_engine_gbps": "dak profile 2026-12-06: cudaMemcpyAsync H2D of 1024 MiB from pinned host memory into HBM, median of 5 runs (min 46.5, max 55.0 GB/s)",
    "host_link.hbm_slowdown_during_copy": "dak profile 2026-12-06: TMA bulk HBM stream (all SMs) alone 3232 GB/s, during a concurrent H2D copy 3013 GB/s (medians of 5 runs)",
    "host_link.inflight_cap_bytes": "dak profile 2026-12-06: largest host bytes in flight at which every contention point at or below it keeps >= 97 % of its HBM baseline; the link saturates (>= 97 % of the best SM read) from 262144 bytes in flight",
    "host_link.latency_us": "dak profile 2026-12-06: 1 CTA x 1 stage reads 12.29 GB/s, i.e. one 32768-byte stage per 2.667 us",
    "host_link.loaded_latency_us": "not measured by dak profile; copied from profile 'h200-default' (fitted, session 23 (docs/perf-notes.md): --offload direct, Llama-2-7B batch 512 at 10 %, eager per-operator times per layer (docs/results/2026-12-04/session21/call5/offload.txt): qkv 141.2, o_proj 78.5, gate_up 199.4, down 182.8 us with 5 / 3 / 7 / 3 host m-tiles on 2 / 3 / 3 / 3 read streams of 96 / 96 / 64 / 96 KiB; predicted with 3.9 and 15 us: 139.8 / 76.2 / 202.2 / 179.5)",
    "host_link.loaded_start_us": "not measured by dak profile; copied from profile 'h200-default' (fitted with host_link.loaded_latency_us (same points))",
    "host_link.max_multicast_cluster": "not measured by dak profile (shared/tools/h200_probe measures it); copied from profile 'h200-default' (shared/tools/h200_probe/results-2026-11-29.log: [multicast] cluster=4 mc=1 clusters=16 consumed 205.6 GB/s unique-tile 51.4 GB/s mismatches=0)",
    "host_link.max_stages_per_cta": "dak profile 2026-12-06: 7 stages of 32768 bytes (+ an 8-byte mbarrier each) fit the 232448-byte per-CTA SMEM opt-in",
    "host_link.shared_total_gbps": "dak profile 2026-12-06: an H2D copy and 8 TMA host-read CTAs x 2 stages at once: copy engine 25.7 + SMs 25.9 GB/s (medians of 5 runs)",
    "host_link.sm_read_gbps": "dak profile 2026-12-06: best point of the TMA bulk host read sweep (kernels/link_probe.h, CTAs x stages of 32768 B, GB/s medians of 5 runs): 1x1 12.3, 2x1 23.5, 4x1 44.6, 8x1 50.3, 1x2 24.0, 2x2 46.1, 4x2 50.9, 8x2 51.3, 1x4 48.9, 2x4 51.3, 4x4 51.1, 8x4 51.1",
    "host_link.stage_bytes": "dak profile 2026-12-06: the TMA chunk of every host read, shared-link and contention run",
    "host_memory.pin_gib_per_s": "dak profile 2026-12-06: mmap + cudaHostRegister(mapped, portable) of 110.00 GiB of fresh anonymous memory took 52.752 s",
    "host_memory.pinnable_bytes": "dak profile 2026-12-06: the size this run pinned (110.00 GiB, cudaHostRegister succeeded): a tested amount, not the machine's maximum; pass --pin-test-gib to test more",
    "sm_count": "dak profile 2026-12-06: cudaDevAttrMultiProcessorCount of NVIDIA H100 80GB HBM3",
    "tiered_gemm": "dak profile 2026-12-06: fastest of host CTAs {1, 2, 4, ...} x host stages {1, 2, 4, ...} (HBM CTAs = the other SMs) per shape and host row count, medians of 5 CUDA-event-timed runs with the L2 flushed before each; output bits checked against the all-HBM run",
    "zero_copy.attention_gbps": "dak profile 2026-12-06: attention_decode (8 sequences, 32 heads x 128, MHA) with K and V in pinned mapped host memory: 268435456 bytes / median of 5 CUDA-event-timed launches",
    "zero_copy.gemm": "dak profile 2026-12-06: cuBLASLt bf16 y[N, rows] = x[N, K] W^T with W in pinned mapped host memory, host bytes / median of 5 CUDA-event-timed runs, GB/s: N=8 K=4096 rows=128 26.8, N=8 K=4096 rows=256 28.9, N=8 K=4096 rows=384 11.0, N=8 K=4096 rows=512 29.5, N=8 K=4096 rows=640 14.4, N=8 K=4096 rows=768 32.0, N=8 K=4096 rows=896 17.5, N=8 K=4096 rows=1024 33.2, N=8 K=4096 rows=1152 21.0, N=8 K=4096 rows=1280 33.0, N=8 K=4096 rows=1408 22.9, N=8 K=4096 rows=1536 34.7, N=8 K=4096 rows=1664 25.0, N=8 K=4096 rows=1792 33.5, N=8 K=4096 rows=1920 24.4, N=8 K=4096 rows=2048 50.0, N=8 K=4096 rows=3072 48.7, N=8 K=4096 rows=4096 50.5, N=8 K=4096 rows=6144 50.6, N=8 K=4096 rows=8192 50.5, N=8 K=4096 rows=12288 50.4, N=8 K=4096 rows=16384 49.0, N=8 K=8192 rows=128 27.5, N=8 K=8192 rows=256 29.9, N=8 K=8192 rows=384 9.8, N=8 K=8192 rows=512 31.7, N=8 K=8192 rows=640 13.4, N=8 K=8192 rows=768 33.6, N=8 K=8192 rows=896 17.2, N=8 K=8192 rows=1024 40.5, N=8 K=8192 rows=1152 25.1, N=8 K=8192 rows=1280 48.9, N=8 K=8192 rows=1408 28.1, N=8 K=8192 rows=1536 45.5, N=8 K=8192 rows=1664 28.9, N=8 K=8192 rows=1792 46.0, N=8 K=8192 rows=1920 32.1, N=8 K=8192 rows=2048 50.7, N=8 K=8192 rows=3072 46.5, N=8 K=8192 rows=4096 50.1, N=8 K=8192 rows=6144 50.6, N=8 K=8192 rows=8192 50.1, N=8 K=8192 rows=12288 49.2, N=8 K=8192 rows=16384 47.0, N=8 K=16384 rows=128 27.6, N=8 K=16384 rows=256 32.3, N=8 K=16384 rows=384 10.6, N=8 K=16384 rows=512 36.4, N=8 K=16384 rows=640 15.0, N=8 K=16384 rows=768 35.8, N=8 K=16384 rows=896 20.1, N=8 K=16384 rows=1024 50.3, N=8 K=16384 rows=1152 44.4, N=8 K=16384 rows=1280 46.0, N=8 K=16384 rows=1408 46.6, N=8 K=16384 rows=1536 42.3, N=8 K=16384 rows=1664 42.7, N=8 K=16384 rows=1792 50.3, N=8 K=16384 rows=1920 49.1, N=8 K=16384 rows=2048 50.3, N=8 K=16384 rows=3072 43.4, N=8 K=16384 rows=4096 50.3, N=8 K=16384 rows=6144 49.1, N=8 K=16384 rows=8192 49.6, N=8 K=16384 rows=12288 48.7, N=8 K=16384 rows=16384 50.1, N=512 K=4096 rows=128 7.7, N=512 K=4096 rows=256 9.3, N=512 K=4096 rows=384 11.5, N=512 K=4096 rows=512 5.8, N=512 K=4096 rows=640 22.6, N=512 K=4096 rows=768 6.3, N=512 K=4096 rows=896 24.5, N=512 K=4096 rows=1024 6.3, N=512 K=4096 rows=1152 6.9, N=512 K=4096 rows=1280 12.4, N=512 K=4096 rows=1408 16.0, N=512 K=4096 rows=1536 12.5, N=512 K=4096 rows=1664 23.0, N=512 K=4096 rows=1792 12.3, N=512 K=4096 rows=1920 25.0, N=512 K=4096 rows=2048 12.4, N=512 K=4096 rows=3072 12.5, N=512 K=4096 rows=4096 12.6, N=512 K=4096 rows=6144 25.2, N=512 K=4096 rows=8192 25.0, N=512 K=4096 rows=12288 25.5, N=512 K=4096 rows=16384 25.1, N=512 K=8192 rows=128 5.4, N=512 K=8192 rows=256 6.1, N=512 K=8192 rows=384 23.9, N=512 K=8192 rows=512 6.2, N=512 K=8192 rows=640 18.1, N=512 K=8192 rows=768 12.0, N=512 K=8192 rows=896 24.9, N=512 K=8192 rows=1024 6.2, N=512 K=8192 rows=1152 25.0, N=512 K=8192 rows=1280 9.8, N=512 K=8192 rows=1408 16.5, N=512 K=8192 rows=1536 12.6, N=512 K=8192 rows=1664 5.2, N=512 K=8192 rows=1792 25.4, N=512 K=8192 rows=1920 24.7, N=512 K=8192 rows=2048 12.6, N=512 K=8192 rows=3072 12.7, N=512 K=8192 rows=4096 12.8, N=512 K=8192 rows=6144 24.9, N=512 K=8192 rows=8192 25.4, N=512 K=8192 rows=12288 25.5, N=512 K=8192 rows=16384 24.9, N=512 K=16384 rows=128 5.6, N=512 K=16384 rows=256 6.3, N=512 K=16384 rows=384 12.2, N=512 K=16384 rows=512 12.4, N=512 K=16384 rows=640 12.6, N=512 K=16384 rows=768 12.7, N=512 K=16384 rows=896 12.6, N=512 K=16384 rows=1024 16.7, N=512 K=16384 rows=1152 6.5, N=512 K=16384 rows=1280 12.3, N=512 K=16384 rows=1408 17.9, N=512 K=16384 rows=1536 12.0, N=512 K=16384 rows=1664 49.1, N=512 K=16384 rows=1792 12.6, N=512 K=16384 rows=1920 18.1, N=512 K=16384 rows=2048 12.3, N=512 K=16384 rows=3072 12.5, N=512 K=16384 rows=4096 12.7, N=512 K=16384 rows=6144 25.2, N=512 K=16384 rows=8192 25.1, N=512 K=16384 rows=12288 23.7, N=512 K=16384 rows=16384 24.3"
  },
  "tiered_gemm": [
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2261.4867035225616,
      "hbm_ctas": 132,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 44.51199993491173
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 466.2410015669564,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 4,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 1280,
      "time_us": 215.90399742126465
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 101.39005943666277,
      "hbm_ctas": 96,
      "hbm_stages": 5,
      "host_ctas": 16,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 6144,
      "time_us": 992.8320050239564
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 51.07862174372621,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 8,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 12288,
      "time_us": 1970.752000808716
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1133.595699111274,
      "hbm_ctas": 132,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 88.79999816417694
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 460.30553902241957,
      "hbm_ctas": 80,
      "hbm_stages": 6,
      "host_ctas": 40,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 1280,
      "time_us": 218.6879962682724
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 100.11227681625897,
      "hbm_ctas": 56,
      "hbm_stages": 6,
      "host_ctas": 64,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 6144,
      "time_us": 1005.5040121078491
    },
    {
      "K": 4096,
      "M": 12288,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 50.19992165452535,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 16,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 12288,
      "time_us": 2005.2480697631838
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 1472.7190841484096,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 2,
      "m_host": 0,
      "time_us": 22.784000262618065
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 463.15194146926586,
      "hbm_ctas": 116,
      "hbm_stages": 5,
      "host_ctas": 8,
      "host_stages": 5,
      "k_splits": 2,
      "m_host": 384,
      "time_us": 72.4480003118515
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 99.21241661628126,
      "hbm_ctas": 64,
      "hbm_stages": 5,
      "host_ctas": 32,
      "host_stages": 2,
      "k_splits": 2,
      "m_host": 2048,
      "time_us": 338.20798993110657
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 50.56546316345109,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 128,
      "host_stages": 1,
      "k_splits": 2,
      "m_host": 4096,
      "time_us": 663.5839939117432
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 917.3893486334432,
      "hbm_ctas": 128,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 36.57599911093712
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 445.6336612525374,
      "hbm_ctas": 108,
      "hbm_stages": 6,
      "host_ctas": 12,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 384,
      "time_us": 75.29599964618683
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 97.03646248092272,
      "hbm_ctas": 56,
      "hbm_stages": 6,
      "host_ctas": 64,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 2048,
      "time_us": 345.7919955253601
    },
    {
      "K": 4096,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 49.27518800166903,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 120,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 4096,
      "time_us": 680.9599995613098
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2527.39732790985,
      "hbm_ctas": 132,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 71.35999947786331
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 502.818810712038,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 4,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 2176,
      "time_us": 358.68799686431885
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 102.26250851122603,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 4,
      "host_stages": 5,
      "k_splits": 1,
      "m_host": 11008,
      "time_us": 1763.6480331420898
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 50.82188235137657,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 32,
      "host_stages": 2,
      "k_splits": 1,
      "m_host": 22016,
      "time_us": 3548.768043518067
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1227.907618336119,
      "hbm_ctas": 132,
      "hbm_stages": 4,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 146.88000082969666
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 484.57536496652085,
      "hbm_ctas": 118,
      "hbm_stages": 4,
      "host_ctas": 14,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 2176,
      "time_us": 372.19199538230896
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 101.0415184744994,
      "hbm_ctas": 116,
      "hbm_stages": 4,
      "host_ctas": 16,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 11008,
      "time_us": 1784.9600315093994
    },
    {
      "K": 4096,
      "M": 22016,
      "N": 512,
      "cluster": 2,
      "eb_gbps": 50.157930399883355,
      "hbm_ctas": 0,
      "hbm_stages": 4,
      "host_ctas": 32,
      "host_stages": 4,
      "k_splits": 1,
      "m_host": 22016,
      "time_us": 3595.7438945770264
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 2147.9024742263764,
      "hbm_ctas": 128,
      "hbm_stages": 5,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 2,
      "m_host": 0,
      "time_us": 41.98399931192398
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 514.1485075712314,
      "hbm_ctas": 116,
      "hbm_stages": 5,
      "host_ctas": 8,
      "host_stages": 4,
      "k_splits": 2,
      "m_host": 384,
      "time_us": 175.3920018672943
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 101.49641547779119,
      "hbm_ctas": 64,
      "hbm_stages": 5,
      "host_ctas": 8,
      "host_stages": 5,
      "k_splits": 2,
      "m_host": 2048,
      "time_us": 888.480007648468
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 8,
      "cluster": 1,
      "eb_gbps": 50.89761012135457,
      "hbm_ctas": 0,
      "hbm_stages": 5,
      "host_ctas": 64,
      "host_stages": 5,
      "k_splits": 2,
      "m_host": 4096,
      "time_us": 1771.7440128326416
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 1,
      "eb_gbps": 1168.82954831996,
      "hbm_ctas": 128,
      "hbm_stages": 6,
      "host_ctas": 0,
      "host_stages": 1,
      "k_splits": 1,
      "m_host": 0,
      "time_us": 77.15199887752534
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 502.86368399239456,
      "hbm_ctas": 108,
      "hbm_stages": 6,
      "host_ctas": 12,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 384,
      "time_us": 179.32799458503723
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 100.75611974843842,
      "hbm_ctas": 64,
      "hbm_stages": 6,
      "host_ctas": 32,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 2048,
      "time_us": 895.0080275535583
    },
    {
      "K": 11008,
      "M": 4096,
      "N": 512,
      "cluster": 4,
      "eb_gbps": 50.56971685827171,
      "hbm_ctas": 0,
      "hbm_stages": 6,
      "host_ctas": 16,
      "host_stages": 6,
      "k_splits": 1,
      "m_host": 4096,
      "time_us": 1783.2319736480713
    }
  ],
  "version": 1,
  "zero_copy": {
    "attention_gbps": 20.270465661598312,
    "gemm": [
      {
        "K": 4096,
        "N": 8,
        "gbps": 26.79313165884276,
        "rows": 128
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 28.895943050390997,
        "rows": 256
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 10.954312604382904,
        "rows": 384
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 29.50743021324772,
        "rows": 512
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 14.40351677597815,
        "rows": 640
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 31.994792555359247,
        "rows": 768
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 17.48559262281641,
        "rows": 896
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 33.19539137551359,
        "rows": 1024
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 21.038093723916212,
        "rows": 1152
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 33.018943544652714,
        "rows": 1280
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 22.901582826950335,
        "rows": 1408
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 34.7210600503633,
        "rows": 1536
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 25.04020678923949,
        "rows": 1664
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 33.51980035180448,
        "rows": 1792
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 24.422140458051892,
        "rows": 1920
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 50.017934615977566,
        "rows": 2048
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 48.749811514682364,
        "rows": 3072
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 50.46568399732644,
        "rows": 4096
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 50.611836127019494,
        "rows": 6144
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 50.51552430903892,
        "rows": 8192
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 50.42604571280898,
        "rows": 12288
      },
      {
        "K": 4096,
        "N": 8,
        "gbps": 48.99086412523144,
        "rows": 16384
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 27.536134896858567,
        "rows": 128
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 29.918283057715854,
        "rows": 256
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 9.775656127344467,
        "rows": 384
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 31.690523557176814,
        "rows": 512
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 13.38234108346371,
        "rows": 640
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 33.585241596677655,
        "rows": 768
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 17.167576691342592,
        "rows": 896
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 40.49494206452015,
        "rows": 1024
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 25.07541794688777,
        "rows": 1152
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 48.90746418763232,
        "rows": 1280
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 28.113875520588472,
        "rows": 1408
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 45.542737562597466,
        "rows": 1536
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 28.868528703103372,
        "rows": 1664
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 45.97404329729606,
        "rows": 1792
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 32.13914326926825,
        "rows": 1920
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 50.734275250189256,
        "rows": 2048
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 46.509670692830866,
        "rows": 3072
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 50.14230845438956,
        "rows": 4096
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 50.56871537767966,
        "rows": 6144
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 50.1171450790926,
        "rows": 8192
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 49.2200639709025,
        "rows": 12288
      },
      {
        "K": 8192,
        "N": 8,
        "gbps": 47.01976387309182,
        "rows": 16384
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 27.594106150450166,
        "rows": 128
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 32.27976980708009,
        "rows": 256
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 10.615122534570638,
        "rows": 384
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 36.37604918668472,
        "rows": 512
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 15.047067815281578,
        "rows": 640
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 35.77292615642051,
        "rows": 768
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 20.07711312721762,
        "rows": 896
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 50.29623842905541,
        "rows": 1024
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 44.39774222441867,
        "rows": 1152
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 45.977269416098515,
        "rows": 1280
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 46.63427883721974,
        "rows": 1408
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 42.250623365024104,
        "rows": 1536
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 42.728723060452964,
        "rows": 1664
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 50.271437258031206,
        "rows": 1792
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 49.13726095183722,
        "rows": 1920
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 50.25285354653436,
        "rows": 2048
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 43.43728190086962,
        "rows": 3072
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 50.25345466720347,
        "rows": 4096
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 49.11938077739002,
        "rows": 6144
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 49.64525211811929,
        "rows": 8192
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 48.70867730265539,
        "rows": 12288
      },
      {
        "K": 16384,
        "N": 8,
        "gbps": 50.05255571431943,
        "rows": 16384
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 7.674004831935423,
        "rows": 128
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 9.28666578566885,
        "rows": 256
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 11.498888575245994,
        "rows": 384
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 5.816632706993119,
        "rows": 512
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 22.64860339198387,
        "rows": 640
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 6.312464040290452,
        "rows": 768
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 24.464164653170638,
        "rows": 896
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 6.308362622814591,
        "rows": 1024
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 6.898365058401776,
        "rows": 1152
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.376024593371483,
        "rows": 1280
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 16.024184617715218,
        "rows": 1408
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.482254703618883,
        "rows": 1536
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 23.01620883458256,
        "rows": 1664
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.295684635250753,
        "rows": 1792
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 25.03030017889817,
        "rows": 1920
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.409771035490868,
        "rows": 2048
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.472158988864008,
        "rows": 3072
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 12.610504122305974,
        "rows": 4096
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 25.234057505056768,
        "rows": 6144
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 25.016724630400006,
        "rows": 8192
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 25.48386313493108,
        "rows": 12288
      },
      {
        "K": 4096,
        "N": 512,
        "gbps": 25.140432894277986,
        "rows": 16384
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 5.363450506226234,
        "rows": 128
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 6.144384182155734,
        "rows": 256
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 23.9269794778079,
        "rows": 384
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 6.185851015612674,
        "rows": 512
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 18.12389397141293,
        "rows": 640
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 12.047427715170466,
        "rows": 768
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 24.872695981126324,
        "rows": 896
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 6.2463573001144646,
        "rows": 1024
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 24.963981959570816,
        "rows": 1152
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 9.771283751822237,
        "rows": 1280
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 16.50554076701233,
        "rows": 1408
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 12.609139303401877,
        "rows": 1536
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 5.165727686825085,
        "rows": 1664
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 25.42266452712701,
        "rows": 1792
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 24.726833659382756,
        "rows": 1920
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 12.555090152698456,
        "rows": 2048
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 12.742550704045403,
        "rows": 3072
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 12.800859526143999,
        "rows": 4096
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 24.887482959826826,
        "rows": 6144
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 25.434514959142664,
        "rows": 8192
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 25.50845421796506,
        "rows": 12288
      },
      {
        "K": 8192,
        "N": 512,
        "gbps": 24.913450300121447,
        "rows": 16384
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 5.598974819334082,
        "rows": 128
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 6.318550054787844,
        "rows": 256
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.159941102520541,
        "rows": 384
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.422708731564251,
        "rows": 512
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.649295480388083,
        "rows": 640
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.669266092043012,
        "rows": 768
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.638318906138917,
        "rows": 896
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 16.72423384676578,
        "rows": 1024
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 6.526009678766333,
        "rows": 1152
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.286694356425887,
        "rows": 1280
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 17.917360068036214,
        "rows": 1408
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 11.980895634496651,
        "rows": 1536
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 49.14869098581802,
        "rows": 1664
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.604288969788778,
        "rows": 1792
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 18.097868232908073,
        "rows": 1920
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.325168546257297,
        "rows": 2048
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.452410165266624,
        "rows": 3072
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 12.675557520158453,
        "rows": 4096
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 25.198480822712913,
        "rows": 6144
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 25.147667608752204,
        "rows": 8192
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 23.72245619093912,
        "rows": 12288
      },
      {
        "K": 16384,
        "N": 512,
        "gbps": 24.349177020729353,
        "rows": 16384
      }
    ]
  }
}
)json";
}

}  // namespace dak
