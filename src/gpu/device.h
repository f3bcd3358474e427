// GPU discovery: which CUDA device dak would use and whether it can (Hopper, sm_90).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dak::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;                 // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;   // compute capability (9.0 for Hopper)
  int sm_count = 0;
  uint64_t hbm_bytes = 0;           // total device memory
  uint64_t hbm_free_bytes = 0;      // free at query time
  uint64_t l2_bytes = 0;
  uint64_t smem_per_block_optin = 0;  // bytes
  int driver_version = 0;           // e.g. 13000 for CUDA 13.0
  int runtime_version = 0;
  bool can_map_host_memory = false;
};

/// Probes device `index`. Returns nullopt and sets `why` (a sentence a user can act on) when
/// there is no usable GPU: no device, driver too old for this build's runtime, or the call
/// fails. Never throws.
std::optional<DeviceInfo> probe_device(int index, std::string* why);

/// Throws dak::Error unless `d` is a Hopper GPU (compute capability 9.x), since dak's kernels
/// are built for sm_90a only.
void require_hopper(const DeviceInfo& d);

}  // namespace dak::gpu
