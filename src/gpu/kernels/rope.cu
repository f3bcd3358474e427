#include "gpu/kernels/rope.h"

#include <algorithm>

#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads) rope_kernel(const __grid_constant__ RopeParams p) {
  const int64_t t = blockIdx.x;
  const int half = p.head_dim / 2;
  const float pos = float(p.g_positions[t]);
  __nv_bfloat16* g_row = p.g_qkv + t * p.row_stride;  // [row_stride]
  const int pairs = (p.num_q_heads + p.num_k_heads) * half;
  for (int j = blockIdx.y * kThreads + threadIdx.x; j < pairs; j += gridDim.y * kThreads) {
    const int head = j / half, i = j % half;
    __nv_bfloat16* g_head = head < p.num_q_heads ? g_row + p.q_offset + int64_t(head) * p.head_dim
                                                 : g_row + p.k_offset + int64_t(head - p.num_q_heads) * p.head_dim;
    const float a = pos * p.g_inv_freq[i];
    float s, c;
    sincosf(a, &s, &c);
    const float x1 = bf16_to_float(g_head[i]), x2 = bf16_to_float(g_head[i + half]);
    g_head[i] = float_to_bf16(x1 * c - x2 * s);
    g_head[i + half] = float_to_bf16(x2 * c + x1 * s);
  }
}

}  // namespace

void apply_rope(const RopeParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  // Spread a token's (head, i) pairs over CTAs so that each thread rotates about one pair: a
  // strided loop of one CTA per token costs one memory latency per iteration.
  const int64_t pairs = int64_t(p.num_q_heads + p.num_k_heads) * (p.head_dim / 2);
  const int64_t ctas = std::clamp<int64_t>((pairs + kThreads - 1) / kThreads, 1, 65535);
  rope_kernel<<<dim3(unsigned(p.T), unsigned(ctas)), kThreads, 0, stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
