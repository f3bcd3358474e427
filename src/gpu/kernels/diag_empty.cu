#include "gpu/kernels/diag_empty.h"

#include <string>

#include "core/error.h"
#include "gpu/launch.h"

namespace dak::gpu {
namespace {

__global__ void empty_dependent_kernel() { dependency_wait(); }

}  // namespace

void launch_empty_dependent(int64_t ctas, cudaStream_t stream) {
  if (ctas < 1 || ctas > INT32_MAX) {
    fail(std::to_string(ctas) + " CTAs", "launch_empty_dependent", "give between 1 and 2^31 - 1 CTAs");
  }
  launch_dependent(empty_dependent_kernel, dim3(unsigned(ctas)), dim3(128), 0, stream);
}

}  // namespace dak::gpu
