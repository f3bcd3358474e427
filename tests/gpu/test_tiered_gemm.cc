// Tiered GEMM (kernels/tiered_gemm.h): y[N, M] = x[N, K] W[M, K]^T with W rows [0, m_host) in
// pinned host memory, vs a float64 host reference on the same bf16 operands, on fresh random
// inputs with poisoned outputs; offload ratios {0, one tile, 1 %, 10 %, 50 %, 100 %}; split
// invariance (identical output bits for every m_host); the host rows are never written; awkward
// shapes (M, N not multiples of the tile, K not a multiple of 64), strided x and y, bias, ReLU,
// fp32 output, forced congestion parameters, k-splits, and CUDA-graph replay. The fused epilogues
// (RMSNorm across the boundary; RoPE + KV append) against the plain GEMM and their own kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "core/tiered_gemm_schedule.h"
#include "gpu/device.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/activation.h"
#include "gpu/kernels/norm.h"
#include "gpu/kernels/rope.h"
#include "gpu/kernels/tiered_gemm.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"
#include "kv_test_util.h"

namespace {

using namespace dak::test;
using dak::TieredGemmSchedule;
using dak::gpu::TieredGemmArgs;
using dak::gpu::TieredGemmOut;

int sm_count() {
  int dev = 0, n = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&dev));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
  return n;
}

struct Problem {
  int64_t M, N, K;
  int64_t ldx = 0, ldy = 0;  // 0: dense
  bool bias = false, relu = false;
  TieredGemmOut out = TieredGemmOut::kBf16;
};

std::string describe(const Problem& p) {
  return "M=" + std::to_string(p.M) + " N=" + std::to_string(p.N) + " K=" + std::to_string(p.K) +
         " ldx=" + std::to_string(p.ldx) + " ldy=" + std::to_string(p.ldy) + " bias=" + std::to_string(p.bias) +
         " relu=" + std::to_string(p.relu) + " out=" + (p.out == TieredGemmOut::kBf16 ? "bf16" : "f32");
}

/// Operands of one problem: W (all rows) on the host for the reference, x and bias in HBM.
struct Operands {
  Problem p;
  int64_t ldx, ldy;
  std::vector<Bf16Bits> x, w, b;
  std::vector<double> ref;  // [N, M] float64 reference (bias, ReLU applied)
  std::vector<double> mag;  // [N, M] sum_k |x w| + |bias|: scale of the fp32 accumulation error
  DeviceBuffer<Bf16Bits> d_x, d_b;
  Operands(const Problem& pr, std::mt19937_64& rng)
      : p(pr),
        ldx(pr.ldx > 0 ? pr.ldx : pr.K),
        ldy(pr.ldy > 0 ? pr.ldy : pr.M),
        x(random_bf16(size_t(pr.N * ldx), rng)),
        w(random_bf16(size_t(pr.M * pr.K), rng, 0.05f)),
        b(random_bf16(size_t(pr.M), rng)),
        d_x(x),
        d_b(b) {
    ref.assign(size_t(p.N * p.M), 0.0);
    mag.assign(size_t(p.N * p.M), 0.0);
    for (int64_t n = 0; n < p.N; ++n) {
      for (int64_t m = 0; m < p.M; ++m) {
        double acc = 0, a = 0;
        for (int64_t k = 0; k < p.K; ++k) {
          const double t = double(to_f(x[size_t(n * ldx + k)])) * double(to_f(w[size_t(m * p.K + k)]));
          acc += t;
          a += std::abs(t);
        }
        if (p.bias) {
          acc += to_f(b[size_t(m)]);
          a += std::abs(to_f(b[size_t(m)]));
        }
        if (p.relu) acc = std::max(acc, 0.0);
        ref[size_t(n * p.M + m)] = acc;
        mag[size_t(n * p.M + m)] = a;
      }
    }
  }
};

/// Result of one run: the raw output buffer [N, ldy] (+ 8 guard elements) as bytes.
struct RunResult {
  std::vector<uint8_t> bytes;
};

