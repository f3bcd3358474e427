// Tiered decode attention (kernels/tiered_attention.h) vs a float64 host reference on fresh random
// bf16 q/k/v: ragged lengths (1, the full context, non-multiples of the 16-key step, 0), every
// b_host from 0 to B, GQA/MQA group sizes 1/4/8/16, head_dim 64/80/96/128/256, long contexts,
// forced splits and congestion settings, both HBM load paths (cp.async, TMA bulk rows), split
// sequences merged by the combine kernel or inside the CTA; the output bits must be the same for
// every b_host, every congestion setting and load path of one split and merge method (split
// invariance).
// Poisoning: outputs and workspace start as NaN; K/V positions at or past a sequence's length are
// NaN; each tier holds NaN for the sequences that live in the other tier (so a kernel reading the
// wrong tier fails); the host tier must be bitwise unchanged after the launch.
// Also: agreement with the HBM decode kernel (attention_decode, reading the same cache as a
// KvCacheLayer) at b_host = 0, one captured CUDA graph serving changing lengths, and the argument
// checks. The KV append into each sequence's tier is tested in test_kv_append.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/attention_decode.h"
#include "gpu/kernels/kv_append.h"
#include "gpu/kernels/rope.h"
#include "gpu/kernels/tiered_attention.h"
#include "gpu/launch.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;
using dak::TieredAttentionSchedule;
using dak::TieredAttentionShape;
using dak::gpu::PinnedHostArena;

constexpr Bf16Bits kNaN = 0xffff;

struct Data {
  TieredAttentionShape shape;
  std::vector<int32_t> lens;      // [B]
  std::vector<Bf16Bits> q;        // [B][H * D]
  std::vector<Bf16Bits> k, v;     // [B][Hkv][max_ctx][D]; NaN at positions >= len
  int64_t per_seq() const { return shape.num_kv_heads * shape.max_ctx * shape.head_dim; }  // elements
};

/// Random data; positions at or past each length are NaN unless `fill_all`.
Data make_data(const TieredAttentionShape& sh, std::vector<int32_t> lens, std::mt19937_64& rng, bool fill_all = false) {
  Data d{sh, std::move(lens), {}, {}, {}};
  d.q = random_bf16(size_t(sh.batch * sh.num_heads * sh.head_dim), rng);
  d.k = random_bf16(size_t(sh.batch * d.per_seq()), rng);
  d.v = random_bf16(d.k.size(), rng);
  if (fill_all) return d;
  for (int64_t b = 0; b < sh.batch; ++b) {
    for (int64_t hk = 0; hk < sh.num_kv_heads; ++hk) {
      for (int64_t j = std::max<int64_t>(0, d.lens[size_t(b)]); j < sh.max_ctx; ++j) {
        const size_t base = size_t(((b * sh.num_kv_heads + hk) * sh.max_ctx + j) * sh.head_dim);
        std::fill_n(d.k.begin() + long(base), sh.head_dim, kNaN);
        std::fill_n(d.v.begin() + long(base), sh.head_dim, kNaN);
      }
    }
  }
  return d;
}

/// Lengths: 1, the full context, then random ones in [1, max_ctx].
std::vector<int32_t> random_lens(int64_t batch, int64_t max_ctx, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> u(1, int32_t(max_ctx));
  std::vector<int32_t> l(static_cast<size_t>(batch));
  for (auto& x : l) x = u(rng);
  l[0] = 1;
  if (batch > 1) l[1] = int32_t(max_ctx);
  return l;
}

/// out [B][H * D] in double.
std::vector<double> reference(const Data& d) {
  const TieredAttentionShape& s = d.shape;
  const int64_t G = s.group(), D = s.head_dim;
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> out(size_t(s.batch * s.num_heads * D), 0.0);
  std::vector<double> w;
  for (int64_t b = 0; b < s.batch; ++b) {
    const int64_t n = std::clamp<int64_t>(d.lens[size_t(b)], 0, s.max_ctx);
    for (int64_t h = 0; h < s.num_heads; ++h) {
      const Bf16Bits* q = d.q.data() + (b * s.num_heads + h) * D;
      const size_t kv0 = size_t((b * s.num_kv_heads + h / G) * s.max_ctx * D);
      w.assign(size_t(n), 0.0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < D; ++e) dot += double(to_f(q[e])) * to_f(d.k[kv0 + size_t(j * D + e)]);
        w[size_t(j)] = dot * scale;
        mx = std::max(mx, dot * scale);
      }
      double z = 0;
      for (double& x : w) z += (x = std::exp(x - mx));
      double* o = out.data() + (b * s.num_heads + h) * D;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t e = 0; e < D; ++e) o[e] += w[size_t(j)] / z * to_f(d.v[kv0 + size_t(j * D + e)]);
      }
    }
  }
  return out;
}

double max_abs_v(const Data& d) {
  double m = 0;
  for (Bf16Bits x : d.v) {
    if (!std::isnan(to_f(x))) m = std::max(m, std::abs(double(to_f(x))));
  }
  return m;
}

std::string describe(const TieredAttentionShape& s, const std::vector<int32_t>& lens, uint64_t seed) {
  std::string r = "B=" + std::to_string(s.batch) + " H=" + std::to_string(s.num_heads) +
                  " Hkv=" + std::to_string(s.num_kv_heads) + " D=" + std::to_string(s.head_dim) +
                  " max_ctx=" + std::to_string(s.max_ctx) + " lens=";
  for (int32_t l : lens) r += std::to_string(l) + ",";
  return r + " seed=" + std::to_string(seed);
}

/// Counts positions where two bf16 outputs differ bitwise; names the first.
void expect_same_bits(const std::vector<Bf16Bits>& got, const std::vector<Bf16Bits>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " outputs differ bitwise, first at [" << first << "] got "
                     << to_f(got[first]) << " want " << to_f(want[first]);
}

