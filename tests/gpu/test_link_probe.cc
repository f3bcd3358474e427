// link_probe (kernels/link_probe.h), the dual-role stream behind `dak profile`'s host-link
// measurements: each role reads exactly the chunks it should (checksums equal to the host's sums,
// wrap-around included), the per-CTA stats add up, the host role stops when the HBM role is done
// or when the stop word is written from another stream, and invalid launches are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/link_probe.h"
#include "gpu_test_util.h"

namespace {

using dak::gpu::HbmArena;
using dak::gpu::LinkProbeCtaStats;
using dak::gpu::LinkProbeParams;
using dak::gpu::PinnedHostArena;

constexpr uint32_t kChunk = 16u << 10;

/// Words of chunk c: word i of every chunk is the same when `periodic`, so a chunk's sum does not
/// depend on which chunk it is.
void fill(uint32_t* w, uint64_t words, uint32_t seed, bool periodic) {
  for (uint64_t i = 0; i < words; ++i) {
    const uint64_t k = periodic ? i % (kChunk / 4) : i;
    w[i] = uint32_t(k * 2654435761u + seed) ^ (uint32_t(k >> 7) * 40503u);
  }
}

unsigned long long sum_words(const uint32_t* w, uint64_t words) {
  unsigned long long s = 0;
  for (uint64_t i = 0; i < words; ++i) s += w[i];
  return s;
}

/// HBM scratch for one launch: per-CTA stats, the two checksums and the stop word.
struct Scratch {
  HbmArena arena{64 << 10, "link probe test scratch"};
  LinkProbeCtaStats* g_stats = arena.allocate_array<LinkProbeCtaStats>(1024, "stats");
  unsigned long long* g_sums = arena.allocate_array<unsigned long long>(2, "sums");
  unsigned int* g_stop = arena.allocate_array<unsigned int>(1, "stop");
  Scratch() {
    DAK_CUDA_CHECK(cudaMemset(g_sums, 0, 2 * sizeof(unsigned long long)));
    DAK_CUDA_CHECK(cudaMemset(g_stop, 0, sizeof(unsigned int)));
    DAK_CUDA_CHECK(cudaMemset(g_stats, 0xff, 1024 * sizeof(LinkProbeCtaStats)));  // poison
    // The legacy stream's memsets done before any launch on a non-blocking stream (session 47).
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
  }
  void wire(LinkProbeParams& p, bool stop) const {
    p.g_stats = g_stats;
    p.g_checksum = g_sums;
    p.g_stop = stop ? g_stop : nullptr;
  }
  std::vector<unsigned long long> sums() const {
    std::vector<unsigned long long> s(2);
    DAK_CUDA_CHECK(cudaMemcpy(s.data(), g_sums, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    return s;
  }
  std::vector<LinkProbeCtaStats> stats(int grid) const {
    std::vector<LinkProbeCtaStats> s(static_cast<size_t>(grid));
    DAK_CUDA_CHECK(cudaMemcpy(s.data(), g_stats, s.size() * sizeof(LinkProbeCtaStats), cudaMemcpyDeviceToHost));
    return s;
  }
};

TEST(LinkProbe, EachRoleReadsExactlyItsChunks) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // HBM role: 5 CTAs x 6 chunks over a 30-chunk buffer; host role: 4 CTAs x 8 chunks over 32 chunks.
  // CTA l of n reads chunks l, l + n, ...: every chunk exactly once.
  const uint64_t g_bytes = 30ull * kChunk, h_bytes = 32ull * kChunk;
  std::vector<uint32_t> g_words(g_bytes / 4);
  fill(g_words.data(), g_words.size(), 1, false);
  HbmArena g(g_bytes, "HBM source");
  void* g_src = g.allocate(g_bytes, "src");
  DAK_CUDA_CHECK(cudaMemcpy(g_src, g_words.data(), g_bytes, cudaMemcpyHostToDevice));
  PinnedHostArena h(h_bytes, "host source");
  auto* h_src = h.allocate_array<uint32_t>(h_bytes / 4, "src");
  fill(h_src, h_bytes / 4, 2, false);
  for (int32_t stages : {1, 2, 3}) {
    Scratch sc;
    LinkProbeParams p;
    p.g_src = g_src;
    p.g_bytes = g_bytes;
    p.h_src = h_src;
    p.h_bytes = h_bytes;
    p.chunk_bytes = kChunk;
    p.hbm_ctas = 5;
    p.hbm_stages = stages;
    p.host_stages = 4 - stages;
    p.hbm_chunks_per_cta = 6;
    p.host_chunks_per_cta = 8;
    sc.wire(p, false);
    dak::gpu::link_probe(p, 4, nullptr);
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
    const auto sums = sc.sums();
    EXPECT_EQ(sums[0], sum_words(g_words.data(), g_words.size())) << "stages " << stages;
    EXPECT_EQ(sums[1], sum_words(h_src, h_bytes / 4)) << "stages " << stages;
    const auto st = sc.stats(9);
    for (int i = 0; i < 9; ++i) {
      EXPECT_EQ(st[size_t(i)].chunks, i < 5 ? 6u : 8u) << "CTA " << i;
      EXPECT_LE(st[size_t(i)].begin_ns, st[size_t(i)].end_ns) << "CTA " << i;
      EXPECT_GT(st[size_t(i)].begin_ns, 0u) << "CTA " << i;
    }
  }
}

TEST(LinkProbe, ReadsWrapAroundTheSource) {
  DAK_REQUIRE_GPU_OR_SKIP();
  // 2 host CTAs x 6 chunks over a 4-chunk buffer: 12 reads, every chunk three times.
  const uint64_t h_bytes = 4ull * kChunk;
  PinnedHostArena h(h_bytes, "host source");
  auto* h_src = h.allocate_array<uint32_t>(h_bytes / 4, "src");
  fill(h_src, h_bytes / 4, 3, false);
  Scratch sc;
  LinkProbeParams p;
  p.h_src = h_src;
  p.h_bytes = h_bytes;
  p.chunk_bytes = kChunk;
  p.host_stages = 2;
  p.host_chunks_per_cta = 6;
  sc.wire(p, false);
  dak::gpu::link_probe(p, 2, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(sc.sums()[1], 3 * sum_words(h_src, h_bytes / 4));
  EXPECT_EQ(sc.sums()[0], 0u);
}

TEST(LinkProbe, HostRoleStreamsUntilTheHbmRoleIsDone) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t g_bytes = 512ull * kChunk, h_bytes = 64ull * kChunk;
  HbmArena g(g_bytes, "HBM source");
  void* g_src = g.allocate(g_bytes, "src");
  DAK_CUDA_CHECK(cudaMemset(g_src, 1, g_bytes));
  DAK_CUDA_CHECK(cudaDeviceSynchronize());  // before the launches on non-blocking streams
  PinnedHostArena h(h_bytes, "host source");
  auto* h_src = h.allocate_array<uint32_t>(h_bytes / 4, "src");
  fill(h_src, h_bytes / 4, 4, true);
  const unsigned long long chunk_sum = sum_words(h_src, kChunk / 4);
  Scratch sc;
  LinkProbeParams p;
  p.g_src = g_src;
  p.g_bytes = g_bytes;
  p.h_src = h_src;
  p.h_bytes = h_bytes;
  p.chunk_bytes = kChunk;
  p.hbm_ctas = 8;
  p.hbm_stages = 2;
  p.host_stages = 2;
  p.hbm_chunks_per_cta = 2000;               // wraps: 16000 chunk reads of HBM
  p.host_chunks_per_cta = 1ull << 40;        // bound only: the HBM role ends it
  p.stop_at = 8;
  sc.wire(p, true);
  dak::gpu::link_probe(p, 2, nullptr);
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
  const auto st = sc.stats(10);
  uint64_t hbm_end = 0, host_chunks = 0;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(st[size_t(i)].chunks, 2000u);
    hbm_end = std::max<uint64_t>(hbm_end, st[size_t(i)].end_ns);
  }
  for (int i = 8; i < 10; ++i) {
    EXPECT_GT(st[size_t(i)].chunks, 0u);
    EXPECT_LT(st[size_t(i)].chunks, p.host_chunks_per_cta);
    EXPECT_GE(st[size_t(i)].end_ns, hbm_end) << "host CTA " << i << " stopped before the HBM role ended";
    host_chunks += st[size_t(i)].chunks;
  }
  EXPECT_EQ(sc.sums()[1], host_chunks * chunk_sum);
  EXPECT_EQ(sc.sums()[0], 8ull * 2000 * (kChunk / 4) * 0x01010101ull);
  unsigned int stop = 0;
  DAK_CUDA_CHECK(cudaMemcpy(&stop, sc.g_stop, sizeof(stop), cudaMemcpyDeviceToHost));
  EXPECT_EQ(stop, 8u);  // one increment per HBM CTA
}

TEST(LinkProbe, AWriteToTheStopWordEndsTheHostRole) {
  DAK_REQUIRE_GPU_OR_SKIP();
  const uint64_t h_bytes = 64ull * kChunk;
  PinnedHostArena h(h_bytes, "host source");
  auto* h_src = h.allocate_array<uint32_t>(h_bytes / 4, "src");
  fill(h_src, h_bytes / 4, 5, true);
  const unsigned long long chunk_sum = sum_words(h_src, kChunk / 4);
  Scratch sc;
  LinkProbeParams p;
  p.h_src = h_src;
  p.h_bytes = h_bytes;
  p.chunk_bytes = kChunk;
  p.host_stages = 2;
  p.host_chunks_per_cta = 1ull << 40;
  p.stop_at = 1;
  sc.wire(p, true);
  cudaStream_t s_kernel = nullptr, s_stop = nullptr;
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&s_kernel, cudaStreamNonBlocking));
  DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&s_stop, cudaStreamNonBlocking));
  dak::gpu::link_probe(p, 3, s_kernel);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaStreamQuery(s_kernel), cudaErrorNotReady) << "the host role ended without the stop word";
  DAK_CUDA_CHECK(cudaMemsetAsync(sc.g_stop, 0xff, sizeof(unsigned int), s_stop));
  DAK_CUDA_CHECK(cudaStreamSynchronize(s_stop));
  DAK_CUDA_CHECK(cudaStreamSynchronize(s_kernel));
  uint64_t chunks = 0;
  for (const LinkProbeCtaStats& st : sc.stats(3)) {
    EXPECT_GT(st.chunks, 0u);
    chunks += st.chunks;
  }
  EXPECT_EQ(sc.sums()[1], chunks * chunk_sum);
  cudaStreamDestroy(s_kernel);
  cudaStreamDestroy(s_stop);
}

