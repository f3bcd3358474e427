// The measurement harness of `dak bench gemm` (gpu/bench_gemm.h), checked for what it reports
// besides times: B_h is measured over the whole pinned buffer (checksums, else it throws); every
// offload point of a per-launch sweep and of a graph-replayed stack gives the reference's bits
// (split invariance through the harness's buffers: host copies of W's first rows, HBM rows from
// m_host on); the tiered GEMM agrees with cuBLAS; every requested point comes back; and
// inconsistent requests are refused before any GPU work. No timing is asserted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/tiered_gemm_schedule.h"
#include "gpu/bench_gemm.h"
#include "gpu/cuda_check.h"
#include "gpu/host_arena.h"
#include "gpu_test_util.h"

namespace {

using dak::gpu::GemmBenchRequest;
using dak::gpu::GemmTiming;
using dak::gpu::LinearShape;

int sm_count() {
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  return sms;
}

/// A request over `ops` with points at `ratios` (fractions), default schedules for `sms` SMs.
GemmBenchRequest make_request(GemmTiming timing, const std::vector<LinearShape>& ops, int64_t N, int layers,
                              const std::vector<double>& ratios, int sms) {
  GemmBenchRequest q;
  q.timing = timing;
  q.ops = ops;
  q.N = N;
  q.layers = layers;
  q.runs = 2;
  q.warmup = 1;
  for (const LinearShape& op : ops) q.reference.push_back(dak::plan_tiered_gemm(op.M, N, op.K, 0, sms));
  for (double x : ratios) {
    dak::gpu::GemmPointRequest p;
    p.ratio = x;
    for (const LinearShape& op : ops) {
      p.schedules.push_back(dak::plan_tiered_gemm(op.M, N, op.K, int64_t(x * double(op.M) + 0.5), sms));
    }
    q.points.push_back(p);
  }
  return q;
}

void expect_consistent(const GemmBenchRequest& q, const dak::gpu::GemmBenchResult& r, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(r.points.size(), q.points.size());
  ASSERT_EQ(r.cublas_op_s.size(), q.ops.size());
  EXPECT_TRUE(r.prefetch_gemm == "cublas" || r.prefetch_gemm == "tiered") << r.prefetch_gemm;
  // Both accumulate in fp32 and round to bf16: an element may differ by one bf16 ulp (<= 2^-7 of
  // its magnitude, so <= 2^-7 of the largest output) when the fp32 sums, added in different
  // orders, fall on either side of a rounding boundary; 2^-6 leaves a factor 2 for fp32 order
  // effects. A wrong tile or row is off by O(1).
  EXPECT_LE(r.max_rel_diff_vs_cublas, 1.0 / 64) << "the tiered GEMM disagrees with cuBLAS";
  EXPECT_GT(r.tiered_ref_s.median, 0);
  EXPECT_GT(r.cublas_s.median, 0);
  for (size_t p = 0; p < q.points.size(); ++p) {
    const dak::gpu::GemmPointResult& pr = r.points[p];
    SCOPED_TRACE("x " + std::to_string(q.points[p].ratio));
    EXPECT_EQ(pr.ratio, q.points[p].ratio);
    EXPECT_TRUE(pr.same_bits) << "outputs at this x differ from x = 0";
    uint64_t host = 0;
    for (size_t i = 0; i < q.ops.size(); ++i) host += uint64_t(q.points[p].schedules[i].m_host) * q.ops[i].K * 2;
    EXPECT_EQ(pr.host_bytes, host);
    EXPECT_GT(pr.tiered_s.median, 0);
    EXPECT_LE(pr.tiered_s.min, pr.tiered_s.median);
    EXPECT_LE(pr.tiered_s.median, pr.tiered_s.max);
    EXPECT_GT(pr.prefetch_s.median, 0);
  }
}

TEST(BenchGemm, HostReadBandwidthReadsTheWholePinnedBuffer) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t bytes = (16ull << 20) + 48;  // not a multiple of the 32 KiB chunk
  dak::gpu::PinnedHostArena host(bytes, "B_h test buffer");
  // Throws when a launch's checksum differs from the host's sum of the buffer.
  const dak::gpu::HostReadBandwidth b = dak::gpu::measure_host_read_bandwidth(host.allocate(bytes, "buf"), bytes, 5);
  EXPECT_EQ(b.buffer_bytes, bytes);
  EXPECT_EQ(b.configs, 6);
  EXPECT_EQ(b.runs, 5);
  EXPECT_GT(b.best_bytes_per_s, 0);
  EXPECT_GE(b.max_bytes_per_s, b.best_bytes_per_s);
  EXPECT_GT(b.ctas, 0);
}

