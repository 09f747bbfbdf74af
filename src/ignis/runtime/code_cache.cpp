#include "ignis/runtime/code_cache.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ignis/core/error.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/include_scan.h"
#include "ignis/runtime/process.h"
#include "ignis/runtime/sha256.h"

namespace fs = std::filesystem;

namespace ignis::runtime {

namespace {

// The .meta file. It is parsed by printing it again and comparing, so a
// truncated or edited file never passes.
std::string meta_text(const std::string& key, uint64_t size, const std::string& sha) {
  return str("ignis-code-cache ", kCodeCacheFormatVersion, "\nkey ", key, "\nsize ", size,
             "\nsha256 ", sha, "\nend\n");
}

bool parse_meta(const std::string& text, const std::string& key, uint64_t* size,
                std::string* sha) {
  size_t s = text.find("\nsize "), h = text.find("\nsha256 ");
  if (s == std::string::npos || h == std::string::npos || h < s) return false;
  char* end = nullptr;
  *size = std::strtoull(text.c_str() + s + 6, &end, 10);
  *sha = text.substr(h + 8, 64);
  return text == meta_text(key, *size, *sha);
}

bool is_hex_key(const std::string& key) {
  return key.size() == 64 && key.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::vector<std::string> all_include_dirs(const CompileOptions& options, const Toolchain& t) {
  std::vector<std::string> dirs = options.include_dirs;
  dirs.insert(dirs.end(), t.include_dirs.begin(), t.include_dirs.end());
  return dirs;
}

}  // namespace

CodeCache::CodeCache(CodeCacheConfig config)
    : dir_(open_private_dir(config.dir.empty() ? default_cache_dir() : config.dir)),
      toolchain_(config.toolchain ? *config.toolchain : default_toolchain()),
      max_parallel_(config.max_parallel ? config.max_parallel
                                        : std::max(1u, std::thread::hardware_concurrency())),
      pch_(dir_, toolchain_) {}

CodeCache& CodeCache::global() {
  // Never destroyed: compiled graphs may still run during static destruction.
  static CodeCache* cache = new CodeCache();
  return *cache;
}

std::string CodeCache::key(std::string_view source, const CompileOptions& options) const {
  Sha256 h;
  h.update_field("ignis-code-cache").update_field(str(kCodeCacheFormatVersion));
  h.update_field(toolchain_.fingerprint());
  h.update_field(options.openmp ? "openmp" : "no-openmp");
  h.update_field(str(options.extra_flags.size()));
  for (const auto& f : options.extra_flags) h.update_field(f);
  auto includes = quoted_includes(source, all_include_dirs(options, toolchain_));
  h.update_field(str(includes.size()));
  for (const auto& inc : includes) h.update_field(inc.name).update_field(inc.sha256);
  h.update_field(source);
  return h.hex_digest();
}

CodeCache::EntryPaths CodeCache::entry_paths(const std::string& key) const {
  fs::path bucket = dir_ / key.substr(0, 2);
  return {bucket / (key + ".so"), bucket / (key + ".meta"), bucket / (key + ".cpp")};
}

CodeCacheStats CodeCache::stats() const {
  return {memory_hits_.load(), disk_hits_.load(), compiles_.load(), rejected_.load(),
          precompiled_.load()};
}

bool CodeCache::entry_is_valid(const std::string& key) const {
  EntryPaths p = entry_paths(key);
  auto meta = read_file(p.meta);
  uint64_t size = 0;
  std::string sha;
  if (!meta || !parse_meta(*meta, key, &size, &sha)) return false;
  auto so = read_file(p.so);
  return so && so->size() == size && sha256_hex(*so) == sha;
}

void CodeCache::compile_entry(const std::string& key, std::string_view source,
                              const CompileOptions& options) {
  IGNIS_CHECK(!toolchain_.compiler.empty(),
              "no C++ compiler found to build generated code: set CXX, or install g++");
  EntryPaths p = entry_paths(key);
  make_dirs(p.so.parent_path());
  remove_stale_temps(p.so.parent_path());
  // The compiler reads the final source name, not a temporary one: the name
  // is recorded in the library, and every process building this key should
  // produce the same bytes.
  write_file_atomic(p.source, source);
  fs::path tmp_so = temp_path_for(p.so);

  std::vector<std::string> flags = toolchain_.flags;
  if (options.openmp && !toolchain_.openmp_flag.empty()) flags.push_back(toolchain_.openmp_flag);
  flags.insert(flags.end(), toolchain_.shared_flags.begin(), toolchain_.shared_flags.end());
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  const std::vector<std::string> dirs = all_include_dirs(options, toolchain_);
  auto command = [&](const std::vector<std::string>& pch_flags) {
    std::vector<std::string> argv = toolchain_.compiler;
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const auto& dir : dirs) argv.push_back("-I" + dir);
    argv.insert(argv.end(), pch_flags.begin(), pch_flags.end());
    argv.insert(argv.end(), {p.source.string(), "-o", tmp_so.string()});
    return argv;
  };

