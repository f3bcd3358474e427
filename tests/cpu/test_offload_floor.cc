// The offloaded step floor of dak bench (core/offload_floor.h): the HBM and host-link terms, the
// staged path's second HBM pass and copy-engine rate, and bad inputs refused.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/offload_floor.h"

namespace dak {
namespace {

constexpr double kBg = 4.6e12, kBh = 51.4e9, kBce = 55.5e9;

TEST(OffloadFloor, AllInHbmIsBytesOverBg) {
  EXPECT_DOUBLE_EQ(step_floor_s({13e9, 0, 0}, kBg, kBh, kBce), 13e9 / kBg);
}

TEST(OffloadFloor, DirectBytesAtTheSmRateStagedAtTheCopyEngineRate) {
  // Link-bound: 4 GB direct + 2 GB staged cross at their own rates, one after the other.
  const double t = step_floor_s({9e9, 4e9, 2e9}, kBg, kBh, kBce);
  EXPECT_DOUBLE_EQ(t, 4e9 / kBh + 2e9 / kBce);
  // Staged instead of direct: faster by B_ce / B_h, never below the copy engine's time.
  EXPECT_LT(step_floor_s({9e9, 0, 6e9}, kBg, kBh, kBce), step_floor_s({9e9, 6e9, 0}, kBg, kBh, kBce));
  EXPECT_DOUBLE_EQ(step_floor_s({9e9, 0, 6e9}, kBg, kBh, kBce), 6e9 / kBce);
}

TEST(OffloadFloor, StagedBytesCrossHbmTwice) {
  // Few host bytes: HBM-bound, and each staged byte is written and read back in HBM.
  EXPECT_DOUBLE_EQ(step_floor_s({13e9, 0, 0.01e9}, kBg, kBh, kBce), (13e9 + 0.02e9) / kBg);
}

TEST(OffloadFloor, BadInputsAreRefused) {
  EXPECT_THROW(step_floor_s({-1, 0, 0}, kBg, kBh, kBce), Error);
  EXPECT_THROW(step_floor_s({1, 0, 0}, 0, kBh, kBce), Error);
  EXPECT_THROW(step_floor_s({1, 0, 0}, kBg, kBh, -1), Error);
}

}  // namespace
}  // namespace dak
