#include "gpu/kernels/link_probe.h"

#include <cuda/atomic>
#include <cuda/ptx>

#include <algorithm>
#include <string>

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kMaxChunkBytes = 512u << 10;  // below the mbarrier tx-count limit (2^20 - 1)

/// SMEM plan (dynamic): [stages][chunk_bytes] data, [stages] uint64 "full" mbarriers, one uint64
/// count of issued chunks. `stages` is the deeper of the two roles' rings.
__host__ __device__ inline uint64_t data_bytes(uint32_t chunk_bytes, int32_t stages) {
  return uint64_t(chunk_bytes) * uint64_t(stages);
}
__host__ __device__ inline uint64_t plan_bytes(uint32_t chunk_bytes, int32_t stages) {
  return data_bytes(chunk_bytes, stages) + uint64_t(stages) * sizeof(uint64_t) + sizeof(uint64_t);
}

__global__ void __launch_bounds__(kThreads, 1) link_probe_kernel(const __grid_constant__ LinkProbeParams p) {
  namespace ptx = cuda::ptx;
  extern __shared__ __align__(128) uint8_t smem[];
  const bool host_role = int32_t(blockIdx.x) >= p.hbm_ctas;
  const int32_t ring = p.hbm_stages > p.host_stages ? p.hbm_stages : p.host_stages;
  const int32_t stages = host_role ? p.host_stages : p.hbm_stages;
  uint8_t* s_data = smem;                                                              // [ring][chunk_bytes]
  uint64_t* s_full = reinterpret_cast<uint64_t*>(smem + data_bytes(p.chunk_bytes, ring));  // [ring]
  uint64_t* s_issued = s_full + ring;                                                  // [1]

  const uint64_t local = host_role ? blockIdx.x - uint32_t(p.hbm_ctas) : blockIdx.x;
  const uint64_t n_role = host_role ? gridDim.x - uint32_t(p.hbm_ctas) : uint32_t(p.hbm_ctas);
  const uint8_t* src = static_cast<const uint8_t*>(host_role ? p.h_src : p.g_src);
  const uint64_t src_chunks = (host_role ? p.h_bytes : p.g_bytes) / p.chunk_bytes;
  const uint64_t max_chunks = src_chunks == 0 ? 0 : (host_role ? p.host_chunks_per_cta : p.hbm_chunks_per_cta);

  auto stopped = [&]() -> bool {
    if (!host_role || p.g_stop == nullptr) return false;
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> stop(*p.g_stop);
    return stop.load(cuda::memory_order_relaxed) >= p.stop_at;
  };
  auto issue = [&](uint64_t j) {  // thread 0: this CTA's j-th chunk into stage j % stages
    const int32_t st = int32_t(j % uint64_t(stages));
    const uint64_t chunk = (local + j * n_role) % src_chunks;
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &s_full[st], p.chunk_bytes);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_data + uint64_t(st) * p.chunk_bytes,
                       src + chunk * p.chunk_bytes, p.chunk_bytes, &s_full[st]);
  };

  if (threadIdx.x == 0) {
    for (int32_t st = 0; st < stages; ++st) ptx::mbarrier_init(&s_full[st], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  uint64_t t_begin = 0;
  if (threadIdx.x == 0) {
    t_begin = ptx::get_sreg_globaltimer();
    uint64_t n = 0;
    while (n < uint64_t(stages) && n < max_chunks && !stopped()) issue(n++);
    *s_issued = n;
  }

  uint64_t r_sum = 0;  // registers: this thread's share of the role's checksum
  for (uint64_t j = 0;; ++j) {
    __syncthreads();  // publishes *s_issued; stage (j - 1) % stages is free again
    const uint64_t issued = *s_issued;
    if (j >= issued) break;
    const int32_t st = int32_t(j % uint64_t(stages));
    const uint32_t parity = uint32_t(j / uint64_t(stages)) & 1u;
    while (!ptx::mbarrier_try_wait_parity(&s_full[st], parity)) {
    }
    const uint4* s_chunk = reinterpret_cast<const uint4*>(s_data + uint64_t(st) * p.chunk_bytes);  // [chunk / 16]
    for (uint32_t i = threadIdx.x; i < p.chunk_bytes / 16; i += kThreads) {
      const uint4 v = s_chunk[i];
      r_sum += uint64_t(v.x) + uint64_t(v.y) + uint64_t(v.z) + uint64_t(v.w);
    }
    __syncthreads();  // every thread is done with stage st
    // NOTE: refill only in steady state (issued == j + stages): once a CTA has stopped issuing
    // (limit reached or stop signalled, both permanent) it drains its ring and never refills.
    if (threadIdx.x == 0 && issued == j + uint64_t(stages) && issued < max_chunks && !stopped()) {
      issue(issued);
      *s_issued = issued + 1;
    }
  }

  if (threadIdx.x == 0) {
    p.g_stats[blockIdx.x].begin_ns = t_begin;
    p.g_stats[blockIdx.x].end_ns = ptx::get_sreg_globaltimer();
    p.g_stats[blockIdx.x].chunks = *s_issued;
    if (!host_role && p.g_stop != nullptr) atomicAdd(p.g_stop, 1u);
  }
  for (int o = 16; o > 0; o /= 2) r_sum += __shfl_xor_sync(0xffffffffu, r_sum, o);
  if (threadIdx.x % 32 == 0 && r_sum != 0)
    atomicAdd(&p.g_checksum[host_role ? 1 : 0], static_cast<unsigned long long>(r_sum));
}

// NOTE: host messages use std::to_string: fmt's compile-time format checks do not build under nvcc.
[[noreturn]] void invalid(const std::string& what, const std::string& fix) { fail(what, "link_probe", fix); }

void check_source(const char* role, const void* src, uint64_t bytes, uint32_t chunk_bytes) {
  if (src == nullptr || reinterpret_cast<uintptr_t>(src) % 16 != 0 || bytes < chunk_bytes || bytes % chunk_bytes != 0) {
    invalid(std::string("link probe: the ") + role + " source of " + std::to_string(bytes) +
                " bytes must be set, 16-byte aligned and a positive multiple of the " + std::to_string(chunk_bytes) +
                "-byte chunk",
            "round the buffer size down to whole chunks");
  }
}

}  // namespace

