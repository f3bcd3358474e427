// MappedFile: a read of a mapped page whose file was cut short while dak read it (SIGBUS) ends the
// process with dak's error (what, where, fix) and exit code 1, not "Bus error" (trial of session 50:
// a checkpoint truncated during `dak generate` gave rc 135).
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/mapped_file.h"

namespace {

std::filesystem::path scratch_file(const std::string& name, size_t bytes) {
  const std::filesystem::path p = std::filesystem::path(::testing::TempDir()) / name;
  std::ofstream(p, std::ios::binary) << std::string(bytes, 'x');
  return p;
}

/// Maps `path`, cuts the file to 0 bytes, and reads the mapping's last byte.
[[noreturn]] void read_after_truncate(const std::filesystem::path& path, bool install) {
  if (install) dak::install_mapped_file_fault_handler();
  const dak::MappedFile f(path);
  if (::truncate(path.c_str(), 0) != 0) std::_Exit(7);
  volatile uint8_t v = f.data()[f.size() - 1];
  (void)v;
  std::_Exit(0);  // not reached: the read faults
}

TEST(MappedFileDeathTest, AFileCutShortWhileReadIsAnErrorNamingIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto path = scratch_file("dak_mapped_cut.bin", 3 * 4096 + 17);
  EXPECT_EXIT(read_after_truncate(path, true), ::testing::ExitedWithCode(1),
              "dak: error: reading byte 12304 of a 12305-byte file failed \\(SIGBUS\\): the file became shorter "
              "while dak read it.*\n  where: .*dak_mapped_cut\\.bin\n  fix:   leave model files unchanged while "
              "dak runs");
}

TEST(MappedFileDeathTest, WithoutTheHandlerItIsABusError) {
  // The test above is the handler's doing: the same read without it dies of the signal.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto path = scratch_file("dak_mapped_cut_default.bin", 4096 + 1);
  EXPECT_EXIT(read_after_truncate(path, false), ::testing::KilledBySignal(SIGBUS), "");
}

TEST(MappedFileDeathTest, ABusErrorElsewhereKeepsTheDefaultAction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        dak::install_mapped_file_fault_handler();
        std::raise(SIGBUS);  // si_addr is not in a mapped file: the handler restores the default
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGBUS), "");
}

}  // namespace
