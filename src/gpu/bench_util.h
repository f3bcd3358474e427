// Timing pieces shared by the GPU benchmarks and measurements (gpu/bench.cc, gpu/bench_gemm.cc,
// gpu/bench_attention.cc, gpu/profile.cc): a stream, a CUDA event pair, a captured graph, the host
// gate that queues timed launches so they run back to back, and the median / min / max summary of
// a set of timings. Internal to dak_gpu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "gpu/bench.h"
#include "gpu/kernels/host_gate.h"

namespace dak::gpu {

/// A non-blocking stream, synchronized and destroyed with the object; converts to cudaStream_t.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }  // NOLINT: used where a cudaStream_t is expected
  /// Waits for the stream. Throws dak::Error on an error of the work on it.
  void sync() const;

 private:
  cudaStream_t s_ = nullptr;
};

/// What `body()` enqueues on `s` (and on streams forked from it with events), captured once (stream capture in `mode`) and instantiated as a
/// CUDA graph; launch() replays it on a stream. When body() throws, the capture is ended and
/// discarded before the exception propagates. Throws dak::Error on a capture or instantiation error.
class Graph {
 public:
  template <typename F>
  Graph(cudaStream_t s, F&& body, cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal) {
    begin_capture(s, mode);
    try {
      std::forward<F>(body)();
    } catch (...) {
      abort_capture(s);
      throw;
    }
    end_capture(s);
  }
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  void launch(cudaStream_t s) const;

 private:
  static void begin_capture(cudaStream_t s, cudaStreamCaptureMode mode);
  static void abort_capture(cudaStream_t s);
  void end_capture(cudaStream_t s);
  cudaGraphExec_t exec_ = nullptr;
};

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
