// The code cache: generated C++ in, a loaded shared object out, compiled at
// most once per machine.
//
// A request is named by its key: the SHA-256 of the source, every project
// header it includes (by content), the compile options, the toolchain
// fingerprint (compiler, version, CPU, flags) and kFormatVersion. Look-up
// order: this object's in-process map; then the disk entry
//
//   <dir>/<key[0:2]>/<key>.so     the library
//   <dir>/<key[0:2]>/<key>.meta   its size and SHA-256, written last
//   <dir>/<key[0:2]>/<key>.cpp    the source (for people and debuggers)
//
// which is loaded only after the .so's size and hash match the .meta; then
// the compiler. A missing, truncated, corrupt or mismatched entry is rebuilt
// and its files replaced, never trusted. docs/code_cache.md has the layout,
// the concurrency argument and how the default flags were chosen.
//
// Thread-safe. Several threads or processes asking for the same key at once
// all get a working library: within one CodeCache the first compiles and the
// others wait for it; across processes each compiles and publishes by rename
// (see Note [Cache files are published by rename]), and any complete entry
// is as good as any other.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ignis/runtime/loader.h"
#include "ignis/runtime/precompiled_header.h"
#include "ignis/runtime/toolchain.h"

namespace ignis::runtime {

// Bumped whenever the key's material or the entry files change meaning.
inline constexpr int kCodeCacheFormatVersion = 1;

struct CompileOptions {
  // Adds the toolchain's OpenMP flag (generated kernels use `omp parallel`).
  bool openmp = true;
  // Added after the toolchain's flags (-D..., -l..., a different -O).
  std::vector<std::string> extra_flags;
  // Searched before the toolchain's include_dirs. Not part of the key as
  // paths: the contents of the headers found there are.
  std::vector<std::string> include_dirs;
  // A label for errors and progress ("kernel_3_fused_add_exp"); not in the key.
  std::string name;
  // The #include lines the source begins with, when every source of its kind
  // does (codegen_cpp's cpp_includes()): compiled once into a precompiled
  // header and force-included (precompiled_header.h). Not in the key: a PCH
  // changes how fast a source compiles, never what it compiles to.
  std::string prelude;
};

struct CodeCacheConfig {
  // Empty: default_cache_dir() ($IGNIS_CACHE_DIR, else ~/.cache/ignis).
  std::filesystem::path dir;
  // Unset: default_toolchain().
  std::optional<Toolchain> toolchain;
  // Compiles run at once by compile_many; 0: std::thread::hardware_concurrency().
  unsigned max_parallel = 0;
};

struct CodeCacheStats {
  uint64_t memory_hits = 0;  // served from the in-process map
  uint64_t disk_hits = 0;    // verified disk entries
  uint64_t compiles = 0;     // compiler runs (failed ones included)
  uint64_t rejected = 0;     // disk entries found invalid and rebuilt
  uint64_t precompiled = 0;  // compiler runs that read a precompiled header
};

// What compile_many reports after each request it finishes.
struct CompileProgress {
  size_t done = 0;   // requests finished (hits included)
  size_t total = 0;  // requests that were not in memory
  double seconds = 0;  // since compile_many started
};
using ProgressFn = std::function<void(const CompileProgress&)>;

class CodeCache {
 public:
  explicit CodeCache(CodeCacheConfig config = {});
  CodeCache(const CodeCache&) = delete;
  CodeCache& operator=(const CodeCache&) = delete;

  // The process-wide cache with the default configuration.
  static CodeCache& global();

  // The key of a request (64 hex digits).
  std::string key(std::string_view source, const CompileOptions& options = {}) const;

  // The library built from `source`: from memory, else a verified disk
  // entry, else compiled now. Throws ignis::Error when the compiler fails,
  // with its output and the path of the source it was given.
  LoadedLibrary load_or_compile(std::string_view source, const CompileOptions& options = {});

  // load_or_compile for many sources, compiling the misses in parallel (at
  // most max_parallel compilers at once). `progress` is called from the
  // calling thread after each request finishes; if it throws, requests not
  // yet started are cancelled and its exception is rethrown. When a compile
  // fails, the others still finish and the first error is thrown.
  std::vector<LoadedLibrary> compile_many(const std::vector<std::string>& sources,
                                          const CompileOptions& options = {},
                                          const ProgressFn& progress = {});

  // Makes sure a valid disk entry exists (compiling when needed) without
  // loading it, and returns the path of its .so.
  std::filesystem::path build(std::string_view source, const CompileOptions& options = {});

  // The library of an earlier request by key alone (a new process that found
  // the key in the graph cache): nullopt when there is no valid entry.
  std::optional<LoadedLibrary> load_cached(const std::string& key);

  struct EntryPaths {
    std::filesystem::path so, meta, source;
  };
  EntryPaths entry_paths(const std::string& key) const;

  const std::filesystem::path& dir() const { return dir_; }
  const Toolchain& toolchain() const { return toolchain_; }
  PrecompiledHeaders& precompiled_headers() { return pch_; }
  CodeCacheStats stats() const;

 private:
  std::filesystem::path ensure_built(const std::string& key, std::string_view source,
                                     const CompileOptions& options);
  bool entry_is_valid(const std::string& key) const;
  void compile_entry(const std::string& key, std::string_view source,
                     const CompileOptions& options);

  std::filesystem::path dir_;
  Toolchain toolchain_;
  unsigned max_parallel_;
  PrecompiledHeaders pch_;

  mutable std::mutex mu_;
  std::unordered_map<std::string, LoadedLibrary> loaded_;
  // Keys being checked or compiled by some thread of this object.
  std::map<std::string, std::shared_future<std::filesystem::path>> pending_;

  std::atomic<uint64_t> memory_hits_{0}, disk_hits_{0}, compiles_{0}, rejected_{0},
      precompiled_{0};
};

}  // namespace ignis::runtime
