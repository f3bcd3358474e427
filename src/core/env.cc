#include "core/env.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>

namespace dak {

std::string env_printable(const std::string& value) {
  std::string s;
  for (size_t i = 0; i < value.size() && s.size() < 64; ++i) {
    const char c = value[i];
    const auto u = static_cast<unsigned char>(c);
    s += (u < 0x20 || u >= 0x7f) ? '?' : c;  // printable ASCII only (0x9b is an 8-bit escape)
  }
  if (value.size() > s.size()) s += "...";
  return s;
}

void env_notice_once(const std::string& key, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> said;
  const std::lock_guard<std::mutex> lock(mu);
  if (said.insert(key).second) std::fprintf(stderr, "dak: notice: %s\n", message.c_str());
}

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
  env_notice_once(std::string(name) + "=" + env,
                  std::string(name) + "='" + env_printable(env) + "' ignored (expected " + expected + ")");
  return -1;
}

bool env_flag(const char* name, bool default_value) {
  const int v = env_choice(name, {"0", "1"});
  return v < 0 ? default_value : v == 1;
}

void env_named_items(const char* var, const std::vector<std::string>& names, const char* expected,
                     const std::function<bool(size_t index, const std::string& value)>& take) {
  const char* env = std::getenv(var);
  const std::string spec = env ? env : "";
  constexpr int kMaxNotices = 8;  // then one line for the rest (a 100 KB list is not 25,000 lines)
  int ignored = 0;
  for (size_t pos = 0; pos < spec.size();) {
    const size_t end = std::min(spec.find(',', pos), spec.size());
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = item.find('=');
    bool taken = false;
    for (size_t i = 0; i < names.size() && eq != std::string::npos; ++i) {
      if (item.compare(0, eq, names[i]) == 0) {
        taken = take(i, item.substr(eq + 1));
        break;
      }
    }
    if (!taken && !item.empty() && ++ignored <= kMaxNotices) {
      std::fprintf(stderr, "dak: notice: %s item '%s' ignored (expected %s)\n", var, env_printable(item).c_str(), expected);
    }
  }
  if (ignored > kMaxNotices) {
    std::fprintf(stderr, "dak: notice: %s: %d more items ignored\n", var, ignored - kMaxNotices);
  }
}

int32_t env_decimal(const std::string& text, size_t max_digits) {
  const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (text.empty() || text.size() > std::min<size_t>(max_digits, 9) || !std::all_of(text.begin(), text.end(), digit)) {
    return -1;
  }
  return int32_t(std::stol(text));
}

}  // namespace dak
