#include "core/env.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace dak {

int env_choice(const char* name, std::initializer_list<const char*> choices) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return -1;
  std::string expected;
  int i = 0;
  for (const char* c : choices) {
    if (std::string(env) == c) return i;
    expected += (i++ > 0 ? " or " : "") + std::string(c);
  }
  // Once per variable and value in a process: the planner reads its switches for every plan (a
  // sweep of 20 ratios printed the same notice 20 times; session 38's trial).
  static std::mutex mu;
  static std::set<std::string> said;
  const std::lock_guard<std::mutex> lock(mu);
  if (said.insert(std::string(name) + "=" + env).second) {
    // The value as typed, but one line of at most 64 printable bytes (a stray escape sequence or a
    // 100 KB value went to the terminal as it was; session 38's trial).
    std::string shown;
    for (const char* c = env; *c != '\0' && shown.size() < 64; ++c) {
      shown += (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f) ? '?' : *c;
    }
    if (std::strlen(env) > shown.size()) shown += "...";
    std::fprintf(stderr, "dak: notice: %s='%s' ignored (expected %s)\n", name, shown.c_str(), expected.c_str());
  }
  return -1;
}

bool env_flag(const char* name, bool default_value) {
  const int v = env_choice(name, {"0", "1"});
  return v < 0 ? default_value : v == 1;
}

}  // namespace dak
