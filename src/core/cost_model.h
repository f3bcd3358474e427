// CostModel: predicted time of one operator for a given host split and data path (DESIGN.md §2).
//
// For operator i with step bytes C_i, a fraction x_i = host rows / split rows on the host:
//
//   direct path (SMs read host tiles by TMA):
//     T_i = max(T_comp, ((1 − x)·C + F + A) / (η·B_g·φ(f)), x·C / B_h(f)) + k·t_step
//     T_comp = max(ceil(I_h / n_h)·t_item, ceil(I_g / n_g)·t_item)      (host rows only on host CTAs)
//     compute-path linears (N > 64: the 128-row tiles) where the profile has the loaded-link terms
//     (host_link.loaded_latency_us): priced as the engine launches them (plan_tiered_gemm with the
//     profile's in-flight cap, multicast cluster limit and cluster4_ctas):
//       T_i = max(T_all, R_g·t_r, t_0 + Σ_rounds max(t_r, U / min(f_s / L, B_h / a))) + k·t_step
//     R_g = ceil(HBM units / HBM clusters) rounds of t_r = tiered_gemm_round_cost(K, tile, S) 128 x 128
//     k-blocks at this N's per-SM rate (x multicast_round_factor in clusters), T_all the all-HBM
//     compute above; the host units go to the host clusters a round at a time, a of them at once,
//     each a stream of U = n_groups·x·C / units bytes (host memory is not cached in L2: each
//     n-group reads its tiles again) with f_s bytes of W in flight over the loaded latency L, the
//     streams sharing B_h; t_0 = loaded_start_us (docs/planner.md §2, fitted on the H200).
//   staged path (copy engine streams host bytes through a small HBM ring while the op runs):
//     T_i = max(T_comp(all SMs), (C + x·C + F + A) / (η·B_g·(1 − s_copy)), x·C / B_ce)
//           + min(x·C, chunk) / B_ce + k·t_step + t_launch
//   zero-copy path (the ordinary kernels read host bytes in place through mapped pointers: the
//   engine's --offload zero-copy, the vLLM UVA approach):
//     linear: one cuBLASLt GEMM per tier, one after the other:
//       T_i = max(T_comp(host rows, all SMs), x·C / B_zc(N, K, host rows))
//           + max(T_comp(HBM rows, all SMs), ((1 − x)·C + F + A) / (η·B_g)) + (k + 1)·t_step
//       (k·t_step when every row is on the host: one GEMM)
//     other operators (attention, embedding; one kernel reads both tiers):
//       T_i = max(T_comp(all SMs), ((1 − x)·C + F + A) / B_g, x·C / B_za) + k·t_step
//     B_zc and B_za: the profile's measured zero-copy GEMM and attention rates
//     (HardwareProfile::zero_copy_gemm_rate_gbps, zero_copy_attention_rate_gbps)
//   no host bytes: T_i = max(T_comp(all SMs), (C + F + A) / (η·B_g)) + k·t_step
//
// with F the HBM-only weight bytes (norms, biases), A the activation bytes, k the operator's kernel
// count, t_step the profile's step_kernel_overhead_us (a kernel of the decode step's dependent
// chain; the Planner passes a profile whose value is tiered_step_kernel_overhead_us for decode steps
// of at most kTieredDecodeMaxTokens, HardwareProfile::for_step), t_launch its kernel_overhead_us (the staged path's copy node, off that chain), η the
// profile's linear_hbm_fraction for linear layers (1 for the other operators). Compute: I work
// items (tile rows × N tiles for a linear, sequences × kv heads for attention), t_item = FLOPs per
// item / r, r the per-SM bf16 rate of the profile's shape class (tokens N; attention with
// g < mma_min_rows query rows per KV head at g / mma_min_rows of it). Host CTAs: n_h of the SMs, chosen to minimize T_i; each keeps
// `stages` TMA stages in flight, as many as fit under the congestion cap; CTAs of a linear that
// share a host tile form a multicast cluster of the kernel's size for that N
// (tiered_gemm_multicast_cluster: 2 or 4 from 2 n-tiles of the compute tile, 2 where few host m-tiles leave the link
// idle, capped by max_multicast_cluster; host CTAs
// in whole clusters), so one host read feeds them all. f = host bytes in flight GPU-wide;
// B_h(f) = min(B_h, f / latency); φ(f) = the contention curve (1 up to the cap).
// Units: seconds, bytes, GB/s = 1e9 B/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/hardware_profile.h"
#include "core/op_graph.h"

