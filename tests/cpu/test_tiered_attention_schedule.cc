// Tiered attention work decomposition (core/tiered_attention_schedule.h): the key split and the
// workspace do not depend on b_host (split invariance), the items of the two sides cover every
// (sequence, kv head, split) exactly once, the default congestion control stays under the
// in-flight cap and within SMEM, the SMEM row padding keeps ldmatrix conflict-free, and bad
// shapes and schedules are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/bench_attention_policy.h"
#include "core/hardware_profile.h"
#include "core/tiered_attention_schedule.h"
#include "error_test_util.h"

namespace {

using dak::TieredAttentionSchedule;
using dak::TieredAttentionShape;
namespace ta = dak::tiered_attention;

constexpr int64_t kSms = 132;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<TieredAttentionShape> shapes() {
  return {
      {8, 32, 32, 128, 512},     {64, 32, 8, 128, 4096},  {512, 56, 56, 128, 512}, {8, 32, 8, 128, 32768},
      {3, 16, 1, 64, 1},         {5, 8, 2, 80, 17},       {7, 12, 3, 96, 1000},    {2, 16, 1, 256, 8191},
      {1, 4, 4, 128, 131072},    {512, 32, 8, 128, 32768}, {13, 64, 4, 64, 65},     {8, 32, 8, 128, 64},
  };
}

/// Every (sequence, kv head, split) appears once over both sides' items, each on its own side,
/// when the side's workers walk items w, w + workers, ...
void expect_exact_cover(const TieredAttentionSchedule& s) {
  std::map<std::tuple<int64_t, int32_t, int32_t>, int> seen;
  for (int side = 0; side < 2; ++side) {
    const bool host = side == 0;
    const int64_t items = host ? s.host_items() : s.hbm_items();
    const int64_t workers = int64_t(host ? s.host_ctas : s.hbm_ctas) * (host ? s.host_warps : ta::kWarps);
    int64_t visited = 0;
    for (int64_t w = 0; w < workers; ++w) {
      for (int64_t u = w; u < items; u += workers) {
        ++visited;
        const auto it = s.item(host, u);
        ASSERT_TRUE(host ? it.seq < s.b_host : it.seq >= s.b_host) << s.to_string();
        ASSERT_GE(it.seq, 0);
        ASSERT_LT(it.seq, s.shape.batch);
        ASSERT_GE(it.kv_head, 0);
        ASSERT_LT(it.kv_head, s.shape.num_kv_heads);
        ASSERT_GE(it.split, 0);
        ASSERT_LT(it.split, s.split.num_splits);
        ++seen[{it.seq, it.kv_head, it.split}];
      }
    }
    EXPECT_EQ(visited, items) << s.to_string();
  }
  EXPECT_EQ(int64_t(seen.size()), s.shape.batch * s.shape.num_kv_heads * s.split.num_splits) << s.to_string();
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << s.to_string();
}

TEST(TieredAttentionSchedule, SplitAndWorkspaceDoNotDependOnHostSequences) {
  for (const TieredAttentionShape& sh : shapes()) {
    const dak::TieredAttentionSplit split = dak::choose_tiered_attention_split(sh, kSms);
    const int64_t ws = dak::plan_tiered_attention(sh, 0, kSms).workspace_bytes();
    std::set<int64_t> b_hosts = {0, 1, sh.batch / 8, sh.batch / 4, sh.batch / 2, sh.batch - 1, sh.batch};
    for (int64_t b = 0; b <= std::min<int64_t>(sh.batch, 9); ++b) b_hosts.insert(b);
    for (int64_t b_host : b_hosts) {
      if (b_host < 0) continue;
      const TieredAttentionSchedule s = dak::plan_tiered_attention(sh, b_host, kSms);
      EXPECT_EQ(s.split, split) << "the split must not depend on b_host: " << s.to_string();
      EXPECT_EQ(s.workspace_bytes(), ws) << s.to_string();
      EXPECT_EQ(s.host_items() + s.hbm_items(), sh.batch * sh.num_kv_heads * split.num_splits);
      expect_exact_cover(s);
    }
  }
}

TEST(TieredAttentionSchedule, LongSplitsLoadHbmStepsStaged) {
  // Session 32 (H100): staged steps (whole-step TMA copies, as host warps do) stream splits of
  // >= 512 keys faster than bulk rows (session 16's choice there); shorter splits keep cp.async,
  // whose first step lands sooner. Llama-2-7B batch 8: 512 keys in 4 splits of 128, 4096 in 4 of
  // 1024. A staged HBM CTA needs a host CTA's SMEM: 2 stages at head_dim 128 keep 2 CTAs per SM.
  const TieredAttentionSchedule short_ctx = dak::plan_tiered_attention({8, 32, 32, 128, 512}, 0, kSms);
  EXPECT_EQ(short_ctx.split.split_keys, 128) << short_ctx.to_string();
  EXPECT_FALSE(short_ctx.hbm_staged) << short_ctx.to_string();
  EXPECT_FALSE(short_ctx.hbm_bulk_rows) << short_ctx.to_string();
  EXPECT_EQ(short_ctx.hbm_stages, 3) << short_ctx.to_string();
  const TieredAttentionSchedule long_ctx = dak::plan_tiered_attention({8, 32, 32, 128, 4096}, 3, kSms);
  EXPECT_EQ(long_ctx.split.split_keys, 1024) << long_ctx.to_string();
  EXPECT_TRUE(long_ctx.hbm_staged) << long_ctx.to_string();
  EXPECT_NE(long_ctx.to_string().find("hbm_ctas=" + std::to_string(long_ctx.hbm_ctas) + "x2 stages (staged)"),
            std::string::npos)
      << long_ctx.to_string();
  for (const TieredAttentionShape& sh : shapes()) {
    for (int64_t b_host : {int64_t(0), sh.batch / 2, sh.batch}) {
      const TieredAttentionSchedule s = dak::plan_tiered_attention(sh, b_host, kSms);
      EXPECT_EQ(s.hbm_staged, s.split.split_keys >= dak::tiered_attention::kStagedMinKeys) << s.to_string();
      EXPECT_FALSE(s.hbm_bulk_rows) << s.to_string();
      // 2 CTAs per SM: the rings under the target, the SMEM merge's area within the 2-CTA limit.
      if (sh.head_dim <= 128) EXPECT_LE(s.smem_bytes(), dak::tiered_attention::kSmemTwoCtaBytes) << s.to_string();
    }
  }
}

TEST(TieredAttentionSchedule, TwoOrFourSplitsAreMergedInTheCta) {
  // Llama-2-7B batch 8 at 512 and 4096 keys: 4 splits, merged by the CTA whose 4 warps ran them.
  for (int64_t ctx : {512, 4096}) {
    const TieredAttentionSchedule s = dak::plan_tiered_attention({8, 32, 32, 128, ctx}, 2, kSms);
    EXPECT_EQ(s.split.num_splits, 4) << s.to_string();
    EXPECT_TRUE(s.cta_combine) << s.to_string();
    EXPECT_NE(s.to_string().find("(combine in CTA"), std::string::npos) << s.to_string();
  }
  for (const TieredAttentionShape& sh : shapes()) {
    for (int64_t b_host : {int64_t(0), sh.batch / 2, sh.batch}) {
      const TieredAttentionSchedule s = dak::plan_tiered_attention(sh, b_host, kSms);
      const int32_t n = s.split.num_splits;
      EXPECT_EQ(s.cta_combine, n == 2 || n == 4) << s.to_string();
    }
  }
  // Three splits cannot be merged in a CTA of 4 warps: the rounds would cut pairs.
  TieredAttentionSchedule bad = dak::plan_tiered_attention({2, 8, 8, 128, 48}, 0, kSms);
  bad.split = {16, 3};
  bad.cta_combine = true;
  dak::testing::expect_error([&] { bad.validate(); }, {"merged in the CTA but there are 3"});
  bad.split = {48, 1};
  dak::testing::expect_error([&] { bad.validate(); }, {"merged in the CTA but there are 1"});
  // The merge through SMEM: on in the default plans where it costs no CTA per SM, its area after the
  // rings ([4 warps][G][D + 2] fp32), named in to_string, and only with the CTA merge.
  TieredAttentionSchedule s = dak::plan_tiered_attention({8, 32, 32, 128, 512}, 2, kSms);
  ASSERT_TRUE(s.cta_combine) << s.to_string();
  EXPECT_TRUE(s.smem_merge) << s.to_string();
  EXPECT_LE(s.smem_bytes(), ta::kSmemTargetBytes) << s.to_string();
  s.smem_merge = false;
  const int64_t rings = s.smem_bytes();
  s.smem_merge = true;
  EXPECT_EQ(dak::tiered_attention::merge_smem_bytes(4, 128), 4 * 4 * 130 * 4);
  EXPECT_EQ(s.smem_bytes(), rings + dak::tiered_attention::merge_smem_bytes(1, 128));
  EXPECT_NE(s.to_string().find("(combine in CTA, SMEM)"), std::string::npos) << s.to_string();
  s.validate();
  // Stages a caller forces (dak bench attention --hbm-stages): the merge stays while it fits beside
  // the rings, else the workspace merge takes over.
  TieredAttentionSchedule deep = s;
  dak::refit_smem_merge(deep);
  EXPECT_TRUE(deep.smem_merge) << deep.to_string();
  deep.hbm_stages = 6;  // 6 padded steps a warp: 208896 bytes, + 2080 of merge area: still fits
  dak::refit_smem_merge(deep);
  EXPECT_EQ(deep.smem_merge, ta::hbm_cta_smem_bytes(128, 6) + ta::merge_smem_bytes(1, 128) <= ta::kSmemLimitBytes);
  deep.host_stages = 6;  // a host CTA's 6-stage staging ring: the larger role, over the limit with the merge
  dak::refit_smem_merge(deep);
  EXPECT_FALSE(deep.smem_merge) << deep.to_string();
  deep.validate();
  s.cta_combine = false;
  dak::testing::expect_error([&] { s.validate(); }, {"merged in SMEM but the splits are not merged in the CTA"});
  // GQA at a short context (Llama-3-8B, 64 keys, 4 splits merged in the CTA): its rings and the
  // G = 4 merge area pass the 2-CTA target by 128 bytes but fit the 2-CTA limit itself, which the
  // merge may fill (session 43: 1.0-1.2 % faster Llama-3-8B decode on an H100).
  TieredAttentionSchedule gqa = dak::plan_tiered_attention({8, 32, 8, 128, 64}, 0, kSms);
  ASSERT_TRUE(gqa.cta_combine) << gqa.to_string();
  EXPECT_TRUE(gqa.smem_merge) << gqa.to_string();
  EXPECT_LE(gqa.smem_bytes(), ta::kSmemTwoCtaBytes) << gqa.to_string();
  gqa.smem_merge = false;
  const int64_t gqa_rings = gqa.smem_bytes();
  EXPECT_EQ(gqa_rings + ta::merge_smem_bytes(4, 128), ta::kSmemTargetBytes + 128) << gqa.to_string();
  EXPECT_LE(gqa_rings + ta::merge_smem_bytes(4, 128), ta::kSmemTwoCtaBytes);
  EXPECT_EQ(ta::kSmemTwoCtaBytes, 115200);  // 228 KiB / 2 - 1 KiB reserved - 512 bytes static allowance
  // G = 16 (128 query heads on 8 kv heads) at the same context: the same rings, but a merge area of
  // 33,280 bytes would pass the 2-CTA limit, so the partials go through the workspace.
  const TieredAttentionSchedule g16 = dak::plan_tiered_attention({8, 128, 8, 128, 64}, 0, kSms);
  ASSERT_TRUE(g16.cta_combine) << g16.to_string();
  EXPECT_GT(g16.smem_bytes() + ta::merge_smem_bytes(16, 128), ta::kSmemTwoCtaBytes) << g16.to_string();
  EXPECT_FALSE(g16.smem_merge) << g16.to_string();
  EXPECT_LE(g16.smem_bytes(), ta::kSmemTargetBytes) << g16.to_string();
}

TEST(TieredAttentionSchedule, SplitCoversTheContextInStepsWithoutEmptySplits) {
  for (int64_t ctx : {1, 15, 16, 17, 100, 511, 512, 513, 4096, 32767, 32768, 32769, 131072}) {
    for (int64_t batch : {1, 8, 64, 512}) {
      for (int64_t hkv : {1, 8, 32}) {
        const TieredAttentionShape sh{batch, hkv * 4 > 64 ? hkv : hkv * 4, hkv, 128, ctx};
        const auto sp = dak::choose_tiered_attention_split(sh, kSms);
        EXPECT_EQ(sp.split_keys % ta::kStepKeys, 0);
        EXPECT_GE(sp.split_keys, ta::kStepKeys);
        EXPECT_GE(int64_t(sp.split_keys) * sp.num_splits, ctx);
        EXPECT_LT(int64_t(sp.split_keys) * (sp.num_splits - 1), ctx) << "an always-empty split";
      }
    }
  }
  // Enough items for the GPU when there are few (sequence, kv head) pairs; one split when many.
  const auto few = dak::choose_tiered_attention_split({8, 32, 8, 128, 32768}, kSms);
  EXPECT_GE(8 * 8 * few.num_splits, 4 * kSms) << few.num_splits;
  const auto many = dak::choose_tiered_attention_split({512, 32, 32, 128, 4096}, kSms);
  EXPECT_EQ(many.num_splits, 1);
  // Short contexts (64 keys, 4 steps): batch 1 still splits (32 pairs leave most SMs idle, so the
  // shorter chain wins); Llama-2-7B's batch 8 (256 pairs) takes one split, whose 64 CTAs leave half
  // the SMs to the next GEMM's early CTAs, where 4 splits filled every SM twice (measured on the
  // H100, docs/perf-notes.md session 34: 4.88 against 4.95 ms a step); Llama-3-8B's batch 8 (64
  // pairs) keeps 4. Long contexts keep the makespan rule's split.
  EXPECT_EQ(dak::choose_tiered_attention_split({1, 32, 32, 128, 64}, kSms).num_splits, 4);
  EXPECT_EQ(dak::choose_tiered_attention_split({8, 32, 32, 128, 64}, kSms).num_splits, 1);
  EXPECT_EQ(dak::choose_tiered_attention_split({8, 32, 8, 128, 64}, kSms).num_splits, 4);
  EXPECT_EQ(dak::choose_tiered_attention_split({8, 32, 32, 128, 4096}, kSms).num_splits, 4);
  EXPECT_EQ(dak::choose_tiered_attention_split({1, 32, 32, 128, 4096}, kSms).num_splits, 32);
  // Where the makespan rule gives 2 splits, 4 of at least 8 steps each (session 46, H100: Llama-3-8B
  // 64 x 512 76 -> 80 % of ideal, OPT-30B 8 x 512 77 -> 84 %, 64 x 512 87 -> 89 %; 4096 and 32768
  // keys equal); below 32 steps the 2 stay; 1 split stays 1 (Llama-2-7B 64 x 512: 4 splits measured
  // 3 points slower).
  const auto splits = [](const TieredAttentionShape& sh) {
    const auto sp = dak::choose_tiered_attention_split(sh, kSms);
    return std::pair{sp.num_splits, sp.split_keys};
  };
  EXPECT_EQ(splits({64, 32, 8, 128, 512}), (std::pair{4, 128}));     // Llama-3-8B
  EXPECT_EQ(splits({8, 56, 56, 128, 512}), (std::pair{4, 128}));     // OPT-30B
  EXPECT_EQ(splits({64, 56, 56, 128, 512}), (std::pair{4, 128}));
  EXPECT_EQ(splits({64, 32, 8, 128, 4096}), (std::pair{4, 1024}));
  EXPECT_EQ(splits({64, 32, 8, 128, 32768}), (std::pair{4, 8192}));
  EXPECT_EQ(splits({64, 32, 8, 128, 513}), (std::pair{2, 272}));     // 33 steps: 4 would end with 6
  EXPECT_EQ(splits({64, 32, 8, 128, 560}), (std::pair{4, 144}));     // 35 steps: 9, 9, 9, 8
  EXPECT_EQ(splits({64, 32, 8, 128, 496}), (std::pair{2, 256}));     // 31 steps
  EXPECT_EQ(splits({64, 32, 32, 128, 512}), (std::pair{1, 512}));    // Llama-2-7B
  EXPECT_EQ(splits({512, 32, 8, 128, 512}), (std::pair{1, 512}));
}

TEST(TieredAttentionSchedule, LiveSplitsFollowTheLength) {
  const TieredAttentionShape sh{4, 8, 2, 128, 1000};
  TieredAttentionSchedule s = dak::plan_tiered_attention(sh, 1, kSms);
  s.split = {128, 8};
  EXPECT_EQ(s.live_splits(0), 1);  // split 0 writes the zero row
  EXPECT_EQ(s.live_splits(-5), 1);
  EXPECT_EQ(s.live_splits(1), 1);
  EXPECT_EQ(s.live_splits(128), 1);
  EXPECT_EQ(s.live_splits(129), 2);
  EXPECT_EQ(s.live_splits(1000), 8);
  EXPECT_EQ(s.live_splits(5000), 8);  // clamped to max_ctx
}

TEST(TieredAttentionSchedule, DefaultCongestionControlStaysUnderTheCap) {
  const dak::TieredAttentionLinkLimits limits = dak::tiered_attention_link_limits(dak::HardwareProfile::h200_default());
  const dak::HardwareProfile prof = dak::HardwareProfile::h200_default();
  EXPECT_EQ(limits.inflight_cap_bytes, std::min<int64_t>(prof.host_inflight_cap_bytes, 512 << 10));
  EXPECT_EQ(limits.cta_inflight_cap_bytes, prof.max_stages_per_cta * prof.host_stage_bytes);
  // The measured best at D = 128 (session 7): 8 host CTAs x 2 steps of 32 KiB, 512 KiB in flight.
  const TieredAttentionSchedule xstar = dak::plan_tiered_attention({512, 32, 32, 128, 4096}, 6, kSms, 2, limits);
  EXPECT_EQ(xstar.host_ctas, 8) << xstar.to_string();
  EXPECT_EQ(xstar.host_stages, 2) << xstar.to_string();
  EXPECT_EQ(xstar.host_inflight_bytes(), 512 << 10);
  for (int64_t d : {64, 80, 96, 128, 256}) {
    for (int64_t b_host : {0, 1, 7, 32, 64}) {
      const TieredAttentionShape sh{64, 32, 8, d, 4096};
      const TieredAttentionSchedule s = dak::plan_tiered_attention(sh, b_host, kSms, 2, limits);
      s.validate();
      EXPECT_LE(s.smem_bytes(), ta::kSmemLimitBytes) << s.to_string();
      EXPECT_GE(s.hbm_stages, 2) << s.to_string();
      if (d <= 128) EXPECT_LE(s.smem_bytes(), ta::kSmemTwoCtaBytes) << "2 CTAs per SM: " << s.to_string();
      if (b_host == 0) {
        EXPECT_EQ(s.host_ctas, 0);
        EXPECT_EQ(s.host_inflight_bytes(), 0);
      } else {
        EXPECT_GE(s.host_ctas, 1);
        EXPECT_LE(s.host_inflight_bytes(), limits.inflight_cap_bytes) << s.to_string();
        const int64_t cta_inflight = int64_t(s.host_warps) * s.host_stages * ta::staging_step_bytes(d);
        EXPECT_LE(cta_inflight, limits.cta_inflight_cap_bytes) << s.to_string();
        // Near the cap: one more host CTA would exceed it, or the host items have no warp left for it.
        const int64_t host_ctas_needed = (s.host_items() + s.host_warps - 1) / s.host_warps;
        EXPECT_TRUE((s.host_ctas + 1) * cta_inflight > limits.inflight_cap_bytes || s.host_ctas == host_ctas_needed)
            << s.to_string();
      }
      if (b_host == 64) {
        EXPECT_EQ(s.hbm_ctas, 0);
      } else {
        // The HBM side takes every CTA slot (2 per SM) the host CTAs leave, unless the HBM items'
        // warps need fewer CTAs.
        const int64_t warps_needed = (s.hbm_items() + ta::kWarps - 1) / ta::kWarps;
        EXPECT_EQ(s.hbm_ctas, std::min<int64_t>(kSms * 2 - s.host_ctas, warps_needed)) << s.to_string();
        EXPECT_LE(s.host_ctas + s.hbm_ctas, kSms * 2) << s.to_string();
      }
    }
  }
  // A per-CTA cap of one stage gives one stage per host CTA and more host CTAs.
  const TieredAttentionSchedule tight =
      dak::plan_tiered_attention({64, 32, 8, 128, 4096}, 8, kSms, 2, {256 << 10, 32 << 10});
  EXPECT_EQ(tight.host_stages, 1);
  EXPECT_EQ(tight.host_ctas, 8);
  // Few host items: no more host CTAs than their warps can use.
  const TieredAttentionSchedule one = dak::plan_tiered_attention({8, 8, 1, 128, 16}, 1, kSms);
  EXPECT_EQ(one.host_items(), 1);
  EXPECT_EQ(one.host_ctas, 1);
}

TEST(TieredAttentionSchedule, HbmCtasFillTheSlotsTheHostCtasLeave) {
  // Session 44 (H100): Llama-2-7B batch 64 at 4096 keys with one host sequence read 80.5 % of ideal.
  // Its 8 host CTAs left 8 CTA slots empty, so 2016 HBM items (63 x 32, one split) ran on 248 CTAs'
  // 992 warps, and 32 of them ran a third item. Filling every slot gives 256 CTAs, 1024 warps and
  // at most 2 items a warp.
  const TieredAttentionSchedule s = dak::plan_tiered_attention({64, 32, 32, 128, 4096}, 1, kSms, 2);
  EXPECT_EQ(s.split.num_splits, 1) << s.to_string();
  EXPECT_EQ(s.host_ctas, 8) << s.to_string();
  EXPECT_EQ(s.hbm_ctas, 256) << s.to_string();
  EXPECT_EQ(s.hbm_items(), 2016);
  EXPECT_EQ((s.hbm_items() + s.hbm_ctas * ta::kWarps - 1) / (s.hbm_ctas * ta::kWarps), 2) << s.to_string();
  // One CTA an SM: the host CTAs take their slots and the HBM side the rest.
  const TieredAttentionSchedule one = dak::plan_tiered_attention({64, 32, 32, 128, 4096}, 1, kSms, 1);
  EXPECT_EQ(one.host_ctas + one.hbm_ctas, kSms) << one.to_string();
  // Without host sequences nothing changes: every slot is the HBM side's.
  EXPECT_EQ(dak::plan_tiered_attention({64, 32, 32, 128, 4096}, 0, kSms, 2).hbm_ctas, 2 * kSms);
  // dak bench attention --host-ctas: the HBM side is counted again by the same rule, so it takes the
  // slots the host CTAs leave whether they are more or fewer than the plan's; at least 1 CTA.
  TieredAttentionSchedule more = s;
  dak::apply_attention_bench_overrides(more, 20, 0, 0, kSms, 2);
  EXPECT_EQ(more.host_ctas, 20);
  EXPECT_EQ(more.hbm_ctas, 244);
  TieredAttentionSchedule fewer = s;
  dak::apply_attention_bench_overrides(fewer, 1, 0, 0, kSms, 2);
  EXPECT_EQ(fewer.host_ctas, 1);
  EXPECT_EQ(fewer.hbm_ctas, 263);
  EXPECT_EQ(fewer.host_ctas + fewer.hbm_ctas, 2 * kSms);
  TieredAttentionSchedule all = s;
  dak::apply_attention_bench_overrides(all, 1024, 0, 0, kSms, 2);
  EXPECT_EQ(all.host_ctas, 1024);
  EXPECT_EQ(all.hbm_ctas, 1);
  // Capped by the HBM items' warps: 5 HBM sequences x 32 kv heads x 3 splits = 480 items, 120 CTAs.
  TieredAttentionSchedule few_items = dak::plan_tiered_attention({10, 32, 32, 128, 512}, 5, kSms, 2);
  dak::apply_attention_bench_overrides(few_items, 2, 0, 0, kSms, 2);
  EXPECT_EQ(few_items.hbm_ctas, (few_items.hbm_items() + ta::kWarps - 1) / ta::kWarps) << few_items.to_string();
  EXPECT_EQ(dak::tiered_attention_hbm_ctas(few_items, kSms, 2), few_items.hbm_ctas);
  // No HBM items: no HBM CTA.
  EXPECT_EQ(dak::tiered_attention_hbm_ctas(dak::plan_tiered_attention({8, 32, 32, 128, 512}, 8, kSms, 2), kSms, 2), 0);
}

TEST(TieredAttentionSchedule, BenchPointsArePlannedForOneCtaAnSmWhereTheirRingsHoldOnlyOne) {
  // dak bench attention (and its --dry-run) plan a point for 2 CTAs an SM with the overrides, and
  // again for 1 where the occupancy of that schedule is 1.
  const dak::TieredAttentionShape sh{64, 32, 32, 128, 4096};
  int asked = 0;
  const auto two = [&](const TieredAttentionSchedule&) { return ++asked, 2; };
  const TieredAttentionSchedule plain = dak::plan_attention_bench_point(sh, 1, kSms, {}, 0, 0, 0, two);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(plain.to_string(), dak::plan_tiered_attention(sh, 1, kSms, 2).to_string());
  // Overrides as apply_attention_bench_overrides gives them.
  TieredAttentionSchedule expected = dak::plan_tiered_attention(sh, 1, kSms, 2);
  dak::apply_attention_bench_overrides(expected, 20, 0, 3, kSms, 2);
  EXPECT_EQ(dak::plan_attention_bench_point(sh, 1, kSms, {}, 20, 0, 3, two).to_string(), expected.to_string());
  // An occupancy of 1: planned for one CTA an SM, so the HBM side takes the slots of one CTA an SM.
  const TieredAttentionSchedule one = dak::plan_attention_bench_point(
      sh, 1, kSms, {}, 0, 0, 0, [](const TieredAttentionSchedule&) { return 1; });
  EXPECT_EQ(one.to_string(), dak::plan_tiered_attention(sh, 1, kSms, 1).to_string());
  EXPECT_EQ(one.host_ctas + one.hbm_ctas, kSms) << one.to_string();
  // Shallow rings that 3 CTAs an SM hold: planned for 3 (the engine's tiered_attention_schedule
  // does the same); none: refused.
  const TieredAttentionSchedule three = dak::plan_attention_bench_point(
      sh, 1, kSms, {}, 0, 0, 0, [](const TieredAttentionSchedule&) { return 3; });
  EXPECT_EQ(three.to_string(), dak::plan_tiered_attention(sh, 1, kSms, 3).to_string());
  EXPECT_EQ(three.host_ctas + three.hbm_ctas, 3 * kSms) << three.to_string();
  EXPECT_THROW(dak::plan_attention_bench_point(sh, 1, kSms, {}, 0, 0, 0, [](const TieredAttentionSchedule&) { return 0; }),
               dak::Error);
  // An override the plan cannot take is refused by validate(): 9 host stages.
  EXPECT_THROW(dak::plan_attention_bench_point(sh, 1, kSms, {}, 0, 9, 0, two), dak::Error);
}

TEST(TieredAttentionSchedule, FewHostItemsRunOnFewerWarpsWithDeeperRings) {
  // Session 45 (H100, DAK_ATT_TRACE): at Llama-3-8B's balance point (1 of 64 sequences on the host,
  // 8 kv heads x 2 splits = 16 host items at 4096 keys) the 4-warp plan had 4 host CTAs x 4 warps x
  // 2 steps of 8 KiB (256 KiB in flight), and its host warps ended last (384 us; the HBM side's last
  // at 351). Two warps a CTA with 4 steps each keep 512 KiB in flight in the same SMEM budget.
  // Since session 46 4096 keys run in 4 splits (32 host items: 8 CTAs x 4 warps at the cap), so
  // the 16 items of 2 splits are shown at 496 keys (31 steps: too few for 4 splits of 8).
  const TieredAttentionSchedule at4096 = dak::plan_tiered_attention({64, 32, 8, 128, 4096}, 1, kSms, 2);
  EXPECT_EQ(at4096.split.num_splits, 4) << at4096.to_string();
  EXPECT_EQ(at4096.host_warps, ta::kWarps) << at4096.to_string();
  EXPECT_EQ(at4096.host_inflight_bytes(), 512 << 10) << at4096.to_string();
  const TieredAttentionShape l3{64, 32, 8, 128, 496};
  const TieredAttentionSchedule s = dak::plan_tiered_attention(l3, 1, kSms, 2);
  EXPECT_EQ(s.split.num_splits, 2) << s.to_string();
  EXPECT_EQ(s.host_items(), 16);
  EXPECT_EQ(s.host_warps, 2) << s.to_string();
  EXPECT_EQ(s.host_stages, 4) << s.to_string();
  EXPECT_EQ(s.host_ctas, 8) << s.to_string();
  EXPECT_EQ(s.host_inflight_bytes(), 512 << 10) << s.to_string();
  EXPECT_LE(s.smem_bytes(), ta::kSmemTwoCtaBytes) << "still 2 CTAs an SM: " << s.to_string();
  EXPECT_LE(ta::host_cta_smem_bytes(128, 4, 2), ta::host_cta_smem_bytes(128, 2)) << "the 4-warp ring's SMEM or less";
  EXPECT_TRUE(contains(s.to_string(), "host_ctas=8x4 stages (2 warps)")) << s.to_string();
  // The HBM side keeps one round: 1008 items on 252 CTAs' 1008 warps.
  EXPECT_EQ(s.hbm_ctas, 252) << s.to_string();
  // S = 1, 8 host items (Llama-3-8B batch 512 at 512 keys, one host sequence): 1 warp x 8 steps
  // would need 8 host CTAs, 6 more than the 4-warp plan's 2, taken from the HBM side (262 -> 256
  // CTAs; measured 0.4-1.0 points slower on an H100, session 45): the 4-warp plan stays.
  const TieredAttentionSchedule b512 = dak::plan_tiered_attention({512, 32, 8, 128, 512}, 1, kSms, 2);
  EXPECT_EQ(b512.split.num_splits, 1) << b512.to_string();
  EXPECT_EQ(b512.host_warps, ta::kWarps) << b512.to_string();
  EXPECT_EQ(b512.host_ctas, 2) << b512.to_string();
  EXPECT_EQ(b512.hbm_ctas, 262) << b512.to_string();
  // With slots to spare (batch 8 at 64 keys on 16 SMs: one split, 7 HBM sequences = 56 items need 14
  // of the 32 slots) the same 8 host items run on 8 CTAs x 1 warp x 8 steps.
  const TieredAttentionSchedule one = dak::plan_tiered_attention({8, 32, 8, 128, 64}, 1, 16, 2);
  EXPECT_EQ(one.split.num_splits, 1) << one.to_string();
  EXPECT_EQ(one.host_warps, 1) << one.to_string();
  EXPECT_EQ(one.host_stages, 8) << one.to_string();
  EXPECT_EQ(one.host_ctas, 8) << one.to_string();
  EXPECT_EQ(one.hbm_ctas, 14) << one.to_string();
  EXPECT_EQ(one.host_inflight_bytes(), 512 << 10) << one.to_string();
  EXPECT_TRUE(contains(one.to_string(), "(1 warp)")) << one.to_string();
  // Enough host items for 4 warps at the cap (Llama-2-7B: 32 kv heads): the 4-warp plan stays.
  const TieredAttentionSchedule mha = dak::plan_tiered_attention({64, 32, 32, 128, 4096}, 1, kSms, 2);
  EXPECT_EQ(mha.host_warps, ta::kWarps) << mha.to_string();
  EXPECT_EQ(mha.host_ctas, 8) << mha.to_string();
  EXPECT_EQ(mha.host_inflight_bytes(), 512 << 10) << mha.to_string();
  EXPECT_FALSE(contains(mha.to_string(), "warps)")) << mha.to_string();
  // 48 host items: 2 rounds on 8 x 4 warps; 2 warps a CTA would need 3, so 4 warps stay.
  const TieredAttentionSchedule rounds = dak::plan_tiered_attention(l3, 3, kSms, 2);
  EXPECT_EQ(rounds.host_items(), 48);
  EXPECT_EQ(rounds.host_warps, ta::kWarps) << rounds.to_string();
  // 4 splits merged in the CTA: a host CTA must hold whole pairs, so 4 warps (Llama-3-8B batch 8
  // at 64 keys: 4 splits; 1 host sequence = 32 items, 4-warp plan at the cap anyway).
  const TieredAttentionSchedule four = dak::plan_tiered_attention({8, 32, 8, 128, 64}, 1, kSms, 2);
  if (four.cta_combine) EXPECT_EQ(four.host_warps % four.split.num_splits, 0) << four.to_string();
  // No host item: 4 warps, no host CTA.
  EXPECT_EQ(dak::plan_tiered_attention(l3, 0, kSms, 2).host_warps, ta::kWarps);
  // dak bench attention's host flags count host CTAs of 4 warps: it plans with host_warps_below_4
  // off under them, and with the plan's host_warps otherwise.
  const dak::TieredAttentionLinkLimits plain{};
  EXPECT_TRUE(dak::attention_bench_limits(plain, 0, 0).host_warps_below_4);
  EXPECT_TRUE(dak::attention_bench_limits(plain, 0, 0).inflight_cap_bytes == plain.inflight_cap_bytes);
  for (const auto& [ctas, stages] : {std::pair{16, 0}, std::pair{0, 3}, std::pair{4, 2}}) {
    const dak::TieredAttentionLinkLimits l = dak::attention_bench_limits(plain, ctas, stages);
    EXPECT_FALSE(l.host_warps_below_4);
    TieredAttentionSchedule o = dak::plan_tiered_attention(l3, 1, kSms, 2, l);
    EXPECT_EQ(o.host_warps, ta::kWarps) << o.to_string();
    EXPECT_EQ(o.host_ctas, 4) << "the 4-warp plan: " << o.to_string();
    EXPECT_EQ(o.host_stages, 2) << o.to_string();
    dak::apply_attention_bench_overrides(o, ctas, stages, 0, kSms, 2);
    o.validate();
    EXPECT_EQ(o.host_ctas, ctas > 0 ? ctas : 4) << o.to_string();
    EXPECT_EQ(o.host_stages, stages > 0 ? stages : 2) << o.to_string();
  }
  TieredAttentionSchedule hbm_only = s;
  dak::apply_attention_bench_overrides(hbm_only, 0, 0, 3, kSms, 2);
  EXPECT_EQ(hbm_only.host_warps, 2) << "an HBM ring override keeps the host side's plan";
}

TEST(TieredAttentionSchedule, PaddedRowsKeepLdmatrixConflictFree) {
  // ldmatrix reads 8 rows x 16 bytes per matrix: the rows must start in 8 distinct 16-byte bank
  // groups (mod 128 bytes). Unpadded rows of 128/256/512 bytes would all start in group 0.
  for (int64_t d : {64, 80, 96, 128, 256}) {
    const int64_t row_bytes = (d + ta::kRowPad) * 2;
    std::set<int64_t> groups;
    for (int64_t r = 0; r < 8; ++r) groups.insert((r * row_bytes % 128) / 16);
    EXPECT_EQ(groups.size(), 8u) << "D=" << d;
    EXPECT_EQ(ta::padded_step_bytes(d) % 128, 0) << "padded steps keep 128-byte alignment, D=" << d;
    EXPECT_EQ(ta::staging_step_bytes(d) % 16, 0) << "TMA needs 16-byte aligned destinations, D=" << d;
  }
  EXPECT_EQ(ta::cta_stage_bytes(128), 32768);  // the profile's host_link.stage_bytes
  EXPECT_EQ(ta::host_cta_smem_bytes(128, 2), 4 * (8704 + 2 * 8192 + 16));
}

TEST(TieredAttentionSchedule, StagedHbmStepsTakeAHostCtasSmemAndSayIt) {
  // hbm_staged: the HBM warps land whole steps in a staging ring as host warps do, so an HBM CTA
  // needs a host CTA's SMEM for its stages; the schedule's text names the path.
  TieredAttentionSchedule s = dak::plan_tiered_attention({8, 32, 32, 128, 4096}, 0, kSms);
  s.smem_merge = false;  // the rings alone
  s.hbm_staged = false;
  s.hbm_bulk_rows = true;
  EXPECT_EQ(s.smem_bytes(), ta::hbm_cta_smem_bytes(128, s.hbm_stages));
  EXPECT_NE(s.to_string().find("(bulk rows)"), std::string::npos) << s.to_string();
  s.hbm_staged = true;
  s.hbm_stages = 2;
  s.validate();
  EXPECT_EQ(s.smem_bytes(), ta::host_cta_smem_bytes(128, 2));
  EXPECT_LE(s.smem_bytes(), ta::kSmemTargetBytes) << "2 CTAs per SM at 2 stages";
  EXPECT_NE(s.to_string().find("(staged)"), std::string::npos) << s.to_string();
  EXPECT_EQ(s.to_string().find("bulk rows"), std::string::npos) << "staged overrides bulk rows: " << s.to_string();
  s.hbm_stages = 8;
  s.shape.head_dim = 256;
  dak::testing::expect_error([&] { s.validate(); }, {"bytes of SMEM per CTA exceed"});
}

TEST(TieredAttentionSchedule, PipeStateWrapsAndFlipsThePhase) {
  ta::PipeState p{3, 0, 0};
  const int expect_stage[] = {1, 2, 0, 1, 2, 0, 1};
  const uint32_t expect_phase[] = {0, 0, 1, 1, 1, 0, 0};
  for (int i = 0; i < 7; ++i) {
    p.advance();
    EXPECT_EQ(p.stage, expect_stage[i]) << i;
    EXPECT_EQ(p.phase, expect_phase[i]) << i;
  }
  ta::PipeState one{1, 0, 0};
  one.advance();
  EXPECT_EQ(one.stage, 0);
  EXPECT_EQ(one.phase, 1u);
}

TEST(TieredAttentionSchedule, RefusesUnsupportedShapesAndSchedules) {
  using dak::testing::expect_error;
  expect_error([] { dak::check_tiered_attention_shape({8, 32, 32, 72, 512}); }, {"head_dim 72"});
  expect_error([] { dak::check_tiered_attention_shape({8, 32, 1, 128, 512}); }, {"at most 16"});
  expect_error([] { dak::check_tiered_attention_shape({8, 30, 8, 128, 512}); }, {"multiple of Hkv"});
  expect_error([] { dak::check_tiered_attention_shape({0, 32, 8, 128, 512}); }, {"positive"});
  expect_error([] { dak::check_tiered_attention_shape({8, 32, 8, 128, 0}); }, {"positive"});
  expect_error([] { dak::plan_tiered_attention({8, 32, 8, 128, 512}, 9, kSms); }, {"b_host 9"});
  const TieredAttentionSchedule good = dak::plan_tiered_attention({8, 32, 8, 128, 512}, 4, kSms);
  auto bad = good;
  bad.host_ctas = 0;
  expect_error([&] { bad.validate(); }, {"host CTAs", "at least one CTA"});
  bad = good;
  bad.hbm_stages = 9;
  expect_error([&] { bad.validate(); }, {"stages"});
  bad = good;
  bad.host_warps = ta::kWarps;
  bad.host_stages = 8;
  expect_error([&] { bad.validate(); }, {"SMEM"});
  bad = good;
  bad.host_warps = 3;
  expect_error([&] { bad.validate(); }, {"3 warps per host CTA", "1, 2 or 4"});
  // Splits merged in the CTA need whole (sequence, kv head) pairs in a host CTA.
  TieredAttentionSchedule pairs = dak::plan_tiered_attention({64, 32, 8, 128, 496}, 1, kSms);
  ASSERT_TRUE(pairs.cta_combine) << pairs.to_string();
  ASSERT_EQ(pairs.split.num_splits, 2) << pairs.to_string();
  pairs.host_warps = 1;
  expect_error([&] { pairs.validate(); }, {"1 warp for 2 splits", "multiple of num_splits"});
  TieredAttentionSchedule quads = dak::plan_tiered_attention({64, 32, 8, 128, 4096}, 1, kSms);
  ASSERT_EQ(quads.split.num_splits, 4) << quads.to_string();
  quads.host_warps = 2;
  expect_error([&] { quads.validate(); }, {"2 warps for 4 splits", "multiple of num_splits"});
  bad = good;
  bad.split.split_keys = 24;
  expect_error([&] { bad.validate(); }, {"split"});
  bad = good;
  bad.split.num_splits += 1;
  expect_error([&] { bad.validate(); }, {"split"});
}

}  // namespace
