#include "ignis/runtime/cache_dir.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "ignis/core/error.h"

namespace fs = std::filesystem;

namespace ignis::runtime {

namespace {

std::string home_dir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "";
}

fs::path temp_root() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? fs::path(t) : fs::path("/tmp");
}

bool make_private(const fs::path& dir) {
  try {
    make_dirs(dir);
  } catch (const std::exception&) {
    return false;
  }
  return is_private_dir(dir);
}

}  // namespace

fs::path default_cache_dir() {
  if (const char* d = std::getenv("IGNIS_CACHE_DIR"); d && *d) return d;
  std::string home = home_dir();
  return home.empty() ? temp_root() / ("ignis-" + std::to_string(::geteuid()))
                      : fs::path(home) / ".cache" / "ignis";
}

void make_dirs(const fs::path& dir) {
  fs::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      IGNIS_FAIL("cannot create directory ", prefix.string(), ": ", std::strerror(errno));
  }
}

bool is_private_dir(const fs::path& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return false;
  return S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 022) == 0;
}

fs::path open_private_dir(const fs::path& dir) {
  if (make_private(dir)) return dir;
  fs::path shared_tmp = temp_root() / ("ignis-" + std::to_string(::geteuid()));
  fs::path chosen;
  if (make_private(shared_tmp)) {
    chosen = shared_tmp;
  } else {
    std::string pattern = (temp_root() / "ignis-cache-XXXXXX").string();
    IGNIS_CHECK(::mkdtemp(pattern.data()) != nullptr, "cannot create a private cache directory: ",
                std::strerror(errno));
    chosen = pattern;
  }
  std::fprintf(stderr,
               "ignis: warning: the cache directory %s is not a directory that only you can "
               "write (it must be owned by you, mode 0700 or stricter); using %s instead\n",
               dir.c_str(), chosen.c_str());
  return chosen;
}

fs::path temp_path_for(const fs::path& final_path) {
  // pid + a per-process counter are unique on one host; the random part keeps
  // names unique across hosts sharing a directory (pids repeat there).
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (uint64_t(::getpid()) << 32)};
  char suffix[80];
  std::snprintf(suffix, sizeof(suffix), ".tmp-%d-%llu-%08llx", int(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  fs::path p = final_path;
  p += suffix;
  return p;
}

bool is_temp_name(std::string_view filename) {
  return filename.find(".tmp-") != std::string_view::npos;
}

void write_file_atomic(const fs::path& path, std::string_view bytes) {
  fs::path tmp = temp_path_for(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  IGNIS_CHECK(fd >= 0, "cannot create ", tmp.string(), ": ", std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      IGNIS_FAIL("cannot write ", tmp.string(), ": ", std::strerror(err));
    }
    done += size_t(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    IGNIS_FAIL("cannot write ", path.string(), ": ", std::strerror(err));
  }
}

std::optional<std::string> read_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, size_t(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

void remove_stale_temps(const fs::path& dir, std::chrono::seconds age) {
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!is_temp_name(it->path().filename().native())) continue;
    std::error_code e2;
    auto mtime = fs::last_write_time(it->path(), e2);
    if (!e2 && now - mtime > age) fs::remove(it->path(), e2);
  }
}

}  // namespace ignis::runtime
