// MappedFile: a read-only memory map of a whole file (checkpoints are never copied on load).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace dak {

class MappedFile {
 public:
  /// Maps `path` read-only. Throws dak::Error if it cannot be opened or mapped (path_error when this
  /// user may not read it: the folder or file at fault, and how to grant access).
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string shown_path_;  // path_ for the SIGBUS report (control characters as '?')
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

/// Makes a SIGBUS raised by a read of a MappedFile's pages (the file became shorter while dak read it:
/// truncated or replaced by another program, or its storage failed) end the process with dak's error
/// format on stderr — what, the file (where), and a fix — and exit code 1, instead of "Bus error".
/// A SIGBUS at any other address keeps the default action. Call once, from the program's main
/// (the CLI); async-signal-safe inside the handler (a fixed table of the live mappings, write(2)).
void install_mapped_file_fault_handler();

}  // namespace dak
