// Placement: what the engine does with a plan (DESIGN.md §5; the end-to-end offload issue):
// which rows of each splittable weight and which sequences of each layer's KV cache live in the
// pinned host tier, resolved from a Plan's operators and checked against the model.
//
// A plan operator splits the row-wise concatenation of its `tensors` (HF names, rows each) along
// its split axis; its first `host_rows` rows go to the host tier:
//   weights   — the engine's fused matrices concatenate the same tensors in the same order
//               (qkv = q, k, v; gate_up = gate, up), so the fused matrix's rows [0, host_rows)
//               are the host part; lookup is by the HF tensor names, never by operator names;
//   KV cache  — tensor "kv_cache.layers.L" with rows = batch: sequences [0, host_rows) of layer L
//               keep K and V in host memory (the tiered attention kernel's batch split).
// Biases and norm weights always stay in HBM. Tied embeddings: the table is split once, by the
// operator that holds it (the other op has `tied_to` set and no tensors).
// Paths: a linear the plan marks staged has its host rows copied by the copy engine into an HBM
// staging ring ahead of its GEMM (WeightSplit::staged); every other host byte is read in place
// (direct). Embedding gathers and the KV cache are always read in place: a staged embedding or
// attention operator is applied as direct (the engine has no KV prefetch yet).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/op_graph.h"
#include "core/plan.h"

namespace dak {

/// The host share of one splittable weight group (one plan operator).
struct WeightSplit {
  std::string op;                  // plan operator name, for messages ("layers.3.qkv_proj")
  std::vector<TensorPart> tensors; // concatenated along the split axis, in this order
  int64_t host_rows = 0;           // leading rows of the concatenation in the host tier
  int64_t cols = 0;                // elements per row (the operator's k, or the table width)
  bool staged = false;             // the plan reads the host rows through the copy engine (staged
                                   //   path: copied into an HBM ring ahead of use), not in place
};

struct Placement {
  std::vector<WeightSplit> weights;   // every splittable weight operator of the plan (host_rows may be 0)
  std::vector<int64_t> kv_host_seqs;  // [num_layers] sequences [0, n) of layer l with KV in the host tier
  int64_t batch = 0;                  // the batch and KV capacity per sequence the plan was made for
  int64_t max_context = 0;

  /// The split whose first tensor is `first_tensor` (HF name), or null. The caller checks that the
  /// rest of its tensors match the engine's group (match_group).
  const WeightSplit* find(const std::string& first_tensor) const;
  /// The split of the weight group made of `parts` (HF names and rows, in the engine's order):
  /// null when the plan has no operator for it. Throws dak::Error (naming `where`) when the plan's
  /// operator for that first tensor concatenates other tensors or rows (a plan for another model).
  const WeightSplit* split_of(const std::vector<TensorPart>& parts, const std::string& where) const;
  /// Bytes of bf16 weights the plan puts in the host tier: Σ host_rows × cols × 2.
  int64_t host_weight_bytes() const;
  /// True when nothing is on the host.
  bool all_in_hbm() const;
};

/// Resolves `plan` for `config`: every operator with tensors becomes a WeightSplit, every
/// attention operator a layer's kv_host_seqs. Throws dak::Error (where = the plan's source) when
/// the plan was made for another model (architecture, layer count, tensor names or rows), or when a
/// host row count lies outside [0, split rows].
Placement placement_from_plan(const Plan& plan, const ModelConfig& config, const std::string& where);

}  // namespace dak