TEST(LinkProbe, InvalidLaunchesAreRefused) {
  DAK_REQUIRE_GPU_OR_SKIP();
  int sms = 0;
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint64_t bytes = 8ull * kChunk;
  PinnedHostArena h(bytes, "host source");
  void* h_src = h.allocate(bytes, "src");
  Scratch sc;
  auto base = [&] {
    LinkProbeParams p;
    p.h_src = h_src;
    p.h_bytes = bytes;
    p.chunk_bytes = kChunk;
    p.host_chunks_per_cta = 1;
    sc.wire(p, false);
    return p;
  };
  auto refused = [&](LinkProbeParams p, int host_ctas, const std::string& needle) {
    try {
      dak::gpu::link_probe(p, host_ctas, nullptr);
      ADD_FAILURE() << "expected dak::Error containing " << needle;
    } catch (const dak::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused(base(), sms + 1, "exceed the");  // more CTAs than SMs
  LinkProbeParams p = base();
  p.chunk_bytes = 1000;
  refused(p, 1, "invalid");
  p = base();
  p.h_bytes = bytes - 16;
  refused(p, 1, "multiple of");
  p = base();
  p.h_src = static_cast<char*>(h_src) + 8;
  refused(p, 1, "aligned");
  p = base();
  p.hbm_ctas = 1;  // an HBM role without a source
  refused(p, 1, "HBM source");
  p = base();
  p.g_checksum = nullptr;
  refused(p, 1, "checksum");
  p = base();
  p.host_stages = 64;  // 64 x 16 KiB of SMEM
  refused(p, 1, "do not fit");
  refused(base(), 0, "invalid");  // no CTA at all
  DAK_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace
