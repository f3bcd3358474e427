#include "gpu/kernels/sampling.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include <cmath>
#include <string>

#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/launch.h"

namespace dak::gpu {
namespace {

constexpr int kThreads = 1024;

// Order-preserving map of a float to uint32 (larger float -> larger key; NaN maps above +inf
// for positive NaN, so NaN logits are excluded before keys are compared).
__device__ __forceinline__ uint32_t order_key(float x) {
  const uint32_t u = __float_as_uint(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct ArgMax {
  float v;
  int32_t id;
};

struct ArgMaxOp {
  __device__ ArgMax operator()(const ArgMax& a, const ArgMax& b) const {
    if (a.v > b.v) return a;
    if (b.v > a.v) return b;
    return a.id <= b.id ? a : b;
  }
};

using BlockReduceF = cub::BlockReduce<float, kThreads>;
using BlockReduceD = cub::BlockReduce<double, kThreads>;
using BlockReduceI = cub::BlockReduce<int, kThreads>;
using BlockReduceA = cub::BlockReduce<ArgMax, kThreads>;
using BlockScanD = cub::BlockScan<double, kThreads>;

union SampleSmem {
  typename BlockReduceF::TempStorage rf;
  typename BlockReduceD::TempStorage rd;
  typename BlockReduceI::TempStorage ri;
  typename BlockReduceA::TempStorage ra;
  typename BlockScanD::TempStorage scan;
};

__global__ void __launch_bounds__(kThreads) sample_kernel(const __grid_constant__ SampleParams p) {
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  __shared__ SampleSmem s_tmp;
  __shared__ float s_f;
  __shared__ uint32_t s_u;
  __shared__ double s_d;
  __shared__ int32_t s_id;
  const int64_t row = blockIdx.x;
  const float* g_x = p.g_logits + row * p.row_stride;  // [V]
  const int V = int(p.V);

  if (p.temperature == 0.f) {
    ArgMax best{-INFINITY, INT32_MAX};
    for (int i = threadIdx.x; i < V; i += kThreads) {
      const float v = g_x[i];
      if (!isnan(v) && (v > best.v || best.id == INT32_MAX)) best = ArgMax{v, i};  // first (lowest) id on ties
    }
    best = BlockReduceA(s_tmp.ra).Reduce(best, ArgMaxOp{});
    if (threadIdx.x == 0) p.g_out_ids[row] = best.id == INT32_MAX ? 0 : best.id;
    return;
  }

  // Max logit (NaN ignored).
  float mx = -INFINITY;
  for (int i = threadIdx.x; i < V; i += kThreads) {
    const float v = g_x[i];
    if (!isnan(v)) mx = fmaxf(mx, v);
  }
  mx = BlockReduceF(s_tmp.rf).Reduce(mx, cuda::maximum<>{});
  if (threadIdx.x == 0) s_f = mx;
  __syncthreads();
  mx = s_f;
  if (mx == -INFINITY) {  // no finite logit: nothing to sample from
    if (threadIdx.x == 0) p.g_out_ids[row] = 0;
    return;
  }

  // Top-k threshold: the k-th largest key, MSB first.
  uint32_t k_thresh = 0;
  if (p.top_k > 0 && p.top_k < V) {
    for (int bit = 31; bit >= 0; --bit) {
      const uint32_t cand = k_thresh | (1u << bit);
      int cnt = 0;
      for (int i = threadIdx.x; i < V; i += kThreads) {
        const float v = g_x[i];
        cnt += (!isnan(v) && order_key(v) >= cand);
      }
      cnt = BlockReduceI(s_tmp.ri).Sum(cnt);
      if (threadIdx.x == 0) s_u = cnt >= p.top_k ? cand : k_thresh;
      __syncthreads();
      k_thresh = s_u;
      __syncthreads();
    }
  }
  const float inv_t = 1.f / p.temperature;
  auto weight = [&](int i) -> float {  // 0 for ids outside the top-k set
    const float v = g_x[i];
    if (isnan(v) || v == -INFINITY || order_key(v) < k_thresh) return 0.f;
    return expf((v - mx) * inv_t);
  };

  // Top-p threshold on the weights' bits (positive floats order like their bit patterns).
  uint32_t p_thresh = 0;
  if (p.top_p < 1.f) {
    double z = 0.0;
    for (int i = threadIdx.x; i < V; i += kThreads) z += weight(i);
    z = BlockReduceD(s_tmp.rd).Sum(z);
    if (threadIdx.x == 0) s_d = z;
    __syncthreads();
    const double target_mass = double(p.top_p) * s_d;
    for (int bit = 30; bit >= 0; --bit) {
      const uint32_t cand = p_thresh | (1u << bit);
      double mass = 0.0;
      for (int i = threadIdx.x; i < V; i += kThreads) {
        const float w = weight(i);
        if (__float_as_uint(w) >= cand) mass += w;
      }
      mass = BlockReduceD(s_tmp.rd).Sum(mass);
      if (threadIdx.x == 0) s_u = mass >= target_mass ? cand : p_thresh;
      __syncthreads();
      p_thresh = s_u;
      __syncthreads();
    }
  }
  auto kept_weight = [&](int i) -> float {
    const float w = weight(i);
    return (w > 0.f && __float_as_uint(w) >= p_thresh) ? w : 0.f;
  };

  // Inverse CDF over contiguous per-thread chunks in id order.
  const int chunk = (V + kThreads - 1) / kThreads;
  const int begin = min(V, int(threadIdx.x) * chunk), end = min(V, begin + chunk);
  double local = 0.0;
  int last_kept = -1;
  for (int i = begin; i < end; ++i) {
    const float w = kept_weight(i);
    local += w;
    if (w > 0.f) last_kept = i;
  }
  double prefix = 0.0, total = 0.0;
  BlockScanD(s_tmp.scan).ExclusiveSum(local, prefix, total);
  __syncthreads();
  const int fallback = BlockReduceI(s_tmp.ri).Reduce(last_kept, cuda::maximum<>{});
  if (threadIdx.x == 0) s_id = -1;
  __syncthreads();
  const double u = sample_uniform(p.seed, row, p.g_counters ? p.g_counters[row] : 0);
  const double target = u * total;
  if (local > 0.0 && prefix <= target && target < prefix + local) {
    double run = prefix;
    int pick = -1;
    for (int i = begin; i < end && pick < 0; ++i) {
      const float w = kept_weight(i);
      run += w;
      if (w > 0.f && target < run) pick = i;
    }
    s_id = pick >= 0 ? pick : last_kept;
  }
  __syncthreads();
  if (threadIdx.x == 0) p.g_out_ids[row] = s_id >= 0 ? s_id : max(0, fallback);
}

}  // namespace

void sample_tokens(const SampleParams& p, cudaStream_t stream) {
  if (!(p.temperature >= 0.f) || !(p.top_p > 0.f && p.top_p <= 1.f) || p.top_k < 0) {
    fail("invalid sampling parameters: temperature " + std::to_string(p.temperature) + ", top_k " +
             std::to_string(p.top_k) + ", top_p " + std::to_string(p.top_p),
         "sampling", "use temperature >= 0, top_k >= 0 and 0 < top_p <= 1");
  }
  if (p.B <= 0 || p.V <= 0) return;
  if (p.V > INT32_MAX) fail("vocabulary too large for GPU sampling", "sampling", "report this model to dak");
  launch_dependent(sample_kernel, dim3(unsigned(p.B)), dim3(kThreads), 0, stream, p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
