#include "gpu/kernels/diag_empty.h"

#include <string>

#include "core/error.h"
#include "core/hopper_limits.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"

namespace dak::gpu {
namespace {

__global__ void empty_dependent_kernel() { dependency_wait(); }

}  // namespace

void launch_empty_dependent(int64_t ctas, cudaStream_t stream, int64_t smem_bytes) {
  if (ctas < 1 || ctas > INT32_MAX) {
    fail(std::to_string(ctas) + " CTAs", "launch_empty_dependent", "give between 1 and 2^31 - 1 CTAs");
  }
  constexpr int64_t kMaxSmem = hopper::kSmemPerCtaMaxBytes;
  if (smem_bytes < 0 || smem_bytes > kMaxSmem) {
    fail(std::to_string(smem_bytes) + " bytes of SMEM per CTA", "launch_empty_dependent",
         "give between 0 and " + std::to_string(kMaxSmem) + " bytes");
  }
  if (smem_bytes > hopper::kSmemDefaultPerCtaBytes) {
    DAK_CUDA_CHECK(cudaFuncSetAttribute(empty_dependent_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(smem_bytes)));
  }
  launch_dependent(empty_dependent_kernel, dim3(unsigned(ctas)), dim3(128), size_t(smem_bytes), stream);
}

}  // namespace dak::gpu
