// kv_append: bitwise copies of k and v heads into [slot][pos] of a poisoned cache; nothing
// else is written; out-of-range slots/positions are skipped.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gpu/kernels/kv_append.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;

void run_case(int64_t T, int64_t slots, int64_t ctx, int64_t kvd, int64_t qd, uint64_t seed) {
  const std::string what = "T=" + std::to_string(T) + " slots=" + std::to_string(slots) + " ctx=" +
                           std::to_string(ctx) + " kvd=" + std::to_string(kvd) + " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t stride = qd + 2 * kvd;
  const auto qkv = random_bf16(size_t(T * stride), rng);
  // Distinct (slot, pos) per token, plus one out-of-range token when T > 2.
  std::vector<int32_t> slot(static_cast<size_t>(T)), pos(static_cast<size_t>(T));
  std::vector<int64_t> cells(static_cast<size_t>(slots * ctx));
  for (size_t i = 0; i < cells.size(); ++i) cells[i] = int64_t(i);
  std::shuffle(cells.begin(), cells.end(), rng);
  for (int64_t t = 0; t < T; ++t) {
    slot[size_t(t)] = int32_t(cells[size_t(t)] / ctx);
    pos[size_t(t)] = int32_t(cells[size_t(t)] % ctx);
  }
  if (T > 2) pos[size_t(T - 1)] = int32_t(ctx);  // skipped
  DeviceBuffer<Bf16Bits> d_qkv(qkv), d_k(size_t(slots * ctx * kvd)), d_v(size_t(slots * ctx * kvd));
  DeviceBuffer<int32_t> d_slot(slot), d_pos(pos);
  d_k.poison();
  d_v.poison();
  dak::gpu::KvAppendParams p{bf(d_qkv.get()), stride, qd, qd + kvd, d_slot.get(), d_pos.get(), bf(d_k.get()),
                             bf(d_v.get()), T, slots, ctx, kvd};
  dak::gpu::kv_append(p, nullptr);
  const auto got_k = d_k.download(), got_v = d_v.download();
  std::vector<Bf16Bits> want_k(got_k.size(), 0xffff), want_v(got_v.size(), 0xffff);
  for (int64_t t = 0; t < T; ++t) {
    if (pos[size_t(t)] >= ctx) continue;
    const int64_t dst = (int64_t(slot[size_t(t)]) * ctx + pos[size_t(t)]) * kvd;
    for (int64_t e = 0; e < kvd; ++e) {
      want_k[size_t(dst + e)] = qkv[size_t(t * stride + qd + e)];
      want_v[size_t(dst + e)] = qkv[size_t(t * stride + qd + kvd + e)];
    }
  }
  EXPECT_EQ(got_k, want_k) << what;
  EXPECT_EQ(got_v, want_v) << what;
}

TEST(KvAppendKernel, BitwiseCopyIntoPoisonedCache) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int64_t kvd : {16, 24, 128, 257, 1024}) {
    for (int64_t T : {1, 7, 40}) run_case(T, 3, 17, kvd, 64, seed + k++);
  }
}

}  // namespace
