#include "core/json_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstddef>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/utf8_text.h"

namespace dak {
namespace {

/// 1-based line and column (in UTF-8 characters, a leading BOM not counted) of byte `at` of `text`.
/// Lines end at LF, CR LF or a lone CR (files saved with old Mac line endings).
std::pair<size_t, size_t> line_column(const std::string& text, size_t at) {
  at = std::min(at, text.size());
  size_t line = 1, column = 1;
  const size_t start = std::string_view(text).starts_with(kUtf8ByteOrderMark) ? kUtf8ByteOrderMark.size() : 0;
  for (size_t i = start; i < at; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || (c == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) {
      ++line;
      column = 1;
    } else if (c == '\r') {
      // the CR of a CR LF pair: the LF ends the line
    } else if ((c & 0xC0) != 0x80) {  // not a UTF-8 continuation byte
      ++column;
    }
  }
  return {line, column};
}

/// `s` cut to 200 characters ("..." at the end): parser messages quote the input they read.
std::string clip(std::string s) { return s.size() > 200 ? s.substr(0, 197) + "..." : s; }

/// The SAX pass of parse_json_text: the first key given twice in one object, and nesting beyond
/// kMaxJsonDepth (too_deep is called, and throws, before a value deeper than that opens: printing
/// such a value in an error recurses once per level and would overflow the stack).
struct KeyCheck : nlohmann::json_sax<nlohmann::json> {
  std::vector<std::set<std::string>> open_objects;  // keys seen per open object
  int depth = 0;                                    // arrays and objects open
  std::string duplicate;
  std::function<void()> too_deep;

  bool open() {
    if (depth >= kMaxJsonDepth) too_deep();
    ++depth;
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_objects.emplace_back();
    return open();
  }
  bool key(string_t& k) override {
    if (duplicate.empty() && !open_objects.empty() && !open_objects.back().insert(k).second) duplicate = k;
    return true;
  }
  bool end_object() override {
    if (!open_objects.empty()) open_objects.pop_back();
    --depth;
    return true;
  }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& what, const std::string& path,
                               const std::string& fix) {
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const auto [line, column] = line_column(text, nul);
    fail(fmt::format("{} is not JSON text: a NUL byte at line {}, column {} (binary data?)", what, line, column),
         path, fix);
  }
  // Duplicate keys: nlohmann keeps the last one silently; a user's edit that repeats a field would
  // then be half ignored. A SAX pass sees every key with its object, in linear time (a parser
  // callback made nlohmann rescan the enclosing object at each member's end: a safetensors header of
  // 200k tensors took minutes, the session-50 trial), then the document is parsed.
  KeyCheck keys;
  keys.too_deep = [&] {
    fail(fmt::format("{} nests arrays or objects deeper than {} levels", what, kMaxJsonDepth), path, fix);
  };
  try {
    (void)nlohmann::json::sax_parse(text, &keys);  // a syntax error stops it: the parse below names it
    nlohmann::json j = nlohmann::json::parse(text);
    if (!keys.duplicate.empty()) {
      fail(fmt::format("{} has the key \"{}\" twice in one object", what, clip(keys.duplicate)), path,
           "keep one of them (JSON readers disagree on which one wins)");
    }
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based index of the byte where parsing stopped (past the end for truncated input).
    const auto [line, column] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line L, column C: ".
    const size_t colon = msg.find(": ", msg.find("column"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    fail(fmt::format("{} is not valid JSON: line {}, column {}: {}", what, line, column, clip(msg)), path, fix);
  } catch (const nlohmann::json::out_of_range& e) {
    std::string msg = e.what();  // "[json.exception.out_of_range.406] number overflow parsing '1e400'"
    const size_t bracket = msg.find("] ");
    if (bracket != std::string::npos) msg = msg.substr(bracket + 2);
    fail(fmt::format("{} has a number out of range: {}", what, clip(msg)), path, fix);
  }
}

nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what, const std::string& fix) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    fail(fmt::format("cannot read {} '{}': no such file", what, path.string()), path.string(), fix);
  }
  // A folder on the way this user may not enter, a link loop: say what is at fault, not "no such file".
  if (ec) throw path_error(path.string(), ec);
  if (std::filesystem::is_directory(status)) {
    fail(fmt::format("{} '{}' is a directory, not a JSON file", what, path.string()), path.string(), fix);
  }
  if (!std::filesystem::is_regular_file(status)) {
    fail(fmt::format("{} '{}' is not a regular file", what, path.string()), path.string(), fix);
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && int64_t(size) > kMaxJsonFileBytes) {
    fail(fmt::format("{} '{}' is {} bytes, more than the {} MiB dak reads as JSON", what, path.string(), size,
                     kMaxJsonFileBytes >> 20),
         path.string(), fix);
  }
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw_if_no_permission(path.string(), errno);
    const std::string why = errno != 0 ? ": " + std::error_code(errno, std::generic_category()).message() : "";
    fail(fmt::format("cannot read {} '{}'{}", what, path.string(), why), path.string(), fix);
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), what, path.string(), fix);
}

double float_as_written(float v) { return std::strtod(fmt::format("{}", v).c_str(), nullptr); }

void check_dak_file_kind(const nlohmann::json& j, const std::string& expected_format, const std::string& where) {
  struct Kind {
    const char* format;
    const char* name;
    const char* option;
  };
  static constexpr Kind kKinds[] = {{"dak.hardware_profile", "a hardware profile", "--profile (of dak plan, generate or bench)"},
                                    {"dak.plan", "an offload plan", "--plan (of dak generate or dak bench)"},
                                    {"", "a model config", "--model"}};
  if (!j.is_object() || !j.contains("format") || !j.at("format").is_string()) return;
  const std::string format = j.at("format").get<std::string>();
  if (format == expected_format) return;
  const Kind* found = nullptr;
  const Kind* wanted = nullptr;
  for (const Kind& k : kKinds) {
    if (format == k.format) found = &k;
    if (expected_format == k.format) wanted = &k;
  }
  if (!found || !wanted) return;
  fail(fmt::format("this file is {} (\"format\": \"{}\"), not {}", found->name, format, wanted->name), where,
       fmt::format("this is {}; pass it with {}, and give here {}", found->name, found->option,
                   expected_format.empty() ? "a model (a checkpoint folder or file, or a config.json)"
                                           : wanted->name));
}

namespace {

void collect_unknown(const nlohmann::json& in, const nlohmann::json& known, const std::string& path,
                     const std::string& free_key, std::vector<std::string>& out) {
  if (in.is_object() && known.is_object()) {
    for (auto it = in.begin(); it != in.end(); ++it) {
      const std::string p = path.empty() ? it.key() : path + "." + it.key();
      if (path.empty() && !free_key.empty() && it.key() == free_key) continue;
      if (!known.contains(it.key())) {
        out.push_back(p);
      } else {
        collect_unknown(it.value(), known.at(it.key()), p, free_key, out);
      }
    }
  } else if (in.is_array() && known.is_array()) {
    for (size_t i = 0; i < in.size() && i < known.size(); ++i) {
      collect_unknown(in[i], known[i], path + "[" + std::to_string(i) + "]", free_key, out);
    }
  }
}

}  // namespace

std::vector<std::string> unknown_json_fields(const nlohmann::json& in, const nlohmann::json& known,
                                             const std::string& free_key) {
  std::vector<std::string> out;
  collect_unknown(in, known, "", free_key, out);
  return out;
}

}  // namespace dak
