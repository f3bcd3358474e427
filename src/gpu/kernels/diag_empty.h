// Diagnostic kernels (timing only, never in a release's decode step): an empty kernel launched with
// programmatic dependent launch, to time what a kernel boundary in the decode chain costs by itself
// (the previous grid's completion, the dependency wait, this grid's completion and the next
// kernel's wait), apart from any work (docs/perf-notes.md session 39).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

/// Enqueues a kernel of `ctas` CTAs of 128 threads that only waits for the previous kernel on
/// `stream` (gpu/launch.h's contract) and exits: it reads and writes no memory. Each CTA holds
/// `smem_bytes` of dynamic SMEM (0 to 227 KiB) that it never touches, so that it occupies SMs as a
/// kernel of that SMEM size would (session 40: the tiered attention's SMEM against none).
/// Graph-capturable. Throws dak::Error for ctas outside [1, 2^31), smem_bytes outside [0, 227 KiB]
/// or a launch error.
void launch_empty_dependent(int64_t ctas, cudaStream_t stream, int64_t smem_bytes = 0);

}  // namespace dak::gpu
