// write_new_text_file (core/text_file.h): the reports and profiles the CLI writes never replace a
// file of the user's, a sink is written as it is, and a failed write leaves no half file (trial of
// session 51: the report path was checked only when the run began, then opened with truncation).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "checkpoint_test_util.h"
#include "cli_test_util.h"
#include "core/error.h"
#include "core/text_file.h"

namespace fs = std::filesystem;
using dak::testing::fresh_test_dir;
using dak::testing::read_bytes;
using dak::testing::write_bytes;

namespace {

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(TextFile, ANewFileIsWrittenAndAnExistingOneIsNeverReplaced) {
  const fs::path dir = fresh_test_dir("dak_text_file_new");
  dak::WrittenFile w = dak::write_new_text_file(dir / "r.json", "{\"a\": 1}\n", "--json");
  EXPECT_EQ(w.path, (dir / "r.json").string());
  EXPECT_FALSE(w.moved);
  EXPECT_EQ(read_bytes(dir / "r.json"), "{\"a\": 1}\n");
  // A file that appeared at the path since it was checked: left as it is, the text beside it.
  write_bytes(dir / "bench.csv", "keep me");
  write_bytes(dir / "bench-2.csv", "and me");
  w = dak::write_new_text_file(dir / "bench.csv", "x,y\n", "--csv");
  EXPECT_TRUE(w.moved);
  EXPECT_EQ(w.path, (dir / "bench-3.csv").string());
  EXPECT_EQ(read_bytes(dir / "bench.csv"), "keep me");
  EXPECT_EQ(read_bytes(dir / "bench-2.csv"), "and me");
  EXPECT_EQ(read_bytes(dir / "bench-3.csv"), "x,y\n");
  // A link (dangling or not) is not written through, even with replace.
  fs::create_symlink(dir / "target.json", dir / "link.json");
  w = dak::write_new_text_file(dir / "link.json", "1", "--output", /*replace=*/true);
  EXPECT_TRUE(w.moved);
  EXPECT_EQ(w.path, (dir / "link-2.json").string());
  EXPECT_FALSE(fs::exists(dir / "target.json"));
  EXPECT_EQ(dak::free_name_beside(dir / "bench.csv"), (dir / "bench-4.csv").string());
}

TEST(TextFile, ReplaceRewritesInPlaceKeepingThePermissions) {
  const fs::path dir = fresh_test_dir("dak_text_file_replace");
  write_bytes(dir / "p.json", "old profile, longer than the new one");
  fs::permissions(dir / "p.json", fs::perms::owner_read | fs::perms::owner_write);
  const dak::WrittenFile w = dak::write_new_text_file(dir / "p.json", "new", "--output", /*replace=*/true);
  EXPECT_FALSE(w.moved);
  EXPECT_EQ(read_bytes(dir / "p.json"), "new");
  EXPECT_EQ(fs::status(dir / "p.json").permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(entries(dir), 1u) << "a temporary file was left";
}

TEST(TextFile, SinksAreWrittenAsTheyAre) {
  EXPECT_TRUE(dak::is_stream_sink("/dev/null"));
  EXPECT_FALSE(dak::is_stream_sink(fresh_test_dir("dak_text_file_sink")));
  const dak::WrittenFile w = dak::write_new_text_file("/dev/null", "report", "--json");
  EXPECT_EQ(w.path, "/dev/null");
  EXPECT_FALSE(w.moved);
  if (fs::exists("/dev/full")) {
    try {
      dak::write_new_text_file("/dev/full", "report", "--json");
      ADD_FAILURE() << "a write to /dev/full succeeded";
    } catch (const dak::Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write '/dev/full'"), std::string::npos) << e.what();
      EXPECT_TRUE(fs::exists("/dev/full"));
    }
  }
}

/// Writes 64 KiB under a 1 KiB file-size limit: the write fails (EFBIG); exit 0 when the error says
/// so and neither the new file nor a temporary one is left (`replace`: the old file unchanged).
[[noreturn]] void write_past_the_size_limit(const fs::path& dir, bool replace) {
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit limit{1024, 1024};
  if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) std::_Exit(7);
  try {
    dak::write_new_text_file(dir / "big.json", std::string(64 << 10, 'x'), "--json", replace);
  } catch (const dak::Error& e) {
    const std::string what = e.what();
    const bool named = what.find("cannot write '" + (dir / "big.json").string() + "'") != std::string::npos;
    const bool clean = replace ? read_bytes(dir / "big.json") == "old" && entries(dir) == 1 : entries(dir) == 0;
    std::_Exit(named && clean ? 0 : 2);
  }
  std::_Exit(3);
}

TEST(TextFileDeathTest, AFailedWriteLeavesNoPartOfIt) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const fs::path fresh = fresh_test_dir("dak_text_file_efbig");
  EXPECT_EXIT(write_past_the_size_limit(fresh, false), ::testing::ExitedWithCode(0), "");
  const fs::path old = fresh_test_dir("dak_text_file_efbig_replace");
  write_bytes(old / "big.json", "old");
  EXPECT_EXIT(write_past_the_size_limit(old, true), ::testing::ExitedWithCode(0), "");
}

}  // namespace
