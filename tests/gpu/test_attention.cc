// Prefill and decode attention vs a float64 host reference on the same bf16 q/k/v: ragged
// segments with earlier context (pos0 > 0), GQA group sizes 1..8, head_dims 16/24/64/80/96/128/256,
// sliding windows, empty segments, and decode key splits (heuristic and forced small).
// The two-tier cache (kv_cache.h) is read with every slot in HBM, with the leading slots in
// pinned mapped host memory, and with every slot on the host; the host tier must be unchanged.
// The cache is poisoned (NaN) wherever a correct kernel must not read: positions at or past
// each sequence's length, positions before the first query's sliding window, and unused
// slots. Output rows of no segment must stay poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/kernels/attention_decode.h"
#include "gpu/kernels/attention_prefill.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"
#include "kv_test_util.h"

namespace {

using namespace dak::test;

struct Seg {
  int32_t slot, pos0, len, row0;
};

struct Problem {
  int H, Hkv, D, window;
  int64_t slots, ctx, rows;
  std::vector<Seg> segs;
  std::vector<Bf16Bits> q, k, v;  // q [rows, H*D]; caches [slots][Hkv][ctx][D]
  // Element of (slot, kv head, position) in the caches.
  size_t at(int64_t slot, int64_t hk, int64_t j) const { return size_t(((slot * Hkv + hk) * ctx + j) * D); }
};

Problem make_problem(int H, int Hkv, int D, int window, int64_t ctx, std::vector<Seg> segs, std::mt19937_64& rng) {
  Problem p{H, Hkv, D, window, 0, ctx, 0, std::move(segs), {}, {}, {}};
  for (const Seg& s : p.segs) {
    p.slots = std::max<int64_t>(p.slots, s.slot + 2);  // one extra unused (poisoned) slot
    p.rows = std::max<int64_t>(p.rows, s.row0 + s.len + 1);  // one extra unused row
  }
  const int64_t kvd = int64_t(Hkv) * D;
  p.q = random_bf16(size_t(p.rows * H * D), rng);
  p.k = std::vector<Bf16Bits>(size_t(p.slots * ctx * kvd), 0xffff);  // NaN
  p.v = p.k;
  const auto kr = random_bf16(p.k.size(), rng), vr = random_bf16(p.v.size(), rng);
  for (const Seg& s : p.segs) {
    if (s.len == 0) continue;
    const int end = s.pos0 + s.len;  // sequence length after the append
    const int first_lo = window > 0 ? std::max(0, s.pos0 - window + 1) : 0;
    for (int hk = 0; hk < Hkv; ++hk) {
      for (int j = first_lo; j < end; ++j) {
        const size_t base = p.at(s.slot, hk, j);
        std::copy_n(kr.begin() + long(base), D, p.k.begin() + long(base));
        std::copy_n(vr.begin() + long(base), D, p.v.begin() + long(base));
      }
    }
  }
  return p;
}

// out [rows, H*D] in double; rows of no segment are NaN.
std::vector<double> reference(const Problem& p) {
  const int G = p.H / p.Hkv;
  const int64_t qd = int64_t(p.H) * p.D;
  const double scale = 1.0 / std::sqrt(double(p.D));
  std::vector<double> out(size_t(p.rows * qd), NAN);
  for (const Seg& s : p.segs) {
    for (int i = 0; i < s.len; ++i) {
      const int pos = s.pos0 + i;
      const int lo = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
      for (int h = 0; h < p.H; ++h) {
        const int hk = h / G;
        const Bf16Bits* q = p.q.data() + (int64_t(s.row0) + i) * qd + int64_t(h) * p.D;
        std::vector<double> w(size_t(pos - lo + 1));
        double mx = -INFINITY;
        for (int j = lo; j <= pos; ++j) {
          const Bf16Bits* k = p.k.data() + p.at(s.slot, hk, j);
          double dot = 0;
          for (int d = 0; d < p.D; ++d) dot += double(to_f(q[d])) * to_f(k[d]);
          w[size_t(j - lo)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        double z = 0;
        for (auto& x : w) z += (x = std::exp(x - mx));
        double* o = out.data() + (int64_t(s.row0) + i) * qd + int64_t(h) * p.D;
        for (int d = 0; d < p.D; ++d) {
          double acc = 0;
          for (int j = lo; j <= pos; ++j) {
            acc += w[size_t(j - lo)] * to_f(p.v[p.at(s.slot, hk, j) + size_t(d)]);
          }
          o[d] = acc / z;
        }
      }
    }
  }
  return out;
}

std::vector<int32_t> field(const std::vector<Seg>& segs, int32_t Seg::*m) {
  std::vector<int32_t> v;
  for (const Seg& s : segs) v.push_back(s.*m);
  return v;
}

/// The problem on the device: q, segments, output, and the cache with slots [0, b_host) in the
/// host tier (pinned mapped host memory) and the rest in HBM.
struct Device {
  Device(const Problem& p, int64_t b_host)
      : q(p.q),
        out(size_t(p.rows * p.H * p.D)),
        slot(field(p.segs, &Seg::slot)),
        pos0(field(p.segs, &Seg::pos0)),
        len(field(p.segs, &Seg::len)),
        row0(field(p.segs, &Seg::row0)),
        kv(p.slots, b_host, p.Hkv, p.D, p.ctx) {
    kv.upload(p.k, p.v);
  }
  DeviceBuffer<Bf16Bits> q, out;
  DeviceBuffer<int32_t> slot, pos0, len, row0;
  TwoTierKvCache kv;
};

dak::gpu::AttentionParams params(const Problem& p, Device& dev) {
  dev.out.poison();
  dak::gpu::AttentionParams a;
  a.g_q = bf(dev.q.get());
  a.q_stride = int64_t(p.H) * p.D;
  a.kv = dev.kv.layer();
  a.g_out = bf(dev.out.get());
  a.segs = {dev.slot.get(), dev.pos0.get(), dev.len.get(), dev.row0.get(), int32_t(p.segs.size())};
  a.num_heads = p.H;
  a.num_kv_heads = p.Hkv;
  a.head_dim = p.D;
  a.window = p.window;
  a.scale = float(1.0 / std::sqrt(double(p.D)));
  return a;
}

/// Compares the output with the float64 reference `ref`, and checks that the rows of no segment
/// and the cache (both tiers: the host tier is read in place) are unchanged.
void check(const Problem& p, const std::vector<double>& ref, const Device& dev, const std::string& what) {
  const std::vector<Bf16Bits> got_bits = dev.out.download();
  std::vector<double> got = bf16_to_double(got_bits);
  // Rows of no segment: still poisoned (bitwise), then excluded from the numeric comparison.
  int64_t touched = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(ref[i])) touched += got_bits[i] != 0xffff;
  }
  EXPECT_EQ(touched, 0) << what << ": wrote rows that belong to no segment";
  EXPECT_TRUE(dev.kv.k() == p.k && dev.kv.v() == p.v) << what << ": the cache was written";
  double vmax = 0;
  for (Bf16Bits x : p.v) {
    if (!std::isnan(to_f(x))) vmax = std::max(vmax, std::abs(double(to_f(x))));
  }
  // One bf16 rounding of the output (rtol), plus fp32 softmax/accumulation error, which is
  // bounded by a few 1e-6 of max|v| (atol 1e-4 * max|v| leaves ample room, far below any bug).
  expect_close(got, ref, 1e-4 * vmax, kBf16Rtol, what);
}

std::string describe(const Problem& p, uint64_t seed) {
  std::string s = "H=" + std::to_string(p.H) + " Hkv=" + std::to_string(p.Hkv) + " D=" + std::to_string(p.D) +
                  " window=" + std::to_string(p.window) + " ctx=" + std::to_string(p.ctx) + " segs=";
  for (const Seg& g : p.segs) {
    s += "(" + std::to_string(g.slot) + "," + std::to_string(g.pos0) + "," + std::to_string(g.len) + "," +
         std::to_string(g.row0) + ")";
  }
  return s + " seed=" + std::to_string(seed);
}

TEST(AttentionPrefillKernel, RaggedCausalGqaMatchesFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int D : {16, 24, 64, 80, 96, 128, 256}) {
    for (int G = 1; G <= 8; ++G) {
      const int Hkv = (G % 2) ? 2 : 1, H = G * Hkv;
      const int window = (G % 3 == 0) ? 7 : 0;
      std::mt19937_64 rng(seed + k);
      // Ragged segments: one long prompt at 0, one continuing an earlier context, an empty
      // one, a single token, and a gap row between segments.
      const std::vector<Seg> segs = {{0, 0, 37, 0}, {2, 11, 17, 38}, {1, 5, 0, 55}, {3, 60, 1, 56}};
      const Problem p = make_problem(H, Hkv, D, window, 64, segs, rng);
      const std::vector<double> ref = reference(p);
      // Every slot in HBM; slots 0 (the long prompt) and 1 (empty) on the host; every slot there.
      for (int64_t b_host : {int64_t(0), int64_t(2), p.slots}) {
        Device dev(p, b_host);
        dak::gpu::attention_prefill(params(p, dev), 37, nullptr);
        check(p, ref, dev, "prefill b_host=" + std::to_string(b_host) + " " + describe(p, seed + k));
      }
      ++k;
    }
  }
}