/// Runs the GEMM with `sched` (m_host rows on the host) and checks it against the reference, the
/// guards and the host rows. Returns the output bytes for split-invariance comparisons.
/// `shared_ws`: run on this workspace (already initialized, at least sched.workspace_bytes())
/// instead of a fresh poisoned one, as the engine runs every GEMM of a pass on one workspace.
RunResult run_and_check(Operands& o, const TieredGemmSchedule& sched, const std::string& what, bool graph = false,
                        void* shared_ws = nullptr, const std::function<void(TieredGemmArgs&)>& tweak = {}) {
  const Problem& p = o.p;
  const size_t elem = p.out == TieredGemmOut::kBf16 ? 2 : 4;
  const size_t n_out = size_t(p.N * o.ldy) + 8;
  // W rows [0, m_host) in the host tier, the rest in HBM.
  dak::gpu::PinnedHostArena host(uint64_t(std::max<int64_t>(sched.m_host, 1) * p.K * 2), "tiered GEMM test host rows");
  auto* h_w = host.allocate_array<Bf16Bits>(uint64_t(sched.m_host * p.K), "W host rows");
  std::memcpy(h_w, o.w.data(), size_t(sched.m_host * p.K) * 2);
  std::vector<Bf16Bits> w_hbm(o.w.begin() + sched.m_host * p.K, o.w.end());
  DeviceBuffer<Bf16Bits> d_w(std::max<size_t>(w_hbm.size(), 1));
  if (!w_hbm.empty()) d_w.upload(w_hbm);
  DeviceBuffer<uint8_t> d_y(n_out * elem);
  d_y.poison();
  DeviceBuffer<uint8_t> own_ws(shared_ws ? 1 : size_t(sched.workspace_bytes()));
  void* ws = shared_ws ? shared_ws : own_ws.get();
  if (!shared_ws) {
    own_ws.poison();  // partials are garbage until written; the counters are zeroed by init
    dak::gpu::tiered_gemm_workspace_init(ws, sched, nullptr);
  }

  TieredGemmArgs a;
  a.g_x = bf(o.d_x.get());
  a.ldx = p.ldx;
  a.h_w = sched.m_host > 0 ? reinterpret_cast<const __nv_bfloat16*>(h_w) : nullptr;
  a.g_w = sched.m_host < p.M ? bf(d_w.get()) : nullptr;
  a.g_bias = p.bias ? bf(o.d_b.get()) : nullptr;
  a.g_y = d_y.get();
  a.ldy = p.ldy;
  a.out = p.out;
  a.relu = p.relu;
  if (tweak) tweak(a);
  if (graph) {
    cudaStream_t st;
    DAK_CUDA_CHECK(cudaStreamCreate(&st));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    DAK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    dak::gpu::tiered_gemm(a, sched, ws, st);
    DAK_CUDA_CHECK(cudaStreamEndCapture(st, &g));
    DAK_CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < 3; ++r) DAK_CUDA_CHECK(cudaGraphLaunch(ge, st));  // counters must reset each run
    DAK_CUDA_CHECK(cudaStreamSynchronize(st));
    DAK_CUDA_CHECK(cudaGraphExecDestroy(ge));
    DAK_CUDA_CHECK(cudaGraphDestroy(g));
    DAK_CUDA_CHECK(cudaStreamDestroy(st));
  } else {
    dak::gpu::tiered_gemm(a, sched, ws, nullptr);
    dak::gpu::tiered_gemm(a, sched, ws, nullptr);  // a second run: counters were reset
  }
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  RunResult r{d_y.download()};

  // Host rows untouched.
  EXPECT_EQ(0, std::memcmp(h_w, o.w.data(), size_t(sched.m_host * p.K) * 2)) << what << ": host rows were written";
  // Values, and nothing written outside [0, N) x [0, M).
  std::vector<double> got(size_t(p.N * p.M));
  std::vector<double> tol_ref(size_t(p.N * p.M));
  size_t bad_guard = 0;
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t j = 0; j < o.ldy; ++j) {
      const size_t i = size_t(n * o.ldy + j);
      double v;
      bool poisoned;
      if (elem == 2) {
        Bf16Bits bits;
        std::memcpy(&bits, &r.bytes[i * 2], 2);
        v = to_f(bits);
        poisoned = bits == 0xffff;
      } else {
        float f;
        std::memcpy(&f, &r.bytes[i * 4], 4);
        v = f;
        uint32_t u;
        std::memcpy(&u, &f, 4);
        poisoned = u == 0xffffffffu;
      }
      if (j < p.M) {
        got[size_t(n * p.M + j)] = v;
      } else if (!poisoned) {
        ++bad_guard;
      }
    }
  }
  for (size_t i = size_t(p.N * o.ldy) * elem; i < r.bytes.size(); ++i) bad_guard += r.bytes[i] != 0xff;
  EXPECT_EQ(bad_guard, 0u) << what << ": elements outside y[0:N, 0:M] were written";
  // fp32 accumulation (tensor cores, then split partials): error well below 1e-4 * sum_k |x w|; a
  // wrong tile, row or k-block gives errors of the order of sum_k |x w| itself. Plus one bf16
  // rounding of the result for bf16 output.
  const double rtol = elem == 2 ? kBf16Rtol : 0.0;
  size_t bad = 0;
  std::string first;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = 1e-4 * o.mag[i] + rtol * std::abs(o.ref[i]) + 1e-6;
    if (!(std::abs(got[i] - o.ref[i]) <= tol)) {
      if (bad++ == 0) {
        first = "[n=" + std::to_string(i / size_t(p.M)) + " m=" + std::to_string(i % size_t(p.M)) +
                "] got " + std::to_string(got[i]) + " ref " + std::to_string(o.ref[i]);
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " outside tolerance, first " << first;
  return r;
}

/// Host row counts for the offload ratios: 0, one tile, 1 %, 10 %, 50 %, 100 %.
std::vector<int64_t> host_rows_for(int64_t M, int32_t bm) {
  std::vector<int64_t> v = {0, std::min<int64_t>(bm, M), (M + 99) / 100, M / 10, M / 2, M};
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

/// `compute_bn` 128 / 256 forces the compute tile (TieredGemmLinkLimits::compute_bn): test shapes
/// are too small for the wave rule to pick 128 x 256 by itself.
/// `chunks` > 0 forces TieredGemmSchedule::k_chunks (unsplit 64 x 8 / 64 x 16 tiles), the CTAs
/// re-derived for the new host unit count: test shapes are too small for the rule to take chunks.
void check_split_invariance(const Problem& p, uint64_t seed, int32_t compute_bn = 0, int32_t chunks = 0) {
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Operands o(p, rng);
  const int sms = sm_count();
  dak::TieredGemmLinkLimits limits;
  limits.compute_bn = compute_bn;
  const auto tile = dak::choose_tiered_gemm_tile(p.M, p.N, p.K, sms, compute_bn);
  std::vector<uint8_t> first;
  for (int64_t m_host : host_rows_for(p.M, tile.bm)) {
    TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sms, limits);
    if (chunks > 0) {
      s.k_splits = 1;
      s.k_chunks = chunks;
      s = dak::with_congestion(s, std::min<int64_t>(s.host_units(), 5), s.host_stages, 0, sms);
    }
    EXPECT_EQ(s.tile, tile) << s.to_string();
    const std::string what = describe(p) + " " + s.to_string();
    const RunResult r = run_and_check(o, s, what);
    if (first.empty()) {
      first = r.bytes;
    } else {
      EXPECT_TRUE(first == r.bytes) << what << ": output bits differ from m_host = 0 (split invariance)";
    }
  }
}

TEST(TieredGemm, BandwidthPathAllRatios) {
  DAK_REQUIRE_GPU_OR_SKIP();
  for (int64_t N : {1, 5, 8, 13, 32, 64}) check_split_invariance({300, N, 520}, fresh_seed());
}

TEST(TieredGemm, AccumulationChunksGiveTheSplitBits) {
  // k_chunks: the HBM units sum K in chunks exactly as the host side's k-splits are summed, so the
  // bits are the same at every m_host (m_host = 0: all chunked, M: all split). 33 k-blocks in chunks
  // of 8, 8, 8, 9; 4 chunks of 2 k-blocks; 3 host CTAs over 4 or more host units.
  DAK_REQUIRE_GPU_OR_SKIP();
  for (int64_t N : {1, 8, 13, 16}) check_split_invariance({300, N, 8200}, fresh_seed(), 0, 4);
  check_split_invariance({200, 8, 2048}, fresh_seed(), 0, 4);
  check_split_invariance({130, 16, 8200}, fresh_seed(), 0, 3);
  // The rule's own choice on a shape it chunks (Llama-2-70B's down at N = 8 has K = 28672; this one
  // 132 m-tiles of 8192 columns).
  const auto planned = dak::plan_tiered_gemm(132 * 64, 8, 8192, 128, sm_count());
  if (planned.k_chunks > 1) check_split_invariance({132 * 64, 8, 8192}, fresh_seed());
}

TEST(TieredGemm, ComputePathAllRatios) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // The 128 x 128 tile (what the wave rule takes on 3 m-tiles), then 128 x 256: one partial
  // n-tile (65, 200), whole ones (128, 256), and a partial second one (450).
  for (int64_t N : {65, 128, 200}) check_split_invariance({333, N, 264}, fresh_seed());
  for (int64_t N : {65, 200, 256, 450}) check_split_invariance({333, N, 264}, fresh_seed(), 256);
}

