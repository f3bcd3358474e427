#include "core/error.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace dak {

namespace {

constexpr size_t kMaxPartBytes = 2000;  // a message part beyond this is cut (e.g. a 5 MB tensor name)

/// `s` safe to print on a terminal: control bytes (NUL, newline, ESC, ...) as \xNN escapes, so a
/// name from a file can neither cut the message (NUL) nor forge its "where" / "fix" lines or send
/// terminal escape codes; cut to kMaxPartBytes (at a UTF-8 character boundary) with "...".
std::string printable(const std::string& s) {
  std::string out;
  out.reserve(std::min(s.size(), kMaxPartBytes) + 8);
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7F) {
      static const char* const kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
    if (out.size() > kMaxPartBytes) {
      size_t cut = kMaxPartBytes;
      while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
      out.resize(cut);
      out += "...";
      break;
    }
  }
  return out;
}

std::string compose(const std::string& what, const std::string& where, const std::string& fix) {
  std::string s = what;
  if (!where.empty()) s += "\n  where: " + where;
  if (!fix.empty()) s += "\n  fix:   " + fix;
  return s;
}
}  // namespace

Error::Error(std::string what, std::string where, std::string fix)
    : Error(Printable{}, printable(what), printable(where), printable(fix)) {}

Error::Error(Printable, std::string what, std::string where, std::string fix)
    : std::runtime_error(compose(what, where, fix)),
      what_(std::move(what)),
      where_(std::move(where)),
      fix_(std::move(fix)) {}

void fail(std::string what, std::string where, std::string fix) {
  throw Error(std::move(what), std::move(where), std::move(fix));
}

void fail_usage(std::string what, std::string where, std::string fix) {
  throw UsageError(std::move(what), std::move(where), std::move(fix));
}

Error path_error(const std::string& path, const std::error_code& ec) {
  return Error("cannot examine the path: " + ec.message(), path,
               "check that it exists, is not a symbolic link loop and that you may read its folders");
}

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("_-./:=,+@%", c) != nullptr;
  });
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace dak