TEST(AttentionDecodeKernel, SplitKeysMatchFloat64Reference) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int D : {16, 24, 64, 80, 96, 128, 256}) {
    for (int G = 1; G <= 8; ++G) {
      const int Hkv = (G % 2) ? 2 : 1, H = G * Hkv;
      const int window = (G % 4 == 0) ? 200 : 0;
      std::mt19937_64 rng(seed + k);
      const int64_t ctx = 701;
      // One query per segment at assorted positions (0, inside the first split, at split
      // boundaries, the last position), one empty segment.
      const std::vector<Seg> segs = {{0, 0, 1, 0}, {1, 127, 1, 1}, {2, 128, 1, 2}, {3, 0, 0, 3},
                                     {4, 700, 1, 4}, {5, 383, 1, 6}};
      const Problem p = make_problem(H, Hkv, D, window, ctx, segs, rng);
      const std::vector<double> ref = reference(p);
      const auto heuristic = dak::gpu::choose_decode_split(int64_t(segs.size()), H, Hkv, ctx, 132);
      // Every slot in HBM; slots 0..2 on the host; every slot there.
      for (int64_t b_host : {int64_t(0), int64_t(3), p.slots}) {
        Device dev(p, b_host);
        for (const dak::gpu::DecodeSplit split :
             {heuristic, dak::gpu::DecodeSplit{6, 128}, dak::gpu::DecodeSplit{1, 768}}) {
          ASSERT_GE(int64_t(split.num_splits) * split.split_keys, ctx);
          DeviceBuffer<float> partial(dak::gpu::decode_workspace_bytes(int64_t(segs.size()), H, D, split) / 4);
          partial.poison();
          dak::gpu::attention_decode(dak::gpu::DecodeAttentionParams{params(p, dev), split, partial.get()}, nullptr);
          check(p, ref, dev,
                "decode b_host=" + std::to_string(b_host) + " splits=" + std::to_string(split.num_splits) + "x" +
                    std::to_string(split.split_keys) + " " + describe(p, seed + k));
        }
      }
      ++k;
    }
  }
}

