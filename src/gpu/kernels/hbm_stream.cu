#include "gpu/kernels/hbm_stream.h"

#include <cuda/ptx>

#include <string>

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;
constexpr uint32_t kMaxChunkBytes = 512u << 10;  // below the mbarrier tx-count limit (2^20 - 1)

__host__ __device__ inline uint64_t data_bytes(uint32_t chunk_bytes, int32_t stages) {
  return uint64_t(chunk_bytes) * uint64_t(stages);
}

__global__ void __launch_bounds__(kThreads) hbm_stream_kernel(const __grid_constant__ HbmStreamParams p) {
  namespace ptx = cuda::ptx;
  // SMEM plan: [stages][chunk_bytes] data (16-byte aligned rows), then [stages] uint64 mbarriers.
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* s_data = smem;
  uint64_t* s_full = reinterpret_cast<uint64_t*>(smem + data_bytes(p.chunk_bytes, p.stages));

  const uint64_t num_chunks = (p.bytes + p.chunk_bytes - 1) / p.chunk_bytes;
  const uint64_t my_chunks = blockIdx.x < num_chunks ? (num_chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  const uint8_t* g_src = static_cast<const uint8_t*>(p.g_src);
  auto chunk_size = [&](uint64_t j) {  // bytes of this CTA's j-th chunk
    const uint64_t off = (blockIdx.x + j * gridDim.x) * uint64_t(p.chunk_bytes);
    return uint32_t(p.bytes - off < p.chunk_bytes ? p.bytes - off : p.chunk_bytes);
  };
  auto issue = [&](uint64_t j) {  // thread 0: TMA bulk copy of chunk j into stage j % stages
    const int32_t st = int32_t(j % uint64_t(p.stages));
    const uint64_t off = (blockIdx.x + j * gridDim.x) * uint64_t(p.chunk_bytes);
    const uint32_t n = chunk_size(j);
    ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &s_full[st], n);
    ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, s_data + uint64_t(st) * p.chunk_bytes, g_src + off, n,
                       &s_full[st]);
  };

  if (threadIdx.x == 0) {
    for (int32_t st = 0; st < p.stages; ++st) ptx::mbarrier_init(&s_full[st], 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (uint64_t j = 0; j < my_chunks && j < uint64_t(p.stages); ++j) issue(j);
  }

  uint64_t r_sum = 0;  // registers: this thread's share of the checksum
  for (uint64_t j = 0; j < my_chunks; ++j) {
    const int32_t st = int32_t(j % uint64_t(p.stages));
    const uint32_t parity = uint32_t(j / uint64_t(p.stages)) & 1u;
    while (!ptx::mbarrier_try_wait_parity(&s_full[st], parity)) {
    }
    const uint4* s_chunk = reinterpret_cast<const uint4*>(s_data + uint64_t(st) * p.chunk_bytes);  // [n / 16]
    const uint32_t n16 = chunk_size(j) / 16;
    for (uint32_t i = threadIdx.x; i < n16; i += kThreads) {
      const uint4 v = s_chunk[i];
      r_sum += uint64_t(v.x) + uint64_t(v.y) + uint64_t(v.z) + uint64_t(v.w);
    }
    __syncthreads();  // every thread is done with stage st
    if (threadIdx.x == 0 && j + uint64_t(p.stages) < my_chunks) issue(j + uint64_t(p.stages));
  }

  for (int o = 16; o > 0; o /= 2) r_sum += __shfl_xor_sync(0xffffffffu, r_sum, o);
  if (threadIdx.x % 32 == 0 && r_sum != 0) atomicAdd(p.g_checksum, static_cast<unsigned long long>(r_sum));
}

// NOTE: host messages use std::to_string: fmt's compile-time format checks do not build under nvcc.
void check_config(uint32_t chunk_bytes, int32_t stages) {
  if (chunk_bytes == 0 || chunk_bytes % 16 != 0 || chunk_bytes > kMaxChunkBytes || stages < 1) {
    fail("HBM stream chunk of " + std::to_string(chunk_bytes) + " bytes x " + std::to_string(stages) +
             " stages is invalid",
         "hbm_stream",
         "use a chunk that is a positive multiple of 16 bytes up to " + std::to_string(kMaxChunkBytes) +
             " and at least one stage");
  }
}

}  // namespace

uint64_t hbm_stream_smem_bytes(uint32_t chunk_bytes, int32_t stages) {
  return data_bytes(chunk_bytes, stages) + uint64_t(stages > 0 ? stages : 0) * sizeof(uint64_t);
}

namespace {

/// Lets the kernel use `smem` dynamic SMEM bytes; false when the device's per-CTA opt-in limit
/// is smaller.
bool allow_smem(uint64_t smem) {
  int device = 0, optin = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > uint64_t(optin)) return false;
  DAK_CUDA_CHECK(cudaFuncSetAttribute(hbm_stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  return true;
}

}  // namespace

int hbm_stream_ctas_per_sm(uint32_t chunk_bytes, int32_t stages) {
  check_config(chunk_bytes, stages);
  const uint64_t smem = hbm_stream_smem_bytes(chunk_bytes, stages);
  if (!allow_smem(smem)) return 0;
  int ctas = 0;
  DAK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, hbm_stream_kernel, kThreads, size_t(smem)));
  return ctas;
}

void hbm_stream(const HbmStreamParams& p, int grid, cudaStream_t stream) {
  check_config(p.chunk_bytes, p.stages);
  if (reinterpret_cast<uintptr_t>(p.g_src) % 16 != 0 || p.bytes % 16 != 0 || !p.g_checksum || grid < 1) {
    fail("HBM stream of " + std::to_string(p.bytes) + " bytes on " + std::to_string(grid) +
             " CTAs: the source must be 16-byte aligned, the size a multiple of 16, the grid positive and the "
             "checksum pointer set",
         "hbm_stream", "align the buffer (cudaMalloc gives 256 bytes) and round the size");
  }
  if (p.bytes == 0) return;
  const uint64_t smem = hbm_stream_smem_bytes(p.chunk_bytes, p.stages);
  if (!allow_smem(smem)) {
    fail("HBM stream: " + std::to_string(p.stages) + " stages of " + std::to_string(p.chunk_bytes) +
             " bytes do not fit in one CTA's shared memory",
         "hbm_stream", "use fewer stages or smaller chunks");
  }
  hbm_stream_kernel<<<grid, kThreads, size_t(smem), stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
