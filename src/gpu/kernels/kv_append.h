// KV-cache append: copies the k and v heads of each new token from the fused QKV activation
// (after RoPE) into one layer's two-tier bf16 cache (kv_cache.h), decode (one token per
// sequence) and prefill (many) alike. Token t of slot s = slots[t] at position p = positions[t]:
//
//   kv.k_block(s, hk)[p * D + d] <- qkv[t, k_offset + hk * D + d]     hk < Hkv, d < D
//   kv.v_block(s, hk)[p * D + d] <- qkv[t, v_offset + hk * D + d]
//
// i.e. slot s < b_host writes the host tier (posted stores from the SMs over PCIe), the others
// the HBM tier. Pure data movement: bitwise. A token whose slot or position is out of range is
// skipped (the host validates first).
// Tiling: grid (token, element block); a thread copies about one 16-byte chunk of k and of v
// (16-byte path when D, the row stride and both offsets are multiples of 8 elements and qkv and
// every present tier are 16-byte aligned), else one element.
// TODO(lead): measure this direct write path into the host tier against a device-to-host copy of
// the new rows (copy engine) for decode and long prefills, and keep the faster.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gpu/kernels/kv_cache.h"

namespace dak::gpu {

struct KvAppendParams {
  const __nv_bfloat16* g_qkv = nullptr;  // [T, row_stride] bf16, HBM
  int64_t row_stride = 0;                // elements between tokens' rows
  int64_t k_offset = 0;                  // column of k head 0 (Hkv heads of D contiguous elements)
  int64_t v_offset = 0;                  // column of v head 0 (Hkv heads of D contiguous elements)
  const int32_t* g_slots = nullptr;      // [T] int32, HBM: cache slot (sequence) of each token
  const int32_t* g_positions = nullptr;  // [T] int32, HBM: position written
  KvCacheLayer kv;                       // one layer's cache (both tiers), written
  int64_t T = 0;                         // tokens
};

/// Throws dak::Error (naming `where`) unless `p` is a valid append: T >= 0, a valid cache
/// (check_kv_cache_layer), and, when T > 0, non-null qkv, slots and positions. Host only.
void check_kv_append(const KvAppendParams& p, const std::string& where);

/// Launches on `stream` (graph-capturable); T == 0 is a no-op. Throws dak::Error for invalid
/// parameters (check_kv_append) or on a launch error.
void kv_append(const KvAppendParams& p, cudaStream_t stream);

}  // namespace dak::gpu
