#pragma once
// The one way results are written to files. A regular file is written under a temporary name
// beside it and renamed over it when complete, so a failed or interrupted write never leaves a
// truncated result behind; a device or pipe (/dev/stdout, /dev/full) is written in place. Every
// failure (open, write, close, rename) throws InputError naming the path and the system's reason.

#include <ostream>
#include <string>
#include <string_view>

namespace fabricsim::sim {

class AtomicFile {
 public:
  /// Opens the temporary file now, so that a bad path fails before any work is done.
  explicit AtomicFile(std::string path);
  ~AtomicFile();  ///< removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view text);
  /// Closes the file and renames it into place.
  void commit();
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(std::string_view action, int error);
  std::string path_;
  std::string temp_;  ///< empty when writing in place
  int fd_ = -1;
};

/// Writes `content` to `path` whole or not at all (AtomicFile).
void write_file(const std::string& path, std::string_view content);

/// Appends to a file, checking every write: for results streamed as they finish (JSON lines).
class AppendFile {
 public:
  explicit AppendFile(std::string path);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;
  void write(std::string_view text);
  void close();

 private:
  std::string path_;
  int fd_ = -1;
};

/// Flushes `out` and throws InputError at `where` when any write to it failed (standard output
/// on a full disk or a closed pipe).
void check_stream(std::ostream& out, const std::string& where);

}  // namespace fabricsim::sim
