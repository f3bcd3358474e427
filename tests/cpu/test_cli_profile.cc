// `dak profile` from the command line, on any machine: the help documents the options and the
// quantities, bad arguments are refused before looking for a GPU, an existing --output is never
// replaced without --force (and stays byte for byte as it was), and without a usable GPU (hidden
// with CUDA_VISIBLE_DEVICES=, or a dak built without CUDA) the command fails with exit code 1, a
// message saying why, and no file written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";

RunResult run_dak(const std::string& args, const std::string& env = kNoGpu) {
  return dak::testing::run_dak_env(env, args);
}

/// A fresh folder under the temp directory, removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("dak_cli_profile_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The text of profiles/SHIPPED.json with its "name" changed to `name`.
std::string shipped_profile_named(const std::string& shipped, const std::string& name) {
  std::string text = read_file(fs::path(DAK_SOURCE_DIR) / "profiles" / (shipped + ".json"));
  const std::string from = "\"name\": \"" + shipped + "\"";
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << shipped;
  if (at != std::string::npos) text.replace(at, from.size(), "\"name\": \"" + name + "\"");
  return text;
}

TEST(CliProfile, HelpDocumentsOptionsAndQuantities) {
  const RunResult r = run_dak("profile --help", "");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"--output", "--force", "--name", "--gemm-model", "--gemm-tokens", "--gemm-ratios", "--quick",
                        "--skip-gemm", "--pin-test-gib", "--runs", "B_g", "B_h", "contention", "tensor", "tiered GEMM",
                        "pinnable_bytes", "Hopper GPU"}) {
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " missing from:\n" << r.output;
  }
  const RunResult top = run_dak("--help", "");
  EXPECT_NE(top.output.find("profile"), std::string::npos) << top.output;
}

