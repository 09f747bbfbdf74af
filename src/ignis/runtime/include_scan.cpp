#include "ignis/runtime/include_scan.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace fs = std::filesystem;

namespace ignis::runtime {

namespace {

// The names in `#include "name"` lines of `text`.
std::vector<std::string> include_names(std::string_view text) {
  std::vector<std::string> names;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string_view::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string_view::npos || line.substr(i, 7) != "include") continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string_view::npos || line[i] != '"') continue;
    size_t close = line.find('"', i + 1);
    if (close != std::string_view::npos) names.emplace_back(line.substr(i + 1, close - i - 1));
  }
  return names;
}

struct FileDigest {
  int64_t size = -1, mtime_ns = -1;
  std::string sha256, contents;
};

// Headers are read and hashed once per process while their size and mtime
// stay the same (a key is computed for every compile request).
std::shared_ptr<const FileDigest> digest_of(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const FileDigest>> cache;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
  int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(path);
    if (it != cache.end() && it->second->size == int64_t(st.st_size) &&
        it->second->mtime_ns == mtime)
      return it->second;
  }
  auto text = read_file(path);
  if (!text) return nullptr;
  auto d = std::make_shared<const FileDigest>(
      FileDigest{int64_t(st.st_size), mtime, sha256_hex(*text), std::move(*text)});
  std::lock_guard<std::mutex> lock(mu);
  cache[path] = d;
  return d;
}

}  // namespace

std::vector<IncludedFile> quoted_includes(std::string_view source,
                                          const std::vector<std::string>& include_dirs) {
  std::vector<IncludedFile> found;
  std::set<std::string> seen;
  // (name, directory of the file that includes it; "" for the source itself)
  std::vector<std::pair<std::string, std::string>> todo;
  for (auto& n : include_names(source)) todo.emplace_back(std::move(n), "");
  while (!todo.empty()) {
    auto [name, from_dir] = std::move(todo.back());
    todo.pop_back();
    std::vector<std::string> candidates;
    if (!from_dir.empty()) candidates.push_back(from_dir);
    candidates.insert(candidates.end(), include_dirs.begin(), include_dirs.end());
    for (const auto& dir : candidates) {
      std::string path = fs::path(dir) / name;
      auto d = digest_of(path);
      if (!d) continue;
      path = fs::path(path).lexically_normal();
      if (seen.insert(path).second) {
        found.push_back({name, path, d->sha256});
        std::string here = fs::path(path).parent_path();
        for (auto& n : include_names(d->contents)) todo.emplace_back(std::move(n), here);
      }
      break;
    }
  }
  std::sort(found.begin(), found.end(),
            [](const IncludedFile& a, const IncludedFile& b) {
              return std::tie(a.name, a.sha256) < std::tie(b.name, b.sha256);
            });
  return found;
}

}  // namespace ignis::runtime
