// Timing pieces shared by the GPU benchmarks and measurements (gpu/bench.cc, gpu/bench_gemm.cc,
// gpu/bench_attention.cc): a CUDA event pair, the host gate that queues timed launches so they run
// back to back, and the median / min / max summary of a set of timings. Internal to dak_gpu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "gpu/bench.h"
#include "gpu/kernels/host_gate.h"

namespace dak::gpu {

/// Two CUDA events (default flags, timing enabled), created with the object and destroyed with it.
/// Record `begin` and `end` around the work on one stream; seconds() after both completed.
struct EventPair {
  cudaEvent_t begin = nullptr, end = nullptr;
  EventPair();
  ~EventPair();
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  /// GPU time from `begin` to `end` in seconds (cudaEventElapsedTime, ~0.5 us resolution).
  /// Throws dak::Error when either event has not completed or was not recorded.
  double seconds() const;
};

/// The host gate (kernels/host_gate.h) on a pair of int32 flags in mapped pinned host memory:
/// [0] open (0 = closed), [1] timed out. close(s) enqueues the gate kernel on `s`, so the work
/// enqueued behind it waits; open() releases it, and the GPU then runs that work back to back
/// whatever the host's launch latency. timed_out() (after synchronizing `s`) says whether the
/// kernel gave up waiting after `timeout_ns`, in which case host gaps may be in the timings.
class HostGate {
 public:
  /// Flags in a cudaHostAlloc(mapped) block of its own, freed with the gate.
  explicit HostGate(uint64_t timeout_ns = HostGateParams{}.timeout_ns);
  /// Flags at `h_flags` [2]: mapped pinned host memory owned by the caller (e.g. a slice of a
  /// PinnedHostArena) whose host pointer is valid on the device (UVA); it must outlive the gate.
  HostGate(int32_t* h_flags, uint64_t timeout_ns);
  /// Opens the gate (a kernel still waiting on it finishes), then frees the flags it owns.
  ~HostGate();
  HostGate(const HostGate&) = delete;
  HostGate& operator=(const HostGate&) = delete;

  /// Resets both flags and enqueues the gate kernel on `s`. Throws dak::Error on a launch error.
  void close(cudaStream_t s);
  void open();
  bool timed_out() const;

  /// close(s), enqueue() (which enqueues the work to run back to back on `s`), open(), and waits
  /// for `s`. Returns true when the work ran gated, false when the gate timed out first (host gaps
  /// may then be in its timings). When enqueue() throws, opens the gate and waits for `s` (errors
  /// ignored) before rethrowing.
  bool run_gated(cudaStream_t s, const std::function<void()>& enqueue);

 private:
  volatile int32_t* flags() const { return h_; }
  int32_t* h_ = nullptr;  // [2] host view
  int32_t* g_ = nullptr;  // [2] device view
  uint64_t timeout_ns_ = 0;
  bool owned_ = false;
};

/// Median (mean of the two middle values for an even count), min and max of `v`; all 0 when empty.
Spread spread_of(std::vector<double> v);

}  // namespace dak::gpu
