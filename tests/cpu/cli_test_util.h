// Running the `dak` binary from tests: one shell command line, its exit code and output.
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace dak::testing {

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed by one
  std::string output;  // stdout, plus stderr where the command line redirects it (2>&1)
};

/// Runs `cmd` through /bin/sh and captures its stdout.
inline RunResult run_shell(const std::string& cmd) {
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

/// Whether `output` holds the refusal `says` of a value, written "--flag: 'v' is too large; use X":
/// printed as the error "--flag: 'v' is too large" with the fix line starting "use X", whether the
/// value is out of its option's range (`exit_code` 1) or does not parse (exit 2; since trial 26 its
/// advice is the fix line too, followed by ", or run `dak ... --help` ...").
inline bool says_refusal(const std::string& output, const std::string& says, int exit_code) {
  const size_t use = says.find("; use ");
  (void)exit_code;  // out of range (1) and not a number (2, trial 26) alike: the advice is the fix line
  if (use == std::string::npos) return output.find(says) != std::string::npos;
  return output.find(says.substr(0, use) + "\n") != std::string::npos &&
         output.find("\n  fix:   use " + says.substr(use + 6)) != std::string::npos;
}

/// Whether `s` contains `part`.
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

#ifdef DAK_BINARY
/// The dak binary under test (DAK_BINARY) run with `args`, after the environment assignments `env`
/// ("" for none, e.g. "CUDA_VISIBLE_DEVICES="): its stdout, and its stderr too when `merge_stderr`.
inline RunResult run_dak_env(const std::string& env, const std::string& args, bool merge_stderr = true) {
  return run_shell(env + (env.empty() ? "" : " ") + std::string(DAK_BINARY) + " " + args +
                   (merge_stderr ? " 2>&1" : " 2>/dev/null"));
}
#endif

/// A fresh, empty folder `name` under the test's temporary directory (removed first if it exists).
inline std::filesystem::path fresh_test_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace dak::testing