/// Device state for one Data: q, lengths, output, an HBM copy and a pinned host copy of the
/// whole cache. A launch with b_host places sequences [0, b_host) in the host copy and the others
/// in the HBM copy, NaN for each tier's foreign sequences, and points the tiers into the copies.
class Harness {
 public:
  explicit Harness(const Data& d)
      : d_(d),
        q_(d.q),
        len_(d.lens),
        out_(size_t(d.shape.batch * d.shape.num_heads * d.shape.head_dim)),
        g_kv_(size_t(2 * d.shape.batch * d.per_seq())),
        host_(2 * PinnedHostArena::aligned_size(uint64_t(d.shape.batch * d.per_seq() * 2)),
              "tiered attention test host tier") {
    h_k_ = host_.allocate_array<Bf16Bits>(uint64_t(d.shape.batch * d.per_seq()), "host K");
    h_v_ = host_.allocate_array<Bf16Bits>(uint64_t(d.shape.batch * d.per_seq()), "host V");
  }

  /// Runs with the default schedule for b_host (or `forced`, whose b_host must match) and returns
  /// the output bits. Checks that the host tier is unchanged.
  std::vector<Bf16Bits> run(int64_t b_host, const TieredAttentionSchedule* forced = nullptr) {
    const TieredAttentionSchedule s = forced ? *forced : dak::gpu::tiered_attention_schedule(d_.shape, b_host);
    EXPECT_EQ(s.b_host, b_host);
    place(b_host);
    std::vector<Bf16Bits> host_before(size_t(2 * b_host * d_.per_seq()));
    std::memcpy(host_before.data(), h_k_, size_t(b_host * d_.per_seq()) * 2);
    std::memcpy(host_before.data() + b_host * d_.per_seq(), h_v_, size_t(b_host * d_.per_seq()) * 2);

    DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
    ws.poison();
    out_.poison();
    dak::gpu::tiered_attention(args(b_host), s, ws.get(), nullptr);
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_EQ(0, std::memcmp(host_before.data(), h_k_, size_t(b_host * d_.per_seq()) * 2)) << "host K was written";
    EXPECT_EQ(0, std::memcmp(host_before.data() + b_host * d_.per_seq(), h_v_, size_t(b_host * d_.per_seq()) * 2))
        << "host V was written";
    return out_.download();
  }

  dak::gpu::TieredAttentionArgs args(int64_t b_host) {
    const int64_t B = d_.shape.batch, n = d_.per_seq();
    dak::gpu::TieredAttentionArgs a;
    a.g_q = bf(q_.get());
    a.q_stride = d_.shape.num_heads * d_.shape.head_dim;
    a.h_k = b_host > 0 ? bf(h_k_) : nullptr;
    a.h_v = b_host > 0 ? bf(h_v_) : nullptr;
    a.g_k = b_host < B ? bf(g_kv_.get()) + b_host * n : nullptr;
    a.g_v = b_host < B ? bf(g_kv_.get()) + (B + b_host) * n : nullptr;
    a.g_len = len_.get();
    a.g_out = bf(out_.get());
    a.scale = float(1.0 / std::sqrt(double(d_.shape.head_dim)));
    return a;
  }

  /// Host copy: sequences [0, b_host) real, the rest NaN; HBM copy the other way round.
  void place(int64_t b_host) {
    const int64_t B = d_.shape.batch, n = d_.per_seq();
    std::vector<Bf16Bits> g(size_t(2 * B * n), kNaN);
    for (int64_t b = 0; b < B; ++b) {
      const bool on_host = b < b_host;
      Bf16Bits* hk = h_k_ + b * n;
      Bf16Bits* hv = h_v_ + b * n;
      if (on_host) {
        std::memcpy(hk, d_.k.data() + b * n, size_t(n) * 2);
        std::memcpy(hv, d_.v.data() + b * n, size_t(n) * 2);
      } else {
        std::fill_n(hk, n, kNaN);
        std::fill_n(hv, n, kNaN);
        std::copy_n(d_.k.begin() + b * n, n, g.begin() + b * n);
        std::copy_n(d_.v.begin() + b * n, n, g.begin() + (B + b) * n);
      }
    }
    g_kv_.upload(g);
  }

  /// The cache after a launch: host K, host V (the whole pinned copies), then the HBM copy (K, V).
  std::vector<Bf16Bits> tiers() const {
    const int64_t n = d_.shape.batch * d_.per_seq();
    std::vector<Bf16Bits> all(h_k_, h_k_ + n);
    all.insert(all.end(), h_v_, h_v_ + n);
    const std::vector<Bf16Bits> g = g_kv_.download();
    all.insert(all.end(), g.begin(), g.end());
    return all;
  }

  DeviceBuffer<int32_t>& lens() { return len_; }
  DeviceBuffer<Bf16Bits>& out() { return out_; }

 private:
  const Data& d_;
  DeviceBuffer<Bf16Bits> q_;
  DeviceBuffer<int32_t> len_;
  DeviceBuffer<Bf16Bits> out_;
  DeviceBuffer<Bf16Bits> g_kv_;  // [2][B][Hkv][max_ctx][D]: K then V
  PinnedHostArena host_;
  Bf16Bits* h_k_ = nullptr;      // [B][Hkv][max_ctx][D]
  Bf16Bits* h_v_ = nullptr;
};

void check_reference(const Data& d, const std::vector<Bf16Bits>& bits, const std::string& what) {
  // One bf16 rounding of the output (rtol), plus fp32 softmax / tensor-core accumulation error and
  // the 2^-17 relative error of P's hi + lo split, a few 1e-6 of max|v| (atol 1e-4 * max|v| leaves
  // ample room, far below any indexing bug).
  expect_close(bf16_to_double(bits), reference(d), 1e-4 * std::max(1.0, max_abs_v(d)), kBf16Rtol, what);
}

