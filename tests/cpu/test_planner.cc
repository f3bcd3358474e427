// Allocators and planner: greedy against exhaustive search on random small instances, more HBM
// never predicts slower, the host always holds what capacity requires, uniform spreads evenly,
// the staged path is taken where the link dominates, impossible budgets are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "core/allocator.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/planner.h"

namespace dak {
namespace {

const HardwareProfile& h200() {
  static const HardwareProfile p = HardwareProfile::h200_default();
  return p;
}

// A random operator with few split units (tile rows large), memory- or compute-bound.
Op random_op(std::mt19937& rng, int i) {
  std::uniform_int_distribution<int> units(1, 6), kind(0, 2), ntok(0, 3);
  Op op;
  op.name = op.role = "op" + std::to_string(i);
  const int64_t n = int64_t(1) << (ntok(rng) * 4);  // 1, 16, 256, 4096 tokens
  op.n = n;
  op.act_bytes = 0;
  if (kind(rng) == 0) {  // attention over a KV cache split by sequence
    op.kind = OpKind::kAttention;
    op.batch = units(rng);
    op.q_len = 1, op.heads = 32, op.kv_heads = 8, op.head_dim = 128, op.context = 1 << (8 + ntok(rng));
    op.splittable = true;
    op.split_rows = op.batch;
    op.unit_rows = 1;
    op.row_bytes = op.context * 2 * 8 * 128 * 2;
    op.resident_bytes = op.batch * op.row_bytes;
    op.step_bytes = double(op.resident_bytes);
    op.flops = 4.0 * op.batch * 32 * 128 * op.context;
    op.items_per_unit = 8;
  } else {  // linear; the last tile may be partial
    op.kind = OpKind::kLinear;
    op.k = 4096;
    op.unit_rows = 2048;
    op.m = units(rng) * op.unit_rows - (kind(rng) == 0 ? 100 : 0);
    op.splittable = true;
    op.split_rows = op.m;
    op.row_bytes = op.k * 2;
    op.resident_bytes = op.m * op.row_bytes;
    op.step_bytes = double(op.resident_bytes);
    op.flops = 2.0 * n * op.m * op.k;
    op.items_per_unit = (n + 255) / 256;
  }
  return op;
}

std::vector<AllocCurve> curves_for(const std::vector<Op>& ops, const CostModel& cm, bool allow_staged) {
  std::vector<AllocCurve> curves;
  for (const Op& op : ops) {
    AllocCurve c;
    for (int64_t h = 0; h <= op.units(); ++h) {
      c.time_s.push_back(cm.best(op, h, allow_staged).time_s);
      c.host_bytes.push_back(op.host_resident_bytes(h));
    }
    c.prefer_late = op.kind == OpKind::kAttention;
    curves.push_back(c);
  }
  return curves;
}

TEST(Allocator, GreedyMatchesBruteForceOnRandomSmallInstances) {
  std::mt19937 rng(20261129);
  const CostModel cm(h200());
  int exact = 0, trials = 0;
  for (int t = 0; t < 300; ++t) {
    std::vector<Op> ops;
    const int n_ops = 2 + t % 4;
    for (int i = 0; i < n_ops; ++i) ops.push_back(random_op(rng, i));
    const std::vector<AllocCurve> curves = curves_for(ops, cm, t % 2 == 0);
    int64_t all = 0;
    double quantum = 0;  // largest single-unit time step of any operator: the quantization
    for (const AllocCurve& c : curves) {
      all += c.host_bytes.back();
      for (size_t h = 1; h < c.time_s.size(); ++h)
        quantum = std::max(quantum, std::fabs(c.time_s[h] - c.time_s[h - 1]));
    }
    const int64_t required = std::uniform_int_distribution<int64_t>(0, all)(rng);
    const Allocation g = allocate_greedy(curves, required);
    const Allocation b = allocate_brute_force(curves, required);
    ASSERT_GE(g.host_bytes, required);
    ASSERT_GE(b.host_bytes, required);
    EXPECT_GE(g.total_time_s, b.total_time_s * (1 - 1e-12));  // brute force is optimal
    EXPECT_LE(g.total_time_s, b.total_time_s + quantum * (1 + 1e-9)) << "trial " << t;
    ++trials;
    exact += g.total_time_s <= b.total_time_s * (1 + 1e-12);
  }
  // Off only by the last quantum, and only in a minority of instances (245 of these 300 are exact).
  EXPECT_GE(exact, trials * 3 / 4) << exact << " of " << trials;
}

TEST(Allocator, GreedyNeverPredictsSlowerWithLessRequired) {
  std::mt19937 rng(7);
  const CostModel cm(h200());
  for (int t = 0; t < 300; ++t) {
    std::vector<Op> ops;
    for (int i = 0; i < 5; ++i) ops.push_back(random_op(rng, i));
    const std::vector<AllocCurve> curves = curves_for(ops, cm, true);
    int64_t all = 0;
    for (const AllocCurve& c : curves) all += c.host_bytes.back();
    double prev = 0;
    for (int step = 0; step <= 100; ++step) {
      const Allocation a = allocate_greedy(curves, all * step / 100);
      EXPECT_GE(a.total_time_s, prev * (1 - 1e-12)) << "trial " << t << " step " << step;
      prev = a.total_time_s;
    }
  }
}

TEST(Allocator, InfeasibleRequirementIsAnError) {
  AllocCurve c;
  c.time_s = {1.0, 2.0};
  c.host_bytes = {0, 100};
  EXPECT_THROW(allocate_greedy({c}, 101), Error);
  EXPECT_THROW(allocate_uniform({c}, 101), Error);
}

PlanRequest request(int64_t batch, std::optional<int64_t> budget) {
  PlanRequest r;
  r.model_name = "test";
  r.shape.batch = batch;
  r.shape.prompt_len = 32;
  r.shape.gen_len = 32;
  r.gpu_memory_bytes = budget;
  return r;
}

constexpr int64_t kGiB = int64_t(1) << 30;

TEST(Planner, MoreHbmNeverPredictsSlowerAndHostHoldsWhatCapacityRequires) {
  for (const char* name : {"opt-6.7b", "llama-2-7b", "llama-3-8b"}) {
    const ModelConfig cfg = locate_model_config(name).config;
    double prev = INFINITY;
    for (int64_t gib = 1; gib <= 24; ++gib) {  // budget grows: predicted time must not grow
      const Plan p = make_plan(cfg, h200(), request(8, gib * kGiB));
      EXPECT_LE(p.predicted_tpot_s, prev * (1 + 1e-12)) << name << " at " << gib << " GiB";
      prev = p.predicted_tpot_s;
      EXPECT_GE(p.totals.host_bytes, p.capacity.required_host_bytes) << name << " " << gib;
      EXPECT_LE(p.totals.hbm_bytes, p.capacity.hbm_budget_bytes) << name << " " << gib;
      int64_t sum = 0;
      for (const PlanOp& o : p.ops) sum += o.host_bytes;
      EXPECT_EQ(sum, p.totals.host_bytes);
      // EB can never exceed both memories streaming at once.
      EXPECT_LE(p.totals.effective_bandwidth_gbps, h200().hbm_read_gbps + h200().host_sm_read_gbps);
    }
  }
}

TEST(Planner, MemoryBoundOperatorsGoToTheirBalancePointEvenWithoutPressure) {
  const Plan p = make_plan(locate_model_config("llama-2-7b").config, h200(), request(1, std::nullopt));
  EXPECT_EQ(p.capacity.required_host_bytes, 0);
  const double x_star = 51.4 / (4623.0 + 51.4);
  for (const PlanOp& o : p.ops) {
    if (o.role != "qkv_proj") continue;
    EXPECT_GT(o.host_fraction, 0.0) << o.name;
    EXPECT_LE(o.host_fraction, x_star + 1.0 / double(o.split_rows / o.unit_rows)) << o.name;
    EXPECT_EQ(o.path, DataPath::kDirect);
  }
  EXPECT_LT(p.predicted_tpot_s, make_plan(locate_model_config("llama-2-7b").config, h200(),
                                          [] {
                                            PlanRequest r = request(1, std::nullopt);
                                            r.allocator = AllocatorKind::kUniform;
                                            return r;
                                          }())
                                    .predicted_tpot_s);
}

TEST(Planner, UniformGivesEveryOperatorTheSameFraction) {
  PlanRequest r = request(8, std::nullopt);
  r.allocator = AllocatorKind::kUniform;
  r.offload_ratio = 0.3;
  const Plan p = make_plan(locate_model_config("llama-2-7b").config, h200(), r);
  const int64_t movable = p.capacity.splittable_weight_bytes + p.capacity.kv_bytes;
  EXPECT_GE(p.totals.host_bytes, int64_t(0.3 * double(movable)));
  for (const PlanOp& o : p.ops) {
    if (o.split_rows == 0) continue;
    const double unit = double(o.unit_rows) / double(o.split_rows);
    EXPECT_GE(o.host_fraction, 0.3 - 1e-12) << o.name;
    EXPECT_LE(o.host_fraction, 0.3 + unit + 1e-12) << o.name;
  }
}

TEST(Planner, StagedPathWhereTheLinkDominates) {
  const ModelConfig cfg = locate_model_config("llama-2-70b").config;
  PlanRequest r = request(8, 40 * kGiB);
  const Plan with = make_plan(cfg, h200(), r);
  r.allow_staged = false;
  const Plan without = make_plan(cfg, h200(), r);
  EXPECT_GT(with.totals.staged_host_bytes, 0);
  EXPECT_EQ(without.totals.staged_host_bytes, 0);
  EXPECT_LT(with.predicted_tpot_s, without.predicted_tpot_s);
  // Link-bound either way: the staged plan gains at most B_ce / B_h.
  EXPECT_GT(with.predicted_tpot_s, without.predicted_tpot_s * 51.4 / 55.5 * 0.99);
  // With nothing to offload beyond the balance points, every host byte is direct.
  const Plan small = make_plan(locate_model_config("llama-2-7b").config, h200(), request(8, 20 * kGiB));
  EXPECT_EQ(small.totals.staged_host_bytes, 0);
}

TEST(Planner, OnlyLinearWeightsTakeTheStagedPath) {
  // The engine stages linear weights only; host KV sequences and embedding rows are read in place.
  // A KV-heavy batch-512 plan once priced its attention as staged (at the copy engine's rate),
  // which the engine never did: the prediction came out 8 % low for the KV bytes.
  PlanRequest r = request(512, std::nullopt);
  r.shape.gen_len = 8;
  r.offload_ratio = 0.1;
  const Plan p = make_plan(locate_model_config("llama-2-7b").config, h200(), r);
  int64_t kv_host = 0;
  for (const PlanOp& o : p.ops) {
    if (o.kind != OpKind::kLinear && o.host_bytes > 0) EXPECT_EQ(o.path, DataPath::kDirect) << o.name;
    if (o.kind == OpKind::kAttention) kv_host += o.host_bytes;
  }
  EXPECT_GT(kv_host, 0) << "the test needs a plan with host KV";
  // Linears at N = 512 run the tiered GEMM's compute path, where the direct path measured far
  // below the link: with staging allowed their host rows are staged.
  int64_t linear_host = 0;
  for (const PlanOp& o : p.ops) {
    if (o.kind != OpKind::kLinear || o.host_bytes == 0) continue;
    linear_host += o.host_bytes;
    EXPECT_EQ(o.path, DataPath::kStaged) << o.name;
  }
  EXPECT_GT(linear_host, 0) << "the test needs a plan with host weights";
}

TEST(Planner, SinglePathModesPriceTheDirectAllocationOnTheirPath) {
  // --offload direct / prefetch / zero-copy apply one path to the direct plan's placement; the
  // prediction must be that path's (session 9 priced zero-copy as direct: 22.5 ms predicted, 37.7
  // measured on the H200 for Llama-2-7B batch 8 at 10 %).
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  PlanRequest r = request(8, std::nullopt);
  r.offload_ratio = 0.1;
  r.allow_staged = false;
  const Plan direct = make_plan(cfg, h200(), r);
  std::map<DataPath, Plan> by_path;
  for (DataPath path : {DataPath::kDirect, DataPath::kStaged, DataPath::kZeroCopy}) {
    r.single_path = path;
    by_path.emplace(path, make_plan(cfg, h200(), r));
  }
  EXPECT_EQ(by_path.at(DataPath::kDirect).predicted_tpot_s, direct.predicted_tpot_s);
  for (const auto& [path, p] : by_path) {
    EXPECT_EQ(p.totals.host_bytes, direct.totals.host_bytes) << data_path_name(path);
    ASSERT_EQ(p.ops.size(), direct.ops.size());
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const PlanOp& o = p.ops[i];
      EXPECT_EQ(o.host_units, direct.ops[i].host_units) << o.name;
      if (o.host_bytes == 0) continue;
      // prefetch stages linears only (KV and embedding rows are read in place).
      const DataPath want = path == DataPath::kStaged && o.kind != OpKind::kLinear ? DataPath::kDirect : path;
      EXPECT_EQ(o.path, want) << data_path_name(path) << " " << o.name;
    }
  }
  // Link-bound at 10 %: the prefetch pipeline moves host bytes at B_ce; zero-copy runs its two GEMMs
  // in turn at cuBLASLt's measured host rates (the default profile's zero_copy section), so it is
  // slower than direct.
  EXPECT_LT(by_path.at(DataPath::kStaged).predicted_tpot_s, direct.predicted_tpot_s);
  EXPECT_GT(by_path.at(DataPath::kZeroCopy).predicted_tpot_s, direct.predicted_tpot_s);
  r.single_path = DataPath::kNone;
  EXPECT_THROW(make_plan(cfg, h200(), r), Error);
}

TEST(Planner, PrefetchRingFitsTheBudget) {
  // The prefetch engine's ring (kStagingRingSlots slots of the largest staged host part) is HBM too: the plan
  // moves what it needs to the host instead of going over --gpu-memory (a new-user trial found
  // 5.48 GiB planned for a 5 GiB budget); a ratio that leaves no room for it is refused.
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  for (int64_t budget : {5 * kGiB, kGiB, 8 * kGiB}) {
    PlanRequest r = request(8, budget);
    r.single_path = DataPath::kStaged;
    const Plan p = make_plan(cfg, h200(), r);
    EXPECT_GT(p.totals.staging_ring_bytes, 0) << budget;
    EXPECT_LE(p.totals.hbm_bytes, budget) << budget;
  }
  // Budgets where adding only the excess each round did not converge (session-21 trial: batch 1 at
  // 6 GiB was refused while 5.5 and 6.5 GiB planned).
  for (int64_t budget : {6 * kGiB, 5 * kGiB + kGiB / 2, 6 * kGiB + kGiB / 2, 5 * kGiB + kGiB / 4}) {
    PlanRequest r = request(1, budget);
    r.single_path = DataPath::kStaged;
    const Plan p = make_plan(cfg, h200(), r);
    EXPECT_LE(p.totals.hbm_bytes, budget) << budget;
  }
  PlanRequest r = request(8, 5 * kGiB);
  r.single_path = DataPath::kStaged;
  r.offload_ratio = 0.6117;  // leaves 4.97 GiB in HBM: no room for the ring
  EXPECT_THROW(make_plan(cfg, h200(), r), Error);
  // The refusal names a larger ratio that fits (the session-21 trial's message said "lower
  // --offload-ratio", which keeps more in HBM), and that ratio plans within the budget.
  for (std::optional<DataPath> path : {std::optional<DataPath>(DataPath::kStaged), std::optional<DataPath>()}) {
    r.single_path = path;
    r.offload_ratio = 0.6117;
    std::string fix;
    try {
      (void)make_plan(cfg, h200(), r);
    } catch (const Error& e) {
      fix = e.fix_part();
    }
    if (!path && fix.empty()) continue;  // auto may fit this ratio with a direct-only variant
    const std::string key = "force at least --offload-ratio ";
    const size_t at = fix.find(key);
    ASSERT_NE(at, std::string::npos) << fix;
    EXPECT_EQ(fix.find("lower --offload-ratio"), std::string::npos) << fix;
    const double least = std::stod(fix.substr(at + key.size()));
    EXPECT_GT(least, 0.6117) << fix;
    r.offload_ratio = least;
    const Plan p = make_plan(cfg, h200(), r);
    EXPECT_LE(p.totals.hbm_bytes, 5 * kGiB) << least;
  }
}

TEST(Planner, AutoPlansPriceTheEngineRingAndItsCopyPipeline) {
  // Under auto the engine stages the plan's staged linears exactly as --offload prefetch does
  // (kStagingRingSlots HBM slots of the largest staged host part, copies running ahead), so
  // the plan's ring is those slots (it was 2 x 2 MiB, less than the engine allocates) and its
  // TPOT is the copy pipeline's length, at least the shared-link floor, not the sum of per-operator
  // costs that each pay a ring fill (45.5 ms predicted for Llama-2-7B batch 512 at 10 %, where the
  // H200 ran 41.2).
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  for (int64_t batch : {8, 512}) {
    PlanRequest r = request(batch, std::nullopt);
    r.shape.gen_len = 8;
    r.offload_ratio = 0.1;
    const Plan p = make_plan(cfg, h200(), r);
    ASSERT_GT(p.totals.staged_host_bytes, 0) << batch;
    int64_t largest = 0;
    for (const PlanOp& o : p.ops)
      if (o.path == DataPath::kStaged) largest = std::max(largest, o.host_bytes);
    EXPECT_EQ(p.totals.staging_ring_bytes, kStagingRingSlots * largest) << batch;
    EXPECT_EQ(p.totals.hbm_bytes, p.capacity.total_bytes - p.totals.host_bytes + kStagingRingSlots * largest) << batch;
    EXPECT_GT(p.totals.prefetch_pipeline_s, 0) << batch;
    EXPECT_DOUBLE_EQ(p.predicted_tpot_s, p.totals.prefetch_pipeline_s) << batch;
    EXPECT_LT(p.predicted_tpot_s, p.totals.sum_op_time_s) << batch;
    // The pipeline is never shorter than its copy stream (one copy at a time, each at B_ce plus a
    // node) nor than its compute stream (every operator's kernels in order).
    double copies = 0, compute = 0;
    for (const PlanOp& o : p.ops) {
      if (o.path == DataPath::kStaged && o.host_bytes > 0) {
        copies += o.host_s;
        compute += std::max(o.compute_s, o.hbm_s);
      } else {
        compute += o.predicted_time_s;
      }
    }
    EXPECT_GE(p.totals.prefetch_pipeline_s, copies) << batch;
    EXPECT_GE(p.totals.prefetch_pipeline_s, compute) << batch;
    EXPECT_LT(p.totals.prefetch_pipeline_s, copies + compute) << batch;  // they overlap
  }
  // A budget that binds: the ring is HBM too, so the staged plan still fits --gpu-memory.
  for (int64_t budget : {5 * kGiB, 8 * kGiB, 12 * kGiB}) {
    const Plan p = make_plan(cfg, h200(), request(8, budget));
    EXPECT_LE(p.totals.hbm_bytes, budget) << budget;
    if (p.totals.staged_host_bytes > 0) EXPECT_GT(p.totals.staging_ring_bytes, 4 << 20) << budget;
  }
}

TEST(Planner, DirectLinearsUseTheKernelsMulticastClusters) {
  // At batch 768 an old model chose clusters of 3 (N / 256 tiles), which the kernel cannot run.
  PlanRequest r = request(768, 30 * kGiB);
  r.allow_staged = false;
  const Plan p = make_plan(locate_model_config("llama-2-7b").config, h200(), r);
  int64_t direct_linears = 0;
  for (const PlanOp& o : p.ops) {
    if (o.kind != OpKind::kLinear || o.path != DataPath::kDirect) continue;
    ++direct_linears;
    EXPECT_EQ(o.cluster, 2) << o.name;  // 3 n-tiles of 256 tokens (choose_tiered_gemm_tile at N = 768)
    EXPECT_EQ(o.host_ctas % o.cluster, 0) << o.name << ": host CTAs are whole clusters";
  }
  EXPECT_GT(direct_linears, 0);
}

TEST(Planner, GreedyBeatsUniformBelowFullOffloadAndTiesAtTheEnds) {
  PlanRequest r = request(64, std::nullopt);
  const std::vector<RatioSweepRow> rows =
      sweep_offload_ratio(locate_model_config("opt-6.7b").config, h200(), r, {0.0, 0.1, 0.5, 1.0});
  for (const RatioSweepRow& row : rows) EXPECT_GE(row.speedup, 1.0 - 1e-12) << row.ratio;
  EXPECT_NEAR(rows.back().speedup, 1.0, 1e-9);  // everything on the host: nothing to choose
}

TEST(Planner, ARatioOfZeroPutsNothingOnTheHost) {
  // Without a forced ratio and no pressure, memory-bound operators still go to their balance
  // points (phase 1); --offload-ratio 0 must leave every byte in HBM.
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  PlanRequest r = request(8, std::nullopt);
  EXPECT_GT(make_plan(cfg, h200(), r).totals.host_bytes, 0);
  r.offload_ratio = 0.0;
  const Plan p = make_plan(cfg, h200(), r);
  EXPECT_EQ(p.totals.host_bytes, 0);
  for (const PlanOp& o : p.ops) EXPECT_EQ(o.host_units, 0) << o.name;
}

TEST(Planner, ImpossibleBudgetsAreRefused) {
  const ModelConfig cfg = locate_model_config("llama-2-70b").config;
  // 138 GB of weights with 2 GiB of HBM: more than the 120 GiB the profile can pin.
  try {
    make_plan(cfg, h200(), request(1, 2 * kGiB));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pin"), std::string::npos) << e.what();
  }
  // A budget smaller than the activations of a large prefill.
  try {
    make_plan(locate_model_config("llama-2-7b").config, h200(), request(512, 256 << 20));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must stay on the GPU"), std::string::npos) << e.what();
  }
  PlanRequest bad = request(1, std::nullopt);
  bad.offload_ratio = 1.5;
  EXPECT_THROW(make_plan(cfg, h200(), bad), Error);
}

TEST(Planner, APrefillOfManyPassesPaysTheHostBytesOfEveryPass) {
  // The trial of session 27: Llama-3-8B prefill of 4 x 4096 tokens with every weight on the host was
  // predicted 455 ms, one read of the weights over the link; dak generate's engine runs it in 16 passes
  // of 1024 rows, each reading them. Now the prediction is at least 16 reads at the copy engine's rate.
  const ModelConfig cfg = locate_model_config("llama-3-8b").config;
  PlanRequest r = request(4, std::nullopt);
  r.shape.prompt_len = 4096;
  r.shape.phase = Phase::kPrefill;
  r.offload_ratio = 1.0;
  ASSERT_EQ(r.shape.prefill_passes(), 16);
  const Plan p = make_plan(cfg, h200(), r);
  double linear_host = 0;  // host bytes of the layer stack's linears, resident (one read)
  for (const PlanOp& op : p.ops)
    if (op.kind == OpKind::kLinear && op.layer >= 0) linear_host += double(op.host_bytes);
  ASSERT_GT(linear_host, 10e9);
  const double ce_bps = h200().host_copy_engine_gbps * 1e9;
  EXPECT_GE(p.predicted_tpot_s, 16.0 * linear_host / ce_bps * 0.99) << p.predicted_tpot_s;
  // One pass (a prompt that fits it) reads them once.
  PlanRequest short_prompt = r;
  short_prompt.shape.prompt_len = 256;
  ASSERT_EQ(short_prompt.shape.prefill_passes(), 1);
  const Plan q = make_plan(cfg, h200(), short_prompt);
  EXPECT_LT(q.predicted_tpot_s, 2.0 * linear_host / ce_bps) << q.predicted_tpot_s;
}

TEST(Planner, CopyPipelineSharesTheHostLinkWithDirectReads) {
  // While a staged linear's copy and an operator's direct host reads are in flight together they
  // share the link (host_shared_total_gbps in all, the probe's [hybrid] line); the replay that ran
  // both at full rate tied Llama-2-7B batch-8 placements that ran 20.865 and 21.961 ms on the H200
  // (docs/perf-notes.md, session 22).
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  PlanRequest r = request(8, std::nullopt);
  r.shape.gen_len = 8;
  r.offload_ratio = 0.1;
  const Plan shared = make_plan(cfg, h200(), r);
  ASSERT_GT(shared.totals.staged_host_bytes, 0);
  ASSERT_GT(shared.totals.direct_host_bytes, 0);
  EXPECT_DOUBLE_EQ(shared.predicted_tpot_s, shared.totals.prefetch_pipeline_s);
  // Never faster than either path alone could move its own bytes.
  const HardwareProfile& hw = h200();
  EXPECT_GE(shared.predicted_tpot_s, double(shared.totals.staged_host_bytes) / (hw.host_copy_engine_gbps * 1e9));
  HardwareProfile unshared = hw;
  unshared.host_shared_total_gbps = hw.host_copy_engine_gbps + hw.host_sm_read_gbps;  // no sharing
  const Plan free_link = make_plan(cfg, unshared, r);
  EXPECT_LT(free_link.predicted_tpot_s, shared.predicted_tpot_s * 0.99);
}

TEST(Planner, PredictionsStayNearWhatTheH200Measured) {
  // Calibration against measured TPOT (dak bench on the H200, random weights, prompt 32, gen 8,
  // --offload auto, medians of 5; docs/results/2026-12-04/session21/call5, and session22/call4 for
  // the placements the refinement changed): the bound is 10 %, this test holds the model to
  // 5 % so that drift shows before the bound is at risk.
  struct Point {
    const char* model;
    int64_t batch;
    double ratio, measured_ms;
  };
  for (const Point& pt : {Point{"llama-2-7b", 8, 0.0, 3.823}, Point{"llama-2-7b", 8, 0.1, 20.865},
                          Point{"llama-2-7b", 512, 0.0, 16.214}, Point{"llama-2-7b", 512, 0.1, 39.744},
                          Point{"llama-2-7b", 512, 0.6, 262.346}, Point{"opt-6.7b", 8, 0.3, 73.149},
                          Point{"opt-6.7b", 512, 0.1, 43.713}, Point{"opt-30b", 512, 0.1, 159.317}}) {
    PlanRequest r = request(pt.batch, std::nullopt);
    r.shape.gen_len = 8;
    r.offload_ratio = pt.ratio;
    const Plan p = make_plan(locate_model_config(pt.model).config, h200(), r);
    EXPECT_NEAR(pt.measured_ms / (p.predicted_tpot_s * 1e3), 1.0, 0.05)
        << pt.model << " batch " << pt.batch << " at " << pt.ratio << ": predicted " << p.predicted_tpot_s * 1e3;
  }
}

TEST(Planner, TheCopyPipelineReplayEndsForAnyLinkRate) {
  // Session-23 trial: with the measured profile (B_h 51.441445750623956 GB/s) the fluid replay ran
  // out of events on half its plans ("report this plan request as a bug"): a stream's remainder of
  // one ulp took an event per step. Every plan of these shapes must now come out, and the shipped
  // measured profile plans the trial's case.
  const HardwareProfile measured = HardwareProfile::load(std::string(DAK_SOURCE_DIR) + "/profiles/h200-measured.json");
  PlanRequest trial = request(8, std::nullopt);
  trial.offload_ratio = 0.1;
  EXPECT_GT(make_plan(locate_model_config("llama-2-7b").config, measured, trial).predicted_tpot_s, 0);
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<double> rate(20.0, 60.0);
  for (int i = 0; i < 24; ++i) {
    HardwareProfile p = h200();
    p.host_sm_read_gbps = rate(rng);
    p.host_copy_engine_gbps = rate(rng);
    p.host_shared_total_gbps = std::max(p.host_sm_read_gbps, p.host_copy_engine_gbps) * 1.03;
    for (const char* model : {"llama-2-7b", "opt-6.7b"}) {
      for (int64_t batch : {8, 512}) {
        PlanRequest r = request(batch, std::nullopt);
        r.offload_ratio = 0.05 + 0.1 * (i % 3);
        const Plan plan = make_plan(locate_model_config(model).config, p, r);
        EXPECT_GT(plan.predicted_tpot_s, 0) << model << " " << batch << " B_h " << p.host_sm_read_gbps;
      }
    }
  }
}

TEST(Planner, DirectPlansStayNearWhatTheH200Measured) {
  // --offload direct at batch 512, where the compute-path linears read their host rows in place:
  // the cost model prices them as the engine launches them (CostModel.ComputeTilesArePricedAsThe-
  // EngineLaunchesThem). Measured on the H200 (dak bench, random weights, gen 8, medians of 5;
  // docs/results/2026-12-04/session23/call1). Session 22's model was 13 % optimistic at the first
  // point (41.457 ms predicted); Llama-2-7B at 10 % is still the worst (1.065: its small kernels run
  // slower next to the direct reads than the eager per-operator times show), so the bound is 8 %.
  struct Point {
    const char* model;
    int64_t prompt;
    std::optional<double> ratio;
    std::optional<int64_t> budget;
    double measured_ms;
  };
  for (const Point& pt : {Point{"llama-2-7b", 32, 0.1, std::nullopt, 46.414},
                          Point{"llama-2-7b", 32, 0.3, std::nullopt, 133.255},
                          Point{"opt-6.7b", 32, 0.1, std::nullopt, 49.115},
                          Point{"opt-30b", 32, 0.3, std::nullopt, 486.682},
                          Point{"qwen2-7b", 128, std::nullopt, 8 * kGiB, 218.044}}) {
    PlanRequest r = request(512, pt.budget);
    r.shape.prompt_len = pt.prompt;
    r.shape.gen_len = 8;
    r.offload_ratio = pt.ratio;
    r.single_path = DataPath::kDirect;
    const Plan p = make_plan(locate_model_config(pt.model).config, h200(), r);
    EXPECT_NEAR(pt.measured_ms / (p.predicted_tpot_s * 1e3), 1.0, 0.08)
        << pt.model << " at " << pt.ratio.value_or(-1) << ": predicted " << p.predicted_tpot_s * 1e3;
  }
}

TEST(Planner, AutoPlansAreRefinedOnTheCopyPipeline) {
  // The greedy minimises the sum of operator times; the refinement moves host bytes between
  // operators while the copy-pipeline replay predicts a shorter step (Llama-2-7B batch 512 at 10 %:
  // the greedy's plan ran 41.1 ms on the H200, the refined one 39.9; docs/perf-notes.md, session 22).
  // The staged variant's plan alone (the prefetch placement, a candidate since session 23, is
  // refined as well and would blur the comparison).
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  ASSERT_EQ(setenv("DAK_PLAN_NO_PREFETCH_CANDIDATE", "1", 1), 0);
  for (std::optional<int64_t> budget : {std::optional<int64_t>(), std::optional<int64_t>(20 * kGiB)}) {
    PlanRequest r = request(512, budget);
    r.shape.gen_len = 8;
    if (!budget) r.offload_ratio = 0.1;
    ASSERT_EQ(setenv("DAK_PLAN_NO_REFINE", "1", 1), 0);
    const Plan greedy = make_plan(cfg, h200(), r);
    ASSERT_EQ(unsetenv("DAK_PLAN_NO_REFINE"), 0);
    const Plan refined = make_plan(cfg, h200(), r);
    ASSERT_GT(greedy.totals.staged_host_bytes, 0);
    if (budget)  // it may find nothing to gain, never something slower
      EXPECT_LE(refined.predicted_tpot_s, greedy.predicted_tpot_s);
    else
      EXPECT_LT(refined.predicted_tpot_s, greedy.predicted_tpot_s * 0.97);  // 41.26 -> 39.77 ms
    EXPECT_GE(refined.totals.host_bytes, greedy.totals.host_bytes);  // the ratio / the budget stays met
    EXPECT_LE(refined.totals.hbm_bytes, refined.capacity.hbm_budget_bytes);
    EXPECT_DOUBLE_EQ(refined.predicted_tpot_s, refined.totals.prefetch_pipeline_s);
    // The plan is a placement like any other: every operator's host units within its range.
    for (const PlanOp& o : refined.ops) {
      EXPECT_GE(o.host_units, 0) << o.name;
      EXPECT_LE(o.host_rows, o.split_rows) << o.name;
    }
  }
  ASSERT_EQ(unsetenv("DAK_PLAN_NO_PREFETCH_CANDIDATE"), 0);
}

TEST(Planner, RefiningEveryVariantFindsTheStagedPlacementOfTheFastLinkProfile) {
  // Session 37: auto refined only the variant fastest before refinement. With h100-fast-link at
  // Llama-2-7B batch 8, 10 % that is the cheaper variant (21.149 ms before, 20.993 refined: 678 MiB
  // direct + 624 staged, measured 21.14 on such a host), while the staged variant (22.977 before)
  // refines to 20.721. Auto now refines each (measured on an H100 in session 38: 21.200 -> 20.114 ms
  // with that profile); DAK_PLAN_REFINE_ALL=0 gives the old rule.
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  PlanRequest r = request(8, std::nullopt);
  r.shape.gen_len = 8;
  r.offload_ratio = 0.1;
  for (const HardwareProfile& prof :
       {HardwareProfile::h100_fast_link(), HardwareProfile::h100_default(), HardwareProfile::h200_default()}) {
    const Plan all = make_plan(cfg, prof, r);
    ASSERT_EQ(setenv("DAK_PLAN_REFINE_ALL", "0", 1), 0);
    const Plan one = make_plan(cfg, prof, r);
    ASSERT_EQ(unsetenv("DAK_PLAN_REFINE_ALL"), 0);
    // The default's refined plan is one of refine-all's candidates; only the prefetch placement's
    // 0.5 % margin, measured against a lower best, can leave refine-all that much above it.
    EXPECT_LE(all.predicted_tpot_s, one.predicted_tpot_s * 1.005) << prof.name;
    EXPECT_GE(all.totals.host_bytes, one.totals.host_bytes * 999 / 1000) << prof.name;  // the ratio stays met
    if (prof.name == "h100-fast-link") {
      EXPECT_LT(all.predicted_tpot_s, one.predicted_tpot_s * 0.995) << "20.721 against 20.993 ms";
      EXPECT_GT(all.totals.staged_host_bytes, one.totals.staged_host_bytes);  // 892 against 624 MiB
    }
    if (prof.name == "h100-default") EXPECT_DOUBLE_EQ(all.predicted_tpot_s, one.predicted_tpot_s);
  }
}

TEST(Planner, AutoWeighsThePrefetchPlacement) {
  // Session-23 trial: auto predicted 5.853 ms for OPT-6.7B batch 1, prompt 128 at 2 % (all direct)
  // where --offload prefetch predicted 5.055 on the same host bytes: the engine stages auto's staged
  // linears through the prefetch mode's ring, so that placement is auto's to take.
  const ModelConfig cfg = locate_model_config("opt-6.7b").config;
  PlanRequest r = request(1, std::nullopt);
  r.shape.prompt_len = 128;
  r.offload_ratio = 0.02;
  const Plan chosen = make_plan(cfg, h200(), r);
  PlanRequest pr = r;
  pr.single_path = DataPath::kStaged;
  pr.allow_staged = false;
  const Plan prefetch = make_plan(cfg, h200(), pr);
  EXPECT_LE(chosen.predicted_tpot_s, prefetch.predicted_tpot_s * (1 + 1e-9));
  EXPECT_GT(chosen.totals.staged_host_bytes, 0);
  // Where only the variant fastest before refinement is refined (the rule until session 38), the
  // prefetch placement is what finds the staged plan: 4.93 against 5.85 ms (all direct).
  ASSERT_EQ(setenv("DAK_PLAN_REFINE_ALL", "0", 1), 0);
  const Plan fastest_only = make_plan(cfg, h200(), r);
  ASSERT_EQ(setenv("DAK_PLAN_NO_PREFETCH_CANDIDATE", "1", 1), 0);
  const Plan without = make_plan(cfg, h200(), r);
  ASSERT_EQ(unsetenv("DAK_PLAN_NO_PREFETCH_CANDIDATE"), 0);
  ASSERT_EQ(unsetenv("DAK_PLAN_REFINE_ALL"), 0);
  EXPECT_LT(fastest_only.predicted_tpot_s, 0.9 * without.predicted_tpot_s);
  EXPECT_EQ(without.totals.staged_host_bytes, 0);
  // Refining every variant, the staged variant's own placement refined further still (4.70 ms: 36
  // MiB direct, 220 staged) but through a 642 MiB ring, more HBM than the model without offload
  // (session 38's trial), which auto no longer takes: the prefetch placement it is.
  EXPECT_LE(chosen.predicted_tpot_s, fastest_only.predicted_tpot_s * (1 + 1e-9));
  EXPECT_LE(chosen.totals.hbm_bytes, chosen.capacity.total_bytes);
}

TEST(Planner, AutoNeverHoldsMoreHbmThanTheModelWithoutOffload) {
  // A forced ratio is asked for to free HBM; a staging ring larger than the host bytes it serves
  // does the opposite. Session 38's trial: OPT-6.7B batch 1, prompt 128 at 2 % (h200-default) took
  // a 642 MiB ring for 220 MiB staged, 12.87 GiB of HBM against the model's 12.49 GiB.
  const ModelConfig cfg = locate_model_config("opt-6.7b").config;
  int checked = 0;
  for (const HardwareProfile& prof : {HardwareProfile::h200_default(), HardwareProfile::h100_default()}) {
    for (int64_t batch : {1, 8, 16}) {
      for (int64_t prompt : {32, 128}) {
        for (double ratio : {0.01, 0.02, 0.05, 0.07}) {
          PlanRequest r = request(batch, std::nullopt);
          r.shape.prompt_len = prompt;
          r.offload_ratio = ratio;
          const Plan p = make_plan(cfg, prof, r);
          EXPECT_LE(p.totals.hbm_bytes, p.capacity.total_bytes)
              << prof.name << " batch " << batch << " prompt " << prompt << " ratio " << ratio;
          EXPECT_GE(p.totals.host_ratio, ratio - 0.005);
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 48);
}

TEST(Planner, AutoFallsBackToDirectWhereNoRingFits) {
  // Every auto variant stages the compute-path linears and needs its ring in HBM; where none fits, the
  // plan is the direct one --offload direct would make, not a refusal (session-22 trial: Qwen2-7B
  // batch 128, prompt 512, gen 128 at 4 GiB was refused by auto and planned by direct).
  const ModelConfig cfg = locate_model_config("qwen2-7b").config;
  PlanRequest r = request(128, 4 * kGiB);
  r.shape.prompt_len = 512;
  r.shape.gen_len = 128;
  const Plan p = make_plan(cfg, h200(), r);
  EXPECT_EQ(p.totals.staged_host_bytes, 0);
  EXPECT_EQ(p.totals.staging_ring_bytes, 0);
  EXPECT_LE(p.totals.hbm_bytes, 4 * kGiB);
  EXPECT_GE(p.totals.host_bytes, p.capacity.required_host_bytes);
  r.single_path = DataPath::kDirect;
  EXPECT_DOUBLE_EQ(make_plan(cfg, h200(), r).predicted_tpot_s, p.predicted_tpot_s);
}

TEST(Planner, RefinementGivesBackWhatTheRingPushedOut) {
  // Under a binding budget the ring (3 slots of the largest staged part) pushes bytes to the host;
  // the refinement may move them back where a smaller ring leaves room (session-22 trial: Qwen2-7B
  // batch 512 at 8 GiB used 7.21 GiB with 13.76 GiB on the host). Auto now takes the all-direct plan
  // there (predicted faster, and measured so); the staged plans are compared without it.
  const ModelConfig cfg = locate_model_config("qwen2-7b").config;
  PlanRequest r = request(512, 8 * kGiB);
  r.shape.prompt_len = 128;
  ASSERT_EQ(setenv("DAK_PLAN_DIRECT_FALLBACK_ONLY", "1", 1), 0);
  ASSERT_EQ(setenv("DAK_PLAN_NO_REFINE", "1", 1), 0);
  const Plan greedy = make_plan(cfg, h200(), r);
  ASSERT_EQ(unsetenv("DAK_PLAN_NO_REFINE"), 0);
  const Plan refined = make_plan(cfg, h200(), r);
  ASSERT_EQ(unsetenv("DAK_PLAN_DIRECT_FALLBACK_ONLY"), 0);
  EXPECT_GT(refined.totals.staged_host_bytes, 0);
  const Plan chosen = make_plan(cfg, h200(), r);
  EXPECT_EQ(chosen.totals.staged_host_bytes, 0);
  EXPECT_LT(chosen.predicted_tpot_s, refined.predicted_tpot_s);
  EXPECT_LT(refined.totals.host_bytes, greedy.totals.host_bytes);
  EXPECT_LT(refined.predicted_tpot_s, greedy.predicted_tpot_s);
  EXPECT_GE(refined.totals.host_bytes, refined.capacity.required_host_bytes);
  EXPECT_LE(refined.totals.hbm_bytes, 8 * kGiB);
}

TEST(Planner, RatioSweepReportsItsProgress) {
  // dak plan --sweep-ratios prints how far a long sweep is from this callback (a trial waited two
  // minutes on a silent 1001-point sweep): once per ratio, in order, refused ratios included.
  std::vector<std::pair<size_t, size_t>> calls;
  const std::vector<double> ratios = {0.0, 0.5, 1.0};
  const auto rows = sweep_offload_ratio(locate_model_config("llama-2-7b").config, h200(), request(8, std::nullopt),
                                        ratios, [&](size_t done, size_t total) { calls.emplace_back(done, total); });
  ASSERT_EQ(rows.size(), ratios.size());
  ASSERT_EQ(calls.size(), ratios.size());
  for (size_t i = 0; i < calls.size(); ++i) EXPECT_EQ(calls[i], std::make_pair(i + 1, ratios.size()));
}


TEST(Planner, ShapeRefusalsNameTheShapeInTheAskingCommandsTerms) {
  // Sessions 22-24's trials: dak generate was told to lower --batch / --prompt-len / --gen-len,
  // flags it does not have. Every refusal of the shape, in dak plan's terms and in generate's.
  const ModelConfig llama = locate_model_config("llama-2-7b").config;
  ModelConfig deep = llama;  // many layers of tiny weights: placements beyond kMaxPlanCurvePoints
  deep.num_layers = 300;
  deep.hidden_size = 64;
  deep.num_heads = 1;
  deep.num_kv_heads = 1;
  deep.head_dim = 64;
  deep.intermediate_size = 128;
  deep.vocab_size = 1000;
  struct Case {
    const char* what;
    const ModelConfig* config;
    int64_t batch, prompt_len, gen_len;
    std::optional<int64_t> budget;
    const char* plan_where;
    const char* plan_fix;
    const char* generate_where;
    const char* generate_fix;
  };
  const Case cases[] = {
      {"context", &llama, 1, 4096, 2, std::nullopt, "--prompt-len / --gen-len", "lower --prompt-len or --gen-len",
       "the prompts / --max-new-tokens", "give a shorter prompt or fewer new tokens (--max-new-tokens / -n)"},
      {"batch limit", &llama, kMaxPlanBatch + 1, 1, 2, std::nullopt, "--batch", "lower --batch", "the prompts",
       "give fewer prompts"},
      {"placements", &deep, 65536, 1, 2, std::nullopt, "--batch / --tile-rows", "or raise --tile-rows",
       "the prompts", "give fewer prompts at once (--max-batch) (the KV cache is placed per sequence and layer)"},
      {"no plan fits", &llama, 4096, 4000, 32, std::nullopt, "--batch / --prompt-len / --gen-len",
       "lower --batch, --prompt-len or --gen-len", "the prompts / --max-new-tokens",
       "give fewer prompts at once (--max-batch), a shorter prompt or fewer new tokens (--max-new-tokens / -n)"},
      {"budget below what never moves", &llama, 8, 32, 32, int64_t(1) << 20, "--gpu-memory",
       "lower --batch or --prompt-len", "--gpu-memory", "give fewer prompts at once (--max-batch) or a shorter prompt"},
  };
  for (const Case& c : cases) {
    for (const ShapeTerms::Command command : {ShapeTerms::Command::kPlan, ShapeTerms::Command::kGenerate}) {
      const bool gen = command == ShapeTerms::Command::kGenerate;
      PlanRequest r = request(c.batch, c.budget);
      r.shape.prompt_len = c.prompt_len;
      r.shape.gen_len = c.gen_len;
      r.terms.command = command;
      try {
        make_plan(*c.config, h200(), r);
        ADD_FAILURE() << c.what << ": not refused";
      } catch (const Error& e) {
        EXPECT_EQ(e.where_part(), gen ? c.generate_where : c.plan_where) << c.what << ": " << e.what();
        EXPECT_NE(e.fix_part().find(gen ? c.generate_fix : c.plan_fix), std::string::npos)
            << c.what << ": " << e.what();
        if (gen) {
          for (const char* flag : {"--batch", "--prompt-len", "--gen-len", "--tile-rows"})
            EXPECT_EQ(e.fix_part().find(flag), std::string::npos) << c.what << ": " << e.what();
        }
      }
    }
  }
}

// dak generate --max-context: the context is that flag's, so the fixes name it, not the prompts'
// length or -n (session-28 review).
TEST(ShapeTermsText, MaxContextNamesItsFlag) {
  ShapeTerms t{ShapeTerms::Command::kGenerate, false, true};
  EXPECT_EQ(t.flags(ShapeTerms::kGen), "--max-context");
  EXPECT_EQ(t.lower(ShapeTerms::kAll), "give fewer prompts at once (--max-batch) or a smaller --max-context");
  EXPECT_EQ(t.lower(ShapeTerms::kPrompt), "give a smaller --max-context");
  t.max_context = false;
  EXPECT_EQ(t.lower(ShapeTerms::kGen), "give fewer new tokens (--max-new-tokens / -n)");
}

}  // namespace
}  // namespace dak
