// Host gate: a one-thread kernel that holds a stream until the host opens it, so that the work
// enqueued behind it runs back to back on the GPU. Used to time an eager (non-graph) step with
// events: without the gate, the GPU would wait for the host's launches between small kernels
// and those gaps would be charged to the operators (nvbench's "blocking kernel" does the same).
//
// The flag lives in mapped pinned host memory (cudaHostAllocMapped); the kernel polls it with
// volatile loads (each one a PCIe read, ~1 us, with a 1 us sleep in between) until it is
// non-zero or `timeout_ns` (GPU global timer) passes, in which case it writes 1 to *timed_out:
// the host may have blocked on a full launch queue, so it opens the gate itself after the
// timeout and the timings include host gaps.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct HostGateParams {
  const volatile int32_t* flag = nullptr;  // [1] mapped pinned host memory (device pointer); 0 = closed
  int32_t* timed_out = nullptr;            // [1] mapped pinned host memory or HBM; set to 1 on timeout
  uint64_t timeout_ns = 1000000000;        // give up after this long
};

/// Enqueues the gate on `stream`. Throws dak::Error on a launch error.
void host_gate(const HostGateParams& p, cudaStream_t stream);

}  // namespace dak::gpu