/// Few workers, one step in flight each: many items per warp, so the rings wrap across items.
TieredAttentionSchedule starved(const TieredAttentionShape& sh, int64_t b_host, int32_t split_keys) {
  TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, b_host);
  s.split.split_keys = split_keys;
  s.split.num_splits = int32_t((sh.max_ctx + split_keys - 1) / split_keys);
  s.host_ctas = 1;
  s.hbm_ctas = 1;
  s.host_warps = dak::tiered_attention::kWarps;
  s.host_stages = 1;
  s.hbm_stages = 1;
  s.validate();
  return s;
}

/// Fewer host stages until `s` fits a CTA's SMEM (at least 1).
void fit_host_stages(TieredAttentionSchedule& s) {
  while (s.smem_bytes() > dak::tiered_attention::kSmemLimitBytes && s.host_stages > 1) --s.host_stages;
}

/// Fewer HBM stages until `s` fits a CTA's SMEM (at least 1).
void fit_hbm_stages(TieredAttentionSchedule& s) {
  while (s.smem_bytes() > dak::tiered_attention::kSmemLimitBytes && s.hbm_stages > 1) --s.hbm_stages;
}

/// The default split with other congestion settings (deeper rings, other CTA counts) and another
/// HBM load path (staged -> bulk rows, cp.async <-> bulk rows).
TieredAttentionSchedule deep(const TieredAttentionShape& sh, int64_t b_host) {
  TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, b_host);
  s.hbm_bulk_rows = s.hbm_staged || !s.hbm_bulk_rows;
  s.hbm_staged = false;
  s.host_ctas = 2;
  s.hbm_ctas = 5;
  s.hbm_stages = 4;
  s.host_warps = dak::tiered_attention::kWarps;
  s.host_stages = 3;
  fit_host_stages(s);
  fit_hbm_stages(s);
  s.validate();
  return s;
}

/// `s` with its HBM warps on the staged load path (whole-step TMA copies into a staging ring, then
/// the padded step: TieredAttentionSchedule::hbm_staged), `stages` steps in flight.
TieredAttentionSchedule staged(TieredAttentionSchedule s, int32_t stages) {
  s.hbm_staged = true;
  s.hbm_stages = stages;
  s.validate();
  return s;
}

/// `s` with `warps` warps per host CTA (raised to the split count when splits merge in the CTA, whose
/// host CTAs must hold whole pairs), `stages` steps in flight each (fewer where SMEM runs out) and
/// `ctas` host CTAs: the other warps of a host CTA idle (TieredAttentionSchedule::host_warps).
TieredAttentionSchedule spread(TieredAttentionSchedule s, int32_t warps, int32_t stages, int32_t ctas) {
  if (s.cta_combine) warps = std::max(warps, s.split.num_splits);
  s.host_warps = warps;
  s.host_stages = stages;
  if (s.host_ctas > 0) s.host_ctas = ctas;
  fit_host_stages(s);
  s.validate();
  return s;
}

TEST(TieredAttentionKernel, EveryHostSplitMatchesTheReferenceWithTheSameBits) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  for (int64_t G : {1, 4, 8, 16}) {
    std::mt19937_64 rng(seed + uint64_t(G));
    const TieredAttentionShape sh{6, 2 * G, 2, 128, 300};
    std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
    lens[2] = 17;  // one step + 1
    lens[3] = 0;   // no key: a zero row
    const Data d = make_data(sh, lens, rng);
    const std::string what = describe(sh, lens, seed + uint64_t(G));
    SCOPED_TRACE(what);
    Harness hx(d);
    const std::vector<Bf16Bits> base = hx.run(0);
    check_reference(d, base, "b_host 0 " + what);
    const TieredAttentionSchedule st0 = starved(sh, 0, 32);
    const std::vector<Bf16Bits> base_starved = hx.run(0, &st0);
    check_reference(d, base_starved, "starved, split 32, b_host 0 " + what);
    for (int64_t b_host = 0; b_host <= sh.batch; ++b_host) {
      const std::string at = "b_host " + std::to_string(b_host) + " " + what;
      expect_same_bits(hx.run(b_host), base, "default schedule, " + at);
      const TieredAttentionSchedule dp = deep(sh, b_host);
      expect_same_bits(hx.run(b_host, &dp), base, "congestion settings " + dp.to_string() + ", " + at);
      const TieredAttentionSchedule st = starved(sh, b_host, 32);
      expect_same_bits(hx.run(b_host, &st), base_starved, "starved " + st.to_string() + ", " + at);
      const TieredAttentionSchedule sg = staged(dak::gpu::tiered_attention_schedule(sh, b_host), 2);
      expect_same_bits(hx.run(b_host, &sg), base, "staged HBM steps " + sg.to_string() + ", " + at);
      const TieredAttentionSchedule sst = staged(starved(sh, b_host, 32), 1);
      expect_same_bits(hx.run(b_host, &sst), base_starved, "staged, starved " + sst.to_string() + ", " + at);
      // Fewer working warps per host CTA, deeper rings: one CTA (its ring wraps across items), and 3.
      for (const auto& [warps, stages, ctas] : {std::tuple{1, 8, 1}, std::tuple{2, 4, 3}, std::tuple{1, 3, 5}}) {
        const TieredAttentionSchedule sp = spread(dak::gpu::tiered_attention_schedule(sh, b_host), warps, stages, ctas);
        expect_same_bits(hx.run(b_host, &sp), base, "host warps " + sp.to_string() + ", " + at);
      }
    }
  }
}

