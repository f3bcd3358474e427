#include "core/utf8_text.h"

#include <cstdint>

namespace dak {
namespace {

struct Part {
  size_t len;      // bytes of the character, or of the maximal ill-formed subpart
  bool valid;      // a whole character
  bool unfinished; // valid so far, cut by the end of the text
};

// The character or maximal ill-formed subpart at bytes[i] (i < size).
Part part_at(std::string_view s, size_t i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  const unsigned char c = p[i];
  if (c < 0x80) return {1, true, false};
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte (RFC 3629 table)
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlongs
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // no overlongs
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {1, false, false};  // a continuation byte, C0/C1 or F5..FF
  }
  size_t k = 1;
  while (k < len && i + k < n) {
    const unsigned char b = p[i + k];
    if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) break;
    ++k;
  }
  if (k == len) return {len, true, false};
  return {k, false, i + k == n};
}

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

std::optional<size_t> find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const Part part = part_at(s, i);
    if (!part.valid) return i;
    i += part.len;
  }
  return std::nullopt;
}

std::string valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Part part = part_at(bytes, i);
    if (part.valid) {
      out.append(bytes.substr(i, part.len));
    } else {
      out.append(kReplacement);
    }
    i += part.len;
  }
  return out;
}

size_t unfinished_utf8_tail(std::string_view bytes) {
  // A character is at most 4 bytes: only the last 3 can start an unfinished one.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t i = n - back;
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: its lead is further back
    const Part part = part_at(bytes, i);
    return part.unfinished ? i : n;
  }
  return n;
}

std::string Utf8Stream::next(std::string_view text) {
  if (text.substr(0, printed_.size()) != printed_) return "";  // earlier bytes changed: wait for finish()
  const size_t keep = unfinished_utf8_tail(text);
  if (keep <= printed_.size()) return "";
  const std::string_view fresh = text.substr(printed_.size(), keep - printed_.size());
  printed_.append(fresh);
  return valid_utf8(fresh);
}

std::string Utf8Stream::finish(std::string_view text) {
  if (text.size() <= printed_.size()) return "";
  const std::string out = valid_utf8(text.substr(printed_.size()));
  printed_ = std::string(text);
  return out;
}

}  // namespace dak
