// Capacity: what a run needs in HBM against the HBM budget, and how much must therefore live
// in pinned host memory (DESIGN.md §2, "Capacity gives the global constraint").
//
//   M = weights (bf16, every tensor once; tied embeddings once) + KV (B × (prompt + gen) positions
//       × layers × 2 × Hkv × D × 2 bytes) + workspace (activations of the largest step + fp32 logits)
//   H = the HBM budget (--gpu-memory; default: the profile's free HBM after context minus its reserve)
//   required host bytes = max(0, M − H)
//   R = required host bytes / (splittable weight bytes + KV bytes): the global offload ratio, the
//       fraction of the bytes that can move that must live on the host. Norm weights, biases and
//       the workspace always stay in HBM.
// Workspace tokens: prefill runs in chunks of at most kPrefillChunkTokens tokens (or one whole
// prompt of each sequence if that is more), decode steps use B tokens.
#pragma once

#include <cstdint>

#include "core/hardware_profile.h"
#include "core/op_graph.h"
#include "core/shape_terms.h"

namespace dak {

struct Capacity {
  static constexpr int64_t kPrefillChunkTokens = 8192;

  int64_t weight_bytes = 0;             // all weights, fixed ones included
  int64_t splittable_weight_bytes = 0;  // weights that may move to the host
  int64_t kv_bytes = 0;                 // KV cache at the maximum context
  int64_t workspace_bytes = 0;          // activations + logits
  int64_t total_bytes = 0;              // M
  int64_t hbm_budget_bytes = 0;         // H
  int64_t required_host_bytes = 0;      // max(0, M − H)
  double global_ratio = 0;              // R

  bool operator==(const Capacity&) const = default;
};

/// Bytes of activations and logits the engine keeps in HBM for `graph`'s model and step shape.
int64_t workspace_bytes(const OpGraph& graph);

/// Capacity of `graph`'s model and shape against `hbm_budget_bytes`. Throws dak::Error if the
/// budget is not positive.
Capacity compute_capacity(const OpGraph& graph, int64_t hbm_budget_bytes);

/// Refuses budgets that cannot work, with a message saying what is needed: throws dak::Error if
/// the budget cannot hold what never moves (norms, biases, workspace; checked only when
/// `budget_binding`), or if `host_bytes` exceed the profile's pinnable host memory. `terms`: how the
/// calling command names the step shape, in the fixes that say to shrink it.
void check_capacity(const Capacity& cap, int64_t host_bytes, bool budget_binding, const HardwareProfile& profile,
                    const ShapeTerms& terms = {});

}  // namespace dak
