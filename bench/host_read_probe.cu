// Why `dak profile` and `dak bench` disagree on B_h (the SMs' TMA reads of pinned host memory) on
// the H100 of session 33: 34.7 GB/s from the profile's host-read sweep (measure_host_reads,
// link_probe kernel, 32 MiB per CTA), 51.4 GB/s from the bench's measure_host_read_bandwidth
// (hbm_stream kernel over a fresh 1 GiB arena). Both measured here on the same buffers:
//   A: a fresh 1 GiB PinnedHostArena, CPU-filled (as dak bench);
//   B: the first 1 GiB of a 4 GiB PinnedHostArena filled by a D2H copy (as dak profile).
// Prints GB/s per (buffer, method, CTAs x stages) and the host's transparent-huge-page settings.
#include <cuda_runtime.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/bench.h"
#include "gpu/cuda_check.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/profile.h"

namespace {

std::string file_line(const char* path, const char* key = nullptr) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!key || line.rfind(key, 0) == 0) return line;
  }
  return "(none)";
}

void profile_way(const char* label, const void* h, uint64_t bytes, uint64_t per_cta) {
  const std::vector<dak::HostReadPoint> pts =
      dak::gpu::measure_host_reads(h, bytes, {4, 8, 16, 32}, {2, 4}, 32768, per_cta, 5);
  for (const dak::HostReadPoint& p : pts) {
    std::printf("%s profile-way per_cta=%llu MiB ctas=%d stages=%d: %.1f GB/s\n", label,
                static_cast<unsigned long long>(per_cta >> 20), int(p.ctas), int(p.stages), p.gbps);
  }
}

void bench_way(const char* label, void* h, uint64_t bytes) {
  const dak::gpu::HostReadBandwidth b = dak::gpu::measure_host_read_bandwidth(h, bytes, 5);
  std::printf("%s bench-way: best %.1f GB/s (ctas=%d stages=%d), max %.1f\n", label, b.best_bytes_per_s * 1e-9, b.ctas,
              int(b.stages), b.max_bytes_per_s * 1e-9);
}

}  // namespace

int main() {
  try {
    std::printf("THP enabled: %s\n", file_line("/sys/kernel/mm/transparent_hugepage/enabled").c_str());
    std::printf("THP defrag: %s\n", file_line("/sys/kernel/mm/transparent_hugepage/defrag").c_str());
    std::printf("%s\n", file_line("/proc/meminfo", "AnonHugePages").c_str());
    const uint64_t gib = uint64_t(1) << 30;
    {
      dak::gpu::PinnedHostArena a(gib, "A");
      std::printf("after A: %s\n", file_line("/proc/meminfo", "AnonHugePages").c_str());
      bench_way("A", a.base(), gib);
      profile_way("A", a.base(), gib, 32ull << 20);
      profile_way("A", a.base(), gib, 128ull << 20);
      bench_way("A again", a.base(), gib);
    }
    {
      dak::gpu::PinnedHostArena b(4 * gib, "B");
      std::printf("after B: %s\n", file_line("/proc/meminfo", "AnonHugePages").c_str());
      dak::gpu::HbmArena g(gib, "src");
      void* g_src = g.allocate(gib, "src");
      DAK_CUDA_CHECK(cudaMemset(g_src, 0x5a, gib));
      void* h = b.allocate(gib, "h_src");
      DAK_CUDA_CHECK(cudaMemcpy(h, g_src, gib, cudaMemcpyDeviceToHost));
      profile_way("B", h, gib, 32ull << 20);
      bench_way("B", h, gib);
      profile_way("B after CPU fill", h, gib, 32ull << 20);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "host_read_probe: %s\n", e.what());
    return 1;
  }
  return 0;
}