TEST(TieredAttentionKernel, FewHostItemsOnTwoWarpsACtaMatchTheReferenceWithTheSameBits) {
  // The plan's spread host side (session 45): Llama-3-8B's heads, 64 sequences of 496 keys (2
  // splits; 512 keys take 4 since session 46), one on the host: 8 kv heads x 2 splits = 16 host
  // items on 8 CTAs x 2 warps x 4 steps, merged in the CTA (the idle warps meet its barriers). Same
  // bits as every sequence in HBM, and as the 4-warp plan.
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const TieredAttentionShape sh{64, 32, 8, 128, 496};
  std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
  lens[0] = 496;  // the host sequence: both splits live
  lens[1] = 0;
  lens[5] = 257;  // one key in the second split
  const Data d = make_data(sh, lens, rng);
  const std::string what = describe(sh, lens, seed);
  SCOPED_TRACE(what);
  Harness hx(d);
  // The plans for 132 SMs (H100 / H200 SXM), whatever this GPU's count: the kernel runs any valid
  // schedule, and the split (hence the bits) is the 132-SM plan's for every b_host.
  const auto plan = [&](int64_t b_host) { return dak::plan_tiered_attention(sh, b_host, 132, 2); };
  const TieredAttentionSchedule p0 = plan(0);
  const std::vector<Bf16Bits> base = hx.run(0, &p0);
  check_reference(d, base, "b_host 0 " + p0.to_string() + " " + what);
  const TieredAttentionSchedule p1 = plan(1);
  ASSERT_TRUE(p1.cta_combine) << p1.to_string();
  ASSERT_TRUE(p1.smem_merge) << p1.to_string();
  ASSERT_EQ(p1.host_warps, 2) << "the plan spreads 16 host items: " << p1.to_string();
  expect_same_bits(hx.run(1, &p1), base, "the plan " + p1.to_string());
  const TieredAttentionSchedule four = spread(p1, dak::tiered_attention::kWarps, 2, 4);
  expect_same_bits(hx.run(1, &four), base, "4 warps a host CTA " + four.to_string());
  for (int64_t b_host : {2, 3, 9}) {
    const TieredAttentionSchedule pb = plan(b_host);
    expect_same_bits(hx.run(b_host, &pb), base, "b_host " + std::to_string(b_host) + " plan " + pb.to_string());
  }
  // HBM CTAs in waves (DAK_ATTN_HBM_WAVES, session 46): one CTA per 4 HBM items, with rings deep
  // enough that an SM holds one CTA, so most of them start only as others finish.
  for (int64_t b_host : {0, 1}) {
    TieredAttentionSchedule wv = plan(b_host);
    wv.hbm_ctas = int32_t((wv.hbm_items() + dak::tiered_attention::kWarps - 1) / dak::tiered_attention::kWarps);
    wv.hbm_stages = 6;
    fit_hbm_stages(wv);
    dak::refit_smem_merge(wv);
    wv.validate();
    ASSERT_GT(wv.host_ctas + wv.hbm_ctas, dak::gpu::device_sm_count() * dak::gpu::tiered_attention_ctas_per_sm(wv))
        << "not in waves: " << wv.to_string();
    expect_same_bits(hx.run(b_host, &wv), base, "HBM CTAs in waves " + wv.to_string());
  }
}

TEST(TieredAttentionKernel, HeadDimsAndGroupSizesMatchTheReference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int64_t D : {64, 80, 96, 128, 256}) {
    for (int64_t G : {1, 4, 8, 16}) {
      std::mt19937_64 rng(seed + k);
      const int64_t Hkv = (k % 2) ? 2 : 1;
      const TieredAttentionShape sh{3, G * Hkv, Hkv, D, 97 + D};
      const std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
      const Data d = make_data(sh, lens, rng);
      const std::string what = describe(sh, lens, seed + k);
      SCOPED_TRACE(what);
      Harness hx(d);
      const std::vector<Bf16Bits> base = hx.run(0);
      check_reference(d, base, "b_host 0 " + what);
      const TieredAttentionSchedule st0 = starved(sh, 0, 48);
      const std::vector<Bf16Bits> base_starved = hx.run(0, &st0);
      check_reference(d, base_starved, "starved, split 48, b_host 0 " + what);
      for (int64_t b_host : {int64_t(1), sh.batch}) {
        const std::string at = "b_host " + std::to_string(b_host) + " " + what;
        expect_same_bits(hx.run(b_host), base, at);
        const TieredAttentionSchedule st = starved(sh, b_host, 48);
        expect_same_bits(hx.run(b_host, &st), base_starved, "starved " + at);
        const TieredAttentionSchedule sst = staged(starved(sh, b_host, 48), 1);
        expect_same_bits(hx.run(b_host, &sst), base_starved, "staged, starved " + at);
      }
      const TieredAttentionSchedule sg = staged(dak::gpu::tiered_attention_schedule(sh, 0), 2);
      expect_same_bits(hx.run(0, &sg), base, "staged HBM steps, b_host 0 " + what);
      ++k;
    }
  }
}

