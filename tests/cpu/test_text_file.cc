// write_new_text_file (core/text_file.h): the reports and profiles the CLI writes never replace a
// file of the user's, a sink is written as it is, and a failed write leaves no half file (trial of
// session 51: the report path was checked only when the run began, then opened with truncation).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST(TextFile, ReplaceSwapsInTheNewTextKeepingThePermissions) {
  const fs::path dir = fresh_test_dir("dak_text_file_replace");
  write_bytes(dir / "p.json", "old profile, longer than the new one");
  const fs::perms mode = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read;  // 0640
  fs::permissions(dir / "p.json", mode);
  const dak::WrittenFile w = dak::write_new_text_file(dir / "p.json", "new", "--output", /*replace=*/true);
  EXPECT_FALSE(w.moved);
  EXPECT_EQ(read_bytes(dir / "p.json"), "new");
  EXPECT_EQ(fs::status(dir / "p.json").permissions() & fs::perms::all, mode);
  EXPECT_EQ(entries(dir), 1u) << "a temporary file was left";
  // A relative path without a folder part, and a long name (the temporary file's name is short).
  const std::string long_name(240, 'p');
  write_bytes(dir / long_name, "old");
  EXPECT_FALSE(dak::write_new_text_file(dir / long_name, "new", "--output", true).moved);
  EXPECT_EQ(read_bytes(dir / long_name), "new");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  const dak::WrittenFile rel = dak::write_new_text_file("rel.json", "r", "--json");
  fs::current_path(cwd);
  EXPECT_EQ(rel.path, "rel.json");
  EXPECT_EQ(read_bytes(dir / "rel.json"), "r");
  EXPECT_EQ(dak::free_name_beside("rel.json"), "rel-2.json");
  EXPECT_EQ(dak::free_name_beside(dir / "p.json", ".csv"), (dir / "p.csv").string());
}

/// dak profile --force over a file this user may write, in a folder it may not (no temporary file
/// there): the file is rewritten in place. As root (CI), the child drops to the user nobody first.
/// Exit 0 when the file holds the new text.
[[noreturn]] void replace_in_a_read_only_folder(const fs::path& dir) {
  if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) std::_Exit(7);
  try {
    const dak::WrittenFile w = dak::write_new_text_file(dir / "p.json", "new", "--output", /*replace=*/true);
    std::_Exit(!w.moved && read_bytes(dir / "p.json") == "new" ? 0 : 2);
  } catch (const dak::Error&) {
    std::_Exit(3);
  }
}

TEST(TextFileDeathTest, ReplaceInAFolderItCannotWriteRewritesTheFileInPlace) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const fs::path dir = fresh_test_dir("dak_text_file_ro_folder");
  write_bytes(dir / "p.json", "old");
  fs::permissions(dir / "p.json", fs::perms::all);  // 0777: writable by nobody too
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read |
                           fs::perms::others_exec | fs::perms::group_read | fs::perms::group_exec);
  // The parents must let nobody reach the folder.
  for (fs::path p = dir.parent_path(); ::geteuid() == 0 && p != p.root_path(); p = p.parent_path()) {
    if ((fs::status(p).permissions() & fs::perms::others_exec) == fs::perms::none) {
      GTEST_SKIP() << p << " closed to others";
    }
  }
  EXPECT_EXIT(replace_in_a_read_only_folder(dir), ::testing::ExitedWithCode(0), "");
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_EQ(read_bytes(dir / "p.json"), "new");
  EXPECT_EQ(entries(dir), 1u);
}

TEST(TextFile, SinksAreWrittenAsTheyAre) {
  EXPECT_TRUE(dak::is_stream_sink("/dev/null"));
  EXPECT_FALSE(dak::is_stream_sink(fresh_test_dir("dak_text_file_sink")));
  const dak::WrittenFile w = dak::write_new_text_file("/dev/null", "report", "--json");
  EXPECT_EQ(w.path, "/dev/null");
  EXPECT_FALSE(w.moved);
  // A link to /dev/null is a sink too (nothing created beside it).
  const fs::path dir = fresh_test_dir("dak_text_file_sinks");
  fs::create_symlink("/dev/null", dir / "null");
  EXPECT_FALSE(dak::write_new_text_file(dir / "null", "report", "--json").moved);
  EXPECT_EQ(entries(dir), 1u);
  // A FIFO no process reads: an error at once, not a wait without end.
  ASSERT_EQ(::mkfifo((dir / "pipe").c_str(), 0600), 0);
  EXPECT_THROW(dak::check_sink_has_reader(dir / "pipe", "--json"), dak::Error);
  {
    // With a reader: the check keeps the write end open (closing it would end the reader's input
    // before the report), and the report reaches the reader whole.
    const int reader = ::open((dir / "pipe").c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    dak::check_sink_has_reader(dir / "pipe", "--json");
    char buf[64] = {};
    EXPECT_LT(::read(reader, buf, sizeof(buf)), 0) << "the reader saw its end of file after the check";
    EXPECT_FALSE(dak::write_new_text_file(dir / "pipe", "report", "--json").moved);
    EXPECT_EQ(::read(reader, buf, sizeof(buf)), 6);
    EXPECT_EQ(std::string(buf, 6), "report");
    ::close(reader);
  }
  try {
    dak::write_new_text_file(dir / "pipe", "report", "--csv");
    ADD_FAILURE() << "a write to a pipe without a reader succeeded";
  } catch (const dak::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no process reads this pipe"), std::string::npos) << e.what();
  }
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
