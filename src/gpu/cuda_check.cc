#include "gpu/cuda_check.h"

#include <fmt/format.h>

namespace dak::gpu {

void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess) return;
  fail(fmt::format("CUDA call failed: {} ({}: {})", expr, cudaGetErrorName(err), cudaGetErrorString(err)),
       fmt::format("{}:{}", file, line),
       "check that the GPU is visible (nvidia-smi), that the driver supports CUDA 13, and that enough "
       "device memory is free");
}

}  // namespace dak::gpu
