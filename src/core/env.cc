#include "core/env.h"

#include <cstdio>
#include <cstdlib>
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
  std::fprintf(stderr, "dak: notice: %s='%s' ignored (expected %s)\n", name, env, expected.c_str());
  return -1;
}

bool env_flag(const char* name, bool default_value) {
  const int v = env_choice(name, {"0", "1"});
  return v < 0 ? default_value : v == 1;
}

}  // namespace dak
