// main() of dak_cpu_tests and dak_gpu_tests: GoogleTest's, after removing DAK_MODEL from the
// environment. The tests of the default model and of `dak plan` without --model must not take a
// model from the tester's shell (whether run by ctest or as the binary itself); the tests that need
// DAK_MODEL set it for the child process they start (tests/cpu/test_cli_dak_model_env.cc).
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  ::unsetenv("DAK_MODEL");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
