// Checked CUDA calls: every runtime/driver call in src/gpu goes through DAK_CUDA_CHECK, which
// throws dak::Error naming the call, the source location and the CUDA error string.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "core/error.h"

namespace dak::gpu {

/// Throws dak::Error if `err` is not cudaSuccess. `expr` is the failing call's text.
void check_cuda(cudaError_t err, const char* expr, const char* file, int line);

}  // namespace dak::gpu

#define DAK_CUDA_CHECK(expr) ::dak::gpu::check_cuda((expr), #expr, __FILE__, __LINE__)