TEST(TieredGemm, MulticastClustersGiveTheSameBits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // N > 64 with several n-tiles: host CTAs in clusters of 2 or 4 share each host W tile by TMA
  // multicast. Against the fp64 reference and bitwise against m_host = 0, for clusters of 1, 2
  // and 4; n-tile counts that are (512: 4 of 128, 2 of 256) and are not (300: 3 of 128, 700: 6 of
  // 128, 3 of 256) a multiple of the cluster, so some ranks compute nothing; one cluster walking
  // many units through a one-stage ring and through three stages; and a CUDA-graph replay of a
  // multicast launch. 128 x 128 (the wave rule's choice for 5 m-tiles) and 128 x 256 (forced).
  const dak::TieredGemmLinkLimits device = dak::gpu::tiered_gemm_cluster_limits();
  const int sms = sm_count();
  for (const auto& [N, compute_bn] : {std::pair{300, 0}, {512, 0}, {700, 0}, {512, 256}, {700, 256}}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const Problem p{520, N, 1032};
    Operands o(p, rng);
    dak::TieredGemmLinkLimits base = device;
    base.compute_bn = compute_bn;
    const TieredGemmSchedule all_hbm = dak::plan_tiered_gemm(p.M, p.N, p.K, 0, sms, base);
    EXPECT_EQ(all_hbm.tile.bn, compute_bn == 256 ? 256 : 128) << all_hbm.to_string();
    const std::vector<uint8_t> first = run_and_check(o, all_hbm, describe(p) + " m_host 0").bytes;
    for (int64_t m_host : {int64_t(128), int64_t(300), p.M}) {
      for (int32_t max_cluster : {1, 2, 4}) {
        dak::TieredGemmLinkLimits lim = base;
        lim.max_cluster = max_cluster;
        const TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sms, lim);
        // 4 n-tiles or more: clusters of 4, or of 2 where few host m-tiles leave the link idle (the
        // cpu tests hold that rule); the planner's cost model takes the same.
        EXPECT_EQ(s.cluster, std::min(max_cluster, s.n_tiles() >= 4 ? s.cluster == 2 ? 2 : 4 : 2)) << s.to_string();
        EXPECT_EQ(s.cluster, dak::tiered_gemm_multicast_cluster(p.M, p.N, p.K, m_host, sms, max_cluster, compute_bn))
            << s.to_string();
        const std::string what = describe(p) + " " + s.to_string();
        EXPECT_TRUE(first == run_and_check(o, s, what).bytes) << what << ": bits differ from m_host = 0";
      }
      const TieredGemmSchedule planned = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sms, base);
      const int64_t grid = planned.host_ctas + planned.hbm_ctas;
      for (const auto& [ctas, stages] : {std::pair{4, 1}, std::pair{4, 3}}) {
        const TieredGemmSchedule s = dak::with_congestion(planned, ctas, stages, 4, grid);
        const std::string what = describe(p) + " forced " + s.to_string();
        EXPECT_TRUE(first == run_and_check(o, s, what).bytes) << what << ": bits differ from m_host = 0";
      }
    }
    const TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, 300, sms, base);
    const std::string what = describe(p) + " graph " + s.to_string();
    EXPECT_TRUE(first == run_and_check(o, s, what, /*graph=*/true).bytes) << what << ": bits differ from m_host = 0";
  }
}

TEST(TieredGemm, KSplitsWithLongK) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // Few m-tiles and a long K: the default schedule splits K; check it did.
  // K % 64 = 8 and 0; and one 64-row tile whose 23 k-blocks split unevenly (S = 8: 2 or 3 each).
  for (const Problem& p : {Problem{130, 8, 8200}, Problem{130, 8, 8256}, Problem{64, 8, 5640}}) {
    const auto s = dak::plan_tiered_gemm(p.M, p.N, p.K, 0, sm_count());
    EXPECT_GT(s.k_splits, 1) << s.to_string();
    check_split_invariance(p, fresh_seed());
  }
}

TEST(TieredGemm, ComputeTilesSplitK) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // The compute tiles (N > 64) with k-splits (chosen where a launch has few units,
  // tiered_gemm_compute_cost): 128 x 128 and 128 x 256 (whose reducer sums 16 fragments at a
  // time), 2 and 3 splits of a K with a partial last k-block, against the fp64 reference and
  // bitwise across host rows (split invariance) and multicast clusters, eagerly and in a graph.
  const dak::TieredGemmLinkLimits device = dak::gpu::tiered_gemm_cluster_limits();
  const int sms = sm_count();
  for (int32_t compute_bn : {128, 256}) {
    for (int32_t S : {2, 3}) {
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("seed=" + std::to_string(seed) + " compute_bn=" + std::to_string(compute_bn) +
                   " S=" + std::to_string(S));
      std::mt19937_64 rng(seed);
      const Problem p{333, 520, 1224};
      Operands o(p, rng);
      dak::TieredGemmLinkLimits limits = device;
      limits.compute_bn = compute_bn;
      std::vector<uint8_t> first;
      for (int64_t m_host : {int64_t(0), int64_t(128), int64_t(200), p.M}) {
        TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sms, limits);
        s.k_splits = S;
        s = dak::with_congestion(s, s.host_ctas, s.host_stages, 0, s.host_ctas + s.hbm_ctas);
        ASSERT_EQ(s.tile.bn, compute_bn);
        const std::string what = describe(p) + " " + s.to_string();
        const RunResult r = run_and_check(o, s, what, /*graph=*/m_host == 200);
        if (first.empty()) {
          first = r.bytes;
        } else {
          EXPECT_TRUE(first == r.bytes) << what << ": bits differ from m_host = 0";
        }
      }
    }
  }
}

TEST(TieredGemm, SplitGemmsShareOneWorkspace) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // The engine runs every GEMM of a pass on one workspace. A (3 m-tiles, long K) and B (64
  // m-tiles, an o_proj at N = 8, 64 rows on the host) both split K; B has more tiles, so with a
  // counter region sized per schedule A's fp32 partials lay over B's counters (a hang, or a
  // reduction before the partials were there). Alternate them on one poisoned workspace.
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Operands a(Problem{130, 8, 8200}, rng), b(Problem{4096, 8, 4096}, rng);
  const auto sa = dak::plan_tiered_gemm(130, 8, 8200, 0, sm_count());
  const auto sb = dak::plan_tiered_gemm(4096, 8, 4096, 64, sm_count());
  ASSERT_GT(sa.k_splits, 1) << sa.to_string();
  ASSERT_GT(sb.k_splits, 1) << sb.to_string();
  DeviceBuffer<uint8_t> ws(size_t(std::max(sa.workspace_bytes(), sb.workspace_bytes())));
  ws.poison();
  dak::gpu::tiered_gemm_workspace_init(ws.get(), sa, nullptr);
  for (int round = 0; round < 2; ++round) {
    run_and_check(a, sa, "shared workspace, A " + sa.to_string(), false, ws.get());
    run_and_check(b, sb, "shared workspace, B " + sb.to_string(), false, ws.get());
  }
}

