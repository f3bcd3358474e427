// Running the `dak` binary from tests: one shell command line, its exit code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
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

}  // namespace dak::testing
