// HbmArena: one cudaMalloc'd block of device memory (HBM), sub-allocated by bumping an offset.
//
// Every tensor the GPU engine keeps in HBM (bf16 weights, the KV cache, activations, GEMM
// workspace) is a slice of an arena: one allocation, no fragmentation, no per-tensor
// cudaMalloc, and the total known before anything is allocated. Slices are 256-byte aligned
// (cudaMalloc's own guarantee, enough for 16-byte vector loads, TMA and cuBLASLt).
// There is no per-slice free: reset() rewinds the whole arena.
#pragma once

#include <cstdint>
#include <string>

#include "core/byte_size.h"

namespace dak::gpu {

class HbmArena {
 public:
  static constexpr uint64_t kAlignment = 256;  // bytes, every slice's start

  /// Rounds `bytes` up to kAlignment: the footprint of one slice of that size. Callers sum
  /// these to size an arena before creating it.
  static constexpr uint64_t aligned_size(uint64_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  HbmArena() = default;
  /// Allocates `capacity_bytes` on the current CUDA device. `purpose` names the contents in
  /// messages ("bf16 weights of <model>"). Throws dak::Error before calling cudaMalloc when
  /// the capacity exceeds the free HBM (cudaMemGetInfo), giving both amounts in GiB, and when
  /// cudaMalloc fails anyway; `fix` is the errors' fix (empty: kRunStateHbmFix).
  HbmArena(uint64_t capacity_bytes, std::string purpose, const char* fix = nullptr);
  ~HbmArena();
  HbmArena(const HbmArena&) = delete;
  HbmArena& operator=(const HbmArena&) = delete;
  HbmArena(HbmArena&& o) noexcept;
  HbmArena& operator=(HbmArena&& o) noexcept;

  /// A 256-byte aligned slice of `bytes` (0 gives a valid, aligned, empty slice). Throws
  /// dak::Error naming `what` and the sizes when the arena has no room left.
  void* allocate(uint64_t bytes, const std::string& what);

  template <typename T>
  T* allocate_array(uint64_t count, const std::string& what) {
    return static_cast<T*>(allocate(count * sizeof(T), what));
  }

  /// Forgets every slice (pointers handed out before become free space again).
  void reset() { used_ = 0; }

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  void* base() const { return base_; }

 private:
  void release();

  void* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t used_ = 0;
  std::string purpose_;
};

/// The fix of an HBM shortfall of the KV cache and activations: the flags that shrink them
/// (prompts at once, --max-context; bench's --batch), an HBM budget, a free GPU, a smaller model.
extern const char* const kRunStateHbmFix;
/// The fix of an HBM shortfall of the weights: an HBM budget that leaves part of them in host
/// memory (--gpu-memory / --cpu-offload-gb / --offload-ratio), a free GPU, a smaller model.
extern const char* const kWeightHbmFix;

/// Throws dak::Error unless `needed_bytes` fit in the current device's free HBM. `what` lists
/// what the bytes are for (e.g. "bf16 weights 13.5 GiB + KV cache 2.0 GiB"). The message gives
/// needed vs free in GiB, and `fix` (nullptr: kRunStateHbmFix). Used to refuse a configuration
/// before allocating any of it.
void require_free_hbm(uint64_t needed_bytes, const std::string& what, const char* fix = nullptr);

/// "13.48 GiB" (core/byte_size.h), used by the GPU layer's memory messages.
using ::dak::format_gib;

}  // namespace dak::gpu