TEST(TieredGemm, WideStagesWithRaggedK) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // The bandwidth path reads K in stages of 4 swizzle atoms (256 columns) with one 3D TMA box per
  // operand: K = 576 and 320 end with a stage of 1 loaded atom (3 zero-filled), 2048 fills whole
  // stages, 64 is one atom; strided x (ldx > K) must not leak the padding columns into the sum.
  for (int64_t K : {576, 320, 2048, 64}) {
    for (int64_t N : {1, 8, 16, 40}) check_split_invariance({300, N, K}, fresh_seed());
  }
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Problem p{260, 9, 320, 392, 0, true, false, TieredGemmOut::kBf16};
  Operands o(p, rng);
  for (int64_t m_host : {int64_t(0), int64_t(64), p.M}) {
    const auto s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sm_count());
    run_and_check(o, s, describe(p) + " " + s.to_string());
  }
}

TEST(TieredGemm, BiasReluF32AndStrides) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<Problem> problems = {
      {200, 7, 136, 144, 208, true, false, TieredGemmOut::kBf16},
      {200, 7, 136, 0, 0, true, true, TieredGemmOut::kBf16},
      {190, 70, 72, 80, 200, true, false, TieredGemmOut::kF32},
      {190, 450, 136, 144, 208, true, true, TieredGemmOut::kBf16},
      {130, 200, 72, 80, 136, true, false, TieredGemmOut::kF32},
      {64, 1, 64, 0, 0, false, true, TieredGemmOut::kF32},
  };
  for (const Problem& p : problems) {
    Operands o(p, rng);
    for (int64_t m_host : {int64_t(0), p.M / 3, p.M}) {
      for (int32_t compute_bn : {0, 256}) {  // 256: the 128 x 256 tile where N > 64
        if (compute_bn == 256 && p.N <= 64) continue;
        dak::TieredGemmLinkLimits limits;
        limits.compute_bn = compute_bn;
        const auto s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sm_count(), limits);
        run_and_check(o, s, describe(p) + " " + s.to_string());
      }
    }
  }
}

TEST(TieredGemm, CongestionParametersDoNotChangeBits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // bn 16 / 32 / 64 (N = 16 / 24 / 56): each ring depth of the decode tiles, walked across units of
  // 5 k-blocks (the last one ragged) by one to 100 CTAs a side.
  for (const int64_t N : {16, 24, 56}) {
    const Problem p{1000, N, 1032};
    Operands o(p, rng);
    std::vector<uint8_t> first;
    // One CTA per side (each walks many units through its ring), odd stage counts, many CTAs.
    struct Launch {
      int32_t host_ctas, host_stages, hbm_ctas, hbm_stages;
    };
    for (const Launch l : {Launch{1, 1, 1, 1}, Launch{1, 3, 2, 5}, Launch{3, 2, 7, 16}, Launch{16, 4, 100, 2},
                           Launch{2, 5, 3, 3}}) {
      TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, 333, sm_count());
      s.host_ctas = l.host_ctas;
      s.host_stages = std::min(l.host_stages, s.tile.max_stages());
      s.hbm_ctas = l.hbm_ctas;
      s.hbm_stages = std::min(l.hbm_stages, s.tile.max_stages());
      const RunResult r = run_and_check(o, s, describe(p) + " " + s.to_string());
      if (first.empty()) first = r.bytes;
      EXPECT_TRUE(first == r.bytes) << s.to_string() << ": bits depend on the launch parameters";
    }
  }
}

TEST(TieredGemm, EarlyWStagesKeepBits) {
  // The W stages an HBM CTA requests before the dependency wait (none, one, the tuned default,
  // more than its ring) only move loads in time: the same bits eagerly and in a graph, with host
  // rows next to the HBM rows (host CTAs always request their whole ring).
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const int64_t N : {8, 48}) {  // 48: the 64 x 64 tile, a 3-stage ring
    const Problem p{1000, N, 4096};
    Operands o(p, rng);
    std::vector<uint8_t> first;
    for (const int64_t m_host : {int64_t(0), int64_t(333)}) {
      TieredGemmSchedule s = dak::plan_tiered_gemm(p.M, p.N, p.K, m_host, sm_count());
      s.hbm_ctas = 3;  // each HBM CTA walks many units through its ring
      s.hbm_stages = std::min(4, s.tile.max_stages());
      for (const int32_t early : {-1, 0, 1, 3, 7}) {
        for (const bool graph : {false, true}) {
          const std::string what =
              describe(p) + " " + s.to_string() + " early_w_stages=" + std::to_string(early) + (graph ? " graph" : "");
          const RunResult r =
              run_and_check(o, s, what, graph, nullptr, [&](TieredGemmArgs& a) { a.early_w_stages = early; });
          if (first.empty()) first = r.bytes;
          EXPECT_TRUE(first == r.bytes) << what << ": bits depend on the early W stages";
        }
      }
    }
  }
}

TEST(TieredGemm, GraphReplayResetsCounters) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Problem p{256, 4, 2048};
  Operands o(p, rng);
  auto s = dak::plan_tiered_gemm(p.M, p.N, p.K, 64, sm_count());
  s.k_splits = 4;  // the counters under test exist only with split partials
  s.validate();
  run_and_check(o, s, describe(p) + " graph " + s.to_string(), /*graph=*/true);
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// W [M, K] placed as the engine places it: rows [0, m_host) in a pinned host arena, the rest in HBM.
struct PlacedW {
  dak::gpu::PinnedHostArena host;
  DeviceBuffer<Bf16Bits> hbm;
  const __nv_bfloat16* h_w = nullptr;
  const __nv_bfloat16* g_w = nullptr;
  PlacedW(const std::vector<Bf16Bits>& w, int64_t M, int64_t K, int64_t m_host)
      : host(uint64_t(std::max<int64_t>(m_host, 1) * K * 2), "norm epilogue test host rows"),
        hbm(size_t(std::max<int64_t>((M - m_host) * K, 1))) {
    auto* h = host.allocate_array<Bf16Bits>(uint64_t(std::max<int64_t>(m_host, 1) * K), "W host rows");
    std::memcpy(h, w.data(), size_t(m_host * K) * 2);
    if (m_host < M) hbm.upload(std::vector<Bf16Bits>(w.begin() + m_host * K, w.end()));
    h_w = m_host > 0 ? reinterpret_cast<const __nv_bfloat16*>(h) : nullptr;
    g_w = m_host < M ? bf(hbm.get()) : nullptr;
  }
};

