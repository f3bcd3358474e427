// Helpers for dak_gpu_tests: skip when no GPU is present, fail instead when DAK_REQUIRE_GPU=1.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/device.h"

namespace dak::test {

/// True if a Hopper GPU is usable. Otherwise records a failure under DAK_REQUIRE_GPU=1 and
/// returns false with the reason in `why` (the caller skips: GTEST_SKIP only works in a
/// function returning void, hence the macro below).
inline bool gpu_available(std::string* why) {
  auto d = dak::gpu::probe_device(0, why);
  if (d && d->cc_major == 9) return true;
  if (d) *why = "GPU " + d->name + " is not a Hopper GPU";
  const char* req = std::getenv("DAK_REQUIRE_GPU");
  if (req && std::string(req) == "1") ADD_FAILURE() << "DAK_REQUIRE_GPU=1 but no usable GPU: " << *why;
  return false;
}

}  // namespace dak::test

#define DAK_REQUIRE_GPU_OR_SKIP()                                     \
  do {                                                                \
    std::string dak_gpu_why_;                                         \
    if (!::dak::test::gpu_available(&dak_gpu_why_)) {                 \
      GTEST_SKIP() << "no usable GPU: " << dak_gpu_why_;              \
    }                                                                 \
  } while (0)
