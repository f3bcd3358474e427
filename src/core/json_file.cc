#include "core/json_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "core/error.h"

namespace dak {

nlohmann::json parse_json_text(const std::string& text, const std::string& what, const std::string& path,
                               const std::string& fix) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based index of the byte where parsing stopped (past the end for truncated input).
    const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const size_t line = 1 + size_t(std::count(text.begin(), text.begin() + ptrdiff_t(at), '\n'));
    const size_t line_start = text.rfind('\n', at > 0 ? at - 1 : 0);
    const size_t column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
    std::string msg = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line L, column C: ".
    const size_t colon = msg.find(": ", msg.find("column"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    fail(fmt::format("{} is not valid JSON: line {}, column {}: {}", what, line, column, msg), path, fix);
  }
}

}  // namespace dak
