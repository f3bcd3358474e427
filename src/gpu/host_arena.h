// PinnedHostArena: the host tier (DESIGN.md §5): one page-aligned block of host memory, pinned
// and mapped for the GPU with cudaHostRegister, sub-allocated by bumping an offset.
//
// Offloaded weight rows and host-resident KV sequences are slices of it; kernels read them by TMA
// straight into SMEM (kernels/tiered_gemm.h). Exactly one host copy per offloaded byte: the block
// is the requested capacity rounded up to the page size only (no power-of-two rounding, no second
// staging copy), and its pointers are valid on the device as they are (UVA; checked at
// construction). Slices are 256-byte aligned (TMA needs 16). There is no per-slice free.
#pragma once

#include <cstdint>
#include <string>

namespace dak::gpu {

class PinnedHostArena {
 public:
  static constexpr uint64_t kAlignment = 256;  // bytes, every slice's start

  static constexpr uint64_t aligned_size(uint64_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }

  PinnedHostArena() = default;
  /// Maps `capacity_bytes` (rounded up to the page size) of anonymous host memory (mmap
  /// MAP_PRIVATE | MAP_ANONYMOUS) and pins it with cudaHostRegister(mapped, portable), timing the
  /// registration (pin_seconds). `purpose` names the contents in messages ("host rows of <model>'s
  /// weights"). Throws dak::Error, leaving nothing mapped or pinned, when there is no CUDA device,
  /// when the request exceeds MemAvailable of /proc/meminfo (refused before mapping, since pinning
  /// more would wake the OOM killer rather than fail), when mmap or cudaHostRegister fails (each
  /// message gives the GiB asked for and the GiB available, and the fix: a smaller
  /// --cpu-offload-gb or a larger --gpu-memory), or when the device pointer of the mapping differs
  /// from the host pointer. Zero bytes gives an empty arena: no allocation and no CUDA call.
  PinnedHostArena(uint64_t capacity_bytes, std::string purpose);
  ~PinnedHostArena();
  PinnedHostArena(const PinnedHostArena&) = delete;
  PinnedHostArena& operator=(const PinnedHostArena&) = delete;
  PinnedHostArena(PinnedHostArena&& o) noexcept;
  PinnedHostArena& operator=(PinnedHostArena&& o) noexcept;

  /// A 256-byte aligned slice of `bytes`: it starts at used() rounded up to 256 and must end within
  /// capacity() (the bytes asked for, not the page-rounded mapping), so an arena sized as the sum of
  /// aligned_size() of its slices always has room. 0 bytes gives an aligned, empty slice (null for an
  /// empty arena). Throws dak::Error naming `what` and the sizes when the slice does not fit.
  void* allocate(uint64_t bytes, const std::string& what);

  template <typename T>
  T* allocate_array(uint64_t count, const std::string& what) {
    return static_cast<T*>(allocate(count * sizeof(T), what));
  }

  void reset() { used_ = 0; }

  uint64_t capacity() const { return capacity_; }  // bytes asked for (before page rounding)
  uint64_t mapped_bytes() const { return mapped_; }  // bytes mapped and pinned (page-rounded)
  uint64_t used() const { return used_; }  // end of the last slice, bytes from base()
  void* base() const { return base_; }     // host pointer, also valid on the device (null when empty)
  /// Seconds cudaHostRegister took (for `dak profile`'s pin rate and load reports).
  double pin_seconds() const { return pin_seconds_; }

 private:
  void release();

  void* base_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t mapped_ = 0;
  uint64_t used_ = 0;
  double pin_seconds_ = 0;
  std::string purpose_;
};

}  // namespace dak::gpu
