// PinnedHostArena: page-rounded (never power-of-two) capacity, 256-byte aligned slices that end
// within the capacity asked for, exhaustion and impossible sizes as dak::Error, the GPU reading
// the arena through its host pointer (a kernel and a copy), move, and unpinning on destruction.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu_test_util.h"

namespace {

using dak::gpu::PinnedHostArena;

uint64_t page_bytes() { return uint64_t(sysconf(_SC_PAGESIZE)); }

uint64_t round_to_page(uint64_t b) { return (b + page_bytes() - 1) / page_bytes() * page_bytes(); }

/// Whether CUDA knows `p` as pinned host memory mapped at the same address on the device.
bool is_pinned_and_mapped(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeHost && a.devicePointer == p && a.hostPointer == p;
}

TEST(PinnedHostArena, CapacityIsRoundedToThePageOnly) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // 5 MiB + 12345 bytes: a power-of-two rounding would map 8 MiB.
  const uint64_t want = (5ull << 20) + 12345;
  PinnedHostArena arena(want, "test arena");
  EXPECT_EQ(arena.capacity(), want);
  EXPECT_EQ(arena.mapped_bytes(), round_to_page(want));
  EXPECT_LT(arena.mapped_bytes(), want + page_bytes());
  EXPECT_EQ(arena.used(), 0u);
  ASSERT_NE(arena.base(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.base()) % page_bytes(), 0u);
  EXPECT_GT(arena.pin_seconds(), 0.0);
  EXPECT_TRUE(is_pinned_and_mapped(arena.base()));
  // The last byte of the mapping is pinned too.
  EXPECT_TRUE(is_pinned_and_mapped(static_cast<char*>(arena.base()) + arena.mapped_bytes() - 1));
}

TEST(PinnedHostArena, SlicesAreAlignedDisjointAndEndWithinTheCapacity) {
  DAK_REQUIRE_GPU_OR_SKIP();
  PinnedHostArena arena(4096 + 1, "slices");
  char* base = static_cast<char*>(arena.base());
  EXPECT_EQ(arena.allocate(1, "a"), base);
  EXPECT_EQ(arena.used(), 1u);
  EXPECT_EQ(arena.allocate(255, "b"), base + 256);
  EXPECT_EQ(arena.used(), 511u);
  EXPECT_EQ(arena.allocate(0, "empty"), base + 512);  // aligned, takes nothing
  EXPECT_EQ(arena.used(), 511u);
  EXPECT_EQ(arena.allocate(300, "c"), base + 512);
  EXPECT_EQ(arena.used(), 812u);
  EXPECT_EQ(arena.allocate(2400, "d"), base + 1024);  // [1024, 3424)
  // A slice may end exactly at the capacity: 4096 + 1 bytes hold [3840, 4096) and then [4096, 4097).
  EXPECT_EQ(arena.allocate(256, "e"), base + 3584);
  EXPECT_EQ(arena.allocate(256, "f"), base + 3840);
  EXPECT_EQ(arena.allocate(1, "last byte"), base + 4096);
  EXPECT_EQ(arena.used(), 4097u);
  std::memset(base, 0x5a, arena.used());  // all of it is there
  for (uint64_t bytes : {1ull, 256ull}) {
    try {
      arena.allocate(bytes, "one too many");
      ADD_FAILURE() << "expected dak::Error for " << bytes << " more bytes";
    } catch (const dak::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("one too many"), std::string::npos) << msg;
      EXPECT_NE(msg.find("slices"), std::string::npos) << msg;
    }
  }
  EXPECT_EQ(arena.used(), 4097u);  // the failed requests changed nothing
  arena.reset();
  EXPECT_EQ(arena.allocate(4097, "everything"), base);
}

TEST(PinnedHostArena, OverAllocationThrows) {
  DAK_REQUIRE_GPU_OR_SKIP();
  PinnedHostArena arena(1 << 20, "small arena");
  // More than the capacity, although the page-rounded mapping could hold it on 64 KiB pages.
  EXPECT_THROW(arena.allocate((1 << 20) + 1, "too big"), dak::Error);
  EXPECT_THROW(arena.allocate(UINT64_MAX, "absurd"), dak::Error);
  EXPECT_THROW(arena.allocate_array<uint16_t>((1 << 19) + 1, "array"), dak::Error);
  EXPECT_EQ(arena.used(), 0u);
  EXPECT_NO_THROW(arena.allocate_array<uint16_t>(1 << 19, "fits"));
}

