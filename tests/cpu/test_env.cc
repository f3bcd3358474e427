// core/env.h: the environment's A/B switches are accepted or refused the same way everywhere.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/env.h"

namespace {

struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~ScopedEnv() { ::unsetenv(name); }
};

TEST(Env, ChoiceIsTheIndexOfAnExactMatch) {
  ::unsetenv("DAK_TEST_SWITCH");
  EXPECT_EQ(dak::env_choice("DAK_TEST_SWITCH", {"kernel", "cta"}), -1);  // unset
  {
    ScopedEnv e("DAK_TEST_SWITCH", "cta");
    EXPECT_EQ(dak::env_choice("DAK_TEST_SWITCH", {"kernel", "cta"}), 1);
  }
  {
    ScopedEnv e("DAK_TEST_SWITCH", "");
    EXPECT_EQ(dak::env_choice("DAK_TEST_SWITCH", {"kernel", "cta"}), -1);  // empty: unset
  }
  {
    ScopedEnv e("DAK_TEST_SWITCH", " cta");
    testing::internal::CaptureStderr();
    EXPECT_EQ(dak::env_choice("DAK_TEST_SWITCH", {"kernel", "cta"}), -1);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("dak: notice: DAK_TEST_SWITCH=' cta' ignored (expected kernel or cta)"), std::string::npos) << err;
  }
}

TEST(Env, FlagTakesOnlyZeroAndOne) {
  ::unsetenv("DAK_TEST_FLAG");
  EXPECT_TRUE(dak::env_flag("DAK_TEST_FLAG", true));
  EXPECT_FALSE(dak::env_flag("DAK_TEST_FLAG", false));
  {
    ScopedEnv e("DAK_TEST_FLAG", "1");
    EXPECT_TRUE(dak::env_flag("DAK_TEST_FLAG", false));
  }
  {
    ScopedEnv e("DAK_TEST_FLAG", "0");
    EXPECT_FALSE(dak::env_flag("DAK_TEST_FLAG", true));  // DAK_NO_PDL=0 keeps PDL on
  }
  {
    ScopedEnv e("DAK_TEST_FLAG", "yes");
    testing::internal::CaptureStderr();
    EXPECT_FALSE(dak::env_flag("DAK_TEST_FLAG", false));  // not taken as "set"
    EXPECT_TRUE(dak::env_flag("DAK_TEST_FLAG", true));
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("dak: notice: DAK_TEST_FLAG='yes' ignored (expected 0 or 1)"), std::string::npos) << err;
  }
}

TEST(Env, NoticeOncePerVariableAndValue) {
  // The planner reads its switches for every plan; a sweep printed one notice per plan (session 38).
  ScopedEnv e("DAK_TEST_ONCE", "maybe");
  testing::internal::CaptureStderr();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(dak::env_flag("DAK_TEST_ONCE", true));
  ::setenv("DAK_TEST_ONCE", "perhaps", 1);  // another value: said again, once
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(dak::env_flag("DAK_TEST_ONCE", false));
  const std::string err = testing::internal::GetCapturedStderr();
  const auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t at = err.find(s); at != std::string::npos; at = err.find(s, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("DAK_TEST_ONCE='maybe' ignored"), 1u) << err;
  EXPECT_EQ(count("DAK_TEST_ONCE='perhaps' ignored"), 1u) << err;
}

TEST(Env, NoticeShowsTheValueOnOneShortLine) {
  // Control bytes become '?', and a long value is cut at 64 bytes (session 38's trial).
  ScopedEnv e("DAK_TEST_SHOWN", "1\n\x1b[31mRED");
  testing::internal::CaptureStderr();
  EXPECT_FALSE(dak::env_flag("DAK_TEST_SHOWN", false));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("DAK_TEST_SHOWN='1??[31mRED' ignored"), std::string::npos) << err;
  ::setenv("DAK_TEST_SHOWN", std::string(1000, 'x').c_str(), 1);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(dak::env_flag("DAK_TEST_SHOWN", false));
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("='" + std::string(64, 'x') + "...' ignored"), std::string::npos) << err;
  EXPECT_LT(err.size(), 200u);
}

}  // namespace