TEST(BenchGemm, PerLaunchSweepIsSplitInvariantAndAgreesWithCublas) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // M not a multiple of any tile; x = 1 row, 10 %, 50 %, all rows.
  for (int64_t N : {int64_t(8), int64_t(40), int64_t(200)}) {
    const std::vector<LinearShape> ops = {{"w", 1000, 1024}};
    const GemmBenchRequest q = make_request(GemmTiming::kPerLaunch, ops, N, 1, {0.0, 0.001, 0.1, 0.5, 1.0}, sm_count());
    dak::gpu::PinnedHostArena host(dak::gpu::gemm_bench_host_bytes(q), "bench gemm test");
    expect_consistent(q, dak::gpu::run_gemm_bench(q, host), "per launch, N " + std::to_string(N));
  }
}

TEST(BenchGemm, GraphStackIsSplitInvariantAndAgreesWithCublas) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // A small decoder layer with awkward sizes, three layers (so the prefetch ring's l - 2 wait runs).
  const std::vector<LinearShape> ops = {{"qkv", 776, 512}, {"o", 512, 512}, {"gate_up", 1400, 512},
                                        {"down", 512, 704}};
  for (int64_t N : {int64_t(1), int64_t(8), int64_t(130)}) {
    const GemmBenchRequest q = make_request(GemmTiming::kGraphStack, ops, N, 3, {0.0, 0.02, 0.3, 1.0}, sm_count());
    dak::gpu::PinnedHostArena host(dak::gpu::gemm_bench_host_bytes(q), "bench gemm test");
    expect_consistent(q, dak::gpu::run_gemm_bench(q, host), "stack, N " + std::to_string(N));
  }
}

TEST(BenchGemm, InconsistentRequestsAreRefused) {
  dak::gpu::PinnedHostArena none;  // never reached: the request is checked first
  const std::vector<LinearShape> ops = {{"w", 256, 256}, {"v", 128, 256}};
  GemmBenchRequest two = make_request(GemmTiming::kPerLaunch, {ops[0]}, 8, 1, {0.5}, 132);
  two.ops = ops;  // per-launch timing of two ops
  EXPECT_THROW(dak::gpu::run_gemm_bench(two, none), dak::Error);

  GemmBenchRequest shape = make_request(GemmTiming::kGraphStack, ops, 8, 2, {0.5}, 132);
  shape.points[0].schedules[1] = shape.points[0].schedules[0];  // op v with op w's shape
  EXPECT_THROW(dak::gpu::run_gemm_bench(shape, none), dak::Error);

  GemmBenchRequest ref = make_request(GemmTiming::kGraphStack, ops, 8, 2, {0.5}, 132);
  ref.reference[0] = ref.points[0].schedules[0];  // a reference with host rows
  EXPECT_THROW(dak::gpu::run_gemm_bench(ref, none), dak::Error);

  GemmBenchRequest missing = make_request(GemmTiming::kGraphStack, ops, 8, 2, {0.5}, 132);
  missing.points[0].schedules.pop_back();
  EXPECT_THROW(dak::gpu::run_gemm_bench(missing, none), dak::Error);
}

}  // namespace