TEST(AttentionDecodeKernel, SplitHeuristicCoversTheContext) {
  for (int64_t ctx : {1, 127, 128, 129, 4096, 32768, 131072}) {
    for (int64_t segs : {1, 8, 64}) {
      const auto s = dak::gpu::choose_decode_split(segs, 32, 8, ctx, 132);
      EXPECT_GE(int64_t(s.num_splits) * s.split_keys, ctx) << "ctx=" << ctx << " segs=" << segs;
      EXPECT_LT(int64_t(s.num_splits - 1) * s.split_keys, ctx) << "an always-empty split, ctx=" << ctx;
      EXPECT_EQ(s.split_keys % 128, 0);
    }
  }
}

TEST(AttentionKernels, RejectUnsupportedHeadDim) {
  DAK_REQUIRE_GPU_OR_SKIP();
  dak::gpu::AttentionParams a;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.head_dim = 512;
  EXPECT_THROW(dak::gpu::attention_prefill(a, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::attention_decode(dak::gpu::DecodeAttentionParams{a, {1, 128}, nullptr}, nullptr), dak::Error);
}

TEST(AttentionKernels, RejectACacheThatDoesNotMatchTheHeads) {
  DAK_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<Bf16Bits> k(2 * 2 * 8 * 64), v(2 * 2 * 8 * 64);
  dak::gpu::AttentionParams a;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.head_dim = 64;
  a.kv = dak::gpu::KvCacheLayer{nullptr, nullptr, bf(k.get()), bf(v.get()), 2, 0, 2, 32, 8};  // D 32, not 64
  EXPECT_THROW(dak::gpu::attention_prefill(a, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::attention_decode(dak::gpu::DecodeAttentionParams{a, {1, 128}, nullptr}, nullptr), dak::Error);
  a.kv.head_dim = 64;
  a.kv.b_host = 1;  // slot 0 on a host tier that is null
  EXPECT_THROW(dak::gpu::attention_prefill(a, 1, nullptr), dak::Error);
  EXPECT_THROW(dak::gpu::attention_decode(dak::gpu::DecodeAttentionParams{a, {1, 128}, nullptr}, nullptr), dak::Error);
}

}  // namespace
