#include "gpu/host_arena.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <utility>

#include "core/error.h"
#include "core/host_memory.h"
#include "gpu/hbm_arena.h"

namespace dak::gpu {
namespace {

uint64_t page_bytes() {
  const long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? uint64_t(p) : 4096;
}

std::string available_text() {
  const std::optional<uint64_t> avail = mem_available_bytes();
  return avail ? format_gib(*avail) + " (" + kMemAvailableSource + ")"
               : "an unknown amount (/proc/meminfo and the memory cgroup unreadable)";
}

/// "12.50 GiB (13421772800 bytes)": GiB for people, bytes for small requests.
std::string size_text(uint64_t bytes) { return fmt::format("{} ({} bytes)", format_gib(bytes), bytes); }

constexpr const char* kLowerFix =
    "offload less: a smaller --cpu-offload-gb or a larger --gpu-memory (or --offload-ratio), or free host memory";

}  // namespace

PinnedHostArena::PinnedHostArena(uint64_t capacity_bytes, std::string purpose)
    : capacity_(capacity_bytes), purpose_(std::move(purpose)) {
  if (capacity_bytes == 0) return;
  const std::string where = "pinned host arena for " + purpose_;
  const uint64_t page = page_bytes();
  if (capacity_bytes > UINT64_MAX - page) {
    fail(fmt::format("{} bytes of pinned host memory cannot be mapped", capacity_bytes), where, kLowerFix);
  }
  const uint64_t mapped = (capacity_bytes + page - 1) / page * page;

  // A device first: without one there is nothing to pin for, and mapping would only waste time.
  int devices = 0;
  const cudaError_t dev_err = cudaGetDeviceCount(&devices);
  if (dev_err != cudaSuccess || devices == 0) {
    cudaGetLastError();
    fail(fmt::format("no CUDA device to pin {} of host memory for {}: {}", size_text(mapped), purpose_,
                     dev_err != cudaSuccess ? cudaGetErrorString(dev_err) : "no device found"),
         where, "run on a machine with an NVIDIA Hopper GPU and its driver, or run without host offload");
  }
  // Pinning more than the kernel can hand out would invoke the OOM killer instead of failing.
  const std::optional<uint64_t> avail = mem_available_bytes();
  if (avail && mapped > *avail) {
    fail(fmt::format("{} needs {} of pinned host memory, but only {} is available ({})", purpose_,
                     size_text(mapped), format_gib(*avail), kMemAvailableSource),
         where, kLowerFix);
  }

  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    fail(fmt::format("cannot map {} of host memory for {}: {}; the machine has {} available", size_text(mapped),
                     purpose_, std::strerror(err), available_text()),
         where, kLowerFix);
  }

  const auto t0 = std::chrono::steady_clock::now();
  const cudaError_t reg = cudaHostRegister(p, mapped, cudaHostRegisterMapped | cudaHostRegisterPortable);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (reg != cudaSuccess) {
    cudaGetLastError();  // a failed registration is not sticky; clear it for the next checked call
    munmap(p, mapped);
    fail(fmt::format("cannot pin {} of host memory for {} (cudaHostRegister: {}); the machine has {} available",
                     size_text(mapped), purpose_, cudaGetErrorString(reg), available_text()),
         where, std::string(kLowerFix) + "; raise the locked-memory limit (ulimit -l) if it is low");
  }
  void* dev = nullptr;
  const cudaError_t map_err = cudaHostGetDevicePointer(&dev, p, 0);
  if (map_err != cudaSuccess || dev != p) {
    cudaGetLastError();
    cudaHostUnregister(p);
    munmap(p, mapped);
    fail(fmt::format("pinned host memory for {} is not mapped at the same address on the device (host {}, device "
                     "{}{})",
                     purpose_, fmt::ptr(p), fmt::ptr(dev),
                     map_err != cudaSuccess ? std::string(", ") + cudaGetErrorString(map_err) : std::string()),
         where, "dak needs unified virtual addressing (a 64-bit Linux process on a Hopper GPU)");
  }
  base_ = p;
  mapped_ = mapped;
  pin_seconds_ = seconds;
}

PinnedHostArena::~PinnedHostArena() { release(); }

void PinnedHostArena::release() {
  // NOTE: no throwing on a destructor path; an unregister failure means the context is gone, and
  // the memory is unmapped regardless.
  if (base_) {
    cudaHostUnregister(base_);
    cudaGetLastError();
    munmap(base_, mapped_);
  }
  base_ = nullptr;
  capacity_ = mapped_ = used_ = 0;
  pin_seconds_ = 0;
}

PinnedHostArena::PinnedHostArena(PinnedHostArena&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      mapped_(std::exchange(o.mapped_, 0)),
      used_(std::exchange(o.used_, 0)),
      pin_seconds_(std::exchange(o.pin_seconds_, 0.0)),
      purpose_(std::move(o.purpose_)) {}

PinnedHostArena& PinnedHostArena::operator=(PinnedHostArena&& o) noexcept {
  if (this != &o) {
    release();
    base_ = std::exchange(o.base_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    used_ = std::exchange(o.used_, 0);
    pin_seconds_ = std::exchange(o.pin_seconds_, 0.0);
    purpose_ = std::move(o.purpose_);
  }
  return *this;
}

void* PinnedHostArena::allocate(uint64_t bytes, const std::string& what) {
  // start <= capacity rounded up to 256 <= the page-rounded mapping: base_ + start stays in bounds.
  const uint64_t start = aligned_size(used_);
  if (bytes == 0) return static_cast<char*>(base_) + start;
  if (start > capacity_ || bytes > capacity_ - start) {
    fail(fmt::format("pinned host arena for {} is full: {} needs {} bytes at offset {} but the arena holds {} bytes "
                     "({} used)",
                     purpose_, what, bytes, start, capacity_, used_),
         "pinned host arena", "this is a sizing bug in dak (the arena is sized before allocation); please report it");
  }
  used_ = start + bytes;
  return static_cast<char*>(base_) + start;
}

}  // namespace dak::gpu
