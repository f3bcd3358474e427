#include "core/byte_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace dak {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Multiplier of a lower-case unit, 0 if unknown.
double unit_multiplier(const std::string& u) {
  struct Unit {
    const char* name;
    double mult;
  };
  static const Unit kUnits[] = {
      {"", 1},
      {"b", 1},
      {"kb", 1e3},
      {"mb", 1e6},
      {"gb", 1e9},
      {"tb", 1e12},
      {"k", 1024.0},
      {"kib", 1024.0},
      {"m", 1048576.0},
      {"mib", 1048576.0},
      {"g", 1073741824.0},
      {"gib", 1073741824.0},
      {"t", 1099511627776.0},
      {"tib", 1099511627776.0},
  };
  for (const Unit& unit : kUnits)
    if (u == unit.name) return unit.mult;
  return 0;
}

}  // namespace

int64_t parse_byte_size(const std::string& given, const std::string& where) {
  const std::string fix = "write a size such as 20GiB, 1.5GB, 512MiB or a plain byte count";
  // Blanks around the size ("20GiB ", as a quoted shell value may carry) do not change it.
  const size_t first = given.find_first_not_of(" \t"), last = given.find_last_not_of(" \t");
  const std::string text = first == std::string::npos ? "" : given.substr(first, last - first + 1);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i);
  size_t j = i;
  while (j < text.size() && text[j] == ' ') ++j;
  const std::string unit = lower(text.substr(j));
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1)
    fail_usage(fmt::format("'{}' is not a size", text), where, fix);
  const double mult = unit_multiplier(unit);
  if (mult == 0 && unit.size() > 1 && unit[0] == 'e' && (std::isdigit(static_cast<unsigned char>(unit[1])) ||
                                                          unit[1] == '-' || unit[1] == '+')) {
    fail_usage(fmt::format("'{}' has an exponent ('{}'), which sizes do not take", text, text.substr(j)), where,
         "write the number in full with a unit, e.g. 20GiB, 1.5TB or 512MiB");
  }
  if (mult == 0) fail_usage(fmt::format("'{}' has an unknown unit '{}'", text, text.substr(j)), where, fix);
  if (unit.empty() && number.find('.') != std::string::npos) {  // the session-17 trial: --gpu-memory 1.5 gave 1 B
    fail_usage(fmt::format("'{}' has no unit, so it counts bytes, and is not a whole number of them", text), where,
         fmt::format("add the unit you mean, e.g. {}GiB or {}GB", number, number));
  }
  const double bytes = std::strtod(number.c_str(), nullptr) * mult;
  if (!std::isfinite(bytes) || bytes >= 9.2e18) fail(fmt::format("size '{}' is too large", text), where, fix);
  return int64_t(std::floor(bytes));
}

namespace {

constexpr const char* kUnitNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};

/// The binary unit format_bytes writes `bytes` in: its index in kUnitNames; `scale` = 1024^index.
int binary_unit(double bytes, double& scale) {
  int k = 0;
  scale = 1;
  while (std::fabs(bytes / scale) >= 1024.0 && k < 4) scale *= 1024.0, ++k;
  return k;
}

}  // namespace

std::string format_bytes(double bytes) {
  double scale = 1;
  const int k = binary_unit(bytes, scale);
  const double v = bytes / scale;
  return k == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.2f} {}", v, kUnitNames[k]);
}

std::string format_gib(double bytes) { return fmt::format("{:.2f} GiB", bytes / double(uint64_t(1) << 30)); }

std::pair<std::string, std::string> format_bytes_apart(int64_t a, int64_t b) {
  if (format_bytes(double(a)) != format_bytes(double(b)) || a == b) {
    return {format_bytes(double(a)), format_bytes(double(b))};
  }
  double scale = 1;
  const int k = binary_unit(double(a), scale);  // the same text: the same unit
  for (int decimals = 3;; ++decimals) {
    std::pair<std::string, std::string> out{fmt::format("{:.{}f} {}", double(a) / scale, decimals, kUnitNames[k]),
                                            fmt::format("{:.{}f} {}", double(b) / scale, decimals, kUnitNames[k])};
    if (out.first != out.second || decimals >= 9) return out;
  }
}

namespace {

// `value` to four significant digits and at least two decimals, rounded down or up (fixed notation).
std::string format_bound(double value, bool up) {
  if (!(value > 0)) return "0";
  const int decimals = std::clamp(3 - int(std::floor(std::log10(value))), 2, 17);
  const double scale = std::pow(10.0, decimals);
  const double r = up ? std::ceil(value * scale) : std::floor(value * scale);
  return fmt::format("{:.{}f}", r / scale, decimals);
}

}  // namespace

std::string format_at_most(double value) { return format_bound(value, false); }

std::string format_at_least(double value) { return format_bound(value, true); }

}  // namespace dak
