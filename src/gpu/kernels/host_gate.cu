#include "gpu/kernels/host_gate.h"

#include <cuda/ptx>

#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace {

__global__ void host_gate_kernel(const __grid_constant__ HostGateParams p) {
  const uint64_t t0 = cuda::ptx::get_sreg_globaltimer();
  while (*p.flag == 0) {
    if (cuda::ptx::get_sreg_globaltimer() - t0 > p.timeout_ns) {
      *p.timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

void host_gate(const HostGateParams& p, cudaStream_t stream) {
  host_gate_kernel<<<1, 1, 0, stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
