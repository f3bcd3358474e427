#include "gpu/bench_util.h"

#include <algorithm>

#include "gpu/cuda_check.h"

namespace dak::gpu {

Stream::Stream() { DAK_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  cudaStreamSynchronize(s_);
  cudaStreamDestroy(s_);
}

void Stream::sync() const { DAK_CUDA_CHECK(cudaStreamSynchronize(s_)); }

void Graph::begin_capture(cudaStream_t s, cudaStreamCaptureMode mode) {
  DAK_CUDA_CHECK(cudaStreamBeginCapture(s, mode));
}

void Graph::abort_capture(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(s, &g);
  if (g) cudaGraphDestroy(g);
}

void Graph::end_capture(cudaStream_t s) {
  cudaGraph_t g = nullptr;
  DAK_CUDA_CHECK(cudaStreamEndCapture(s, &g));
  const cudaError_t err = cudaGraphInstantiate(&exec_, g, 0);
  cudaGraphDestroy(g);
  DAK_CUDA_CHECK(err);
}

Graph::~Graph() {
  if (exec_) cudaGraphExecDestroy(exec_);
}

void Graph::launch(cudaStream_t s) const { DAK_CUDA_CHECK(cudaGraphLaunch(exec_, s)); }

EventPair::EventPair() {
  DAK_CUDA_CHECK(cudaEventCreate(&begin));
  DAK_CUDA_CHECK(cudaEventCreate(&end));
}

EventPair::~EventPair() {
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
}

double EventPair::seconds() const {
  float ms = 0;
  DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
  return double(ms) * 1e-3;
}

HostGate::HostGate(uint64_t timeout_ns) : timeout_ns_(timeout_ns), owned_(true) {
  DAK_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&h_), 2 * sizeof(int32_t), cudaHostAllocMapped));
  void* g = nullptr;
  const cudaError_t err = cudaHostGetDevicePointer(&g, h_, 0);
  if (err != cudaSuccess) cudaFreeHost(h_);
  DAK_CUDA_CHECK(err);
  g_ = static_cast<int32_t*>(g);
}

HostGate::HostGate(int32_t* h_flags, uint64_t timeout_ns) : h_(h_flags), g_(h_flags), timeout_ns_(timeout_ns) {}

HostGate::~HostGate() {
  open();
  if (owned_) cudaFreeHost(h_);
}

void HostGate::close(cudaStream_t s) {
  flags()[0] = 0;
  flags()[1] = 0;
  host_gate(HostGateParams{g_, g_ + 1, timeout_ns_}, s);
}

void HostGate::open() { flags()[0] = 1; }

bool HostGate::timed_out() const { return flags()[1] != 0; }

bool HostGate::run_gated(cudaStream_t s, const std::function<void()>& enqueue) {
  close(s);
  try {
    enqueue();
  } catch (...) {
    open();
    cudaStreamSynchronize(s);
    throw;
  }
  open();
  DAK_CUDA_CHECK(cudaStreamSynchronize(s));
  return !timed_out();
}

Spread spread_of(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

}  // namespace dak::gpu
