#include "core/text_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/error.h"

namespace dak {

namespace fs = std::filesystem;

bool is_stream_sink(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && (st.type() == fs::file_type::character || st.type() == fs::file_type::fifo);
}

namespace {

/// FIFOs check_sink_has_reader opened, by path: held open until write_new_text_file writes them, since
/// closing the write end would give the reader its end of file before the report.
std::map<std::string, int>& held_sinks() {
  static std::map<std::string, int> held;
  return held;
}

/// Opens a sink for writing: a FIFO without a reader is an error (ENXIO), not a wait without end;
/// -1 (errno set) on failure, or where the path is no longer a sink (errno EEXIST: a file replaced it).
int open_sink(const std::string& path) {
  if (const auto held = held_sinks().find(path); held != held_sinks().end()) {  // opened by the check
    const int fd = held->second;
    held_sinks().erase(held);
    return fd;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    ::close(fd);
    errno = EEXIST;
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // the writes themselves may wait for the reader
  return fd;
}

}  // namespace

void check_sink_has_reader(const fs::path& path, const std::string& where) {
  std::error_code ec;
  if (fs::status(path, ec).type() != fs::file_type::fifo || held_sinks().count(path.string()) > 0) return;
  const int fd = open_sink(path.string());
  if (fd >= 0) {
    held_sinks()[path.string()] = fd;
  } else if (errno == ENXIO) {
    fail(fmt::format("no process reads the pipe '{}'", path.string()), where,
         "start the reader first (e.g. cat PIPE > report.json &), or write to a file");
  }
}

std::string free_name_beside(const fs::path& path, const std::string& extension) {
  std::error_code ec;
  const std::string stem = (path.parent_path() / path.stem()).string();
  const std::string ext = extension.empty() ? path.extension().string() : extension;
  // The name itself with the new extension first ("model.gguf" -> "model.json"), then numbered.
  if (!extension.empty() && ext != path.extension().string() && !fs::exists(fs::symlink_status(stem + ext, ec)))
    return stem + ext;
  for (int n = 2; n < 1000; ++n) {
    const fs::path candidate(fmt::format("{}-{}{}", stem, n, ext));
    if (!fs::exists(fs::symlink_status(candidate, ec))) return candidate.string();
  }
  return stem + "-new" + ext;
}

namespace {

/// Writes all of `text` to the open descriptor `fd`; false (errno set) when a write fails. SIGPIPE
/// is ignored meanwhile: a pipe whose reader has gone is an EPIPE error, not the process's end.
bool write_all(int fd, const std::string& text) {
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &old);
  size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      ok = false;
      break;
    }
    done += size_t(n);
  }
  const int err = errno;
  sigaction(SIGPIPE, &old, nullptr);
  errno = err;
  return ok;
}

[[noreturn]] void fail_write(const std::string& path, int err, const std::string& where, const std::string& fix) {
  fail(fmt::format("cannot write '{}': {}", path, std::strerror(err)), where, fix);
}

/// Writes `text` over the existing regular file `path` (write_new_text_file's replace): a temporary
/// file in its folder, synced and renamed over it, keeping its permissions; where that cannot be made
/// (a folder this user may not write), the file itself is truncated and rewritten. False (errno set)
/// on failure, the old file as it was where the temporary file was used.
bool replace_file(const fs::path& path, const std::string& text, bool* old_kept) {
  struct stat old {};
  const bool have_mode = ::stat(path.c_str(), &old) == 0;
  std::string temp = (path.parent_path() / ".dak-XXXXXX").string();
  const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
  *old_kept = true;
  if (fd >= 0) {
    const mode_t mode = have_mode ? (old.st_mode & 07777) : mode_t(0644);
    bool ok = write_all(fd, text) && ::fchmod(fd, mode) == 0 && ::fsync(fd) == 0;
    int err = errno;
    if (::close(fd) != 0 && ok) {
      ok = false;
      err = errno;
    }
    if (ok && ::rename(temp.c_str(), path.c_str()) == 0) return true;
    if (ok) err = errno;
    ::unlink(temp.c_str());
    if (err != EBUSY && err != EXDEV && err != EACCES && err != EPERM) {
      errno = err;
      return false;
    }
  }
  // In place (no temporary file here, or a file that cannot be renamed over: a bind mount).
  const int in_place = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
  if (in_place < 0) return false;
  *old_kept = false;
  const bool ok = write_all(in_place, text);
  const int err = errno;
  const bool closed = ::close(in_place) == 0;
  errno = ok ? errno : err;
  return ok && closed;
}

}  // namespace

WrittenFile write_new_text_file(const fs::path& path, const std::string& text, const std::string& where, bool replace) {
  WrittenFile out{path.string(), false};
  std::error_code ec;
  if (replace && fs::is_regular_file(fs::symlink_status(path, ec))) {
    bool old_kept = true;
    if (replace_file(path, text, &old_kept)) return out;
    const int err = errno;
    fail_write(out.path, err, where,
               old_kept ? "free space there or write somewhere else (the old file is as it was)"
                        : "free space there or write somewhere else");
  }
  int fd = -1;
  if (is_stream_sink(path)) {
    fd = open_sink(out.path);
    if (fd < 0 && errno == ENXIO) {
      fail(fmt::format("cannot write '{}': no process reads this pipe", out.path), where,
           "start the reader first (e.g. cat PIPE &), or write to a file");
    }
    if (fd >= 0) {
      const bool written = write_all(fd, text);
      const int err = errno;
      if (::close(fd) != 0 || !written) fail_write(out.path, written ? errno : err, where, "write to a file instead");
      return out;
    }
    if (errno != EEXIST) fail_write(out.path, errno, where, "write to a file instead");
  }
  // A new file, created exclusively: one that appeared since the caller's checks stays as it is.
  fd = ::open(out.path.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | O_EXCL, 0666);
  if (fd < 0 && errno == EEXIST) {
    out.path = free_name_beside(path);
    out.moved = true;
    fd = ::open(out.path.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | O_EXCL, 0666);
  }
  if (fd < 0) {
    fail_write(out.path, errno, where, "check that the folder exists and is writable, or write somewhere else");
  }
  const bool written = write_all(fd, text);
  int err = errno;
  const bool closed = ::close(fd) == 0;
  if (written && !closed) err = errno;
  if (!written || !closed) {
    ::unlink(out.path.c_str());
    fail_write(out.path, err, where, "free space there or write somewhere else (the part written was removed)");
  }
  return out;
}

}  // namespace dak