void link_probe(const LinkProbeParams& p, int host_ctas, cudaStream_t stream) {
  if (p.chunk_bytes == 0 || p.chunk_bytes % 16 != 0 || p.chunk_bytes > kMaxChunkBytes || p.hbm_stages < 1 ||
      p.host_stages < 1 || p.hbm_ctas < 0 || host_ctas < 0 || p.hbm_ctas + host_ctas < 1 || p.stop_at < 1) {
    invalid("link probe: chunk " + std::to_string(p.chunk_bytes) + " bytes, stages " + std::to_string(p.hbm_stages) +
                "/" + std::to_string(p.host_stages) + ", CTAs " + std::to_string(p.hbm_ctas) + "/" +
                std::to_string(host_ctas) + ", stop_at " + std::to_string(p.stop_at) + " is invalid",
            "use a chunk that is a positive multiple of 16 up to 512 KiB, >= 1 stage per role, at least one CTA "
            "and stop_at >= 1");
  }
  if (!p.g_checksum || !p.g_stats) invalid("link probe: checksum and stats pointers must be set", "pass HBM buffers");
  if (p.hbm_ctas > 0) check_source("HBM", p.g_src, p.g_bytes, p.chunk_bytes);
  if (host_ctas > 0) check_source("host", p.h_src, p.h_bytes, p.chunk_bytes);
  int device = 0, sms = 0, optin = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const int grid = p.hbm_ctas + host_ctas;
  if (grid > sms) {
    invalid("link probe: " + std::to_string(grid) + " CTAs exceed the " + std::to_string(sms) +
                " SMs (every CTA must be resident at once)",
            "use at most one CTA per SM");
  }
  const int32_t ring = std::max(p.hbm_stages, p.host_stages);
  if (plan_bytes(p.chunk_bytes, ring) > uint64_t(optin)) {
    invalid("link probe: " + std::to_string(ring) + " stages of " + std::to_string(p.chunk_bytes) +
                " bytes do not fit in one CTA's " + std::to_string(optin) + " bytes of shared memory",
            "use fewer stages or smaller chunks");
  }
  // NOTE: the whole opt-in SMEM per CTA, whatever the ring needs: one CTA per SM, so CTA counts are
  // SM counts as in the probe and the tiered GEMM.
  DAK_CUDA_CHECK(cudaFuncSetAttribute(link_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  link_probe_kernel<<<grid, kThreads, size_t(optin), stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
