// mem_available_bytes: MemAvailable of /proc/meminfo, bounded by the memory cgroup's headroom
// (v2 and v1 layouts) where a limit is set, on file texts given as they appear on Linux.
#include <gtest/gtest.h>

#include "core/host_memory.h"

namespace dak {
namespace {

const std::string kMeminfo = "MemTotal:       24568888 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\n";

TEST(HostMemory, MemAvailableAloneWithoutALimit) {
  MemorySources s;
  s.meminfo = kMeminfo;
  EXPECT_EQ(mem_available_bytes(s), uint64_t(20000000) * 1024);
  s.cgroup2_max = "max\n";  // v2 without a limit
  s.cgroup2_current = "5000000000\n";
  EXPECT_EQ(mem_available_bytes(s), uint64_t(20000000) * 1024);
  s.cgroup1_limit = "9223372036854771712\n";  // v1's "no limit"
  s.cgroup1_usage = "16404832256\n";
  EXPECT_EQ(mem_available_bytes(s), uint64_t(20000000) * 1024);
  EXPECT_EQ(mem_available_bytes(MemorySources{}), std::nullopt);
  s.meminfo = "MemTotal: 1 kB\n";  // no MemAvailable line, no limit: unknown
  EXPECT_EQ(mem_available_bytes(s), std::nullopt);
}

TEST(HostMemory, ACgroupLimitBelowMemAvailableWins) {
  MemorySources s;
  s.meminfo = kMeminfo;
  // v2: 8 GiB limit, 3 GiB charged of which 1 GiB inactive page cache: 6 GiB of headroom.
  s.cgroup2_max = "8589934592\n";
  s.cgroup2_current = "3221225472\n";
  s.cgroup2_stat = "anon 2147483648\nfile 1073741824\nactive_file 0\ninactive_file 1073741824\n";
  EXPECT_EQ(mem_available_bytes(s), uint64_t(6) << 30);
  // v1 alone, total_inactive_file counted (not the cgroup's own inactive_file line).
  MemorySources v1;
  v1.cgroup1_limit = "4294967296\n";
  v1.cgroup1_usage = "2147483648\n";
  v1.cgroup1_stat = "inactive_file 5\ntotal_inactive_file 1073741824\n";
  EXPECT_EQ(mem_available_bytes(v1), uint64_t(3) << 30);
  // Usage above the limit (reclaim pending) leaves no headroom rather than wrapping around.
  v1.cgroup1_usage = "8589934592\n";
  v1.cgroup1_stat = std::nullopt;
  EXPECT_EQ(mem_available_bytes(v1), uint64_t(0));
  // A limit above MemAvailable: MemAvailable.
  s.cgroup2_max = "1099511627776\n";
  EXPECT_EQ(mem_available_bytes(s), uint64_t(20000000) * 1024);
}

TEST(HostMemory, ThisMachineReportsSomething) {
  const std::optional<uint64_t> b = mem_available_bytes();
  ASSERT_TRUE(b.has_value()) << "Linux has /proc/meminfo";
  EXPECT_GT(*b, uint64_t(0));
}

}  // namespace
}  // namespace dak
