// core/env.h: the environment's A/B switches are accepted or refused the same way everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

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
  ::setenv("DAK_TEST_SHOWN", "a\x9b" "b\xc3\xa9", 1);  // an 8-bit escape and UTF-8: ASCII only
  testing::internal::CaptureStderr();
  EXPECT_FALSE(dak::env_flag("DAK_TEST_SHOWN", false));
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("DAK_TEST_SHOWN='a?b?" "?' ignored"), std::string::npos) << err;
}

TEST(Env, NamedItemsAreTakenInOrderAndTheRestIgnoredWithANotice) {
  // DAK_EARLY_W / DAK_GEMM_GRID's parser (gpu_engine.cc): NAME=VALUE items, comma-separated.
  const std::vector<std::string> names = {"qkv_proj", "o_proj", "mlp_down"};
  std::vector<std::pair<size_t, std::string>> taken;
  const auto take = [&](size_t i, const std::string& v) {
    if (v == "no") return false;  // a value the caller refuses
    taken.emplace_back(i, v);
    return true;
  };
  ::unsetenv("DAK_TEST_ITEMS");
  dak::env_named_items("DAK_TEST_ITEMS", names, "NAME=N", take);
  EXPECT_TRUE(taken.empty());
  ScopedEnv e("DAK_TEST_ITEMS", "o_proj=3:96,,mlp_down=,qkv=1,o_proj,qkv_proj=no,qkv_proj=a=b,o_proj\x1b=1");
  testing::internal::CaptureStderr();
  dak::env_named_items("DAK_TEST_ITEMS", names, "NAME=N", take);
  const std::string err = testing::internal::GetCapturedStderr();
  const std::vector<std::pair<size_t, std::string>> want = {{1, "3:96"}, {2, ""}, {0, "a=b"}};
  EXPECT_EQ(taken, want);
  EXPECT_NE(err.find("dak: notice: DAK_TEST_ITEMS item 'qkv=1' ignored (expected NAME=N)\n"), std::string::npos) << err;
  EXPECT_NE(err.find("item 'o_proj' ignored"), std::string::npos) << err;       // no '='
  EXPECT_NE(err.find("item 'qkv_proj=no' ignored"), std::string::npos) << err;  // refused by take
  EXPECT_NE(err.find("item 'o_proj?=1' ignored"), std::string::npos) << err;    // control byte shown as '?'
  EXPECT_EQ(err.find("item '' ignored"), std::string::npos) << err;             // an empty item is no item
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 4) << err;
}

TEST(Env, NamedItemsEdgeCases) {
  const std::vector<std::string> names = {"o_proj"};
  int calls = 0;
  const auto take = [&](size_t, const std::string&) { return ++calls > 0; };
  {
    ScopedEnv e("DAK_TEST_ITEMS", "");  // set but empty: nothing
    testing::internal::CaptureStderr();
    dak::env_named_items("DAK_TEST_ITEMS", names, "NAME=N", take);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(calls, 0);
  }
  {
    ScopedEnv e("DAK_TEST_ITEMS", ",o_proj=1,,o_proj=2,");  // stray commas: no items, no notice
    testing::internal::CaptureStderr();
    dak::env_named_items("DAK_TEST_ITEMS", names, "NAME=N", take);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(calls, 2);
  }
  {
    // A long item is shown cut at 64 bytes; after 8 notices one line counts the rest.
    std::string spec = "x=" + std::string(1000, 'y');
    for (int i = 0; i < 20; ++i) spec += ",bad" + std::to_string(i);
    ScopedEnv e("DAK_TEST_ITEMS", spec.c_str());
    testing::internal::CaptureStderr();
    dak::env_named_items("DAK_TEST_ITEMS", names, "NAME=N", take);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("item 'x=" + std::string(62, 'y') + "...' ignored"), std::string::npos) << err;
    EXPECT_NE(err.find("item 'bad6' ignored"), std::string::npos) << err;
    EXPECT_EQ(err.find("bad7"), std::string::npos) << err;
    EXPECT_NE(err.find("dak: notice: DAK_TEST_ITEMS: 13 more items ignored\n"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 9) << err;
    EXPECT_LT(err.size(), 1200u);
  }
}

TEST(Env, DecimalIsDigitsOnlyWithinTheirCount) {
  EXPECT_EQ(dak::env_decimal("0", 2), 0);
  EXPECT_EQ(dak::env_decimal("64", 2), 64);
  EXPECT_EQ(dak::env_decimal("007", 4), 7);
  EXPECT_EQ(dak::env_decimal("123", 2), -1);  // more digits than allowed
  for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1.5", "0x10", "a"}) EXPECT_EQ(dak::env_decimal(bad, 4), -1) << bad;
  EXPECT_EQ(dak::env_decimal("999999999", 20), 999999999);  // at most 9 digits, whatever is asked
  EXPECT_EQ(dak::env_decimal("9999999999", 20), -1);
}

}  // namespace
