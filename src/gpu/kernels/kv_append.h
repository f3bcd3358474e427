// KV-cache append: copies the k and v heads of each new token from the fused QKV activation
// (after RoPE) into one layer's static bf16 cache.
//
//   k_cache[slots[t], positions[t], :] <- qkv[t, k_offset : k_offset + Hkv*D]
//   v_cache[slots[t], positions[t], :] <- qkv[t, v_offset : v_offset + Hkv*D]
// Cache layout per layer: [B_max, max_ctx, Hkv, D] bf16 (the engine's cache is
// [layer][B_max][max_ctx][Hkv][D]; callers pass the layer's base). Pure data movement: bitwise.
// A token whose slot or position is out of range is skipped (the host validates first).
// Tiling: grid (token, element block); a thread copies about one 16-byte chunk of k and of v
// (16-byte path when offsets, strides and kv_dim are multiples of 8 elements), else one element.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace dak::gpu {

struct KvAppendParams {
  const __nv_bfloat16* g_qkv = nullptr;  // [T, row_stride] bf16, HBM
  int64_t row_stride = 0;                // elements between tokens' rows
  int64_t k_offset = 0;                  // column of k head 0
  int64_t v_offset = 0;                  // column of v head 0
  const int32_t* g_slots = nullptr;      // [T] int32, HBM: cache slot (sequence) of each token
  const int32_t* g_positions = nullptr;  // [T] int32, HBM: position written
  __nv_bfloat16* g_k_cache = nullptr;    // [num_slots, max_ctx, kv_dim] bf16, HBM (one layer)
  __nv_bfloat16* g_v_cache = nullptr;    // [num_slots, max_ctx, kv_dim] bf16, HBM (one layer)
  int64_t T = 0;
  int64_t num_slots = 0;
  int64_t max_ctx = 0;
  int64_t kv_dim = 0;                    // Hkv * D
};

/// Launches on `stream`; T == 0 is a no-op. Throws dak::Error on a launch error.
void kv_append(const KvAppendParams& p, cudaStream_t stream);

}  // namespace dak::gpu
