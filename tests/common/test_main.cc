// main() of dak_cpu_tests and dak_gpu_tests: GoogleTest's, after removing every DAK_* variable
// from the environment but DAK_REQUIRE_GPU and DAK_REQUIRE_MODEL (the tests' own switches). The
// tests must not take a model (DAK_MODEL) or an A/B switch (DAK_ATTN_*, DAK_PLAN_*, ...) from the
// tester's shell, whether run by ctest or as the binary itself; the tests that need one set it,
// for themselves or for the child process they start (e.g. tests/cpu/test_cli_dak_model_env.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("DAK_", 0) == 0 && name != "DAK_REQUIRE_GPU" && name != "DAK_REQUIRE_MODEL") names.push_back(name);
  }
  for (const std::string& name : names) ::unsetenv(name.c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
