#include "gpu/device.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "core/error.h"
#include "gpu/cuda_check.h"

namespace dak::gpu {

std::optional<DeviceInfo> probe_device(int index, std::string* why) {
  DeviceInfo d;
  d.index = index;
  cudaDriverGetVersion(&d.driver_version);
  cudaRuntimeGetVersion(&d.runtime_version);
  if (d.driver_version == 0) {
    if (why) *why = "no NVIDIA driver is loaded (no GPU on this machine?)";
    return std::nullopt;
  }
  if (d.driver_version < d.runtime_version) {
    if (why) {
      *why = fmt::format("the NVIDIA driver supports CUDA {}.{}, but dak was built with CUDA {}.{}; "
                         "update the driver",
                         d.driver_version / 1000, d.driver_version % 1000 / 10, d.runtime_version / 1000,
                         d.runtime_version % 1000 / 10);
    }
    return std::nullopt;
  }
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    if (why) *why = err == cudaSuccess ? "no CUDA device found" : fmt::format("no usable CUDA device ({})", cudaGetErrorString(err));
    cudaGetLastError();
    return std::nullopt;
  }
  if (index < 0 || index >= count) {
    if (why) *why = fmt::format("CUDA device {} does not exist ({} device(s) visible)", index, count);
    return std::nullopt;
  }
  cudaDeviceProp p{};
  if ((err = cudaGetDeviceProperties(&p, index)) != cudaSuccess) {
    if (why) *why = fmt::format("cannot query CUDA device {}: {}", index, cudaGetErrorString(err));
    cudaGetLastError();
    return std::nullopt;
  }
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.hbm_bytes = p.totalGlobalMem;
  d.l2_bytes = uint64_t(p.l2CacheSize);
  d.smem_per_block_optin = p.sharedMemPerBlockOptin;
  d.can_map_host_memory = p.canMapHostMemory != 0;
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(index) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    d.hbm_free_bytes = free_b;
  }
  cudaGetLastError();
  return d;
}

void require_hopper(const DeviceInfo& d) {
  if (d.cc_major != 9) {
    fail(fmt::format("GPU {} ({}) has compute capability {}.{}; dak's kernels need a Hopper GPU (9.0)",
                     d.index, d.name, d.cc_major, d.cc_minor),
         "--device cuda", "run on an H100/H200, or use --device cpu (or --device auto to fall back)");
  }
}

}  // namespace dak::gpu
