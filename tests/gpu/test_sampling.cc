// sample_tokens: greedy argmax (lowest id on ties, NaN ignored) bitwise against the host; for
// temperature / top-k / top-p, the drawn id must lie in the host's kept set and bracket the
// host's inverse CDF at the same uniform number (sample_uniform is shared by host and device).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/kernels/sampling.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;

std::vector<int32_t> run(const std::vector<float>& logits, int64_t B, int64_t V, float temperature, int32_t top_k,
                         float top_p, uint64_t seed, const std::vector<int32_t>& counters) {
  DeviceBuffer<float> d_x(logits);
  DeviceBuffer<int32_t> d_ids(static_cast<size_t>(B)), d_c(counters);
  d_ids.poison();
  dak::gpu::SampleParams p;
  p.g_logits = d_x.get();
  p.row_stride = V;
  p.g_out_ids = d_ids.get();
  p.g_counters = d_c.get();
  p.B = B;
  p.V = V;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  dak::gpu::sample_tokens(p, nullptr);
  return d_ids.download();
}

TEST(SamplingKernel, GreedyIsArgmaxWithLowestIdOnTies) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  for (int64_t V : {1, 2, 1023, 1024, 1025, 49152, 151936}) {
    const int64_t B = 4;
    std::vector<float> x = random_f32(size_t(B * V), rng);
    if (V > 10) {
      // Row 1: a tie between two ids at the maximum; row 2: a NaN that must not win; row 3: all equal.
      const float big = 100.f;
      x[size_t(V + V / 3)] = big;
      x[size_t(V + V - 1)] = big;
      x[size_t(2 * V + 5)] = NAN;
      std::fill(x.begin() + 3 * V, x.begin() + 4 * V, 0.5f);
    }
    std::vector<int32_t> counters(size_t(B), 0);
    const auto got = run(x, B, V, 0.f, 0, 1.f, 1, counters);
    for (int64_t b = 0; b < B; ++b) {
      int32_t want = 0;
      float best = -INFINITY;
      for (int64_t i = 0; i < V; ++i) {
        const float v = x[size_t(b * V + i)];
        if (!std::isnan(v) && v > best) {
          best = v;
          want = int32_t(i);
        }
      }
      EXPECT_EQ(got[size_t(b)], want) << "V=" << V << " row " << b << " seed=" << seed;
    }
  }
}

// Host reference of the kept set and the inverse CDF, in float64.
struct HostDraw {
  std::vector<double> w;  // kept weights (0 outside the set), id order
  double total = 0;
};

HostDraw host_kept(const float* x, int64_t V, float temperature, int32_t top_k, float top_p) {
  HostDraw h;
  h.w.assign(size_t(V), 0.0);
  const float mx = *std::max_element(x, x + V);
  float kth = -INFINITY;
  if (top_k > 0 && top_k < V) {
    std::vector<float> s(x, x + V);
    std::nth_element(s.begin(), s.begin() + (top_k - 1), s.end(), std::greater<float>());
    kth = s[size_t(top_k - 1)];
  }
  for (int64_t i = 0; i < V; ++i) {
    if (x[i] >= kth) h.w[size_t(i)] = std::exp((double(x[i]) - mx) / temperature);
  }
  if (top_p < 1.f) {
    std::vector<double> s;
    double z = 0;
    for (double v : h.w) {
      if (v > 0) {
        s.push_back(v);
        z += v;
      }
    }
    std::sort(s.begin(), s.end(), std::greater<double>());
    double run = 0, tau = 0;
    for (double v : s) {
      run += v;
      tau = v;
      if (run >= top_p * z) break;
    }
    for (double& v : h.w) {
      if (v < tau) v = 0;
    }
  }
  h.total = std::accumulate(h.w.begin(), h.w.end(), 0.0);
  return h;
}

TEST(SamplingKernel, TemperatureTopKTopPFollowTheInverseCdf) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  struct Cfg {
    float t;
    int32_t k;
    float p;
  };
  for (int64_t V : {2, 1000, 32000, 151936}) {
    for (const Cfg c : {Cfg{1.f, 0, 1.f}, Cfg{0.7f, 40, 1.f}, Cfg{1.3f, 0, 0.9f}, Cfg{0.8f, 50, 0.95f}, Cfg{1.f, 1, 1.f}}) {
      const int64_t B = 6;
      const std::vector<float> x = random_f32(size_t(B * V), rng, 3.f);
      std::vector<int32_t> counters(static_cast<size_t>(B));
      for (auto& v : counters) v = int32_t(rng() % 100000);
      const uint64_t sseed = rng();
      const auto got = run(x, B, V, c.t, c.k, c.p, sseed, counters);
      for (int64_t b = 0; b < B; ++b) {
        const std::string what = "V=" + std::to_string(V) + " T=" + std::to_string(c.t) + " k=" +
                                 std::to_string(c.k) + " p=" + std::to_string(c.p) + " row " + std::to_string(b) +
                                 " seed=" + std::to_string(seed);
        const HostDraw h = host_kept(x.data() + b * V, V, c.t, c.k, c.p);
        const int32_t id = got[size_t(b)];
        ASSERT_TRUE(id >= 0 && id < V) << what << " id " << id;
        EXPECT_GT(h.w[size_t(id)], 0.0) << what << ": id " << id << " is outside the top-k/top-p set";
        const double target = dak::gpu::sample_uniform(sseed, b, counters[size_t(b)]) * h.total;
        const double before = std::accumulate(h.w.begin(), h.w.begin() + id, 0.0);
        const double eps = 1e-5 * h.total;  // fp32 weights vs float64
        EXPECT_LE(before, target + eps) << what << ": id " << id << " comes after the inverse CDF";
        EXPECT_GE(before + h.w[size_t(id)], target - eps) << what << ": id " << id << " comes before the inverse CDF";
      }
    }
  }
}

TEST(SamplingKernel, SameSeedSameIdsAndInvalidParametersThrow) {
  DAK_REQUIRE_GPU_OR_SKIP();
  std::mt19937_64 rng(fresh_seed());
  const int64_t B = 3, V = 5000;
  const auto x = random_f32(size_t(B * V), rng, 2.f);
  const std::vector<int32_t> counters = {0, 1, 2};
  EXPECT_EQ(run(x, B, V, 1.f, 0, 0.9f, 42, counters), run(x, B, V, 1.f, 0, 0.9f, 42, counters));
  EXPECT_THROW(run(x, B, V, -1.f, 0, 1.f, 0, counters), dak::Error);
  EXPECT_THROW(run(x, B, V, 1.f, -2, 1.f, 0, counters), dak::Error);
  EXPECT_THROW(run(x, B, V, 1.f, 0, 0.f, 0, counters), dak::Error);
  EXPECT_THROW(run(x, B, V, 1.f, 0, 1.5f, 0, counters), dak::Error);
}

}  // namespace
