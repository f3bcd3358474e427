// hbm_stream (the B_g kernel): the checksum of every launch equals the host's sum of the
// buffer's 32-bit words (so every byte was brought into SMEM and read), for awkward sizes,
// chunk sizes, stage counts and grids, with a poisoned tail after the buffer that must not be
// read. The measurement helper of dak bench must agree with itself and report a bandwidth.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/bench.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

TEST(HbmStreamKernel, ChecksumEqualsHostSumOfEveryWord) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = dak::test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct Case {
    uint64_t bytes;
    uint32_t chunk;
    int32_t stages;
    int grid;  // 0: all SMs x resident CTAs
  };
  const Case cases[] = {
      {16, 16u << 10, 4, 0},                      // one partial chunk
      {48, 16, 1, 3},                             // chunks of 16 bytes, single stage, more CTAs than chunks
      {(1u << 20) + 16 * 7, 16u << 10, 4, 0},     // a partial last chunk
      {(33u << 20) + 144, 32u << 10, 6, 0},       // several chunks per CTA, ring wraps many times
      {(8u << 20), 64u << 10, 3, 5},              // few CTAs, many phases per stage
      {(3u << 20) + 32, 4096, 8, 131},            // odd grid
  };
  for (const Case& tc : cases) {
    SCOPED_TRACE("bytes " + std::to_string(tc.bytes) + " chunk " + std::to_string(tc.chunk) + " stages " +
                 std::to_string(tc.stages) + " grid " + std::to_string(tc.grid));
    const size_t words = size_t(tc.bytes / 4), tail = 64;
    std::vector<uint32_t> h(words + tail);
    unsigned long long want = 0;
    for (size_t i = 0; i < words; ++i) {
      h[i] = uint32_t(rng());
      want += h[i];
    }
    for (size_t i = words; i < h.size(); ++i) h[i] = 0xDEADBEEFu;  // poison: must not be read
    dak::test::DeviceBuffer<uint32_t> buf(h);
    dak::test::DeviceBuffer<unsigned long long> sum(1);
    DAK_CUDA_CHECK(cudaMemset(sum.get(), 0, sizeof(unsigned long long)));
    const int ctas = dak::gpu::hbm_stream_ctas_per_sm(tc.chunk, tc.stages);
    ASSERT_GT(ctas, 0);
    const int grid = tc.grid > 0 ? tc.grid : ctas * sms;
    dak::gpu::hbm_stream({buf.get(), tc.bytes, tc.chunk, tc.stages, sum.get()}, grid, nullptr);
    EXPECT_EQ(sum.download()[0], want);
  }
}

TEST(HbmStreamKernel, RejectsInvalidConfigurations) {
  DAK_REQUIRE_GPU_OR_SKIP();
  dak::test::DeviceBuffer<uint32_t> buf(64);
  dak::test::DeviceBuffer<unsigned long long> sum(1);
  using dak::gpu::HbmStreamParams;
  EXPECT_THROW(dak::gpu::hbm_stream(HbmStreamParams{buf.get(), 40, 16, 2, sum.get()}, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::hbm_stream(HbmStreamParams{buf.get(), 64, 24, 2, sum.get()}, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::hbm_stream(HbmStreamParams{buf.get(), 64, 16, 0, sum.get()}, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::hbm_stream(HbmStreamParams{buf.get(), 64, 256u << 10, 8, sum.get()}, 1, nullptr),
               dak::Error);  // 2 MiB of SMEM
  EXPECT_THROW(dak::gpu::hbm_stream(HbmStreamParams{reinterpret_cast<uint8_t*>(buf.get()) + 4, 32, 16, 2, sum.get()},
                                    1, nullptr),
               dak::Error);  // misaligned
}

TEST(HbmStreamKernel, BandwidthMeasurementRunsAndAgreesWithItself) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // A small buffer keeps the test quick; the figure itself is the benchmark's business.
  const dak::gpu::HbmBandwidth bw = dak::gpu::measure_hbm_bandwidth(256u << 20, 3);
  EXPECT_GT(bw.best_bytes_per_s, 0.0);
  EXPECT_GE(bw.best_bytes_per_s, bw.median_bytes_per_s);
  EXPECT_GT(bw.configs, 0);
  EXPECT_GT(bw.ctas_per_sm, 0);
}

}  // namespace