// The RMSNorm epilogues (TieredGemmNormOut / NormIn): a norm-out GEMM (o_proj's shape: M = hidden)
// adds bf16(y + bias) to the fp32 residual, writes bf16(resid * weight) and per-64-row block sums of
// resid^2; a norm-in GEMM on that x scales by 1 / rms before its bias. Against a float64 reference on
// fresh random inputs with poisoned outputs, with and without k-splits, and bitwise the same for
// every m_host (split invariance).
TEST(TieredGemm, NormEpiloguesAcrossTheGemmBoundary) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int sms = sm_count();
  const int64_t H = 512, Ka = 1024, M2 = 320, blocks = H / 64;
  const float eps = 1e-5f;
  for (int64_t N : {1, 5, 8, 33, 64}) {
    SCOPED_TRACE("N=" + std::to_string(N));
    const auto x = random_bf16(size_t(N * Ka), rng), wo = random_bf16(size_t(H * Ka), rng, 0.05f);
    const auto bo = random_bf16(size_t(H), rng), w2 = random_bf16(size_t(M2 * H), rng, 0.05f);
    const auto b2 = random_bf16(size_t(M2), rng);
    const auto resid0 = random_f32(size_t(N * H), rng, 2.0f);
    std::vector<Bf16Bits> gamma(static_cast<size_t>(H));
    std::uniform_real_distribution<float> ud(0.5f, 1.5f);
    for (auto& g : gamma) g = dak::f32_to_bf16(ud(rng));
    DeviceBuffer<Bf16Bits> d_x(x), d_bo(bo), d_b2(b2), d_gamma(gamma), d_scaled(size_t(N * H) + 8);
    DeviceBuffer<float> d_resid(size_t(N * H)), d_sumsq(size_t(blocks * N) + 8);
    // The norm-out GEMM's float64 reference: y = x Wo^T + bo, and sum |x w| for its tolerance.
    std::vector<double> y_ref(size_t(N * H)), y_mag(size_t(N * H));
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t m = 0; m < H; ++m) {
        double acc = to_f(bo[size_t(m)]), mag = std::abs(acc);
        for (int64_t k = 0; k < Ka; ++k) {
          const double t = double(to_f(x[size_t(n * Ka + k)])) * to_f(wo[size_t(m * Ka + k)]);
          acc += t;
          mag += std::abs(t);
        }
        y_ref[size_t(n * H + m)] = acc;
        y_mag[size_t(n * H + m)] = mag;
      }
    }
    for (int32_t forced_splits : {0, 2}) {
      SCOPED_TRACE("k_splits " + std::string(forced_splits ? "forced 2" : "planned"));
      // The schedule (k_splits forced or planned), and the GEMM's arguments over W placed for it.
      auto plan = [&](int64_t M, int64_t K, int64_t m_host) {
        auto sched = dak::plan_tiered_gemm(M, N, K, m_host, sms);
        if (forced_splits) sched.k_splits = forced_splits;
        sched.validate();
        return sched;
      };
      auto args = [](const PlacedW& w, const Bf16Bits* x, const Bf16Bits* bias) {
        TieredGemmArgs a;
        a.g_x = bf(x);
        a.h_w = w.h_w;
        a.g_w = w.g_w;
        a.g_bias = bf(bias);
        return a;
      };
      std::vector<float> first_resid, first_sumsq, resid, sumsq;
      std::vector<Bf16Bits> first_scaled, scaled;
      for (int64_t m_host : {int64_t(0), int64_t(64), H / 2, H}) {
        const auto s = plan(H, Ka, m_host);
        ASSERT_EQ(s.tile.bm, 64) << s.to_string();
        const std::string what = "norm-out " + s.to_string();
        PlacedW w(wo, H, Ka, m_host);
        d_resid.upload(resid0);
        d_scaled.poison();
        d_sumsq.poison();
        DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
        ws.poison();
        dak::gpu::tiered_gemm_workspace_init(ws.get(), s, nullptr);
        TieredGemmArgs a = args(w, d_x.get(), d_bo.get());
        a.norm_out = {d_resid.get(), bf(d_gamma.get()), bf(d_scaled.get()), d_sumsq.get()};
        dak::gpu::tiered_gemm(a, s, ws.get(), nullptr);
        resid = d_resid.download();
        scaled = d_scaled.download();
        sumsq = d_sumsq.download();
        size_t bad_resid = 0, bad_scaled = 0, bad_sumsq = 0;
        for (int64_t n = 0; n < N; ++n) {
          for (int64_t j = 0; j < H; ++j) {
            const size_t i = size_t(n * H + j);
            // resid0 + bf16(y): the fp32 accumulation error, one bf16 rounding of y, one fp32 add.
            const double want = double(resid0[i]) + y_ref[i];
            const double tol = 1e-4 * y_mag[i] + kBf16Rtol * std::abs(y_ref[i]) + 1e-6 * std::abs(want) + 1e-6;
            bad_resid += !(std::abs(double(resid[i]) - want) <= tol);
            // bf16(resid * weight) of the residual the kernel wrote: the same fp32 product, rounded once.
            bad_scaled += scaled[i] != dak::f32_to_bf16(resid[i] * to_f(gamma[size_t(j)]));
          }
          for (int64_t b = 0; b < blocks; ++b) {
            double sq = 0;
            for (int64_t j = b * 64; j < (b + 1) * 64; ++j) sq += double(resid[size_t(n * H + j)]) * resid[size_t(n * H + j)];
            bad_sumsq += !(std::abs(double(sumsq[size_t(b * N + n)]) - sq) <= 1e-5 * sq + 1e-30);
          }
        }
        EXPECT_EQ(bad_resid, 0u) << what << ": residual outside tolerance";
        EXPECT_EQ(bad_scaled, 0u) << what << ": scaled x is not bf16(resid * weight)";
        EXPECT_EQ(bad_sumsq, 0u) << what << ": block sums of resid^2 outside tolerance";
        for (size_t g = size_t(N * H); g < scaled.size(); ++g) EXPECT_EQ(scaled[g], 0xffff) << what << ": guard written";
        for (size_t g = size_t(blocks * N); g < sumsq.size(); ++g) EXPECT_TRUE(std::isnan(sumsq[g])) << what << ": guard written";
        if (first_resid.empty()) {
          first_resid = resid, first_scaled = scaled, first_sumsq = sumsq;
        } else {
          EXPECT_TRUE(same_bits(first_resid, resid) && same_bits(first_scaled, scaled) && same_bits(first_sumsq, sumsq))
              << what << ": bits differ from m_host = 0 (split invariance)";
        }
        // The same linear unfused (y into HBM), then rms_norm_out: the epilogue's bits.
        DeviceBuffer<Bf16Bits> d_y(size_t(N * H));
        d_y.poison();
        d_resid.upload(resid0);
        d_scaled.poison();
        d_sumsq.poison();
        dak::gpu::tiered_gemm_workspace_init(ws.get(), s, nullptr);
        a.norm_out = {};
        a.g_y = d_y.get();
        dak::gpu::tiered_gemm(a, s, ws.get(), nullptr);
        dak::gpu::rms_norm_out({bf(d_y.get()), d_resid.get(), bf(d_gamma.get()), bf(d_scaled.get()), d_sumsq.get(), N, H},
                               nullptr);
        EXPECT_TRUE(same_bits(d_resid.download(), resid) && same_bits(d_scaled.download(), scaled) &&
                    same_bits(d_sumsq.download(), sumsq))
            << what << ": rms_norm_out after the plain GEMM does not give the epilogue's bits";
      }
      // The norm-in GEMM on the last run's scaled x and block sums (its K = H).
      std::vector<double> y2_ref(size_t(N * M2)), y2_mag(size_t(N * M2));
      for (int64_t n = 0; n < N; ++n) {
        double sq = 0;
        for (int64_t b = 0; b < blocks; ++b) sq += sumsq[size_t(b * N + n)];
        const double rinv = 1.0 / std::sqrt(sq / double(H) + double(eps));
        for (int64_t m = 0; m < M2; ++m) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < H; ++k) {
            const double t = double(to_f(scaled[size_t(n * H + k)])) * to_f(w2[size_t(m * H + k)]);
            acc += t;
            mag += std::abs(t);
          }
          y2_ref[size_t(n * M2 + m)] = acc * rinv + to_f(b2[size_t(m)]);
          y2_mag[size_t(n * M2 + m)] = mag * rinv + std::abs(to_f(b2[size_t(m)]));
        }
      }
      std::vector<Bf16Bits> first_y2;
      for (int64_t m_host : {int64_t(0), int64_t(37), int64_t(128), M2}) {
        const auto s = plan(M2, H, m_host);
        const std::string what = "norm-in " + s.to_string();
        PlacedW w(w2, M2, H, m_host);
        DeviceBuffer<Bf16Bits> d_y(size_t(N * M2) + 8);
        d_y.poison();
        DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
        ws.poison();
        dak::gpu::tiered_gemm_workspace_init(ws.get(), s, nullptr);
        TieredGemmArgs a = args(w, d_scaled.get(), d_b2.get());
        a.g_y = d_y.get();
        a.norm_in = {d_sumsq.get(), eps};
        dak::gpu::tiered_gemm(a, s, ws.get(), nullptr);
        const auto y2 = d_y.download();
        size_t bad = 0;
        for (size_t i = 0; i < size_t(N * M2); ++i) {
          const double t = 1e-4 * y2_mag[i] + kBf16Rtol * std::abs(y2_ref[i]) + 1e-6;
          bad += !(std::abs(double(to_f(y2[i])) - y2_ref[i]) <= t);
        }
        EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << N * M2 << " outside tolerance";
        for (size_t g = size_t(N * M2); g < y2.size(); ++g) EXPECT_EQ(y2[g], 0xffff) << what << ": guard written";
        if (first_y2.empty()) {
          first_y2 = y2;
        } else {
          EXPECT_TRUE(same_bits(first_y2, y2)) << what << ": bits differ from m_host = 0 (split invariance)";
        }
      }
    }
  }
}

