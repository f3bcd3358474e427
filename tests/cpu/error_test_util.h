// Checking dak::Error messages in tests: one helper for every cpu test file.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <string>

#include "core/error.h"

namespace dak::testing {

/// Runs `fn`, expects a dak::Error whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected dak::Error, nothing was thrown";
  } catch (const dak::Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message lacks \"" << p << "\":\n" << msg;
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected dak::Error, got another exception: " << e.what();
  }
}

}  // namespace dak::testing