TEST(CliProfile, WithoutAGpuFailsWithTheReasonAndWritesNothing) {
  TempDir dir("nogpu");
  const fs::path out = dir.path() / "measured.json";
  const RunResult r = run_dak("profile --output " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("dak: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dak profile needs a Hopper GPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("h200-default"), std::string::npos) << "the fix should name the shipped profile\n"
                                                              << r.output;
  EXPECT_FALSE(fs::exists(out)) << "a failed run must not create --output";
  // Same with --quick and --skip-gemm: the GPU is looked for before anything is measured.
  const RunResult q = run_dak("profile --quick --skip-gemm --output " + out.string());
  EXPECT_EQ(q.exit_code, 1) << q.output;
  EXPECT_NE(q.output.find("needs a Hopper GPU"), std::string::npos) << q.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(fs::is_empty(dir.path())) << "dak profile wrote some other file";
}

TEST(CliProfile, ExistingOutputIsRefusedWithoutForceAndLeftUntouched) {
  TempDir dir("exists");
  const fs::path out = dir.path() / "profile.json";
  const std::string original = "{\"keep\": \"these exact bytes\"}\n";
  {
    std::ofstream f(out, std::ios::binary);
    f << original;
  }
  const auto mtime = fs::last_write_time(out);
  const RunResult r = run_dak("profile --output " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("exists"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("needs a Hopper GPU"), std::string::npos) << "refused for the file, before the GPU\n"
                                                                    << r.output;
  EXPECT_EQ(read_file(out), original);
  EXPECT_EQ(fs::last_write_time(out), mtime);
  // With --force the file check passes; without a GPU the run still fails and the file is intact.
  const RunResult forced = run_dak("profile --force --output " + out.string());
  EXPECT_EQ(forced.exit_code, 1) << forced.output;
  EXPECT_NE(forced.output.find("needs a Hopper GPU"), std::string::npos) << forced.output;
  EXPECT_EQ(read_file(out), original);
  // Nothing else appeared in the folder.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 100;
  EXPECT_EQ(files, 1u);
}

TEST(CliProfile, BadArgumentsAreRefusedBeforeLookingForAGpu) {
  TempDir dir("args");
  const std::string out = " --output " + (dir.path() / "p.json").string();
  struct Case {
    std::string args;
    const char* needle;
    int exit_code = 1;  // 2: refused by the flag's own parser (a usage error); 1: out of range, or a conflict
  };
  for (const Case& c : {Case{"profile --gemm-tokens 0" + out, "--gemm-tokens"},
                        Case{"profile --gemm-tokens 8,x" + out, "--gemm-tokens", 2},
                        Case{"profile --gemm-tokens 9000" + out, "[1, 8192]"},
                        Case{"profile --gemm-ratios 0,1.5" + out, "--gemm-ratios"},
                        Case{"profile --gemm-ratios=-0.1" + out, "[0, 1]"},
                        Case{"profile --gemm-ratios 0,,1" + out, "--gemm-ratios", 2},
                        Case{"profile --gemm-model no-such-model" + out, "shipped config"},
                        Case{"profile --runs 2" + out, "--runs"},
                        Case{"profile --pin-test-gib=-1" + out, "--pin-test-gib"},
                        Case{"profile --output " + (dir.path() / "no" / "such" / "p.json").string(), "does not exist"},
                        Case{"profile --output " + dir.path().string(), "is a folder"}}) {
    const RunResult r = run_dak(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("needs a Hopper GPU"), std::string::npos) << c.args << "\n" << r.output;
  }
  // --skip-gemm does not look at the GEMM configs (a wrong name is not an error then).
  const RunResult skip = run_dak("profile --skip-gemm --gemm-model no-such-model" + out);
  EXPECT_EQ(skip.exit_code, 1) << skip.output;
  EXPECT_NE(skip.output.find("needs a Hopper GPU"), std::string::npos) << skip.output;
  // --output is required (a CLI11 usage error, not exit 0).
  const RunResult missing = run_dak("profile");
  EXPECT_NE(missing.exit_code, 0) << missing.output;
  EXPECT_NE(missing.output.find("--output"), std::string::npos) << missing.output;
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(CliProfile, ASymbolicLinkAsOutputIsRefusedEvenDanglingOrWithForce) {
  // New-user trial: `dak profile -o DANGLING_LINK` passed the never-overwrite check (its target does
  // not exist) and would have written through the link (dak bench --csv refuses such a link).
  TempDir dir("link");
  const fs::path target = dir.path() / "elsewhere.json", link = dir.path() / "link.json";
  fs::create_symlink(target, link);
  for (const std::string flags : {"", " --force"}) {
    const RunResult r = run_dak("profile --output " + link.string() + flags);
    EXPECT_EQ(r.exit_code, 1) << flags << ": " << r.output;
    EXPECT_NE(r.output.find("is a symbolic link (to '" + target.string() + "')"), std::string::npos)
        << flags << ": " << r.output;
    EXPECT_EQ(r.output.find("needs a Hopper GPU"), std::string::npos) << "refused before the GPU\n" << r.output;
    EXPECT_FALSE(fs::exists(target)) << flags;
  }
  // A link to an existing file: refused too, and the file left as it was.
  { std::ofstream(target) << "keep"; }
  const RunResult r = run_dak("profile --force --output " + link.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("is a symbolic link"), std::string::npos) << r.output;
  EXPECT_EQ(read_file(target), "keep");
}

TEST(CliProfile, PlanTakesACompiledInProfileByName) {
  const std::string plan = "plan --model llama-2-7b --batch 8 --gen-len 8 --offload-ratio 0.1 ";
  const RunResult h100 = run_dak(plan + "--profile h100-default");
  EXPECT_EQ(h100.exit_code, 0) << h100.output;
  EXPECT_TRUE(dak::testing::contains(h100.output, "profile   h100-default (v1)")) << h100.output;
  const RunResult plain = run_dak(plan);
  EXPECT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_TRUE(dak::testing::contains(plain.output, "profile   h200-default (v1)")) << plain.output;
  // A near miss of a compiled-in name that is no file: the nearest name is suggested (the second
  // trial of session 33 got h200-default for h100-defaul: the first within 2 edits).
  for (const auto& [typo, near] : std::vector<std::pair<std::string, std::string>>{
           {"h100-defalt", "h100-default"}, {"h100-defaul", "h100-default"}, {"H100-DEFAULT", "h100-default"},
           {"100-default", "h100-default"}, {"h200-defualt", "h200-default"}}) {
    const RunResult r = run_dak(plan + "--profile " + typo);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    for (const std::string s : {"no hardware profile file '" + typo + "'", "did you mean " + near + "?",
                                std::string("where: --profile (dak plan)")}) {
      EXPECT_TRUE(dak::testing::contains(r.output, s)) << s << " missing from:\n" << r.output;
    }
  }
  // The file shipped until session 37 under its old name: the new name and file are given.
  for (const std::string old : {"profiles/h100-measured.json", "h100-measured"}) {
    const RunResult r = run_dak(plan + "--profile " + old);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(dak::testing::contains(r.output, "is now profiles/h100-fast-link.json")) << r.output;
    EXPECT_TRUE(dak::testing::contains(r.output, "--profile h100-fast-link")) << r.output;
  }
  // Far from every name: no guess, the names listed.
  const RunResult far = run_dak(plan + "--profile h100");
  EXPECT_EQ(far.exit_code, 1) << far.output;
  EXPECT_TRUE(dak::testing::contains(far.output, "no hardware profile file 'h100'")) << far.output;
  EXPECT_TRUE(dak::testing::contains(far.output, "name a compiled-in profile: h200-default, h100-default, h100-fast-link")) << far.output;
  EXPECT_FALSE(dak::testing::contains(far.output, "did you mean")) << far.output;
}

TEST(CliProfile, ANameDakProfileCouldNotReadBackIsRefusedFirst) {
  TempDir dir("bad_name");
  for (const char* name : {"'my h100'", "'h100-default '", "''"}) {
    const RunResult r = run_dak("profile --output " + (dir.path() / "p.json").string() + " --name " + name);
    EXPECT_NE(r.exit_code, 0) << name << ": " << r.output;  // 1, or 2 for the empty value (a usage error)
    EXPECT_TRUE(dak::testing::contains(r.output, "where: --name")) << name << ": " << r.output;
    EXPECT_FALSE(fs::exists(dir.path() / "p.json"));
  }
}

TEST(CliProfile, ACompiledInNameIsNeverShadowedByTheWorkingDirectory) {
  // The session-33 trial: a folder or broken file named h200-default in the working directory hid
  // the compiled-in profile, while a dangling link did not. The name always means the compiled-in
  // profile, with a notice; ./NAME reads the file.
  TempDir dir("by_name");
  std::ofstream(dir.path() / "h100-default") << shipped_profile_named("h200-default", "my-file");
  fs::create_directory(dir.path() / "h200-default");
  const std::string plan = " plan --model llama-2-7b --batch 8 --gen-len 8 --offload-ratio 0.1 --profile ";
  const auto in_dir = [&](const std::string& profile) {
    return dak::testing::run_shell("cd " + dir.path().string() + " && " + kNoGpu + " " + std::string(DAK_BINARY) +
                                   plan + profile + " 2>&1");
  };
  for (const char* name : {"h100-default", "h200-default"}) {
    const RunResult r = in_dir(name);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(dak::testing::contains(r.output, std::string("profile   ") + name + " (v1)")) << r.output;
    EXPECT_TRUE(dak::testing::contains(r.output, std::string("pass ./") + name + " for it")) << r.output;
  }
  const RunResult file = in_dir("./h100-default");
  EXPECT_EQ(file.exit_code, 0) << file.output;
  EXPECT_TRUE(dak::testing::contains(file.output, "profile   my-file (v1)")) << file.output;
}

TEST(CliProfile, AFileThatPassesForACompiledInProfileIsSaid) {
  // The session-33 trial: h100-default's values under the name h200-default were planned and
  // recorded as h200-default, silently. An edited copy of a shipped profile is still used (the
  // natural way to change one value), with a notice; the shipped copies themselves get none.
  TempDir dir("impostor");
  const fs::path impostor = dir.path() / "impostor.json";
  std::ofstream(impostor) << shipped_profile_named("h100-default", "h200-default");
  const std::string plan = "plan --model llama-2-7b --batch 8 --gen-len 8 --offload-ratio 0.1 --profile ";
  const RunResult r = run_dak(plan + impostor.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"notice:", "calls itself 'h200-default'", "values differ", "its own \"name\""}) {
    EXPECT_TRUE(dak::testing::contains(r.output, s)) << s << " missing from:\n" << r.output;
  }
  for (const char* shipped : {"h200-default.json", "h100-default.json", "h100-fast-link.json"}) {
    const RunResult ok = run_dak(plan + (fs::path(DAK_SOURCE_DIR) / "profiles" / shipped).string());
    EXPECT_EQ(ok.exit_code, 0) << shipped << ": " << ok.output;
    EXPECT_FALSE(dak::testing::contains(ok.output, "notice")) << shipped << ": " << ok.output;
  }
}

}  // namespace
