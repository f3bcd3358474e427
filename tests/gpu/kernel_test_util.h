// Helpers for the kernel tests of dak_gpu_tests: an owning device buffer, bf16 host vectors,
// poisoning, fresh random inputs, and a per-element comparison that prints the worst elements.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gpu/cuda_check.h"

namespace dak::test {

/// cudaMalloc'd array of n T; freed on destruction.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { DAK_CUDA_CHECK(cudaMalloc(&p_, std::max<size_t>(1, n) * sizeof(T))); }
  explicit DeviceBuffer(const std::vector<T>& v) : DeviceBuffer(v.size()) { upload(v); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return p_; }
  size_t size() const { return n_; }
  void upload(const std::vector<T>& v) {
    DAK_CUDA_CHECK(cudaMemcpy(p_, v.data(), std::min(v.size(), n_) * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<T> v(n_);
    DAK_CUDA_CHECK(cudaMemcpy(v.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  /// Fills every byte with 0xFF (NaN for fp32 and bf16, -1 for integers) and waits for it: cudaMemset
  /// runs on the legacy default stream, which work on a non-blocking stream does not wait for (a
  /// memset landing after a kernel's output failed DiagEmptyKernel once, session 47).
  void poison() {
    DAK_CUDA_CHECK(cudaMemset(p_, 0xff, std::max<size_t>(1, n_) * sizeof(T)));
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// bf16 stored as its bits on the host; `bf(p)` views a device pointer as __nv_bfloat16.
using Bf16Bits = uint16_t;
inline __nv_bfloat16* bf(Bf16Bits* p) { return reinterpret_cast<__nv_bfloat16*>(p); }
inline const __nv_bfloat16* bf(const Bf16Bits* p) { return reinterpret_cast<const __nv_bfloat16*>(p); }
inline float to_f(Bf16Bits b) { return dak::bf16_to_f32(b); }

/// A fresh seed per run (printed by each test through SCOPED_TRACE).
inline uint64_t fresh_seed() { return (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}(); }

/// n bf16 values ~ N(0, sigma) (already rounded, so host references see the kernel's inputs).
inline std::vector<Bf16Bits> random_bf16(size_t n, std::mt19937_64& rng, float sigma = 1.f) {
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<Bf16Bits> v(n);
  for (auto& x : v) x = dak::f32_to_bf16(nd(rng));
  return v;
}

inline std::vector<float> random_f32(size_t n, std::mt19937_64& rng, float sigma = 1.f) {
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

/// Per-element check |got - ref| <= atol + extra_atol[i] + rtol * |ref| (NaN in got fails unless ref
/// is NaN); `extra_atol` empty: none. On failure prints the count and the 5 worst elements with their
/// flat index; `what` carries the parameters of the case.
inline void expect_close(const std::vector<double>& got, const std::vector<double>& ref, double atol, double rtol,
                         const std::string& what, const std::vector<double>& extra_atol = {}) {
  ASSERT_EQ(got.size(), ref.size()) << what;
  if (!extra_atol.empty()) {
    ASSERT_EQ(extra_atol.size(), ref.size()) << what;
  }
  struct Bad {
    size_t i;
    double excess;
  };
  std::vector<Bad> bad;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    if (std::isnan(r) && std::isnan(g)) continue;
    const double err = std::abs(g - r);
    const double tol = atol + (extra_atol.empty() ? 0.0 : extra_atol[i]) + rtol * std::abs(r);
    if (!(err <= tol)) bad.push_back({i, std::isnan(err) ? INFINITY : err - tol});
  }
  if (bad.empty()) return;
  std::sort(bad.begin(), bad.end(), [](const Bad& a, const Bad& b) { return a.excess > b.excess; });
  std::ostringstream os;
  os << what << ": " << bad.size() << " of " << got.size() << " elements outside atol " << atol << " + rtol " << rtol
     << "|ref|; worst:";
  for (size_t k = 0; k < std::min<size_t>(5, bad.size()); ++k) {
    os << "\n  [" << bad[k].i << "] got " << got[bad[k].i] << " ref " << ref[bad[k].i];
  }
  ADD_FAILURE() << os.str();
}

inline std::vector<double> bf16_to_double(const std::vector<Bf16Bits>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = to_f(v[i]);
  return out;
}

/// One bf16 rounding step: relative error of round-to-nearest bf16 is <= 2^-9; we allow
/// 2^-8 (one ulp), which also covers the fp32 arithmetic before the rounding.
constexpr double kBf16Rtol = 1.0 / 256.0;

}  // namespace dak::test
