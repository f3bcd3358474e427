// Kernel launches with programmatic dependent launch (PDL, CUDA 12+ on sm_90): a kernel launched
// by launch_dependent() may be scheduled while the previous kernel on the stream (inside CUDA
// graphs too) is still running, as soon as that kernel has called
// cudaTriggerProgrammaticLaunchCompletion() (every dak kernel of the decode step does so first);
// its CTAs then sit resident until the previous grid has completed and its writes are visible.
// What it saves: the CTA launch latency between two dependent kernels of the decode step (the
// small kernels between the GEMMs: norm, RoPE / KV append, attention, activation), and it lets the
// tiered GEMM after them start streaming W during their run (docs/perf-notes.md, session 7).
// Contract for a kernel launched this way: it calls dependency_wait() before its first access to
// global memory that a previous kernel may write or read (dak's kernels call it first thing).
// DAK_NO_PDL=1 in the environment launches in plain stream order (for A/B measurements), as for
// the tiered GEMM.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <utility>

#include "core/env.h"
#include "gpu/cuda_check.h"

namespace dak::gpu {

/// True unless DAK_NO_PDL=1 in the environment (read once per process; core/env.h).
inline bool pdl_enabled() {
  static const bool on = !env_flag("DAK_NO_PDL", false);
  return on;
}

/// Streaming multiprocessors of the current device (cudaDevAttrMultiProcessorCount; 132 on an
/// H100 SXM / H200), read once per process: dak runs on one GPU. Throws dak::Error if no device.
inline int device_sm_count() {
  static const int count = [] {
    int device = 0, n = 0;
    DAK_CUDA_CHECK(cudaGetDevice(&device));
    DAK_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }();
  return count;
}

/// True when DAK_NARROW_SMALL_KERNELS=1 in the environment (read once per process): the activation
/// and RoPE / KV append launches keep their one-element / one-pair paths at every size (A/B
/// measurements of the wide paths, docs/perf-notes.md session 29).
inline bool narrow_small_kernels() {
  static const bool on = env_flag("DAK_NARROW_SMALL_KERNELS", false);
  return on;
}

/// Launches `kernel<<<grid, block, smem_bytes, stream>>>(args...)` with programmatic stream
/// serialization (see the file comment). Throws dak::Error if the launch fails (bad configuration,
/// no device).
template <class... KernelArgs, class... Args>
void launch_dependent(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream,
                      Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = pdl_enabled() ? 1 : 0;
  DAK_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

#if defined(__CUDACC__)
/// Device side of the contract: lets the next kernel be scheduled (cudaTriggerProgrammaticLaunch
/// Completion) and waits until the previous grid has completed and its memory is visible
/// (cudaGridDependencySynchronize; returns at once when the kernel was launched in plain stream
/// order). Call it before the first global memory access.
__device__ __forceinline__ void dependency_wait() {
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
}
#endif

}  // namespace dak::gpu
