// KvCacheLayer: one layer's view of the static bf16 KV cache, split along the batch into two
// tiers (DESIGN.md §4, §5). It is the layout of the tiered attention kernel
// (kernels/tiered_attention.h, core/tiered_attention_schedule.h), used by every KV reader and
// writer: kv_append, apply_rope_kv_append, attention_prefill, attention_decode.
//
//   host tier  h_k, h_v  [b_host][Hkv][max_ctx][D] bf16, pinned host memory mapped for the GPU
//                        with a device address equal to the host address (PinnedHostArena, or
//                        cudaHostAlloc(..., cudaHostAllocMapped)); kernels read and write it over
//                        PCIe at that address
//   HBM tier   g_k, g_v  [batch - b_host][Hkv][max_ctx][D] bf16, HBM
//
// Cache slot (sequence) s in [0, b_host) is tier slot s of the host tier, s in [b_host, batch) is
// tier slot s - b_host of the HBM tier. The keys (values) of one (slot, kv head) are one
// contiguous [max_ctx][D] block: position j of it starts at element j * D (row stride D, not
// Hkv * D). Positions are absolute token positions in [0, max_ctx); sizes are in elements.
// A view only: it owns nothing, and copies of it are cheap (kernels take it by value in their
// Params). A tier without sequences may be null.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.h"

namespace dak::gpu {

struct KvCacheLayer {
  __nv_bfloat16* h_k = nullptr;  // [b_host][Hkv][max_ctx][D] bf16, pinned mapped host; null when b_host == 0
  __nv_bfloat16* h_v = nullptr;  // [b_host][Hkv][max_ctx][D] bf16, pinned mapped host; null when b_host == 0
  __nv_bfloat16* g_k = nullptr;  // [batch - b_host][Hkv][max_ctx][D] bf16, HBM; null when b_host == batch
  __nv_bfloat16* g_v = nullptr;  // [batch - b_host][Hkv][max_ctx][D] bf16, HBM; null when b_host == batch
  int32_t batch = 0;             // B: cache slots (sequences) of both tiers together
  int32_t b_host = 0;            // slots [0, b_host) on the host tier, 0 <= b_host <= B
  int32_t num_kv_heads = 0;      // Hkv
  int32_t head_dim = 0;          // D
  int64_t max_ctx = 0;           // positions per (slot, kv head) block

  /// True when every tier base is 16-byte aligned (null tiers count as aligned): what the 16-byte
  /// copy paths of the readers and writers need.
  bool tiers_aligned16() const {
    const auto addr = [](const void* q) { return reinterpret_cast<uintptr_t>(q); };
    return (addr(h_k) | addr(h_v) | addr(g_k) | addr(g_v)) % 16 == 0;
  }
  /// True when slot `slot` lives in the host tier.
  __host__ __device__ bool on_host(int64_t slot) const { return slot < b_host; }
  /// Elements of one (slot, kv head) block: max_ctx * D.
  __host__ __device__ int64_t block_elems() const { return max_ctx * head_dim; }
  /// Elements of one tier's K (or V): its slots * Hkv * max_ctx * D.
  __host__ __device__ int64_t tier_elems(bool host) const {
    return int64_t(host ? b_host : batch - b_host) * num_kv_heads * block_elems();
  }
  /// The [max_ctx][D] K block of (slot, kv head), in its tier. slot in [0, B), kv_head in [0, Hkv).
  __host__ __device__ __nv_bfloat16* k_block(int64_t slot, int64_t kv_head) const {
    return block(h_k, g_k, slot, kv_head);
  }
  /// The [max_ctx][D] V block of (slot, kv head), in its tier.
  __host__ __device__ __nv_bfloat16* v_block(int64_t slot, int64_t kv_head) const {
    return block(h_v, g_v, slot, kv_head);
  }
  /// The block of (slot, kv head) in the tier pair (h, g): tier slot slot (host) or slot - b_host (HBM).
  __host__ __device__ __nv_bfloat16* block(__nv_bfloat16* h, __nv_bfloat16* g, int64_t slot, int64_t kv_head) const {
    const bool host = on_host(slot);
    const int64_t tier_slot = host ? slot : slot - b_host;
    return (host ? h : g) + (tier_slot * num_kv_heads + kv_head) * block_elems();
  }
};

/// Throws dak::Error (naming `where`) unless `kv` describes a usable cache: B >= 1,
/// 0 <= b_host <= B, Hkv >= 1, D >= 1, max_ctx >= 1, and non-null K and V for each tier that holds
/// slots. Host only; it does not check that the host tier is pinned and mapped.
inline void check_kv_cache_layer(const KvCacheLayer& kv, const std::string& where) {
  if (kv.batch < 1 || kv.b_host < 0 || kv.b_host > kv.batch || kv.num_kv_heads < 1 || kv.head_dim < 1 ||
      kv.max_ctx < 1) {
    fail("invalid KV cache layer: B " + std::to_string(kv.batch) + ", b_host " + std::to_string(kv.b_host) + ", Hkv " +
             std::to_string(kv.num_kv_heads) + ", D " + std::to_string(kv.head_dim) + ", max_ctx " +
             std::to_string(kv.max_ctx),
         where, "describe the cache with B >= 1, 0 <= b_host <= B, Hkv >= 1, D >= 1 and max_ctx >= 1");
  }
  if ((kv.b_host > 0 && (!kv.h_k || !kv.h_v)) || (kv.b_host < kv.batch && (!kv.g_k || !kv.g_v))) {
    fail("the KV cache layer has a null K or V for a tier that holds " +
             std::string(kv.b_host > 0 && (!kv.h_k || !kv.h_v) ? "host" : "HBM") + " slots",
         where, "pass the K and V of every tier that holds slots (the host tier may be null only when b_host == 0)");
  }
}

}  // namespace dak::gpu
