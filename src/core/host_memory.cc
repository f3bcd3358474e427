#include "core/host_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace dak {
namespace {

std::optional<std::string> read_text(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The number after `key` on a line "key value" of `text` (meminfo's "MemAvailable:", memory.stat's
/// "inactive_file").
std::optional<uint64_t> keyed_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string k;
    uint64_t v = 0;
    if (ss >> k >> v && k == key) return v;
  }
  return std::nullopt;
}

/// The leading unsigned integer of `text` ("12345\n"); nullopt for "max" or anything else.
std::optional<uint64_t> plain_number(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  std::istringstream ss(*text);
  uint64_t v = 0;
  if (ss >> v) return v;
  return std::nullopt;
}

/// limit - (usage - inactive file pages), where a limit is set (below 2^62).
std::optional<uint64_t> cgroup_headroom(const std::optional<std::string>& limit_text,
                                        const std::optional<std::string>& usage_text,
                                        const std::optional<std::string>& stat_text, const std::string& inactive_key) {
  const std::optional<uint64_t> limit = plain_number(limit_text), usage = plain_number(usage_text);
  if (!limit || !usage || *limit >= (uint64_t(1) << 62)) return std::nullopt;
  const uint64_t inactive = stat_text ? keyed_value(*stat_text, inactive_key).value_or(0) : 0;
  const uint64_t working = *usage - std::min(*usage, inactive);
  return *limit - std::min(*limit, working);
}

}  // namespace

std::optional<uint64_t> mem_available_bytes(const MemorySources& s) {
  std::optional<uint64_t> best;
  const auto take = [&](std::optional<uint64_t> v) {
    if (v) best = best ? std::min(*best, *v) : *v;
  };
  if (s.meminfo) {
    const std::optional<uint64_t> kib = keyed_value(*s.meminfo, "MemAvailable:");  // the file counts kB (KiB)
    if (kib) take(*kib * 1024);
  }
  take(cgroup_headroom(s.cgroup2_max, s.cgroup2_current, s.cgroup2_stat, "inactive_file"));
  take(cgroup_headroom(s.cgroup1_limit, s.cgroup1_usage, s.cgroup1_stat, "total_inactive_file"));
  return best;
}

std::optional<uint64_t> mem_available_bytes() {
  MemorySources s;
  s.meminfo = read_text("/proc/meminfo");
  s.cgroup2_max = read_text("/sys/fs/cgroup/memory.max");
  s.cgroup2_current = read_text("/sys/fs/cgroup/memory.current");
  s.cgroup2_stat = read_text("/sys/fs/cgroup/memory.stat");
  s.cgroup1_limit = read_text("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  s.cgroup1_usage = read_text("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  s.cgroup1_stat = read_text("/sys/fs/cgroup/memory/memory.stat");
  return mem_available_bytes(s);
}

}  // namespace dak