TEST(TieredAttentionKernel, LongContextsMatchTheReference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  struct Case {
    TieredAttentionShape shape;
    std::vector<int32_t> lens;
  };
  const Case cases[] = {{{2, 8, 2, 128, 32768}, {32768, 20001}}, {{3, 4, 4, 64, 8192}, {8192, 1, 5003}}};
  uint64_t k = 0;
  for (const Case& c : cases) {
    std::mt19937_64 rng(seed + k);
    const Data d = make_data(c.shape, c.lens, rng);
    const std::string what = describe(c.shape, c.lens, seed + k);
    SCOPED_TRACE(what);
    Harness hx(d);
    const std::vector<Bf16Bits> base = hx.run(0);
    check_reference(d, base, "b_host 0 " + what);
    for (int64_t b_host = 1; b_host <= c.shape.batch; ++b_host) {
      expect_same_bits(hx.run(b_host), base, "b_host " + std::to_string(b_host) + " " + what);
    }
    for (const bool bulk : {false, true}) {  // the HBM load paths the plan does not take here
      TieredAttentionSchedule other = dak::gpu::tiered_attention_schedule(c.shape, 0);
      other.hbm_staged = false;
      other.hbm_bulk_rows = bulk;
      other.hbm_stages = 3;
      expect_same_bits(hx.run(0, &other), base, "another HBM load path, " + other.to_string() + " " + what);
    }
    const TieredAttentionSchedule sg = staged(dak::gpu::tiered_attention_schedule(c.shape, 0), 2);
    expect_same_bits(hx.run(0, &sg), base, "staged HBM steps, " + sg.to_string() + " " + what);
    // One step per split: up to 2048 live splits per row, past the combine's SMEM weights (1024).
    auto fine = [&](int64_t b_host) {
      TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(c.shape, b_host);
      s.split.split_keys = dak::tiered_attention::kStepKeys;
      s.split.num_splits = int32_t(c.shape.max_ctx / dak::tiered_attention::kStepKeys);
      s.hbm_bulk_rows = true;  // one TMA bulk copy per live row, a partial last step in every ragged row
      s.validate();
      return s;
    };
    const TieredAttentionSchedule f0 = fine(0);
    const std::vector<Bf16Bits> base_fine = hx.run(0, &f0);
    check_reference(d, base_fine, "split 16, b_host 0 " + what);
    const TieredAttentionSchedule f1 = fine(1);
    expect_same_bits(hx.run(1, &f1), base_fine, "split 16, b_host 1 " + what);
    for (int64_t b_host = 2; b_host <= c.shape.batch; ++b_host) {
      const TieredAttentionSchedule fb = fine(b_host);
      expect_same_bits(hx.run(b_host, &fb), base_fine, "split 16, b_host " + std::to_string(b_host) + " " + what);
    }
    ++k;
  }
}

/// `splits` splits (2 or 4) of the default schedule, merged in the CTA (cta_combine) or by the
/// combine kernel; `variant` 1: one CTA per side with one step in flight (many rounds per CTA, the
/// rings wrapping across rounds), 2: deep()'s congestion settings and the other HBM load path, 3:
/// host CTAs running `splits` warps each (TieredAttentionSchedule::host_warps).
TieredAttentionSchedule merged(const TieredAttentionShape& sh, int64_t b_host, int32_t splits, bool in_cta,
                               int variant) {
  TieredAttentionSchedule s = variant == 2 ? deep(sh, b_host) : dak::gpu::tiered_attention_schedule(sh, b_host);
  const int64_t steps = (sh.max_ctx + dak::tiered_attention::kStepKeys - 1) / dak::tiered_attention::kStepKeys;
  s.split.split_keys = int32_t((steps + splits - 1) / splits * dak::tiered_attention::kStepKeys);
  s.split.num_splits = int32_t((sh.max_ctx + s.split.split_keys - 1) / s.split.split_keys);
  EXPECT_EQ(s.split.num_splits, splits) << "pick max_ctx so that " << splits << " splits cover it";
  s.cta_combine = in_cta;
  s.smem_merge = false;  // the workspace merge (the test sets smem_merge itself)
  s.host_warps = dak::tiered_attention::kWarps;
  if (variant == 1) {
    s.host_ctas = b_host > 0 ? 1 : 0;
    s.hbm_ctas = b_host < sh.batch ? 1 : 0;
    s.host_stages = 1;
    s.hbm_stages = 1;
  }
  if (variant == 3) {  // host CTAs of `splits` working warps (2: two idle warps meet the barriers), 3 CTAs
    s.host_warps = splits;
    s.host_ctas = b_host > 0 ? 3 : 0;
    s.host_stages = 3;
    fit_host_stages(s);
  }
  s.validate();
  return s;
}

TEST(TieredAttentionKernel, SplitsMergedInTheCtaMatchTheReferenceWithTheSameBits) {  // in the workspace and in SMEM
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  // 7 sequences (an odd pair count: with 2 splits a round may end with half a CTA), ragged lengths
  // with dead splits, a length of 0 and of one step + 1; 250 keys = 4 x 64 or 2 x 128.
  for (const TieredAttentionShape& sh : {TieredAttentionShape{7, 8, 8, 128, 250}, TieredAttentionShape{7, 16, 1, 64, 250},
                                         TieredAttentionShape{5, 8, 2, 256, 250}, TieredAttentionShape{7, 12, 3, 80, 250}}) {
    for (int32_t splits : {2, 4}) {
      std::mt19937_64 rng(seed + k);
      std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
      lens[2] = 17;
      lens[3] = 0;
      const Data d = make_data(sh, lens, rng);
      const std::string what = describe(sh, lens, seed + k) + " splits=" + std::to_string(splits);
      SCOPED_TRACE(what);
      Harness hx(d);
      const TieredAttentionSchedule s0 = merged(sh, 0, splits, true, 0);
      const std::vector<Bf16Bits> base = hx.run(0, &s0);
      check_reference(d, base, "merged in the CTA, b_host 0 " + what);
      const TieredAttentionSchedule kernel = merged(sh, 0, splits, false, 0);
      check_reference(d, hx.run(0, &kernel), "merged by the combine kernel, b_host 0 " + what);
      for (int64_t b_host = 0; b_host <= sh.batch; ++b_host) {
        for (int variant : {0, 1, 2, 3}) {
          const TieredAttentionSchedule s = merged(sh, b_host, splits, true, variant);
          expect_same_bits(hx.run(b_host, &s), base, s.to_string() + ", b_host " + std::to_string(b_host) + " " + what);
          // The partials through SMEM instead of the workspace (variant 1: one CTA a side, so many
          // rounds reuse the SMEM slots): the same bits.
          TieredAttentionSchedule sm = s;
          sm.smem_merge = true;
          ASSERT_LE(sm.smem_bytes(), dak::tiered_attention::kSmemLimitBytes) << sm.to_string();
          sm.validate();
          expect_same_bits(hx.run(b_host, &sm), base, sm.to_string() + ", b_host " + std::to_string(b_host) + " " + what);
        }
      }
      ++k;
    }
  }
}

