// embedding_gather: token rows, + learned positions (OPT offset 2), + addend, fp32 and bf16
// outputs, out-of-range ids as NaN rows; the fp32 sums are compared bitwise with the same
// fp32 additions on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gpu/kernels/embedding.h"
#include "gpu_test_util.h"
#include "kernel_test_util.h"

namespace {

using namespace dak::test;

void run_case(int64_t T, int64_t E, int64_t V, bool with_pos, bool with_add, uint64_t seed) {
  const std::string what = "T=" + std::to_string(T) + " E=" + std::to_string(E) + " V=" + std::to_string(V) +
                           " pos=" + std::to_string(with_pos) + " add=" + std::to_string(with_add) +
                           " seed=" + std::to_string(seed);
  std::mt19937_64 rng(seed);
  const int64_t P = 40, offset = 2;
  const auto table = random_bf16(size_t(V * E), rng);
  const auto pos_table = random_bf16(size_t(P * E), rng);
  const auto add = random_bf16(size_t(T * E), rng);
  std::vector<int32_t> ids(static_cast<size_t>(T)), positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    ids[size_t(t)] = int32_t(rng() % uint64_t(V));
    positions[size_t(t)] = int32_t(rng() % uint64_t(P - offset));
  }
  // One out-of-range id and (with positions) one out-of-range position: NaN rows.
  int64_t bad_id_row = -1, bad_pos_row = -1;
  if (T >= 3) {
    bad_id_row = T / 2;
    ids[size_t(bad_id_row)] = int32_t(V);
    if (with_pos) {
      bad_pos_row = T - 1;
      positions[size_t(bad_pos_row)] = int32_t(P - offset);
    }
  }
  DeviceBuffer<Bf16Bits> d_table(table), d_pos(pos_table), d_add(add), d_out_bf(size_t(T * E) + 4);
  DeviceBuffer<int32_t> d_ids(ids), d_positions(positions);
  DeviceBuffer<float> d_out(size_t(T * E) + 4);
  d_out.poison();
  d_out_bf.poison();
  dak::gpu::EmbeddingParams p;
  p.g_table = bf(d_table.get());
  p.g_ids = d_ids.get();
  p.num_rows = V;
  if (with_pos) {
    p.g_pos_table = bf(d_pos.get());
    p.g_positions = d_positions.get();
    p.pos_offset = int32_t(offset);
    p.num_pos = P;
  }
  p.g_add = with_add ? bf(d_add.get()) : nullptr;
  p.g_out_f32 = d_out.get();
  p.g_out_bf16 = bf(d_out_bf.get());
  p.T = T;
  p.E = E;
  dak::gpu::embedding_gather(p, nullptr);
  const auto got = d_out.download();
  const auto got_bf = d_out_bf.download();
  int64_t mismatches = 0;
  for (int64_t t = 0; t < T; ++t) {
    const bool nan_row = t == bad_id_row || t == bad_pos_row;
    for (int64_t e = 0; e < E; ++e) {
      const size_t k = size_t(t * E + e);
      float want = NAN;
      if (!nan_row) {
        want = to_f(table[size_t(ids[size_t(t)] * E + e)]);
        if (with_pos) want += to_f(pos_table[size_t((positions[size_t(t)] + offset) * E + e)]);
        if (with_add) want += to_f(add[k]);
      }
      const bool ok = nan_row ? std::isnan(got[k]) && std::isnan(to_f(got_bf[k]))
                              : got[k] == want && got_bf[k] == dak::f32_to_bf16(want);
      if (!ok && mismatches++ < 5) {
        ADD_FAILURE() << what << " t=" << t << " e=" << e << " got " << got[k] << " / " << to_f(got_bf[k]) << " want "
                      << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << what;
  for (size_t k = size_t(T * E); k < size_t(T * E) + 4; ++k) {
    EXPECT_TRUE(std::isnan(got[k])) << what << ": wrote past the end";
    EXPECT_EQ(got_bf[k], 0xffff) << what << ": wrote past the end";
  }
}

TEST(EmbeddingKernel, GatherWithPositionsAndAddendIsExact) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t seed = fresh_seed();
  uint64_t k = 0;
  for (int64_t T : {1, 3, 31}) {
    for (int64_t E : {1, 64, 255, 257, 576}) {
      for (int mask = 0; mask < 4; ++mask) run_case(T, E, 97, mask & 1, mask & 2, seed + k++);
    }
  }
}

}  // namespace