TEST(TieredGemm, NormEpiloguesRefuseShapesTheyCannotServe) {
  DAK_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<Bf16Bits> x(128 * 576), w(256 * 576), y(128 * 256);
  DeviceBuffer<float> resid(128 * 256), sumsq(64 * 128);
  TieredGemmArgs a;
  a.g_x = bf(x.get());
  a.g_w = bf(w.get());
  a.norm_out = {resid.get(), nullptr, bf(y.get()), sumsq.get()};
  // The 128-row compute tiles (N > 64) have no norm-out epilogue.
  auto s = dak::plan_tiered_gemm(256, 128, 512, 0, sm_count());
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()) + (1 << 20));
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // M not a multiple of 64.
  s = dak::plan_tiered_gemm(200, 8, 512, 0, sm_count());
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // Norm-in with K not a multiple of 64.
  a.norm_out = {};
  a.g_y = y.get();
  a.norm_in = {sumsq.get(), 1e-6f};
  s = dak::plan_tiered_gemm(256, 8, 520, 0, sm_count());
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // The separate norm-out kernel: rows of 64 (its CTA is one 64-row block) and a grid's y extent of
  // tokens. Refused before any launch, naming the fallback; no tokens is a no-op.
  dak::gpu::NormOutParams n;
  n.g_x = bf(y.get());
  n.g_residual = resid.get();
  n.g_scaled = bf(x.get());
  n.g_sumsq = sumsq.get();
  n.T = 2;
  n.C = 100;
  try {
    dak::gpu::rms_norm_out(n, nullptr);
    ADD_FAILURE() << "C = 100 not refused";
  } catch (const dak::Error& e) {
    EXPECT_NE(std::string(e.what()).find("residual_norm"), std::string::npos) << e.what();
  }
  n.C = 128;
  n.T = 65536;
  EXPECT_THROW(dak::gpu::rms_norm_out(n, nullptr), dak::Error);
  n.T = 0;
  n.C = 100;
  EXPECT_NO_THROW(dak::gpu::rms_norm_out(n, nullptr));
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
}

// The RoPE + KV append epilogue (TieredGemmRopeOut) of the qkv GEMM: y and both KV tiers bitwise
// equal to the plain GEMM followed by apply_rope_kv_append with paired rows (kernels/rope.h), on
// fresh random inputs with poisoned y (and guard elements) and caches: head_dim 64 / 80 / 128,
// MHA and GQA, N from 1 to 64 (bn 8 / 16 / 32 inline, 64 through the out-of-line pair writer; one
// token out of the cache's range), host rows of W (m_host
// multiples of 16, also mid-tile) and host-tier cache slots, with and without bias, the norm-in
// epilogue before it, and forced k-splits.
// The shared end of the epilogue-refusal tests: host rows that split a 16-row slab (W placed for
// real, so only that is wrong) are refused with the epilogue set in `a`; the same GEMM with that
// epilogue cleared (`a.*epilogue = {}`) then runs. `ws` holds at least the M x 8 x K plan's workspace.
template <typename Epilogue>
void expect_split_slab_refused_then_plain_gemm_runs(TieredGemmArgs a, int64_t M, int64_t K,
                                                    Epilogue TieredGemmArgs::* epilogue, void* ws,
                                                    const char* name) {
  const PlacedW pw(std::vector<Bf16Bits>(size_t(M * K), 0), M, K, 40);
  a.h_w = pw.h_w;
  a.g_w = pw.g_w;
  const auto s = dak::plan_tiered_gemm(M, 8, K, 40, sm_count());
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws, nullptr), dak::Error) << name << " epilogue, host rows mid-slab";
  a.*epilogue = {};
  dak::gpu::tiered_gemm_workspace_init(ws, s, nullptr);
  EXPECT_NO_THROW(dak::gpu::tiered_gemm(a, s, ws, nullptr)) << "the same GEMM without the " << name << " epilogue";
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
}

