#include "sim/file_write.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sim/input_error.hpp"

namespace fabricsim::sim {
namespace {

[[noreturn]] void fail_at(const std::string& path, std::string_view action, int error) {
  throw InputError(path, "", fmt::format("cannot {} ({})", action, std::strerror(error)));
}

void write_all(int fd, std::string_view text, const std::string& path) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_at(path, "write the file", n < 0 ? errno : EIO);
    text.remove_prefix(static_cast<size_t>(n));
  }
}

// Closes and reports close's own error: on NFS and full disks a write may fail only here.
int close_checked(int fd) {
  return ::close(fd) == 0 ? 0 : errno;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw InputError("<command line>", "", "expected an output file name");
  struct stat st {};
  // A device, pipe or socket cannot be replaced by a rename (and /dev must not be): write in
  // place.
  if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail("open the file for writing", errno);
    return;
  }
  temp_ = fmt::format("{}.tmp-{}", path_, ::getpid());
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    temp_.clear();
    fail("open the file for writing", errno);
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::fail(std::string_view action, int error) {
  fail_at(path_, action, error);
}

void AtomicFile::write(std::string_view text) {
  if (fd_ < 0) throw InputError(path_, "", "write after the file was closed");
  write_all(fd_, text, path_);
}

void AtomicFile::commit() {
  const int fd = fd_;
  fd_ = -1;
  if (const int error = close_checked(fd)) fail("write the file", error);
  if (temp_.empty()) return;
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    fail("rename the finished file into place", errno);
  temp_.clear();
}

void write_file(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

AppendFile::AppendFile(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  if (fd_ < 0) fail_at(path_, "open the file for writing", errno);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::write(std::string_view text) {
  if (fd_ < 0) throw InputError(path_, "", "write after the file was closed");
  write_all(fd_, text, path_);
}

void AppendFile::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0) {
    if (const int error = close_checked(fd)) fail_at(path_, "write the file", error);
  }
}

void check_stream(std::ostream& out, const std::string& where) {
  out.flush();
  if (!out) throw InputError(where, "", "cannot write the output (disk full or pipe closed?)");
}

}  // namespace fabricsim::sim
