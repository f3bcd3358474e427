#include "core/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dak {

namespace fs = std::filesystem;

bool is_stream_sink(const fs::path& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  return !ec && (st.type() == fs::file_type::character || st.type() == fs::file_type::fifo);
}

std::string free_name_beside(const fs::path& path) {
  std::error_code ec;
  const std::string stem = (path.parent_path() / path.stem()).string();
  const std::string ext = path.extension().string();
  for (int n = 2; n < 1000; ++n) {
    const fs::path candidate(fmt::format("{}-{}{}", stem, n, ext));
    if (!fs::exists(fs::symlink_status(candidate, ec))) return candidate.string();
  }
  return stem + "-new" + ext;
}

namespace {

/// Writes all of `text` to the open descriptor `fd`; false (errno set) when a write fails.
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

}  // namespace

WrittenFile write_new_text_file(const fs::path& path, const std::string& text, const std::string& where, bool replace) {
  WrittenFile out{path.string(), false};
  const bool sink = is_stream_sink(path);
  std::error_code ec;
  // --force over an existing file: a temporary file beside it, renamed over it once complete, so
  // that a failed write leaves the old file as it was.
  const bool replacing = replace && !sink && fs::is_regular_file(fs::symlink_status(path, ec));
  std::string temp;
  int fd = -1;
  if (replacing) {
    temp = out.path + ".dak-XXXXXX";
    fd = ::mkstemp(temp.data());
  } else {
    fd = ::open(out.path.c_str(), O_WRONLY | O_CLOEXEC | (sink ? 0 : O_CREAT | O_EXCL), 0644);
    if (fd < 0 && !sink && errno == EEXIST) {
      out.path = free_name_beside(path);
      out.moved = true;
      fd = ::open(out.path.c_str(), O_WRONLY | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
    }
  }
  if (fd < 0) {
    fail(fmt::format("cannot write '{}': {}", out.path, std::strerror(errno)), where,
         "check that the folder exists and is writable, or write somewhere else");
  }
  // The replaced file's permissions carry over (mkstemp creates 0600).
  const auto keep_mode = [&] {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && ::fchmod(fd, st.st_mode & 07777) == 0;
  };
  const bool written = write_all(fd, text) && (!replacing || keep_mode());
  const int write_errno = errno;
  const bool closed = ::close(fd) == 0;
  const std::string created = replacing ? temp : out.path;
  if (!written || !closed || (replacing && ::rename(temp.c_str(), out.path.c_str()) != 0)) {
    const int err = !written ? write_errno : errno;
    if (!sink) ::unlink(created.c_str());
    fail(fmt::format("cannot write '{}': {}", out.path, std::strerror(err)), where,
         sink ? std::string("write to a file instead")
              : fmt::format("free space there or write somewhere else (the part written was removed{})",
                            replacing ? "; the old file is as it was" : ""));
  }
  return out;
}

}  // namespace dak