TEST(TieredAttentionKernel, TwoCtasFitAnSmAtTheTwoCtaLimit) {
  // kSmemTwoCtaBytes (core) assumes the kernel's static SMEM and the SM's SMEM; the occupancy API
  // on this GPU says whether two CTAs fit at it and one at 2 KiB more, for every head_dim.
  DAK_REQUIRE_GPU_OR_SKIP();
  namespace ta = dak::tiered_attention;
  for (int64_t d : {64, 80, 96, 128, 256}) {
    SCOPED_TRACE("head_dim " + std::to_string(d));
    EXPECT_LE(dak::gpu::tiered_attention_static_smem_bytes(d), ta::kStaticSmemAllowanceBytes);
    EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(d, ta::kSmemTwoCtaBytes), 2);
    EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(d, ta::kSmemTwoCtaBytes + 2048), 1);
    EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(d, ta::kSmemLimitBytes), 1);  // the plans' limit launches
    if (dak::gpu::tiered_attention_static_smem_bytes(d) > 0) {  // no room for the static SMEM
      EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(d, dak::hopper::kSmemPerCtaMaxBytes), 0);
    }
    EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(d, dak::hopper::kSmemPerCtaMaxBytes + 1), 0);
  }
  EXPECT_EQ(dak::gpu::tiered_attention_ctas_per_sm(100, 1024), 0);  // no kernel for head_dim 100
}

TEST(TieredAttentionKernel, AgreesWithTheHbmDecodeKernelWithoutOffload) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (const TieredAttentionShape& sh : {TieredAttentionShape{5, 8, 8, 128, 700}, TieredAttentionShape{4, 32, 8, 128, 2000},
                                         TieredAttentionShape{3, 16, 2, 64, 333}, TieredAttentionShape{2, 8, 1, 80, 129}}) {
    std::mt19937_64 rng(seed + k);
    const std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
    const Data d = make_data(sh, lens, rng);
    const std::string what = describe(sh, lens, seed + k);
    SCOPED_TRACE(what);
    Harness hx(d);
    const std::vector<double> tiered = bf16_to_double(hx.run(0));

    // The same cache, all in the HBM tier, as the engine's KvCacheLayer for attention_decode.
    const int64_t B = sh.batch, Hkv = sh.num_kv_heads, D = sh.head_dim, C = sh.max_ctx;
    DeviceBuffer<Bf16Bits> dk(d.k), dv(d.v), q(d.q), out(size_t(B * sh.num_heads * D));
    const size_t nb = static_cast<size_t>(B);
    std::vector<int32_t> slot(nb), pos0(nb), one(nb, 1), row0(nb);
    for (int64_t b = 0; b < B; ++b) {
      slot[size_t(b)] = int32_t(b);
      row0[size_t(b)] = int32_t(b);
      pos0[size_t(b)] = lens[size_t(b)] - 1;
    }
    DeviceBuffer<int32_t> d_slot(slot), d_pos0(pos0), d_len(one), d_row0(row0);
    dak::gpu::DecodeAttentionParams dp;
    dp.attn.g_q = bf(q.get());
    dp.attn.q_stride = sh.num_heads * D;
    dp.attn.kv = dak::gpu::KvCacheLayer{nullptr, nullptr, bf(dk.get()), bf(dv.get()), int32_t(B), 0, int32_t(Hkv),
                                        int32_t(D), C};
    dp.attn.g_out = bf(out.get());
    dp.attn.segs = {d_slot.get(), d_pos0.get(), d_len.get(), d_row0.get(), int32_t(B)};
    dp.attn.num_heads = int32_t(sh.num_heads);
    dp.attn.num_kv_heads = int32_t(Hkv);
    dp.attn.head_dim = int32_t(D);
    dp.attn.scale = float(1.0 / std::sqrt(double(D)));
    dp.split = dak::gpu::choose_decode_split(B, sh.num_heads, Hkv, C, 132);
    DeviceBuffer<float> partial(size_t(dak::gpu::decode_workspace_bytes(B, sh.num_heads, D, dp.split) / 4));
    dp.g_partial = partial.get();
    out.poison();
    dak::gpu::attention_decode(dp, nullptr);
    const std::vector<double> decode = bf16_to_double(out.download());
    // Both are one bf16 rounding of nearly the same fp32 value (the sums are associated
    // differently), so they may differ by one bf16 ulp where the exact value sits near a rounding
    // boundary: up to 2^-7 relative. atol as in the reference comparison.
    expect_close(tiered, decode, 1e-4 * std::max(1.0, max_abs_v(d)), 2 * kBf16Rtol, "vs attention_decode " + what);
    ++k;
  }
}