  std::vector<std::string> pch = pch_.flags_for(options.prelude, flags, dirs);
  std::vector<std::string> argv = command(pch);
  compiles_++;
  ProcessResult r = run_process(argv);
  if (!pch.empty()) {
    // A PCH that GCC would not use is discarded. A compile that failed with
    // one runs again without it: when that one succeeds the .gch was at
    // fault (a torn file) and is discarded too; when it fails as well, the
    // source was (a kernel a test expects to be rejected) and the error is
    // the plain compile's. So a bad .gch never costs more than time (Note [A
    // precompiled header changes speed, never code]).
    if (r.exit_code != 0) {
      ::unlink(tmp_so.c_str());
      argv = command({});
      compiles_++;
      r = run_process(argv);
      if (r.exit_code == 0) pch_.discard(pch);
    } else if (PrecompiledHeaders::output_rejects_pch(r.output)) {
      pch_.discard(pch);
    } else {
      precompiled_++;
    }
  }
  if (r.exit_code != 0) {
    ::unlink(tmp_so.c_str());
    // Errors cascade: the first screenfuls say what went wrong.
    constexpr size_t kMaxOutput = 16000;
    if (r.output.size() > kMaxOutput)
      r.output = r.output.substr(0, kMaxOutput) + str("\n... (", r.output.size() - kMaxOutput,
                                                      " more bytes of compiler output)");
    IGNIS_FAIL("compiling generated C++", options.name.empty() ? "" : " (" + options.name + ")",
               " failed with exit code ", r.exit_code, "\n  source: ", p.source.string(),
               "\n  command: ", shell_join(argv), "\n", r.output);
  }
  auto so = read_file(tmp_so);
  if (!so) {
    ::unlink(tmp_so.c_str());
    IGNIS_FAIL("the compiler reported success but wrote no readable ", tmp_so.string());
  }
  // The library first, its .meta last: a .meta names a complete library.
  if (::rename(tmp_so.c_str(), p.so.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_so.c_str());
    IGNIS_FAIL("cannot publish ", p.so.string(), ": ", std::strerror(err));
  }
  write_file_atomic(p.meta, meta_text(key, so->size(), sha256_hex(*so)));
}

fs::path CodeCache::ensure_built(const std::string& key, std::string_view source,
                                 const CompileOptions& options) {
  std::promise<fs::path> promise;
  std::shared_future<fs::path> result;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(key);
    if (it != pending_.end()) {
      result = it->second;
    } else {
      result = promise.get_future().share();
      pending_.emplace(key, result);
      owner = true;
    }
  }
  if (!owner) return result.get();
  try {
    EntryPaths p = entry_paths(key);
    if (entry_is_valid(key)) {
      disk_hits_++;
    } else {
      std::error_code ec;
      if (fs::exists(p.meta, ec) || fs::exists(p.so, ec)) rejected_++;
      compile_entry(key, source, options);
    }
    promise.set_value(p.so);
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.erase(key);
  }
  return result.get();
}

