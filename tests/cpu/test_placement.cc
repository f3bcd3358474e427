// Placement from a plan (core/placement.h): every splittable operator resolved to its weight group
// or layer KV split, host bytes equal to the plan's, plans of another model or with staged
// operators refused, a group whose tensors differ refused.
#include <gtest/gtest.h>

#include "core/config_locator.h"
#include "core/error.h"
#include "core/placement.h"
#include "core/planner.h"
#include "error_test_util.h"

namespace dak {
namespace {

using testing::expect_error;

Plan plan_for(const std::string& model, double ratio, bool staged, int64_t batch = 8) {
  const LocatedConfig lc = locate_model_config(model);
  PlanRequest req;
  req.model_name = lc.name;
  req.shape.batch = batch;
  req.shape.prompt_len = 32;
  req.shape.gen_len = 32;
  req.offload_ratio = ratio;
  req.allow_staged = staged;
  return make_plan(lc.config, HardwareProfile::h200_default(), req);
}

TEST(Placement, ResolvesEveryOperatorAndMatchesThePlansHostBytes) {
  const LocatedConfig lc = locate_model_config("llama-2-7b");
  const Plan plan = plan_for("llama-2-7b", 0.3, /*staged=*/false);
  const Placement p = placement_from_plan(plan, lc.config, "test plan");
  EXPECT_EQ(p.batch, 8);
  EXPECT_EQ(p.max_context, 64);
  ASSERT_EQ(p.kv_host_seqs.size(), size_t(lc.config.num_layers));
  int64_t weight_host = 0, kv_host = 0, kv_seqs = 0, splittable = 0;
  for (const PlanOp& op : plan.ops) {
    if (op.kind == OpKind::kAttention) {
      kv_host += op.host_bytes;
      EXPECT_EQ(p.kv_host_seqs[size_t(op.layer)], op.host_rows) << op.name;
      kv_seqs += op.host_rows;
    } else if (!op.tensors.empty()) {
      ++splittable;
      weight_host += op.host_bytes;
      const WeightSplit* s = p.find(op.tensors.front().name);
      ASSERT_NE(s, nullptr) << op.name;
      EXPECT_EQ(s->host_rows, op.host_rows) << op.name;
      ASSERT_EQ(p.split_of(op.tensors, "test"), s) << op.name;
    }
  }
  // 4 linears per layer, the embedding and the LM head (untied).
  EXPECT_EQ(splittable, 4 * lc.config.num_layers + 2);
  EXPECT_EQ(int64_t(p.weights.size()), splittable);
  EXPECT_GT(weight_host, 0);
  EXPECT_EQ(p.host_weight_bytes(), weight_host);
  EXPECT_GT(kv_host + weight_host, 0);
  EXPECT_FALSE(p.all_in_hbm());
  // The plan's ratio is about 30 % of weights + KV.
  EXPECT_NEAR(plan.totals.host_ratio, 0.3, 0.01);
}

TEST(Placement, NothingOnTheHostWhenThePlanHoldsNothingThere) {
  const LocatedConfig lc = locate_model_config("qwen2-7b");
  Plan plan = plan_for("qwen2-7b", 0.0, false);
  for (PlanOp& op : plan.ops) op.host_rows = 0, op.host_bytes = 0;
  const Placement p = placement_from_plan(plan, lc.config, "test plan");
  EXPECT_TRUE(p.all_in_hbm());
  EXPECT_EQ(p.host_weight_bytes(), 0);
  EXPECT_FALSE(p.weights.empty());  // every group is still listed, with 0 host rows
}

TEST(Placement, TiedEmbeddingsAreSplitOnceByTheLmHead) {
  ModelConfig c = locate_model_config("llama-2-7b").config;
  c.tie_word_embeddings = true;
  PlanRequest req;
  req.model_name = "tied";
  req.shape.batch = 1;
  req.offload_ratio = 1.0;
  req.allow_staged = false;
  const Plan plan = make_plan(c, HardwareProfile::h200_default(), req);
  const Placement p = placement_from_plan(plan, c, "tied plan");
  const WeightSplit* s = p.find("model.embed_tokens.weight");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->op, "lm_head");
  EXPECT_EQ(s->host_rows, c.vocab_size);  // everything on the host at ratio 1
  int64_t holders = 0;
  for (const WeightSplit& w : p.weights) holders += w.tensors.front().name == "model.embed_tokens.weight";
  EXPECT_EQ(holders, 1);
}

TEST(Placement, RefusesAPlanOfAnotherModel) {
  const LocatedConfig opt = locate_model_config("opt-6.7b");
  const Plan llama = plan_for("llama-2-7b", 0.3, false);
  expect_error([&] { placement_from_plan(llama, opt.config, "plan.json"); }, {"plan.json", "llama"});
  // Same architecture, other layer count.
  ModelConfig shallow = locate_model_config("llama-2-7b").config;
  shallow.num_layers = 4;
  expect_error([&] { placement_from_plan(llama, shallow, "plan.json"); }, {"plan.json", "layer"});
}

TEST(Placement, MarksStagedLinearsAndReadsTheRestInPlace) {
  const LocatedConfig lc = locate_model_config("llama-2-7b");
  const Plan plan = plan_for("llama-2-7b", 0.3, /*staged=*/true);
  const Placement p = placement_from_plan(plan, lc.config, "plan.json");
  int64_t staged = 0;
  for (const PlanOp& op : plan.ops) {
    if (op.tensors.empty() || op.kind == OpKind::kAttention) continue;
    const WeightSplit* s = p.find(op.tensors.front().name);
    ASSERT_NE(s, nullptr) << op.name;
    // Only linears with host rows take the copy-engine path; embeddings are gathered in place.
    EXPECT_EQ(s->staged, op.kind == OpKind::kLinear && op.host_rows > 0 && op.path == DataPath::kStaged) << op.name;
    staged += s->staged;
  }
  EXPECT_GT(staged, 0) << "at 30 % the planner stages the link-bound linears";
}

TEST(Placement, RefusesAGroupWithOtherTensors) {
  const LocatedConfig lc = locate_model_config("llama-2-7b");
  const Placement p = placement_from_plan(plan_for("llama-2-7b", 0.3, false), lc.config, "plan.json");
  std::vector<TensorPart> qkv = p.find("model.layers.0.self_attn.q_proj.weight")->tensors;
  ASSERT_EQ(qkv.size(), 3u);
  qkv.pop_back();  // q and k only
  expect_error([&] { p.split_of(qkv, "engine"); }, {"engine", "q_proj"});
  // A group the plan does not name has no split (so no host rows).
  EXPECT_EQ(p.split_of({{"model.layers.0.not_a_tensor.weight", 7}}, "engine"), nullptr);
}

TEST(Placement, RefusesHostRowsOutsideTheSplit) {
  const LocatedConfig lc = locate_model_config("llama-2-7b");
  Plan plan = plan_for("llama-2-7b", 0.3, false);
  plan.ops[2].host_rows = plan.ops[2].split_rows + 1;
  expect_error([&] { placement_from_plan(plan, lc.config, "plan.json"); }, {"plan.json", "rows"});
}

}  // namespace
}  // namespace dak