TEST(TieredAttentionKernel, ReadsTheKeyAppendedByThePreviousKernel) {
  // The kernel requests keys [0, len - 1) before its dependency wait (tiered_attention.h); key
  // len - 1 is the decode step's new key, appended by the kernel just before (kv_append, launched
  // with PDL as in the engine). The cache holds NaN at len - 1 until the append: reading it early
  // gives NaN. Lengths cover steps ending at, before and after the new key; splits of 16 keys put
  // the new key alone in a step at len = 16 k + 1.
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const TieredAttentionShape sh{6, 8, 2, 128, 200};
  const std::vector<int32_t> lens = {1, 16, 17, 33, 200, 150};
  const Data d = make_data(sh, lens, rng);
  Data stale = d;  // the cache before the append: NaN at key len - 1
  const int64_t B = sh.batch, Hkv = sh.num_kv_heads, D = sh.head_dim, kvd = Hkv * D;
  std::vector<Bf16Bits> qkv(size_t(B * 2 * kvd));  // the new keys and values: [B][K heads | V heads]
  std::vector<int32_t> slots(static_cast<size_t>(B)), positions(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    slots[size_t(b)] = int32_t(b);
    positions[size_t(b)] = lens[size_t(b)] - 1;
    for (int64_t hk = 0; hk < Hkv; ++hk) {
      const size_t row = size_t(((b * Hkv + hk) * sh.max_ctx + lens[size_t(b)] - 1) * D);
      std::copy_n(d.k.begin() + long(row), D, qkv.begin() + long(b * 2 * kvd + hk * D));
      std::copy_n(d.v.begin() + long(row), D, qkv.begin() + long(b * 2 * kvd + kvd + hk * D));
      std::fill_n(stale.k.begin() + long(row), D, kNaN);
      std::fill_n(stale.v.begin() + long(row), D, kNaN);
    }
  }
  const std::string what = describe(sh, lens, seed);
  DeviceBuffer<Bf16Bits> g_qkv(qkv);
  DeviceBuffer<int32_t> g_slots(slots), g_pos(positions);
  cudaStream_t st;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int64_t b_host : {int64_t(0), int64_t(3), B}) {
    for (int32_t splits : {0, 2}) {  // 0: the plan's split; 2: merged in the CTA
      Harness hx(stale);
      hx.place(b_host);
      TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, b_host);
      if (splits > 0) s = merged(sh, b_host, splits, true, 0);
      s.hbm_bulk_rows = splits > 0;
      const dak::gpu::TieredAttentionArgs a = hx.args(b_host);
      dak::gpu::KvAppendParams ap;
      ap.g_qkv = bf(g_qkv.get());
      ap.row_stride = 2 * kvd;
      ap.k_offset = 0;
      ap.v_offset = kvd;
      ap.g_slots = g_slots.get();
      ap.g_positions = g_pos.get();
      ap.kv = dak::gpu::KvCacheLayer{const_cast<__nv_bfloat16*>(a.h_k), const_cast<__nv_bfloat16*>(a.h_v),
                                     const_cast<__nv_bfloat16*>(a.g_k), const_cast<__nv_bfloat16*>(a.g_v),
                                     int32_t(B), int32_t(b_host), int32_t(Hkv), int32_t(D), sh.max_ctx};
      ap.T = B;
      DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
      ws.poison();
      hx.out().poison();
      dak::gpu::kv_append(ap, st);
      dak::gpu::tiered_attention(a, s, ws.get(), st);
      DAK_CUDA_CHECK(cudaStreamSynchronize(st));
      check_reference(d, hx.out().download(), s.to_string() + " " + what);
    }
  }
  DAK_CUDA_CHECK(cudaStreamDestroy(st));
}

TEST(TieredAttentionKernel, FusedRopeAndAppendGiveTheBitsOfTheSeparateKernel) {
  // TieredAttentionArgs::g_new: the kernel rotates q in registers and writes the new row len - 1
  // itself. Against apply_rope_kv_append + the kernel on the same data: the same output bits and
  // the same cache. Row len - 1 starts as NaN, so a step that missed the new row fails.
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (const TieredAttentionShape& sh : {TieredAttentionShape{5, 8, 2, 128, 300}, TieredAttentionShape{4, 4, 4, 64, 200},
                                         TieredAttentionShape{3, 16, 1, 256, 100}, TieredAttentionShape{4, 6, 3, 96, 70},
                                         TieredAttentionShape{3, 6, 3, 80, 150}}) {
    const bool rope = dak::gpu::tiered_attention_rope_fusable(sh.head_dim);  // D = 80: the append alone
    const float m = k % 2 ? float(0.1 * std::log(4.0) + 1.0) : 1.0f;  // cos / sin multiplier: yarn factor 4, or 1
    std::mt19937_64 rng(seed + k);
    std::vector<int32_t> lens = random_lens(sh.batch, sh.max_ctx, rng);
    lens[2] = 17;  // the new key alone in its 16-key step
    Data d = make_data(sh, lens, rng);
    const int64_t B = sh.batch, H = sh.num_heads, Hkv = sh.num_kv_heads, D = sh.head_dim;
    const int64_t qd = H * D, kvd = Hkv * D, stride = qd + 2 * kvd;
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t hk = 0; hk < Hkv; ++hk) {
        const long row = long(((b * Hkv + hk) * sh.max_ctx + lens[size_t(b)] - 1) * D);
        std::fill_n(d.k.begin() + row, D, kNaN);
        std::fill_n(d.v.begin() + row, D, kNaN);
      }
    }
    const std::vector<Bf16Bits> qkv = random_bf16(size_t(B * stride), rng);
    std::vector<float> inv_freq(size_t(D / 2));
    for (int64_t i = 0; i < D / 2; ++i) inv_freq[size_t(i)] = float(std::pow(10000.0, -2.0 * double(i) / double(D)));
    std::vector<int32_t> slots(static_cast<size_t>(B)), positions(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b) {
      slots[size_t(b)] = int32_t(b);
      positions[size_t(b)] = lens[size_t(b)] - 1;
    }
    DeviceBuffer<float> g_freq(inv_freq);
    DeviceBuffer<int32_t> g_slots(slots), g_pos(positions);
    const std::string what =
        describe(sh, lens, seed + k) + (rope ? " rope m=" + std::to_string(m) : " append only");
    SCOPED_TRACE(what);
    for (int64_t b_host : {int64_t(0), int64_t(2), B}) {
      for (int32_t splits : {0, 2}) {  // the plan's split; 2 splits merged in the CTA
        TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, b_host);
        if (splits > 0) s = merged(sh, b_host, splits, true, 2);
        std::vector<Bf16Bits> out[2], cache[2];
        for (int fused = 0; fused < 2; ++fused) {
          Harness hx(d);
          hx.place(b_host);
          DeviceBuffer<Bf16Bits> g_qkv(qkv);
          dak::gpu::TieredAttentionArgs a = hx.args(b_host);
          a.g_q = bf(g_qkv.get());
          a.q_stride = stride;
          if (fused) {
            a.g_new = bf(g_qkv.get());
            a.new_stride = stride;
            a.new_k_offset = qd;
            a.new_v_offset = qd + kvd;
            a.g_inv_freq = rope ? g_freq.get() : nullptr;
            a.rope_attention_factor = m;
          } else {
            dak::gpu::KvAppendParams ap{bf(g_qkv.get()), stride, qd, qd + kvd, g_slots.get(), g_pos.get(),
                                        dak::gpu::KvCacheLayer{const_cast<__nv_bfloat16*>(a.h_k),
                                                               const_cast<__nv_bfloat16*>(a.h_v),
                                                               const_cast<__nv_bfloat16*>(a.g_k),
                                                               const_cast<__nv_bfloat16*>(a.g_v), int32_t(B),
                                                               int32_t(b_host), int32_t(Hkv), int32_t(D), sh.max_ctx},
                                        B};
            if (rope) {
              dak::gpu::apply_rope_kv_append({bf(g_qkv.get()), stride, 0, qd, g_pos.get(), g_freq.get(), B,
                                              int32_t(H), int32_t(Hkv), int32_t(D), m},
                                             ap, nullptr);
            } else {
              dak::gpu::kv_append(ap, nullptr);
            }
          }
          DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
          ws.poison();
          hx.out().poison();
          dak::gpu::tiered_attention(a, s, ws.get(), nullptr);
          DAK_CUDA_CHECK(cudaDeviceSynchronize());
          out[fused] = hx.out().download();
          cache[fused] = hx.tiers();
        }
        const std::string at = s.to_string() + " " + what;
        size_t nan = 0;
        for (Bf16Bits x : out[0]) nan += std::isnan(to_f(x));
        EXPECT_EQ(nan, 0u) << "the separate path left NaN outputs, " << at;
        expect_same_bits(out[1], out[0], "fused vs separate output, " + at);
        expect_same_bits(cache[1], cache[0], "fused vs separate cache, " + at);
      }
    }
    ++k;
  }
}

