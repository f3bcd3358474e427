// Helpers for dak_gpu_tests: skip when no GPU is present, fail instead when DAK_REQUIRE_GPU=1.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "gpu/device.h"

namespace dak::test {

/// True if a Hopper GPU is usable. Otherwise records a skip (or a failure under
/// DAK_REQUIRE_GPU=1) with the reason and returns false.
inline bool gpu_available() {
  std::string why;
  auto d = dak::gpu::probe_device(0, &why);
  if (d && d->cc_major == 9) return true;
  if (d) why = "GPU " + d->name + " is not a Hopper GPU";
  const char* req = std::getenv("DAK_REQUIRE_GPU");
  if (req && std::string(req) == "1") {
    ADD_FAILURE() << "DAK_REQUIRE_GPU=1 but no usable GPU: " << why;
  } else {
    GTEST_SKIP_("no usable GPU");
  }
  return false;
}

}  // namespace dak::test

#define DAK_REQUIRE_GPU_OR_SKIP() \
  do {                            \
    if (!::dak::test::gpu_available()) return; \
  } while (0)
