// `dak profile`'s zero-copy measurements (gpu/profile.h, measure_zero_copy): the ordinary kernels
// (cuBLASLt, attention_decode) reading pinned mapped host memory in place give one rate per GEMM
// shape that fits the host buffer and one attention rate, each positive and no faster than the
// PCIe link can carry (an impossible rate would mean the kernel did not read host memory).
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <tuple>

#include "core/error.h"
#include "gpu/host_arena.h"
#include "gpu/profile.h"
#include "gpu_test_util.h"

namespace {

// PCIe Gen5 x16 carries at most ~64 GB/s one way; the H200 measures 51-56 GB/s (DESIGN.md §1).
constexpr double kLinkCeilingGbps = 64.0;

TEST(Profile, ZeroCopyRatesArePlausibleAndCoverWhatFits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  constexpr uint64_t kBytes = 64ull << 20;
  dak::gpu::PinnedHostArena arena(kBytes, "zero-copy test source");
  void* h = arena.allocate(kBytes, "W and KV");
  std::memset(h, 0x3c, kBytes);  // bf16 0x3c3c ~ 0.0115 everywhere: finite inputs
  dak::ProfileMeasurements m;
  dak::gpu::measure_zero_copy(h, kBytes, 3, m);

  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;  // (N, K, rows)
  for (const dak::ZeroCopyGemmPoint& z : m.zero_copy_gemm) {
    EXPECT_LE(z.host_bytes(), double(kBytes)) << "a point whose W does not fit the buffer";
    EXPECT_GT(z.gbps, 0.1) << z.N << " x " << z.K << " x " << z.rows;
    EXPECT_LT(z.gbps, kLinkCeilingGbps) << z.N << " x " << z.K << " x " << z.rows;
    seen.insert({z.N, z.K, z.rows});
  }
  // Every (N, K, rows) of the grid whose W (rows x K bf16) fits 64 MiB, and none other.
  std::set<std::tuple<int64_t, int64_t, int64_t>> want;
  for (int64_t n : {8, 512})
    for (int64_t k : {4096, 8192, 16384})
      for (int64_t rows : {128,  256,  384,  512,  640,  768,  896,  1024, 1152, 1280, 1408,
                           1536, 1664, 1792, 1920, 2048, 3072, 4096, 6144, 8192, 12288, 16384})
        if (rows * k * 2 <= int64_t(kBytes)) want.insert({n, k, rows});
  EXPECT_EQ(seen, want);
  // The KV of 8 x 32 heads x 512 keys x 128 (64 MiB for K and V) fills the buffer.
  EXPECT_EQ(m.zero_copy_attention_bytes, int64_t(kBytes));
  EXPECT_GT(m.zero_copy_attention_gbps, 0.1);
  EXPECT_LT(m.zero_copy_attention_gbps, kLinkCeilingGbps);
  EXPECT_THROW(dak::gpu::measure_zero_copy(h, kBytes, 0, m), dak::Error);
}

}  // namespace
