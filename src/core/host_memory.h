// Host memory the process can still have: what the CPU reference path checks before it expands a
// checkpoint into fp32, and what the pinned host tier (gpu/host_arena.h) and `dak bench attention`
// check before they pin.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dak {

/// The texts mem_available_bytes() reads (nullopt: the file is absent or unreadable).
struct MemorySources {
  std::optional<std::string> meminfo;          // /proc/meminfo
  std::optional<std::string> cgroup2_max;      // /sys/fs/cgroup/memory.max ("max" or bytes)
  std::optional<std::string> cgroup2_current;  // /sys/fs/cgroup/memory.current (bytes)
  std::optional<std::string> cgroup2_stat;     // /sys/fs/cgroup/memory.stat ("inactive_file N" lines)
  std::optional<std::string> cgroup1_limit;    // /sys/fs/cgroup/memory/memory.limit_in_bytes
  std::optional<std::string> cgroup1_usage;    // /sys/fs/cgroup/memory/memory.usage_in_bytes
  std::optional<std::string> cgroup1_stat;     // /sys/fs/cgroup/memory/memory.stat ("total_inactive_file N")
};

/// Bytes of memory that can be had without swapping or the OOM killer: the smaller of
/// MemAvailable (/proc/meminfo: free memory plus reclaimable page cache) and the headroom of the
/// process's memory cgroup, limit - (usage - inactive file pages), v2 or v1 (a container's limit,
/// which MemAvailable does not show; a limit of 2^62 bytes or more counts as none). nullopt when
/// neither is known (not Linux, nothing readable).
std::optional<uint64_t> mem_available_bytes(const MemorySources& sources);

/// mem_available_bytes of the files of this machine and process.
std::optional<uint64_t> mem_available_bytes();

/// Where mem_available_bytes' number comes from, for messages that quote it.
inline constexpr const char* kMemAvailableSource = "MemAvailable, or the memory cgroup's headroom where smaller";

}  // namespace dak