TEST(PinnedHostArena, TheGpuReadsTheArenaThroughItsPointer) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t bytes = (4ull << 20) + 48;  // a multiple of 16, not of the chunk
  PinnedHostArena arena(bytes + 4096, "GPU-read test");
  auto* h = arena.allocate_array<uint32_t>(bytes / 4, "words");  // [bytes / 4] pinned host
  unsigned long long want = 0;
  for (uint64_t i = 0; i < bytes / 4; ++i) {
    h[i] = uint32_t(i * 2654435761u) ^ 0xa5a5a5a5u;
    want += h[i];
  }
  dak::gpu::HbmArena g(dak::gpu::HbmArena::aligned_size(bytes) + 256, "device side");
  auto* g_copy = static_cast<uint8_t*>(g.allocate(bytes, "copy"));                 // [bytes] HBM
  auto* g_sum = g.allocate_array<unsigned long long>(1, "checksum");                // [1] HBM
  DAK_CUDA_CHECK(cudaMemset(g_sum, 0, sizeof(unsigned long long)));
  // A kernel dereferences the host pointer as a global address (TMA bulk copies into SMEM).
  dak::gpu::hbm_stream(dak::gpu::HbmStreamParams{h, bytes, 32u << 10, 2, g_sum}, 8, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned long long got = 0;
  DAK_CUDA_CHECK(cudaMemcpy(&got, g_sum, sizeof(got), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, want);
  // A copy from the arena pointer used as a device address gives the same bytes.
  DAK_CUDA_CHECK(cudaMemcpy(g_copy, h, bytes, cudaMemcpyDefault));
  std::vector<uint8_t> back(bytes);
  DAK_CUDA_CHECK(cudaMemcpy(back.data(), g_copy, bytes, cudaMemcpyDeviceToHost));
  EXPECT_EQ(std::memcmp(back.data(), h, bytes), 0);
}

TEST(PinnedHostArena, ZeroSizeArenaIsEmpty) {
  // No CUDA call is made for an empty arena, so this runs with or without a GPU.
  PinnedHostArena arena(0, "nothing");
  EXPECT_EQ(arena.base(), nullptr);
  EXPECT_EQ(arena.capacity(), 0u);
  EXPECT_EQ(arena.mapped_bytes(), 0u);
  EXPECT_EQ(arena.pin_seconds(), 0.0);
  EXPECT_EQ(arena.allocate(0, "empty slice"), nullptr);
  EXPECT_THROW(arena.allocate(1, "a byte"), dak::Error);
  PinnedHostArena defaulted;
  EXPECT_EQ(defaulted.base(), nullptr);
  EXPECT_EQ(defaulted.capacity(), 0u);
}

TEST(PinnedHostArena, AbsurdSizesAreErrorsNotCrashes) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (uint64_t bytes : {uint64_t(1) << 50, uint64_t(UINT64_MAX - 1)}) {  // 1 PiB; and one that overflows page rounding
    try {
      PinnedHostArena arena(bytes, "an impossible offload");
      ADD_FAILURE() << "expected dak::Error for " << bytes << " bytes";
    } catch (const dak::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("an impossible offload"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--cpu-offload-gb"), std::string::npos) << msg;
      EXPECT_NE(msg.find("--gpu-memory"), std::string::npos) << msg;
    }
  }
  try {
    PinnedHostArena arena(1ull << 50, "a petabyte");
    ADD_FAILURE() << "expected dak::Error for 1 PiB";
  } catch (const dak::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("1048576.00 GiB"), std::string::npos) << "the request in GiB\n" << msg;
    EXPECT_NE(msg.find("MemAvailable"), std::string::npos) << "what the machine has\n" << msg;
  }
  // Nothing sticky is left behind: CUDA and pinning still work.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  PinnedHostArena ok(1 << 20, "after the failures");
  EXPECT_TRUE(is_pinned_and_mapped(ok.base()));
}

TEST(PinnedHostArena, MoveTransfersOwnershipAndDestructionUnpins) {
  DAK_REQUIRE_GPU_OR_SKIP();
  void* base = nullptr;
  {
    PinnedHostArena a(8192 + 100, "a");
    base = a.base();
    const double pin_s = a.pin_seconds();
    a.allocate(100, "x");
    PinnedHostArena b(std::move(a));
    EXPECT_EQ(b.base(), base);
    EXPECT_EQ(b.capacity(), 8192u + 100);
    EXPECT_EQ(b.mapped_bytes(), round_to_page(8192 + 100));
    EXPECT_EQ(b.used(), 100u);
    EXPECT_EQ(b.pin_seconds(), pin_s);
    EXPECT_EQ(a.base(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_EQ(a.capacity(), 0u);   // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(a.mapped_bytes(), 0u);
    PinnedHostArena c(4096, "c");
    void* c_base = c.base();
    c = std::move(b);  // c's own block is released, b's taken over
    EXPECT_EQ(c.base(), base);
    EXPECT_FALSE(is_pinned_and_mapped(c_base));
    EXPECT_TRUE(is_pinned_and_mapped(base));
    PinnedHostArena& same = c;
    c = std::move(same);  // self-move keeps the arena
    EXPECT_EQ(c.base(), base);
    EXPECT_TRUE(is_pinned_and_mapped(base));
  }
  EXPECT_FALSE(is_pinned_and_mapped(base));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