TEST(TieredGemm, RopeEpilogueMatchesThePlainGemmThenRopeKvAppend) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int sms = sm_count();
  const int64_t K = 512, slots = 4, ctx = 40;
  int k = 0;
  for (auto [H, Hkv, D] : {std::tuple{4, 4, 64}, std::tuple{6, 2, 80}, std::tuple{4, 1, 128}}) {
    const int64_t qd = int64_t(H) * D, kvd = int64_t(Hkv) * D, M = qd + 2 * kvd;
    for (int64_t N : {1, 5, 8, 17, 32, 33, 64}) {
      for (int64_t m_host : {int64_t(0), int64_t(48), int64_t(128), M}) {
        const bool bias = k % 2 == 0, norm_in = k % 3 == 1;
        const int32_t forced_splits = k % 4 == 3 ? 2 : 0;
        const int64_t b_host = k % 3;
        ++k;
        auto sched = dak::plan_tiered_gemm(M, N, K, m_host, sms);
        if (forced_splits) sched.k_splits = forced_splits;
        sched.validate();
        ASSERT_EQ(sched.tile.bm, 64) << sched.to_string();
        const std::string what = "H=" + std::to_string(H) + " Hkv=" + std::to_string(Hkv) + " D=" + std::to_string(D) +
                                 " bias=" + std::to_string(bias) + " norm_in=" + std::to_string(norm_in) +
                                 " b_host=" + std::to_string(b_host) + " " + sched.to_string();
        const auto x = random_bf16(size_t(N * K), rng), w = random_bf16(size_t(M * K), rng, 0.05f);
        const auto b = random_bf16(size_t(M), rng);
        std::vector<float> sumsq(static_cast<size_t>(K / 64 * N));
        std::uniform_real_distribution<float> ud(1.0f, 8.0f);
        for (auto& v : sumsq) v = ud(rng);
        std::vector<int32_t> slot(static_cast<size_t>(N)), pos(static_cast<size_t>(N)), rope_pos(static_cast<size_t>(N));
        for (int64_t t = 0; t < N; ++t) {
          slot[size_t(t)] = int32_t(t % slots);
          pos[size_t(t)] = int32_t(t / slots);
          rope_pos[size_t(t)] = int32_t(rng() % 131072);
        }
        if (N > 2) pos[size_t(N - 1)] = int32_t(ctx);  // out of the cache's range: rotated in y, not cached
        std::vector<float> inv_freq(size_t(D / 2));
        for (int64_t i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(1.0 / std::pow(10000.0, 2.0 * double(i) / D));
        DeviceBuffer<Bf16Bits> d_x(x), d_b(b);
        DeviceBuffer<float> d_sumsq(sumsq), d_f(inv_freq);
        DeviceBuffer<int32_t> d_slot(slot), d_pos(pos), d_rope_pos(rope_pos);
        PlacedW pw(w, M, K, m_host);
        auto run = [&](bool fused, TwoTierKvCache& cache) {
          DeviceBuffer<Bf16Bits> d_y(size_t(N * M) + 8);
          d_y.poison();
          cache.poison();
          DeviceBuffer<uint8_t> ws(size_t(sched.workspace_bytes()));
          ws.poison();
          dak::gpu::tiered_gemm_workspace_init(ws.get(), sched, nullptr);
          TieredGemmArgs a;
          a.g_x = bf(d_x.get());
          a.h_w = pw.h_w;
          a.g_w = pw.g_w;
          a.g_bias = bias ? bf(d_b.get()) : nullptr;
          a.g_y = d_y.get();
          if (norm_in) a.norm_in = {d_sumsq.get(), 1e-5f};
          const float factor = D == 80 ? 1.25f : 1.0f;
          if (fused) {
            a.rope = {d_rope_pos.get(), d_f.get(), factor, int32_t(H), d_slot.get(), d_pos.get(), cache.layer()};
          }
          dak::gpu::tiered_gemm(a, sched, ws.get(), nullptr);
          if (!fused) {
            const QkvRopeAppend r = qkv_rope_append(d_y.get(), M, H, Hkv, int(D), d_rope_pos.get(), d_f.get(), factor,
                                                    true, d_slot.get(), d_pos.get(), cache.layer(), N);
            dak::gpu::apply_rope_kv_append(r.rope, r.kv, nullptr);
          }
          return d_y.download();
        };
        TwoTierKvCache cache_a(slots, b_host, Hkv, D, ctx), cache_b(slots, b_host, Hkv, D, ctx);
        const auto y_plain = run(false, cache_a);
        const auto y_fused = run(true, cache_b);
        EXPECT_TRUE(same_bits(y_plain, y_fused)) << what << ": y differs from the plain GEMM + apply_rope_kv_append";
        EXPECT_TRUE(same_bits(cache_a.k(), cache_b.k())) << what << ": cached k differs";
        EXPECT_TRUE(same_bits(cache_a.v(), cache_b.v())) << what << ": cached v differs";
        for (size_t g = size_t(N * M); g < y_fused.size(); ++g) EXPECT_EQ(y_fused[g], 0xffff) << what << ": guard written";
        // The rows of the last cached token were written (not left poisoned) in both tiers' layout.
        const auto kc = cache_b.k();
        const int64_t t = N > 2 ? N - 2 : N - 1;
        const size_t at = size_t(((int64_t(slot[size_t(t)]) * Hkv) * ctx + pos[size_t(t)]) * D);
        EXPECT_NE(kc[at], 0xffff) << what << ": the k row of token " << t << " was not cached";
      }
    }
  }
}

TEST(TieredGemm, RopeEpilogueRefusesShapesItCannotServe) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const int64_t H = 4, Hkv = 2, D = 64, M = (H + 2 * Hkv) * D, K = 256;
  DeviceBuffer<Bf16Bits> x(128 * K), w(M * K), y(128 * M);
  DeviceBuffer<float> f(D / 2);
  DeviceBuffer<int32_t> idx(128);
  TwoTierKvCache cache(2, 0, Hkv, D, 8);
  TieredGemmArgs a;
  a.g_x = bf(x.get());
  a.g_w = bf(w.get());
  a.g_y = y.get();
  a.rope = {idx.get(), f.get(), 1.0f, int32_t(H), idx.get(), idx.get(), cache.layer()};
  // The 128-row compute tiles (N > 64) have no RoPE epilogue.
  auto s = dak::plan_tiered_gemm(M, 128, K, 0, sm_count());
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()) + (1 << 20));
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // M that is not (H + 2 Hkv) * D.
  a.rope.num_q_heads = int32_t(H + 1);
  s = dak::plan_tiered_gemm(M, 8, K, 0, sm_count());
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // fp32 output.
  a.rope.num_q_heads = int32_t(H);
  a.out = TieredGemmOut::kF32;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  a.out = TieredGemmOut::kBf16;
  expect_split_slab_refused_then_plain_gemm_runs(a, M, K, &TieredGemmArgs::rope, ws.get(), "RoPE");
}