namespace dak {

enum class DataPath : uint8_t { kNone, kDirect, kStaged, kZeroCopy };
enum class Bound : uint8_t { kHbm, kHostLink, kCompute };

/// "none", "direct", "staged", "zero_copy".
std::string data_path_name(DataPath p);
DataPath parse_data_path(const std::string& s, const std::string& where);
/// "hbm", "host_link", "compute".
std::string bound_name(Bound b);
Bound parse_bound(const std::string& s, const std::string& where);

/// Planner-side constants of the model (not hardware measurements).
struct CostParams {
  int64_t staging_chunk_bytes = int64_t(2) << 20;  // copy-engine chunk of the staged path's ring
};

struct OpCost {
  double time_s = 0;      // T_i, overheads included
  double compute_s = 0;   // T_comp
  double hbm_s = 0;       // HBM term
  double host_s = 0;      // host-link term (incl. the staged path's ring fill)
  double overhead_s = 0;  // launch overheads
  Bound bound = Bound::kHbm;
  DataPath path = DataPath::kNone;
  int64_t host_ctas = 0;       // direct path: CTAs reading host tiles
  int64_t stages_per_cta = 0;  // direct path: TMA stages in flight per host read stream
  int64_t cluster = 1;         // direct path: CTAs per multicast host read
  int64_t host_inflight_bytes = 0;
  double host_step_bytes = 0;  // bytes crossing the host link this step
};

class CostModel {
 public:
  explicit CostModel(const HardwareProfile& profile, CostParams params = {});

  /// Predicted cost of `op` with its first `host_units` units on the host via `path`.
  /// kNone is used when host_units == 0 (any path given with 0 units yields kNone).
  /// Throws dak::Error if host_units is outside [0, op.units()].
  OpCost cost(const Op& op, int64_t host_units, DataPath path) const;
  /// The cheaper of direct and (if allowed) staged for `host_units` > 0; kNone for 0 (never zero-copy:
  /// that path is priced only for the mode that applies it to every operator).
  OpCost best(const Op& op, int64_t host_units, bool allow_staged) const;

  const HardwareProfile& profile() const { return profile_; }
  const CostParams& params() const { return params_; }

 private:
  struct HostSide {  // host-read configuration for n host CTAs with a given cluster size
    int64_t stages = 0;
    int64_t inflight = 0;
    double link_bps = 0;
    double hbm_bps = 0;
  };
  struct Work {
    double host_bytes = 0, hbm_bytes = 0;  // step bytes crossing the link / read from HBM
    double items_host = 0, items_hbm = 0;  // CTA work items per side
    double t_item = 0;                     // seconds per work item on one SM
    double hbm_fraction = 1;               // η: the profile's linear_hbm_fraction for linears, else 1
  };
  Work work(const Op& op, int64_t host_units) const;
  OpCost direct(const Op& op, const Work& w, int64_t host_units, bool all_host) const;
  OpCost direct_compute_tiles(const Op& op, const Work& w, int64_t host_units) const;
  OpCost staged(const Op& op, const Work& w) const;
  OpCost zero_copy(const Op& op, const Work& w, int64_t host_units) const;
  OpCost finish(OpCost c, int64_t kernels, int64_t copy_nodes = 0) const;

  HardwareProfile profile_;
  CostParams params_;
  std::vector<std::vector<HostSide>> host_side_;  // [cluster][host CTAs]
};

}  // namespace dak
