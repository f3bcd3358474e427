#include "core/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include "core/utf8_text.h"

namespace dak {

namespace {

constexpr size_t kMaxPartBytes = 2000;  // a message part beyond this is cut (e.g. a 5 MB tensor name)

/// Whether `c` is printed as a \xNN escape: a control byte (NUL, newline, ESC, ... DEL).
bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

/// Appends "\xNN" for byte `c`.
void append_escape(std::string& out, unsigned char c) {
  static const char* const kHex = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

/// Calls `emit(c, escape)` for each byte `c` of `s` in order; `escape`: an Error prints it as a \xNN
/// escape (a control byte, or a byte that is not UTF-8). Returns early when `emit` returns false.
template <class Emit>
void for_each_byte(const std::string& s, Emit emit) {
  size_t invalid = find_invalid_utf8(s).value_or(s.size());  // the next byte that is not UTF-8
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    bool escape = is_control(c);
    if (i == invalid) {
      escape = true;
      const std::optional<size_t> next = find_invalid_utf8(std::string_view(s).substr(i + 1));
      invalid = next ? i + 1 + *next : s.size();
    }
    if (!emit(c, escape)) return;
  }
}

/// `s` safe to print on a terminal: control bytes (NUL, newline, ESC, ...) as \xNN escapes, so a
/// name from a file can neither cut the message (NUL) nor forge its "where" / "fix" lines or send
/// terminal escape codes; so are the bytes of `s` that are not UTF-8 (a file name in Latin-1: "x\xff"),
/// so the message is valid UTF-8 (grep takes stderr with such a byte for binary); cut to kMaxPartBytes
/// (at a UTF-8 character boundary) with "...".
std::string printable(const std::string& s) {
  std::string out;
  out.reserve(std::min(s.size(), kMaxPartBytes) + 8);
  for_each_byte(s, [&](unsigned char c, bool escape) {
    if (escape) {
      append_escape(out, c);
    } else {
      out += char(c);
    }
    if (out.size() <= kMaxPartBytes) return true;
    size_t cut = kMaxPartBytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
    out.resize(cut);
    out += "...";
    return false;
  });
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

namespace {

namespace fs = std::filesystem;

constexpr int kMaxLinkHops = 16;  // symbolic links followed while looking for a blocked folder

/// The first folder on the way to `p` that this user may not enter (no search permission), or ""
/// when it may enter every one. `p` itself is checked too when `include_last` (a folder to enter).
/// Symbolic links on the way are followed (a Hugging Face cache links each shard into ../blobs), at
/// most `hops` of them.
fs::path blocked_folder(const fs::path& p, bool include_last, int hops) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  if (ec || abs.empty()) return {};
  fs::path prefix;
  for (auto it = abs.begin(); it != abs.end(); ++it) {
    prefix /= *it;
    const bool last = std::next(it) == abs.end();
    if (last && !include_last) break;
    // A link on the way: the folders on the way to its target, and the target, must be entered too.
    if (hops > 0 && fs::is_symlink(fs::symlink_status(prefix, ec))) {
      const fs::path target = fs::read_symlink(prefix, ec);
      if (!ec) {
        const fs::path blocked =
            blocked_folder(target.is_absolute() ? target : prefix.parent_path() / target, true, hops - 1);
        if (!blocked.empty()) return blocked;
      }
    }
    errno = 0;
    if (::access(prefix.c_str(), X_OK) != 0 && (errno == EACCES || errno == EPERM)) return prefix;
  }
  // The last part a link: the folders on the way to its target.
  if (!include_last && hops > 0 && fs::is_symlink(fs::symlink_status(abs, ec))) {
    const fs::path target = fs::read_symlink(abs, ec);
    if (!ec) return blocked_folder(target.is_absolute() ? target : abs.parent_path() / target, false, hops - 1);
  }
  return {};
}

}  // namespace

Error path_error(const std::string& path, const std::error_code& ec) {
  if (ec == std::errc::permission_denied || ec == std::errc::operation_not_permitted) {
    if (fs::path dir = blocked_folder(path, false, kMaxLinkHops); !dir.empty()) {
      std::error_code cec;
      if (fs::path c = fs::canonical(dir, cec); !cec) dir = c;  // a link's "snap/../blobs" as ".../blobs"
      return Error(fmt::format("this user may not enter the folder '{}' ({}), so dak cannot reach {}", dir.string(),
                               ec.message(), path),
                   dir.string(),
                   fmt::format("give the user search and read permission on the folder (e.g. chmod a+rx {}, as its "
                               "owner or root), or run dak as a user who may read it",
                               shell_word(dir.string())));
    }
    std::error_code sec;
    const bool folder = fs::is_directory(path, sec);
    return Error(fmt::format("this user may not {} '{}' ({})", folder ? "list the folder" : "read the file", path,
                             ec.message()),
                 path,
                 fmt::format("give the user read permission on the {} (e.g. chmod {} {}, as its owner or root), or "
                             "run dak as a user who may read it",
                             folder ? "folder" : "file", folder ? "a+rx" : "a+r", shell_word(path)));
  }
  return Error("cannot examine the path: " + ec.message(), path,
               "check that it exists, is not a symbolic link loop and that you may read its folders");
}

std::string join_words(const std::vector<std::string>& items, std::string_view last) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? fmt::format(" {} ", last) : std::string(", ");
    out += items[i];
  }
  return out;
}

std::string shell_word(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || std::strchr("_-./:=,+@%", c) != nullptr;
  });
  if (plain) return word;
  // Bytes an error prints as \xNN escapes (control bytes, bytes that are not UTF-8): written $'...'
  // with those escapes, which the shell turns back into the bytes, so the printed command still works.
  if (find_invalid_utf8(word) || std::any_of(word.begin(), word.end(), [](char c) { return is_control(c); })) {
    std::string out = "$'";
    for_each_byte(word, [&](unsigned char c, bool escape) {
      if (escape) {
        append_escape(out, c);
      } else {
        if (c == '\\' || c == '\'') out += '\\';
        out += char(c);
      }
      return true;
    });
    return out + "'";
  }
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void throw_if_no_permission(const std::string& path, int err) {
  if (err == EACCES || err == EPERM) throw path_error(path, std::error_code(err, std::generic_category()));
}

fs::file_type examine_path(const fs::path& p) {
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  if (st.type() == fs::file_type::not_found) {
    std::error_code lec;
    if (fs::symlink_status(p, lec).type() == fs::file_type::symlink) {
      fail("a symbolic link to a file that does not exist", p.string(), "fix or remove the link");
    }
    return fs::file_type::not_found;
  }
  if (ec) throw path_error(p.string(), ec);
  return st.type();
}

}  // namespace dak
