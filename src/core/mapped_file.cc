#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dak {

MappedFile::MappedFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever (a regular
  // file, the only kind mapped below, is not affected).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    // No permission: name what is at fault (a folder on the way, or the file) and how to grant it.
    throw_if_no_permission(path.string(), err);
    fail(std::string("cannot open file: ") + std::strerror(err), path.string(),
         "check that the path exists and is readable");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("not a regular file (a folder, device, FIFO or socket?)", path.string(),
         "pass a checkpoint file or a model folder");
  }
  size_ = uint64_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      fail(std::string("cannot memory-map file: ") + std::strerror(err), path.string(),
           "check free address space and file permissions");
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace dak
