// Writing the reports and profiles the CLI produces (`--json`, `--csv`, `dak profile -o`) without
// replacing a file of the user's: new files are created exclusively, sinks written as they are.
#pragma once

#include <filesystem>
#include <string>

namespace dak {

/// Whether `path` (links followed) is a character device or a FIFO: a sink such as /dev/null,
/// /dev/stdout or a pipe, which a report may be written to without replacing a file.
bool is_stream_sink(const std::filesystem::path& path);

/// Refuses (dak::Error naming `where`) a FIFO no process has open for reading: the write after a
/// run of minutes would fail then, losing the report; other paths pass. A FIFO with a reader is kept
/// open (closing it would end the reader's input) for write_new_text_file to write to.
void check_sink_has_reader(const std::filesystem::path& path, const std::string& where);

/// A name not taken beside `path`, with `extension` (".json"; empty: the path's own): for
/// "out/bench.json" the first free of "out/bench-2.json" to "out/bench-999.json" (a dangling link
/// counts as taken), else "out/bench-new.json"; with another extension the stem with it comes first
/// ("out/model.gguf", ".json": "out/model.json").
std::string free_name_beside(const std::filesystem::path& path, const std::string& extension = "");

/// Where write_new_text_file wrote: `path` as asked, or (moved) a free name beside it because a
/// file appeared at `path` after the caller checked it.
struct WrittenFile {
  std::string path;
  bool moved = false;
};

/// Writes `text` (bytes as given) to `path`. A sink (is_stream_sink: /dev/null, a terminal, a FIFO) is
/// written as it is (a FIFO no process reads is an error, not a wait); otherwise the file is created
/// exclusively (O_EXCL, mode 0666 less the umask): where a file or link exists at `path` (one that
/// appeared during a run of minutes, after the caller's checks) the text goes to
/// free_name_beside(path) instead (WrittenFile::moved). With `replace` (dak profile --force) an
/// existing regular file is replaced: a temporary file in its folder, synced and renamed over it with
/// the old file's permissions (a new inode: other hard links keep the old text), or, where the folder
/// cannot take one, the file truncated and rewritten in place; links are never written through. A
/// write that fails (disk full, I/O error, a reader gone) removes the part written to a file it
/// created. Throws dak::Error naming `where` (the option, e.g. "--json") when the text cannot be
/// written.
WrittenFile write_new_text_file(const std::filesystem::path& path, const std::string& text, const std::string& where,
                                bool replace = false);

}  // namespace dak
