// HardwareProfile: the measured constants of one GPU + host link that the cost model uses
// (DESIGN.md §1-2). Never datasheet numbers: every value comes from a measurement, named in
// the profile's "sources" map. Three profiles are compiled in, each the text of its file under profiles/
// embedded at build time (src/core/hardware_profile_builtin.cc.in): h200-default, and h100-default and
// h100-fast-link (measured by
// `dak profile` on two H100 80GB HBM3 machines whose hosts' links differ: SM reads of pinned memory
// at 34.7 and 51.3 GB/s). Without --profile (a file or a compiled-in name) dak plan, generate and
// bench take the compiled-in profile of the machine's GPU (all_for_device; on an H100 80GB HBM3 the
// one whose link is nearest to this host's, measured at start: nearest_host_link, sessions 37-38):
// h200-default with a notice where none matches, and silently without a GPU. `dak profile` measures and writes
// the same format.
//
// File format, JSON, "format": "dak.hardware_profile", "version": 1 (all fields required
// unless marked optional; unknown fields are ignored so later versions may add fields, and listed
// in HardwareProfile::unknown_fields, which the CLI prints as a notice: a typo there would
// otherwise silently leave an optional field at its default):
//
// {
//   "format": "dak.hardware_profile", "version": 1,
//   "name": "h200-default",                 // free text, copied into plans
//   "device": "NVIDIA H200 ...",            // free text
//   "sm_count": 132,                        // SMs (CTAs of one wave, one CTA per SM)
//   "hbm": {
//     "capacity_bytes": N,                  // cudaMemGetInfo total
//     "free_after_context_bytes": N,        // cudaMemGetInfo free once a context exists
//     "reserve_bytes": N,                   // kept free by the planner (cuBLAS workspace, graphs, allocator slack)
//     "read_gbps": 4623.0                   // B_g: best streaming HBM read (TMA bulk), GB/s = 1e9 B/s
//   },
//   "host_link": {
//     "sm_read_gbps": 51.4,                 // B_h direct: SMs reading pinned host memory by TMA
//     "copy_engine_gbps": 55.5,             // B_h staged: copy-engine H2D into HBM
//     "shared_total_gbps": 53.2,            // both at once: total over the link (not the sum)
//     "latency_us": 2.31,                   // one stage's round trip: host bandwidth of f bytes in
//                                           //   flight is min(sm_read_gbps, f / latency)
//     "inflight_cap_bytes": 262144,         // congestion cap: host bytes in flight GPU-wide above
//                                           //   which HBM reads slow down (contention curve)
//     "stage_bytes": 32768,                 // bytes per TMA stage of a host CTA
//     "max_stages_per_cta": 6,              // SMEM ring depth limit of a host CTA
//     "max_multicast_cluster": 4,           // CTAs fed by one multicast host read
//     "cluster4_ctas": 120,                 // optional (absent: sm_count), a multiple of 4: CTAs of a launch in
//                                           //   clusters of 4 that can be resident at once (a cluster needs 4 free SMs of a GPC)
//     "loaded_latency_us": 3.9,             // optional (absent: latency_us, the model of the 64-row tiles):
//                                           //   on the compute path (N > 64) a host read stream (one per
//                                           //   multicast cluster) with f bytes of W in flight moves f / this,
//                                           //   while the HBM side runs compute-bound tiles
//     "loaded_start_us": 15,                // with loaded_latency_us (both or neither): what such a launch's
//                                           //   host reads lose at its start
//     "hbm_slowdown_during_copy": 0.073     // fraction of HBM read bandwidth lost while the copy engine streams H2D
//   },
//   "contention": [                         // HBM read bandwidth while host CTAs stream (probe points)
//     {"host_ctas": 0, "stages_per_cta": 2, "stage_bytes": 32768, "hbm_ctas": 100, "hbm_gbps": 4517}, ...
//   ],                                      // host_ctas 0 rows are the baseline per stages_per_cta
//   "compute": {
//     "kernel_overhead_us": 1.97,           // fixed cost per kernel replayed in a CUDA graph
//     "step_kernel_overhead_us": 4.3,       // optional (absent: kernel_overhead_us), (0, 1000]: fixed
//                                           //   cost per kernel of a step (decode or prefill), each
//                                           //   kernel waiting for the one before (the cost model's
//                                           //   charge per kernel); kernel_overhead_us <= 1000 too
//     "tiered_step_kernel_overhead_us": 2.5, // optional (absent: step_kernel_overhead_us), (0, 1000]:
//                                           //   the same charge in a decode step of at most
//                                           //   kTieredDecodeMaxTokens tokens, whose linears run on the
//                                           //   tiered GEMM and every kernel overlaps its predecessor's
//                                           //   tail (programmatic dependent launch)
//     "linear_hbm_fraction": 0.917,         // optional (absent: 1), [0.05, 1]: fraction of read_gbps
//                                           //   at which a memory-bound linear streams its HBM bytes
//     "multicast_round_factor": 1.25,       // optional (absent: 1), [1, 4]: a compute-path tiered GEMM
//                                           //   launched in multicast clusters (host rows, N > 64) runs
//                                           //   each round of units this much slower than unclustered
//     "mma_min_rows": 64,                   // tensor-core tile rows: attention with g < 64 query rows
//                                           //   per KV head runs at g/64 of the rate
//     "tensor_tflops": [                    // dense bf16 rate by tokens N of the GEMM (shape class);
//       {"max_tokens": 256, "tflops": 717.2}, ...  // first class with N <= max_tokens; max_tokens 0 = no limit
//     ]
//   },
//   "host_memory": {"pinnable_bytes": N, "pin_gib_per_s": 2.86},
//   "tiered_gemm": [                        // optional (absent = none): launch parameters `dak profile`
//     {"M": 12288, "N": 8, "K": 4096,       //   found best for y[N, M] = x[N, K] W[M, K]^T with rows
//      "m_host": 1229,                      //   [0, m_host) of W in host memory (core/tiered_gemm_schedule.h);
//      "host_ctas": 8, "host_stages": 2,    //   host CTAs and TMA stages in flight per host CTA,
//      "hbm_ctas": 124, "hbm_stages": 16,   //   HBM CTAs and their stages,
//      "k_splits": 4,                       //   the schedule's K split (fixed by M, N, K, SM count),
//      "time_us": 312.5, "eb_gbps": 322.1,  // median GEMM time and weight bytes (M K 2) / time,
//      "cluster": 1,                        //   CTAs per multicast cluster (1, 2, 4; optional, 1),
//      "k_chunks": 1}, ...                  //   accumulation chunks (k_splits 1 only; optional, 1)
//   ],                                      // one entry per (M, N, K, m_host); added in place of a
//                                           //   version bump: older readers ignore the field
//   "zero_copy": {                          // optional (absent: zero-copy priced at sm_read_gbps): the
//                                           //   ordinary kernels reading pinned mapped host memory in place
//                                           //   (the zero-copy offload mode, the vLLM UVA approach)
//     "gemm": [                             // cuBLASLt y[N, rows] = x[N, K] W[rows, K]^T with W in host
//       {"N": 8, "K": 4096, "rows": 1024, "gbps": 38.3}, ...  // memory: host bytes rows K 2 / time
//     ],
//     "attention_gbps": 29.5                // attention_decode with every sequence's K/V in host memory:
//   },                                      //   KV bytes / time
//   "sources": {"hbm.read_gbps": "<log file>: <line>", ...}   // optional: where each value came from
// }
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dak {

/// Decode steps of at most this many tokens run their linears on the tiered GEMM under --gemm auto
/// (gpu_engine.h, kAutoTieredMaxTokens, which must equal it), so every kernel of the step takes part
/// in programmatic dependent launch; above it cuBLASLt's kernels break that chain.
inline constexpr int64_t kTieredDecodeMaxTokens = 32;

/// HBM read bandwidth measured while `host_ctas` CTAs each keep `stages_per_cta` stages of
/// `stage_bytes` in flight from host memory and `hbm_ctas` CTAs stream HBM.
struct ContentionPoint {
  int64_t host_ctas = 0;
  int64_t stages_per_cta = 0;
  int64_t stage_bytes = 0;
  int64_t hbm_ctas = 0;
  double hbm_gbps = 0;
  int64_t inflight_bytes() const { return host_ctas * stages_per_cta * stage_bytes; }
  bool operator==(const ContentionPoint&) const = default;
};

/// Dense bf16 tensor-core rate for GEMMs with at most `max_tokens` tokens (0: no limit).
struct TensorRateClass {
  int64_t max_tokens = 0;
  double tflops = 0;
  bool operator==(const TensorRateClass&) const = default;
};

/// The launch parameters `dak profile` measured fastest for one tiered GEMM (the "SplitK GEMM"):
/// y[N, M] = x[N, K] . W[M, K]^T with rows [0, m_host) of W in pinned host memory. The fields mirror
/// core/tiered_gemm_schedule.h's TieredGemmSchedule (tile and k_splits come from the shape).
struct TieredGemmTuning {
  int64_t M = 0, N = 0, K = 0;
  int64_t m_host = 0;       // in [0, M]
  int64_t host_ctas = 0;    // >= 1 when m_host > 0
  int64_t host_stages = 1;  // TMA stages in flight per host CTA, >= 1
  int64_t hbm_ctas = 0;     // >= 1 when m_host < M
  int64_t hbm_stages = 1;   // >= 1
  int64_t k_splits = 1;     // >= 1
  double time_us = 0;       // median GEMM time, > 0
  double eb_gbps = 0;       // effective bandwidth: M * K * 2 bytes / time, GB/s, > 0
  int64_t cluster = 1;      // 1, 2 or 4: CTAs per multicast cluster (optional in the JSON, default 1)
  int64_t k_chunks = 1;     // >= 1: the HBM units' accumulation chunks, the host units' split
                            //   (TieredGemmSchedule::k_chunks; optional in the JSON, default 1)
  bool operator==(const TieredGemmTuning&) const = default;
};

/// One measured zero-copy GEMM: cuBLASLt y[N, rows] = x[N, K] . W[rows, K]^T, bf16, with W in pinned
/// mapped host memory read in place; gbps = rows * K * 2 bytes / median time (GB/s = 1e9 B/s).
struct ZeroCopyGemmPoint {
  int64_t N = 0, K = 0, rows = 0;
  double gbps = 0;
  double host_bytes() const { return double(rows) * double(K) * 2.0; }
  bool operator==(const ZeroCopyGemmPoint&) const = default;
};

struct HardwareProfile {
  static constexpr int kVersion = 1;
  static constexpr const char* kFormat = "dak.hardware_profile";

  std::string name;
  std::string device;
  int64_t sm_count = 0;

  int64_t hbm_capacity_bytes = 0;
  int64_t hbm_free_after_context_bytes = 0;
  int64_t hbm_reserve_bytes = 0;
  double hbm_read_gbps = 0;  // B_g

  double host_sm_read_gbps = 0;       // B_h, direct path
  double host_copy_engine_gbps = 0;   // B_h, staged path
  double host_shared_total_gbps = 0;  // both paths at once
  double host_latency_us = 0;
  int64_t host_inflight_cap_bytes = 0;
  int64_t host_stage_bytes = 0;
  int64_t max_stages_per_cta = 0;
  int64_t max_multicast_cluster = 1;
  double hbm_slowdown_during_copy = 0;
  // Optional (0: not given). The host side of a compute-path tiered GEMM (N > 64, 128-row tiles)
  // while its HBM side runs compute-bound tiles: one read stream (a multicast cluster, or a CTA)
  // with f bytes of W in flight moves f / host_loaded_latency_us, and the launch's host reads start
  // host_loaded_start_us late. 0 prices those reads like the bandwidth path's (host_latency_us).
  double host_loaded_latency_us = 0;
  double host_loaded_start_us = 0;
  int64_t cluster4_ctas = 0;  // optional: CTAs co-resident in clusters of 4 (0: every SM)

  std::vector<ContentionPoint> contention;

  double kernel_overhead_us = 0;
  double step_kernel_overhead_us = 0;  // per kernel of a decode step's dependent chain; 0: not given
  double tiered_step_kernel_overhead_us = 0;  // the same in a decode step of <= kTieredDecodeMaxTokens; 0: not given
  double linear_hbm_fraction = 1.0;    // (0, 1]: linear layers' HBM streaming rate / hbm_read_gbps
  double multicast_round_factor = 1.0;  // [1, 4]: a compute-path launch in multicast clusters runs its rounds this much slower
  int64_t mma_min_rows = 1;
  std::vector<TensorRateClass> tensor_tflops;  // sorted by max_tokens, the unlimited class last

  int64_t pinnable_host_bytes = 0;
  double pin_gib_per_s = 0;

  std::vector<TieredGemmTuning> tiered_gemm;  // optional section; at most one entry per (M, N, K, m_host)

  std::vector<ZeroCopyGemmPoint> zero_copy_gemm;  // optional section; at most one point per (N, K, rows)
  double zero_copy_attention_gbps = 0;            // 0: not measured

  std::map<std::string, std::string> sources;

  /// Fields of the document this reader does not know (dotted paths, e.g. "compute.linear_hbm_fractoin",
  /// "contention[3].foo"; "sources" entries are free-form and never listed). Ignored; not written.
  std::vector<std::string> unknown_fields;

  bool operator==(const HardwareProfile&) const = default;

  /// Parses and validates a profile document; `where` names it in errors. Throws dak::Error for a
  /// wrong format/version, a missing field, a non-positive quantity, or an invalid tiered_gemm entry
  /// (negative counts, m_host outside [0, M], a side with rows but no CTA, more CTAs than SMs, a
  /// duplicate shape).
  static HardwareProfile from_json(const nlohmann::json& j, const std::string& where);
  /// Refuses (dak::Error at `where`) a profile name that is not 1 to 64 ASCII letters, digits, '-',
  /// '_', '.' or '+': names are printed in plan headers and messages and recorded in plans.
  static void check_name(const std::string& name, const std::string& where);
  /// Reads a profile file. Throws dak::Error (unreadable file, bad JSON, invalid profile).
  static HardwareProfile load(const std::filesystem::path& path);
  /// The profile of our H200 compiled into the binary (profiles/h200-default.json, embedded at build time).
  static HardwareProfile h200_default();
  /// The compiled-in JSON text of h200_default() (generated: src/core/hardware_profile_builtin.cc.in).
  static const char* h200_default_json();
  /// The profile of the NVIDIA H100 80GB HBM3 (SXM, 132 SMs) of our device machine, measured by
  /// `dak profile` (profiles/h100-default.json, embedded at build time). Its B_h on the SM path is
  /// 34.7 GB/s against the copy engine's 55.2 (the H200's: 51.4 / 55.5), so plans for it stage
  /// more host bytes by the copy engine (docs/perf-notes.md session 33).
  static HardwareProfile h100_default();
  /// The compiled-in JSON text of h100_default().
  static const char* h100_default_json();
  /// The same GPU kind as h100_default() on a host whose SMs read pinned memory at 51.3 GB/s (copy
  /// engine 53.7 GB/s), measured by `dak profile` on a second machine of our device pool
  /// (profiles/h100-fast-link.json, embedded at build time; docs/perf-notes.md sessions 33 and 37). Of the H100
  /// machines we were lent, most read at ~51 GB/s and some at ~35.
  static HardwareProfile h100_fast_link();
  /// The compiled-in JSON text of h100_fast_link().
  static const char* h100_fast_link_json();
  /// Names of the compiled-in profiles, which --profile takes in place of a file path:
  /// {"h200-default", "h100-default", "h100-fast-link"}.
  static const std::vector<std::string>& builtin_names();
  /// builtin_names() joined for messages: "h200-default, h100-default, h100-fast-link".
  static std::string builtin_name_list();
  /// Whether `name` is one of builtin_names().
  static bool is_builtin(const std::string& name);
  /// The compiled-in profile named `name` (one of builtin_names()), or nullopt.
  static std::optional<HardwareProfile> builtin(const std::string& name);
  /// The compiled-in profile measured on a GPU of this kind, or nullopt where none was: `device_name`
  /// as cudaGetDeviceProperties gives it, `sm_count` its SMs, `hbm_bytes` its total memory (bytes).
  /// H100 80GB HBM3 with 132 SMs -> h100-default; an H200 (any name containing "H200") with 132 SMs
  /// -> h200-default. Other GPUs (H100 PCIe or NVL, GH200, ...) differ in HBM or host link, so
  /// neither profile describes them: measure one with `dak profile`.
  static std::optional<HardwareProfile> for_device(const std::string& device_name, int64_t sm_count,
                                                   uint64_t hbm_bytes);
  /// Every compiled-in profile measured on a GPU of this kind (arguments as for_device), in
  /// builtin_names() order; for_device() is the first. More than one where our machines with this
  /// GPU had different host links: {h100-default, h100-fast-link} for the H100 80GB HBM3, of which
  /// a GPU run without --profile takes the one nearest to the link it measures (nearest_host_link()).
  /// Empty where none was measured on this GPU.
  static std::vector<HardwareProfile> all_for_device(const std::string& device_name, int64_t sm_count,
                                                     uint64_t hbm_bytes);
  /// The profile of `candidates` whose SM-path host read rate (host_sm_read_gbps, GB/s) is nearest
  /// to `measured_sm_read_gbps`, the rate this host's SMs read pinned memory at (TMA bulk copies,
  /// as `dak bench` measures B_h), by ratio (|log(measured / profile)|); the first on a tie, and the
  /// first where the measurement is not a positive finite number. Throws dak::Error when
  /// `candidates` is empty.
  static const HardwareProfile& nearest_host_link(const std::vector<HardwareProfile>& candidates,
                                                  double measured_sm_read_gbps);

  nlohmann::json to_json() const;

  /// Dense bf16 rate (TFLOP/s, all SMs) for a GEMM over `tokens` tokens.
  double tensor_tflops_for(int64_t tokens) const;
  /// The cost model's charge per kernel of a step, in us: step_kernel_overhead_us, or
  /// kernel_overhead_us where the profile does not give it (profiles before session 7).
  double step_overhead_us() const { return step_kernel_overhead_us > 0 ? step_kernel_overhead_us : kernel_overhead_us; }
  /// The profile a step of `tokens` tokens is priced with: a decode step of at most
  /// kTieredDecodeMaxTokens takes tiered_step_kernel_overhead_us (when given) as its per-kernel
  /// charge; anything else this profile as it is.
  HardwareProfile for_step(bool decode, int64_t tokens) const;
  /// Fraction of B_g left while `inflight_bytes` of host reads are in flight GPU-wide: 1 up to the
  /// congestion cap, then linear interpolation over the contention points beyond the cap (the
  /// lowest measurement where several share an in-flight size, made non-increasing).
  double hbm_factor(int64_t inflight_bytes) const;
  /// Host bandwidth (GB/s) of the direct path with `inflight_bytes` in flight.
  double host_direct_gbps(int64_t inflight_bytes) const;
  /// Host read rate (GB/s) of the ordinary GEMM reading a [rows, K] W in place (zero-copy) at N
  /// tokens: the zero_copy_gemm points of the largest measured N <= `tokens` (the smallest measured N
  /// when every one is larger); for each measured K of that N, linear in log(rows) between its points
  /// (clamped at the ends), then linear in log(K) between the two measured K around K (clamped).
  /// Rows and K both matter: cuBLASLt's CTA count follows the rows (each CTA's reads are latency-bound
  /// over PCIe), its per-CTA work the K. sm_read_gbps when the profile has no points.
  double zero_copy_gemm_rate_gbps(int64_t tokens, int64_t K, int64_t rows) const;
  /// Host read rate (GB/s) of the ordinary decode attention reading K/V in place: attention_gbps, or
  /// sm_read_gbps when not measured.
  double zero_copy_attention_rate_gbps() const {
    return zero_copy_attention_gbps > 0 ? zero_copy_attention_gbps : host_sm_read_gbps;
  }
  /// The tiered_gemm entry for exactly this shape and host row count, or null when none was measured.
  const TieredGemmTuning* find_tiered_gemm(int64_t M, int64_t N, int64_t K, int64_t m_host) const;
  /// Default HBM budget when none is given: free after context minus the reserve.
  int64_t default_hbm_budget_bytes() const { return hbm_free_after_context_bytes - hbm_reserve_bytes; }
};

}  // namespace dak
