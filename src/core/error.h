// dak::Error: the one exception type for bad input and unusable environments.
//
// Every user-facing failure (malformed checkpoint, wrong config, prompt longer than the
// context, a budget that cannot fit, no GPU, ...) throws dak::Error carrying three parts:
//   what  - what is wrong ("tensor 'blk.3.attn_q.weight' ends past the end of the file")
//   where - the file / tensor / field / flag it concerns
//   fix   - what the user can do about it
// The CLI catches it, prints the three parts and exits non-zero. Nothing may assert or
// crash on user input.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace dak {

class Error : public std::runtime_error {
 public:
  /// Each part is stored printable: control bytes (NUL, newline, ESC, ...) become \xNN escapes,
  /// so text from a file cannot cut or forge the message, and so do bytes that are not UTF-8 (a
  /// Latin-1 file name's "\xff"), so the message is valid UTF-8; a part is cut to 2000 bytes.
  Error(std::string what, std::string where, std::string fix);

  const std::string& what_part() const { return what_; }
  const std::string& where_part() const { return where_; }
  const std::string& fix_part() const { return fix_; }

 private:
  struct Printable {};  // the parts are already printable
  Error(Printable, std::string what, std::string where, std::string fix);
  std::string what_, where_, fix_;
};

/// Text given on the command line that is not the kind of value its option takes: not a number,
/// a malformed list ("1,,2"), a size with an unknown unit. The CLI exits with 2 for it (a usage
/// error, README "Exit status"); every other dak::Error, a well-formed value out of range
/// included, exits with 1.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// Throws dak::Error(what, where, fix).
[[noreturn]] void fail(std::string what, std::string where, std::string fix);

/// `word` as one shell word for a command a fix suggests: unchanged when it holds only letters,
/// digits and `_-./:=,+@%`, else in single quotes (a path with spaces stays one argument); one with
/// bytes an Error prints as \xNN escapes (control bytes, bytes that are not UTF-8) as $'...' with
/// those escapes (bash, zsh, ksh), which the shell turns back into the bytes.
std::string shell_word(const std::string& word);

/// `items` as an English list for a message: "a", "a and b", "a, b and c" with `last` = "and"
/// (or "or"); "" for none.
std::string join_words(const std::vector<std::string>& items, std::string_view last);

/// Throws dak::UsageError(what, where, fix): for text its option cannot parse.
[[noreturn]] void fail_usage(std::string what, std::string where, std::string fix);

/// The error for a path the file system cannot examine or open (`ec` from std::filesystem or errno:
/// a symbolic link loop, a folder without search permission, a file without read permission),
/// naming what is at fault. A permission error names the first folder on the way to `path`
/// (symbolic links on the way followed) that this user may not enter, else `path` itself (a file it
/// may not read, a folder it may not list), and says how to grant access; any other error is
/// "cannot examine the path: <reason>" naming `path`.
Error path_error(const std::string& path, const std::error_code& ec);

/// Throws path_error(path, errno `err`) when `err` is EACCES or EPERM (a file or a folder on the
/// way this user may not read or enter); returns otherwise, leaving other errors to the caller.
void throw_if_no_permission(const std::string& path, int err);

/// The type of `p`, symlinks followed: not_found for a missing path. A path that cannot be examined
/// (a symbolic link loop, a folder without search permission) is path_error, and a link to nothing
/// an error naming it (std::filesystem would throw its own exception, or call a dangling link
/// "missing").
std::filesystem::file_type examine_path(const std::filesystem::path& p);

}  // namespace dak
