// kv_append: bitwise copies of k and v heads into [slot][kv head][pos] of a poisoned two-tier
// cache (slots [0, b_host) in pinned mapped host memory, the rest in HBM; b_host from 0 to every
// slot); nothing else is written in either tier; out-of-range slots/positions are skipped. Covers
// the 16-byte path (D % 8 == 0) and the element path (other D), and the argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "gpu/kernels/kv_append.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"
#include "kv_test_util.h"

namespace {

using namespace dak::test;

void run_case(int64_t T, int64_t slots, int64_t b_host, int64_t ctx, int64_t Hkv, int64_t D, int64_t qd,
              uint64_t seed) {
  const std::string what = "T=" + std::to_string(T) + " slots=" + std::to_string(slots) + " b_host=" +
                           std::to_string(b_host) + " ctx=" + std::to_string(ctx) + " Hkv=" + std::to_string(Hkv) +
                           " D=" + std::to_string(D) + " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t kvd = Hkv * D, stride = qd + 2 * kvd;
  const auto qkv = random_bf16(size_t(T * stride), rng);
  // Distinct (slot, pos) per token, plus an out-of-range position and an out-of-range slot when
  // T > 3.
  std::vector<int32_t> slot(static_cast<size_t>(T)), pos(static_cast<size_t>(T));
  std::vector<int64_t> cells(static_cast<size_t>(slots * ctx));
  for (size_t i = 0; i < cells.size(); ++i) cells[i] = int64_t(i);
  std::shuffle(cells.begin(), cells.end(), rng);
  for (int64_t t = 0; t < T; ++t) {
    slot[size_t(t)] = int32_t(cells[size_t(t)] / ctx);
    pos[size_t(t)] = int32_t(cells[size_t(t)] % ctx);
  }
  if (T > 3) {
    pos[size_t(T - 1)] = int32_t(ctx);     // skipped
    slot[size_t(T - 2)] = int32_t(slots);  // skipped
  }
  DeviceBuffer<Bf16Bits> d_qkv(qkv);
  DeviceBuffer<int32_t> d_slot(slot), d_pos(pos);
  TwoTierKvCache cache(slots, b_host, Hkv, D, ctx);
  cache.poison();
  const dak::gpu::KvAppendParams p{bf(d_qkv.get()), stride, qd, qd + kvd, d_slot.get(), d_pos.get(), cache.layer(), T};
  dak::gpu::kv_append(p, nullptr);
  const auto got_k = cache.k(), got_v = cache.v();
  std::vector<Bf16Bits> want_k(got_k.size(), 0xffff), want_v(got_v.size(), 0xffff);
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = slot[size_t(t)], j = pos[size_t(t)];
    if (s >= slots || j >= ctx) continue;
    for (int64_t hk = 0; hk < Hkv; ++hk) {
      const int64_t dst = ((s * Hkv + hk) * ctx + j) * D;  // logical [slot][Hkv][ctx][D]
      for (int64_t e = 0; e < D; ++e) {
        want_k[size_t(dst + e)] = qkv[size_t(t * stride + qd + hk * D + e)];
        want_v[size_t(dst + e)] = qkv[size_t(t * stride + qd + kvd + hk * D + e)];
      }
    }
  }
  EXPECT_EQ(got_k, want_k) << what;
  EXPECT_EQ(got_v, want_v) << what;
}

TEST(KvAppendKernel, BitwiseCopyIntoPoisonedTwoTierCache) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  struct Heads {
    int64_t Hkv, D;
  };
  // D % 8 == 0 (16-byte path) and not (element path); kv dims 16 .. 1024 and an odd 257.
  for (const Heads h : {Heads{1, 16}, Heads{3, 8}, Heads{2, 64}, Heads{3, 80}, Heads{1, 257}, Heads{3, 20},
                        Heads{8, 128}}) {
    for (int64_t T : {1, 7, 40}) {
      for (int64_t b_host : {0, 1, 3}) run_case(T, 3, b_host, 17, h.Hkv, h.D, 64, seed + k++);
    }
  }
}

TEST(KvAppendKernel, RejectsAnInvalidCache) {
  DAK_REQUIRE_GPU_OR_SKIP();
  DeviceBuffer<Bf16Bits> qkv(64), k(64), v(64);
  DeviceBuffer<int32_t> idx(std::vector<int32_t>{0});
  dak::gpu::KvAppendParams p{bf(qkv.get()), 24, 8, 16, idx.get(), idx.get(), {}, 1};
  p.kv = dak::gpu::KvCacheLayer{nullptr, nullptr, bf(k.get()), bf(v.get()), 2, 0, 1, 8, 4};
  EXPECT_NO_THROW(dak::gpu::kv_append(p, nullptr));
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  auto bad = p;
  bad.kv.b_host = 1;  // slot 0 on a host tier that is null
  EXPECT_THROW(dak::gpu::kv_append(bad, nullptr), dak::Error);
  bad = p;
  bad.kv.b_host = 3;  // more host slots than the batch
  EXPECT_THROW(dak::gpu::kv_append(bad, nullptr), dak::Error);
  bad = p;
  bad.kv.g_v = nullptr;
  EXPECT_THROW(dak::gpu::kv_append(bad, nullptr), dak::Error);
  bad = p;
  bad.g_slots = nullptr;
  EXPECT_THROW(dak::gpu::kv_append(bad, nullptr), dak::Error);
}

}  // namespace
