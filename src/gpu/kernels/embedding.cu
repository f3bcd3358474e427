#include "gpu/kernels/embedding.h"

#include <cmath>

#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"

namespace dak::gpu {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads) embedding_kernel(const __grid_constant__ EmbeddingParams p) {
  const int64_t t = blockIdx.x;
  const __nv_bfloat16* g_row = nullptr;      // [E]
  const __nv_bfloat16* g_pos_row = nullptr;  // [E]
  bool valid = true;
  // Row r of a table split at host_rows: host tier below, HBM tier from host_rows on.
  const auto row_of = [&](const __nv_bfloat16* h, const __nv_bfloat16* g, int64_t host_rows, int64_t r) {
    return r < host_rows ? h + r * p.E : g + (r - host_rows) * p.E;
  };
  if (p.g_table || p.h_table) {
    const int64_t id = p.g_ids[t];
    valid = valid && id >= 0 && id < p.num_rows;
    g_row = row_of(p.h_table, p.g_table, p.table_host_rows, valid ? id : 0);
  }
  if (p.g_pos_table || p.h_pos_table) {
    const int64_t pos = int64_t(p.g_positions[t]) + p.pos_offset;
    valid = valid && pos >= 0 && pos < p.num_pos;
    g_pos_row = row_of(p.h_pos_table, p.g_pos_table, p.pos_host_rows, valid ? pos : 0);
  }
  const __nv_bfloat16* g_add_row = p.g_add ? p.g_add + t * p.E : nullptr;
  for (int64_t e = threadIdx.x; e < p.E; e += kThreads) {
    float v = 0.f;
    if (g_row) v += bf16_to_float(g_row[e]);
    if (g_pos_row) v += bf16_to_float(g_pos_row[e]);
    if (g_add_row) v += bf16_to_float(g_add_row[e]);
    if (!valid) v = NAN;
    if (p.g_out_f32) p.g_out_f32[t * p.E + e] = v;
    if (p.g_out_bf16) p.g_out_bf16[t * p.E + e] = float_to_bf16(v);
  }
}

}  // namespace

void embedding_gather(const EmbeddingParams& p, cudaStream_t stream) {
  if (p.T <= 0) return;
  embedding_kernel<<<unsigned(p.T), kThreads, 0, stream>>>(p);
  DAK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace dak::gpu
