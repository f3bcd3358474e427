#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>

#include "core/error.h"

namespace dak {

namespace {

// The live mappings, for the SIGBUS handler: a fixed table it can read without locks or allocation.
// A slot is published by storing `begin` last (release) and freed by storing null first. `path` points
// into the MappedFile (its shown_path_), which outlives its slot.
struct MapSlot {
  std::atomic<const uint8_t*> begin{nullptr};
  uint64_t size = 0;
  const char* path = nullptr;
};
// Sharded checkpoints map one file per shard; 16384 slots (384 KiB, untouched until used) serve any
// real one (the session-50 re-trial mapped 1100 shards past the first table's 1024).
constexpr int kMapSlots = 16384;
MapSlot g_map_slots[kMapSlots];
std::mutex g_map_slots_mutex;  // taken to claim and free slots (never in the handler)

void register_mapping(const uint8_t* begin, uint64_t size, const char* path) {
  const std::lock_guard<std::mutex> lock(g_map_slots_mutex);
  for (MapSlot& slot : g_map_slots) {
    if (slot.begin.load(std::memory_order_relaxed) != nullptr) continue;
    slot.size = size;
    slot.path = path;
    slot.begin.store(begin, std::memory_order_release);
    return;
  }
  // A full table only loses the file's name in a SIGBUS report (the default action then).
}

void unregister_mapping(const uint8_t* begin) {
  const std::lock_guard<std::mutex> lock(g_map_slots_mutex);
  for (MapSlot& slot : g_map_slots) {
    if (slot.begin.load(std::memory_order_relaxed) == begin) {
      slot.begin.store(nullptr, std::memory_order_release);
      return;
    }
  }
}

// Async-signal-safe output: write(2) of a string and of a decimal number.
void put(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w, n -= size_t(w);
  }
}
void put_u64(uint64_t v) {
  char buf[24];
  int i = sizeof buf - 1;
  buf[i] = '\0';
  do {
    buf[--i] = char('0' + v % 10);
    v /= 10;
  } while (v > 0);
  put(buf + i);
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  // si_addr means the faulting address only for a fault the kernel raised (si_code > 0: BUS_ADRERR,
  // BUS_OBJERR, ...); a SIGBUS sent by kill() or raise() keeps the default action.
  const auto* addr = static_cast<const uint8_t*>(info && info->si_code > 0 ? info->si_addr : nullptr);
  for (const MapSlot& slot : g_map_slots) {
    if (addr == nullptr) break;
    const uint8_t* begin = slot.begin.load(std::memory_order_acquire);
    if (begin == nullptr || addr < begin || addr >= begin + slot.size) continue;
    put("dak: error: reading byte ");
    put_u64(uint64_t(addr - begin));
    put(" of a ");
    put_u64(slot.size);
    put("-byte file failed (SIGBUS): the file became shorter while dak read it (truncated, or replaced by "
        "another program), or its storage failed\n  where: ");
    put(slot.path);
    put("\n  fix:   leave model files unchanged while dak runs (copy or download a model to a new name, then "
        "run dak on it), and check the disk or network file system\n");
    // _exit: nothing else is safe here; text still in stdout's buffer is lost with the process.
    ::_exit(1);
  }
  // Not a mapped file's page: the default action, once the handler returns (raised again: a raise()
  // or kill() would not repeat by itself, a faulting read would).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_mapped_file_fault_handler() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

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
    // Control characters shown as '?': the handler writes the name as it is (no escaping there).
    shown_path_ = path.string();
    for (char& c : shown_path_) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    register_mapping(data_, size_, shown_path_.c_str());
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) {
    unregister_mapping(data_);
    ::munmap(const_cast<uint8_t*>(data_), size_);
  }
}

}  // namespace dak
