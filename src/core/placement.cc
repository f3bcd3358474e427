#include "core/placement.h"

#include <fmt/format.h>

#include "core/error.h"

namespace dak {

const WeightSplit* Placement::find(const std::string& first_tensor) const {
  for (const WeightSplit& s : weights) {
    if (!s.tensors.empty() && s.tensors.front().name == first_tensor) return &s;
  }
  return nullptr;
}

const WeightSplit* Placement::split_of(const std::vector<TensorPart>& parts, const std::string& where) const {
  if (parts.empty()) return nullptr;
  const WeightSplit* s = find(parts.front().name);
  if (!s) return nullptr;
  if (s->tensors != parts) {
    std::string want, got;
    for (const TensorPart& p : parts) want += fmt::format(" {}[{}]", p.name, p.rows);
    for (const TensorPart& p : s->tensors) got += fmt::format(" {}[{}]", p.name, p.rows);
    fail(fmt::format("the plan's operator '{}' splits{}, the model's weight group is{}", s->op, got, want), where,
         "make the plan for this model (dak plan --model <this model> ...)");
  }
  return s;
}

int64_t Placement::host_weight_bytes() const {
  int64_t total = 0;
  for (const WeightSplit& s : weights) total += s.host_rows * s.cols * 2;
  return total;
}

bool Placement::all_in_hbm() const {
  for (const WeightSplit& s : weights) {
    if (s.host_rows > 0) return false;
  }
  for (int64_t n : kv_host_seqs) {
    if (n > 0) return false;
  }
  return true;
}

Placement placement_from_plan(const Plan& plan, const ModelConfig& config, const std::string& where) {
  const std::string arch = arch_name(config.arch);
  if (plan.inputs.arch != arch) {
    fail(fmt::format("the plan is for a {} model ('{}'), this model is {}", plan.inputs.arch, plan.inputs.model, arch),
         where, "make the plan for this model (dak plan --model <this model> ...)");
  }
  if (plan.inputs.batch <= 0 || plan.inputs.max_context <= 0) {
    fail(fmt::format("the plan has batch {} and max_context {}", plan.inputs.batch, plan.inputs.max_context), where,
         "make the plan with dak plan");
  }
  Placement p;
  p.batch = plan.inputs.batch;
  p.max_context = plan.inputs.max_context;
  p.kv_host_seqs.assign(size_t(config.num_layers), 0);
  std::vector<bool> kv_seen(size_t(config.num_layers), false);
  for (const PlanOp& op : plan.ops) {
    if (op.host_rows < 0 || op.host_rows > op.split_rows) {
      fail(fmt::format("operator '{}' puts {} of its {} rows on the host", op.name, op.host_rows, op.split_rows),
           where, "make the plan with dak plan");
    }
    if (op.kind == OpKind::kAttention) {
      if (op.layer < 0 || op.layer >= config.num_layers || kv_seen[size_t(op.layer)]) {
        fail(fmt::format("attention operator '{}' has layer {} (the model has {} layers, one attention each)", op.name,
                         op.layer, config.num_layers),
             where, "make the plan for this model (dak plan --model <this model> ...)");
      }
      if (op.split_rows != p.batch) {
        fail(fmt::format("attention operator '{}' splits {} sequences, the plan's batch is {}", op.name, op.split_rows,
                         p.batch),
             where, "make the plan with dak plan");
      }
      kv_seen[size_t(op.layer)] = true;
      p.kv_host_seqs[size_t(op.layer)] = op.host_rows;
      continue;
    }
    if (op.tensors.empty()) continue;  // norms, and the tied side of an embedding
    int64_t rows = 0;
    for (const TensorPart& t : op.tensors) rows += t.rows;
    if (rows != op.split_rows || op.k <= 0) {
      fail(fmt::format("operator '{}' covers {} tensor rows but splits {} rows of width {}", op.name, rows,
                       op.split_rows, op.k),
           where, "make the plan with dak plan");
    }
    p.weights.push_back(WeightSplit{op.name, op.tensors, op.host_rows, op.k,
                                    op.kind == OpKind::kLinear && op.host_rows > 0 && op.path == DataPath::kStaged});
  }
  for (int64_t l = 0; l < config.num_layers; ++l) {
    if (!kv_seen[size_t(l)]) {
      fail(fmt::format("the plan has no attention operator for layer {} (the model has {} layers)", l,
                       config.num_layers),
           where, "make the plan for this model (dak plan --model <this model> ...)");
    }
  }
  return p;
}

}  // namespace dak
