// HbmArena: 256-byte aligned slices, exhaustion and over-subscription as dak::Error with the
// amounts, reset and move.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/hbm_arena.h"
#include "gpu_test_util.h"

namespace {

using dak::gpu::HbmArena;

TEST(HbmArena, SlicesAreAlignedDisjointAndWritable) {
  DAK_REQUIRE_GPU_OR_SKIP();
  HbmArena arena(1 << 20, "test arena");
  EXPECT_EQ(arena.capacity(), uint64_t(1) << 20);
  const uintptr_t base = reinterpret_cast<uintptr_t>(arena.base());
  uintptr_t prev_end = base;
  for (uint64_t bytes : {1ull, 255ull, 256ull, 257ull, 0ull, 4099ull, 3ull}) {
    void* p = arena.allocate(bytes, "slice");
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(a % HbmArena::kAlignment, 0u) << "bytes=" << bytes;
    EXPECT_GE(a, prev_end) << "slices overlap, bytes=" << bytes;
    prev_end = a + bytes;
    if (bytes > 0) DAK_CUDA_CHECK(cudaMemset(p, 0x5a, bytes));  // the memory is really there
  }
  EXPECT_EQ(arena.used(), HbmArena::aligned_size(1) + 256 + 256 + 512 + 0 + HbmArena::aligned_size(4099) + 256);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  arena.reset();
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_EQ(arena.allocate(16, "after reset"), arena.base());
}

TEST(HbmArena, FullArenaThrowsWithSizes) {
  DAK_REQUIRE_GPU_OR_SKIP();
  HbmArena arena(4096, "small arena");
  arena.allocate(4000, "first");
  try {
    arena.allocate(512, "second tensor");
    ADD_FAILURE() << "expected dak::Error";
  } catch (const dak::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("second tensor"), std::string::npos) << msg;
    EXPECT_NE(msg.find("small arena"), std::string::npos) << msg;
  }
  EXPECT_EQ(arena.used(), 4096u);  // the failed request changed nothing
}

TEST(HbmArena, RequestBeyondFreeHbmIsRefusedBeforeAllocating) {
  DAK_REQUIRE_GPU_OR_SKIP();
  size_t free_b = 0, total_b = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const uint64_t too_much = uint64_t(total_b) + (uint64_t(1) << 30);
  try {
    HbmArena arena(too_much, "an impossible model");
    ADD_FAILURE() << "expected dak::Error";
  } catch (const dak::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("an impossible model"), std::string::npos) << msg;
    EXPECT_NE(msg.find("needs " + dak::gpu::format_gib(HbmArena::aligned_size(too_much))), std::string::npos) << msg;
    EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  }
  // Another test process may hold memory for a moment (ctest -j runs gpu tests side by side): a leak
  // by the refused arena is permanent, a neighbour's allocation is not, so wait up to 5 s for the
  // free memory to come back.
  size_t free_after = 0;
  for (int tries = 0; tries < 50; ++tries) {
    DAK_CUDA_CHECK(cudaMemGetInfo(&free_after, &total_b));
    if (free_after + (64u << 20) >= free_b) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(free_after + (64u << 20), free_b) << "the refused arena left memory allocated";
}

TEST(HbmArena, MoveTransfersOwnership) {
  DAK_REQUIRE_GPU_OR_SKIP();
  HbmArena a(8192, "a");
  void* base = a.base();
  a.allocate(100, "x");
  HbmArena b(std::move(a));
  EXPECT_EQ(b.base(), base);
  EXPECT_EQ(b.used(), 256u);
  EXPECT_EQ(a.base(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(a.capacity(), 0u);
  HbmArena c;
  c = std::move(b);
  EXPECT_EQ(c.base(), base);
  EXPECT_EQ(c.capacity(), 8192u);
}

}  // namespace
