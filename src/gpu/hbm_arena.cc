#include "gpu/hbm_arena.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <utility>

#include "core/error.h"
#include "gpu/cuda_check.h"

namespace dak::gpu {

const char* const kRunStateHbmFix =
    "use fewer prompts at once (--max-batch) or a smaller --max-context (--batch in dak bench), give a budget that "
    "leaves the rest in host memory (--gpu-memory, e.g. --gpu-memory 40GiB), free the GPU (nvidia-smi shows other "
    "processes), or run a smaller model";
const char* const kWeightHbmFix =
    "give an HBM budget that leaves part of the weights in host memory (--gpu-memory 40GiB, --cpu-offload-gb 8 or "
    "--offload-ratio 0.3), free the GPU (nvidia-smi shows other processes), or run a smaller model";


void require_free_hbm(uint64_t needed_bytes, const std::string& what, const char* fix) {
  size_t free_b = 0, total_b = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  if (needed_bytes <= free_b) return;
  int device = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  fail(fmt::format("not enough GPU memory: {} needs {} ({} bytes) of HBM, but only {} of {} is free on "
                   "cuda:{}",
                   what, format_gib(needed_bytes), needed_bytes, format_gib(free_b), format_gib(total_b), device),
       fmt::format("cuda:{}", device),
       fix ? fix : kRunStateHbmFix);
}

HbmArena::HbmArena(uint64_t capacity_bytes, std::string purpose, const char* fix)
    : capacity_(aligned_size(capacity_bytes)), purpose_(std::move(purpose)) {
  require_free_hbm(capacity_, purpose_, fix);
  if (capacity_ > 0) {
    const cudaError_t err = cudaMalloc(&base_, capacity_);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of a failed allocation
      base_ = nullptr;
      fail(fmt::format("cudaMalloc of {} for {} failed: {}", format_gib(capacity_), purpose_,
                       cudaGetErrorString(err)),
           "HBM arena", fix ? fix : kRunStateHbmFix);
    }
  }
}

HbmArena::~HbmArena() { release(); }

void HbmArena::release() {
  // NOTE: no throwing from a destructor path; a failing cudaFree here means the context is
  // already broken and the error surfaces at the next checked call.
  if (base_) cudaFree(base_);
  base_ = nullptr;
  capacity_ = used_ = 0;
}

HbmArena::HbmArena(HbmArena&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      used_(std::exchange(o.used_, 0)),
      purpose_(std::move(o.purpose_)) {}

HbmArena& HbmArena::operator=(HbmArena&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    used_ = std::exchange(o.used_, 0);
    purpose_ = std::move(o.purpose_);
  }
  return *this;
}

void* HbmArena::allocate(uint64_t bytes, const std::string& what) {
  const uint64_t size = aligned_size(bytes);
  if (size > capacity_ - used_) {
    fail(fmt::format("HBM arena for {} is full: {} needs {} but {} of {} are left", purpose_, what,
                     format_gib(size), format_gib(capacity_ - used_), format_gib(capacity_)),
         "HBM arena", "this is a sizing bug in dak (the arena is sized before allocation); please report it");
  }
  void* p = static_cast<char*>(base_) + used_;
  used_ += size;
  return p;
}

}  // namespace dak::gpu