TEST(TieredGemm, ActEpilogueMatchesThePlainGemmThenPairedActivation) {
  // The gated activation in gate_up's epilogue (TieredGemmActOut) against the plain GEMM followed by
  // mlp_activation on the paired gate_up order: the same bits, for every activation, with and
  // without bias and the norm-in scale, host rows (also mid-tile), k-splits, and N across the
  // 64-row tiles; y is not written.
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int sms = sm_count();
  const int64_t K = 512;
  const dak::Activation acts[] = {dak::Activation::kSilu, dak::Activation::kGelu, dak::Activation::kGeluTanh,
                                  dak::Activation::kRelu};
  int k = 0;
  for (int64_t I : {64, 200, 688}) {
    const int64_t M = 2 * I;
    for (int64_t N : {1, 5, 8, 17, 32, 33, 64}) {
      for (int64_t m_host : {int64_t(0), int64_t(48), int64_t(128), M}) {
        const bool bias = k % 2 == 0, norm_in = k % 3 == 1;
        const int32_t forced_splits = k % 4 == 3 ? 2 : 0;
        const dak::Activation act = acts[k % 4];
        ++k;
        auto sched = dak::plan_tiered_gemm(M, N, K, m_host, sms);
        if (forced_splits) sched.k_splits = forced_splits;
        sched.validate();
        ASSERT_EQ(sched.tile.bm, 64) << sched.to_string();
        const std::string what = "I=" + std::to_string(I) + " act=" + std::to_string(int(act)) +
                                 " bias=" + std::to_string(bias) + " norm_in=" + std::to_string(norm_in) + " " +
                                 sched.to_string();
        const auto x = random_bf16(size_t(N * K), rng), w = random_bf16(size_t(M * K), rng, 0.1f);
        const auto b = random_bf16(size_t(M), rng);
        std::vector<float> sumsq(static_cast<size_t>(K / 64 * N));
        std::uniform_real_distribution<float> ud(1.0f, 8.0f);
        for (auto& v : sumsq) v = ud(rng);
        DeviceBuffer<Bf16Bits> d_x(x), d_b(b);
        DeviceBuffer<float> d_sumsq(sumsq);
        PlacedW pw(w, M, K, m_host);
        auto run = [&](bool fused, std::vector<Bf16Bits>* y_out) {
          DeviceBuffer<Bf16Bits> d_y(size_t(N * M) + 8), d_out(size_t(N * I) + 8);
          d_y.poison();
          d_out.poison();
          DeviceBuffer<uint8_t> ws(size_t(sched.workspace_bytes()));
          ws.poison();
          dak::gpu::tiered_gemm_workspace_init(ws.get(), sched, nullptr);
          TieredGemmArgs a;
          a.g_x = bf(d_x.get());
          a.h_w = pw.h_w;
          a.g_w = pw.g_w;
          a.g_bias = bias ? bf(d_b.get()) : nullptr;
          a.g_y = d_y.get();
          if (norm_in) a.norm_in = {d_sumsq.get(), 1e-5f};
          if (fused) a.act_out = {bf(d_out.get()), 0, act};
          dak::gpu::tiered_gemm(a, sched, ws.get(), nullptr);
          if (!fused) {
            dak::gpu::ActivationParams ap{bf(d_y.get()), nullptr, bf(d_out.get()), N, I, act, true};
            ap.paired = true;
            dak::gpu::mlp_activation(ap, nullptr);
          }
          *y_out = d_y.download();
          return d_out.download();
        };
        std::vector<Bf16Bits> y_plain, y_fused;
        const auto out_plain = run(false, &y_plain);
        const auto out_fused = run(true, &y_fused);
        EXPECT_TRUE(same_bits(out_plain, out_fused)) << what << ": differs from the plain GEMM + mlp_activation";
        for (size_t g = size_t(N * I); g < out_fused.size(); ++g) EXPECT_EQ(out_fused[g], 0xffff) << what << ": guard written";
        int64_t y_written = 0;
        for (const Bf16Bits v : y_fused) y_written += v != 0xffff;
        EXPECT_EQ(y_written, 0) << what << ": the activation epilogue wrote y";
        EXPECT_NE(out_fused[size_t(N * I - 1)], 0xffff) << what << ": the last output was not written";
      }
    }
  }
}

TEST(TieredGemm, ActEpilogueRefusesShapesItCannotServe) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const int64_t I = 64, M = 2 * I, K = 256;
  DeviceBuffer<Bf16Bits> x(128 * K), w(M * K), y(128 * M), out(128 * I);
  TieredGemmArgs a;
  a.g_x = bf(x.get());
  a.g_w = bf(w.get());
  a.g_y = y.get();
  a.act_out = {bf(out.get()), 0, dak::Activation::kSilu};
  // The 128-row compute tiles (N > 64) have no activation epilogue.
  auto s = dak::plan_tiered_gemm(M, 128, K, 0, sm_count());
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()) + (1 << 20));
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // ReLU, fp32 output, an output pitch below I.
  s = dak::plan_tiered_gemm(M, 8, K, 0, sm_count());
  a.relu = true;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  a.relu = false;
  a.out = TieredGemmOut::kF32;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  a.out = TieredGemmOut::kBf16;
  a.act_out.ldo = I - 8;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  a.act_out.ldo = 0;
  expect_split_slab_refused_then_plain_gemm_runs(a, M, K, &TieredGemmArgs::act_out, ws.get(), "activation");
}

TEST(TieredGemm, RejectsBadArguments) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const auto s = dak::plan_tiered_gemm(128, 8, 64, 64, sm_count());
  DeviceBuffer<Bf16Bits> x(8 * 64), w(128 * 64), y(8 * 128);
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
  TieredGemmArgs a;
  a.g_x = bf(x.get());
  a.g_w = bf(w.get());
  a.g_y = y.get();
  // Host rows missing.
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // Host rows that are device memory, not pinned host memory.
  a.h_w = bf(w.get());
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // Pageable host memory.
  std::vector<Bf16Bits> pageable(64 * 64 + 8);
  a.h_w = reinterpret_cast<const __nv_bfloat16*>(pageable.data() + (reinterpret_cast<uintptr_t>(pageable.data()) % 16 ? 4 : 0));
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  // Misaligned x.
  dak::gpu::PinnedHostArena host(64 * 64 * 2, "test");
  a.h_w = host.allocate_array<__nv_bfloat16>(64 * 64, "rows");
  a.g_x = bf(x.get() + 1);
  EXPECT_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr), dak::Error);
  a.g_x = bf(x.get());
  dak::gpu::tiered_gemm_workspace_init(ws.get(), s, nullptr);
  EXPECT_NO_THROW(dak::gpu::tiered_gemm(a, s, ws.get(), nullptr));
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  // Invalid schedules.
  TieredGemmSchedule bad = s;
  bad.k_splits = 0;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, bad, ws.get(), nullptr), dak::Error);
  bad = s;
  bad.host_ctas = 0;
  EXPECT_THROW(dak::gpu::tiered_gemm(a, bad, ws.get(), nullptr), dak::Error);
}

}  // namespace