LoadedLibrary CodeCache::load_or_compile(std::string_view source, const CompileOptions& options) {
  std::string k = key(source, options);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(k);
    if (it != loaded_.end()) {
      memory_hits_++;
      return it->second;
    }
  }
  LoadedLibrary lib = load_library(ensure_built(k, source, options));
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.emplace(k, lib);
  return lib;
}

fs::path CodeCache::build(std::string_view source, const CompileOptions& options) {
  return ensure_built(key(source, options), source, options);
}

std::optional<LoadedLibrary> CodeCache::load_cached(const std::string& key) {
  if (!is_hex_key(key)) return std::nullopt;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = loaded_.find(key);
    if (it != loaded_.end()) {
      memory_hits_++;
      return it->second;
    }
  }
  if (!entry_is_valid(key)) return std::nullopt;
  disk_hits_++;
  LoadedLibrary lib = load_library(entry_paths(key).so);
  std::lock_guard<std::mutex> lock(mu_);
  loaded_.emplace(key, lib);
  return lib;
}

std::vector<LoadedLibrary> CodeCache::compile_many(const std::vector<std::string>& sources,
                                                   const CompileOptions& options,
                                                   const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<LoadedLibrary> out(sources.size());
  std::vector<std::string> keys(sources.size());
  // One job per distinct key not yet loaded, with the index of its source.
  std::map<std::string, size_t> first_of;
  std::vector<std::string> jobs;
  std::vector<size_t> job_source;
  {
    for (size_t i = 0; i < sources.size(); ++i) keys[i] = key(sources[i], options);
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < sources.size(); ++i) {
      auto it = loaded_.find(keys[i]);
      if (it != loaded_.end()) {
        memory_hits_++;
        out[i] = it->second;
      } else if (first_of.emplace(keys[i], i).second) {
        jobs.push_back(keys[i]);
        job_source.push_back(i);
      }
    }
  }

  std::vector<fs::path> paths(jobs.size());
  std::mutex m;
  std::condition_variable cv;
  size_t done = 0;
  std::exception_ptr first_error, progress_error;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    for (size_t j; !stop && (j = next++) < jobs.size();) {
      std::exception_ptr err;
      try {
        paths[j] = ensure_built(jobs[j], sources[job_source[j]], options);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(m);
      if (err && !first_error) first_error = err;
      ++done;
      cv.notify_one();
    }
  };
  // The calling thread only reports progress, so that a Python caller
  // prints from its own thread; max_parallel threads run the compilers.
  std::vector<std::thread> threads;
  size_t n_threads = std::min<size_t>(max_parallel_, jobs.size());
  for (size_t t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (size_t reported = 0; reported < jobs.size() && !stop;) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return done > reported; });
    reported = done;
    lock.unlock();
    if (!progress) continue;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    try {
      progress({reported, jobs.size(), secs});
    } catch (...) {
      // A callback that throws (an interrupted Python caller) cancels the
      // compiles not yet started; the running ones finish first.
      progress_error = std::current_exception();
      stop = true;
    }
  }
  for (auto& t : threads) t.join();
  if (progress_error) std::rethrow_exception(progress_error);
  if (first_error) std::rethrow_exception(first_error);

  std::map<std::string, LoadedLibrary> libs;
  for (size_t j = 0; j < jobs.size(); ++j) libs.emplace(jobs[j], load_library(paths[j]));
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [k, lib] : libs) loaded_.emplace(k, lib);
  }
  for (size_t i = 0; i < sources.size(); ++i)
    if (!out[i]) out[i] = libs.at(keys[i]);
  return out;
}

}  // namespace ignis::runtime
