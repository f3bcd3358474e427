// The paired row order of q / k heads (core/rope_layout.h): a bijection within each head whose
// pair (x[i], x[i + D/2]) lands on rows 8 apart of one 16-row slab (rows r and r + 8 of a wgmma
// warp's fragment), and whose inverse and pair index agree with it.
#include <gtest/gtest.h>

#include <vector>

#include "core/model_config.h"
#include "core/rope_layout.h"

namespace {

namespace rl = dak::rope_layout;

TEST(RopeLayout, PairedRowsAreABijectionWithEachPairInOneSlab) {
  // Head dims, and gate_up's 2I of SmolLM2 (1536) and Llama-2-7B (11008) as one "head".
  for (int64_t D : {16, 64, 80, 96, 128, 256, 2 * 1536, 2 * 11008}) {
    ASSERT_TRUE(rl::pairable(D)) << D;
    std::vector<int> hits(static_cast<size_t>(D), 0);
    for (int64_t i = 0; i < D; ++i) {
      const int64_t p = rl::paired_row(i, D);
      ASSERT_GE(p, 0) << D << " " << i;
      ASSERT_LT(p, D) << D << " " << i;
      ++hits[size_t(p)];
      EXPECT_EQ(rl::natural_index(p, D), i) << "D " << D << " row " << p;
    }
    for (int64_t p = 0; p < D; ++p) EXPECT_EQ(hits[size_t(p)], 1) << "D " << D << " row " << p;
    for (int64_t i = 0; i < D / 2; ++i) {
      const int64_t lo = rl::paired_row(i, D), hi = rl::paired_row(i + D / 2, D);
      EXPECT_EQ(hi, lo + 8) << "D " << D << " pair " << i;
      EXPECT_EQ(lo / 16, hi / 16) << "D " << D << " pair " << i << " straddles a slab";
      EXPECT_TRUE(rl::is_first_of_pair(lo));
      EXPECT_FALSE(rl::is_first_of_pair(hi));
      EXPECT_EQ(rl::pair_of_row(lo), i);
      EXPECT_EQ(rl::pair_of_row(hi), i);
    }
  }
  // Llama's D = 128: pair 0 (x[0], x[64]) on rows 0 and 8, pair 9 (x[9], x[73]) on rows 17 and 25.
  EXPECT_EQ(rl::paired_row(0, 128), 0);
  EXPECT_EQ(rl::paired_row(64, 128), 8);
  EXPECT_EQ(rl::paired_row(9, 128), 17);
  EXPECT_EQ(rl::paired_row(73, 128), 25);
  EXPECT_FALSE(rl::pairable(20));
  EXPECT_FALSE(rl::pairable(0));
}

TEST(RopeLayout, GateUpIsPairedForGatedMlpsOfWholeSlabs) {
  dak::ModelConfig c;
  c.gated_mlp = true;
  c.intermediate_size = 11008;  // Llama-2-7B: gate row j and up row j on rows 8 apart
  EXPECT_TRUE(rl::engine_pairs_gate_up(c));
  EXPECT_EQ(rl::paired_row(11008 + 9, 2 * 11008), rl::paired_row(9, 2 * 11008) + 8);
  c.intermediate_size = 1100;  // I % 8 != 0: a pair would straddle a 16-row slab
  EXPECT_FALSE(rl::engine_pairs_gate_up(c));
  c.intermediate_size = 11008;
  c.gated_mlp = false;  // OPT's fc1 has no pairs
  EXPECT_FALSE(rl::engine_pairs_gate_up(c));
}

}  // namespace