TEST(TieredAttentionKernel, OneCapturedGraphServesChangingLengths) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  std::mt19937_64 rng(seed);
  const TieredAttentionShape sh{4, 16, 4, 128, 1500};
  Data d = make_data(sh, std::vector<int32_t>(4, 1500), rng, /*fill_all=*/true);
  Harness hx(d);
  const int64_t b_host = 2;
  hx.place(b_host);
  // The plan's split at 1500 keys: more than 4 splits, merged by the combine kernel, whose live
  // split counts change with the lengths.
  const TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, b_host);
  ASSERT_GT(s.split.num_splits, 4) << s.to_string();
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
  ws.poison();
  cudaStream_t st;
  DAK_CUDA_CHECK(cudaStreamCreate(&st));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  DAK_CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  dak::gpu::tiered_attention(hx.args(b_host), s, ws.get(), st);
  DAK_CUDA_CHECK(cudaStreamEndCapture(st, &graph));
  DAK_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (const std::vector<int32_t>& lens : {std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{1500, 777, 16, 1200},
                                          std::vector<int32_t>{33, 1500, 1499, 0}, std::vector<int32_t>{1500, 1500, 40, 700}}) {
    d.lens = lens;
    const std::string what = describe(sh, lens, seed);
    hx.lens().upload(lens);
    hx.out().poison();
    DAK_CUDA_CHECK(cudaGraphLaunch(exec, st));
    DAK_CUDA_CHECK(cudaStreamSynchronize(st));
    check_reference(d, hx.out().download(), "graph replay " + what + " " + s.to_string());
  }
  DAK_CUDA_CHECK(cudaGraphExecDestroy(exec));
  DAK_CUDA_CHECK(cudaGraphDestroy(graph));
  DAK_CUDA_CHECK(cudaStreamDestroy(st));
}

TEST(TieredAttentionKernel, RefusesBadArguments) {
  DAK_REQUIRE_GPU_OR_SKIP();
  std::mt19937_64 rng(1);
  const TieredAttentionShape sh{2, 4, 2, 64, 64};
  const Data d = make_data(sh, {64, 3}, rng);
  Harness hx(d);
  const TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, 1);
  DeviceBuffer<uint8_t> ws(size_t(s.workspace_bytes()));
  auto expect_error = [&](const dak::gpu::TieredAttentionArgs& a, const TieredAttentionSchedule& sch,
                          const std::string& needle) {
    try {
      dak::gpu::tiered_attention(a, sch, ws.get(), nullptr);
      ADD_FAILURE() << "expected dak::Error containing " << needle;
    } catch (const dak::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  dak::gpu::TieredAttentionArgs a = hx.args(1);
  a.h_k = nullptr;
  expect_error(a, s, "null");
  std::vector<Bf16Bits> pageable(size_t(2 * d.per_seq()));
  a = hx.args(1);
  a.h_k = bf(pageable.data());  // not pinned: TMA cannot read it
  expect_error(a, s, "pinned");
  a = hx.args(1);
  a.g_k = a.g_k + 1;  // 2-byte offset: not 16-byte aligned
  expect_error(a, s, "aligned");
  TieredAttentionSchedule bad = s;
  bad.shape.head_dim = 72;
  expect_error(hx.args(1), bad, "head_dim 72");
  bad = s;
  bad.hbm_ctas = 0;
  expect_error(hx.args(1), bad, "at least one CTA");
}

}  // namespace
