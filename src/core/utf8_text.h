// Generated text as valid UTF-8 for stdout: a tokenizer's decode() gives raw bytes, which may stop
// inside a multi-byte character (a generation cut by --max-new-tokens) or hold bytes that are no
// character at all (a byte-level token sampled out of place).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace dak {

/// The UTF-8 byte order mark (U+FEFF encoded, EF BB BF) that some editors write at the start of a
/// text file: no character of the text.
inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

/// Byte offset of the first invalid UTF-8 sequence in `s`, or nullopt when `s` is valid
/// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF).
std::optional<size_t> find_invalid_utf8(std::string_view s);

/// `bytes` with each ill-formed part replaced by U+FFFD (EF BF BD), one per maximal subpart (the
/// Unicode "substitution of maximal subparts" practice: "\xE4\xB8" -> one U+FFFD, "\xFF\xFF" -> two);
/// valid UTF-8 (RFC 3629) comes back unchanged.
std::string valid_utf8(std::string_view bytes);

/// Where `bytes` ends in the first bytes of a character that more bytes could complete ("\xE4\xB8" at
/// the end): the offset of that unfinished character, else bytes.size().
size_t unfinished_utf8_tail(std::string_view bytes);

/// Prints a generation as it grows, as valid UTF-8: next() takes the whole text decoded so far and
/// returns what to print now: the new bytes up to a trailing unfinished character (held back until it
/// completes), ill-formed parts as U+FFFD. finish() takes the final text and returns the rest, an
/// unfinished character at the end as U+FFFD. Should a longer sequence decode to different bytes where
/// some were already printed (a tokenizer that joins pieces differently), next() prints nothing more
/// and finish() prints what follows the printed length.
class Utf8Stream {
 public:
  std::string next(std::string_view text);
  std::string finish(std::string_view text);

 private:
  std::string printed_;  // the raw bytes already printed (as valid_utf8 of them)
};

}  // namespace dak
