#include "ignis/runtime/precompiled_header.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/include_scan.h"
#include "ignis/runtime/process.h"
#include "ignis/runtime/sha256.h"

namespace fs = std::filesystem;

namespace ignis::runtime {

namespace {

constexpr const char* kHeader = "prelude.h";
constexpr const char* kPch = "prelude.h.gch";
// PCHs kept in <cache>/pch: one per toolchain, flag set and header contents
// in use; older ones (headers edited, a compiler upgraded) go when a new one
// is published. Each is ~36 MB.
constexpr size_t kKeep = 4;

bool pch_enabled(const Toolchain& t) {
  const char* env = std::getenv("IGNIS_PCH");
  if (env && std::string(env) == "0") return false;
  return !t.compiler.empty() && !t.is_clang;
}

}  // namespace

struct PrecompiledHeaders::Shared {
  std::mutex mu;
  std::condition_variable idle;
  std::set<std::string> building;  // keys whose build is running
  int builds = 0, discards = 0;
};

PrecompiledHeaders::PrecompiledHeaders(fs::path cache_dir, const Toolchain& toolchain)
    : root_(std::move(cache_dir) / "pch"),
      toolchain_(toolchain),
      enabled_(pch_enabled(toolchain)),
      shared_(std::make_shared<Shared>()) {}

std::string PrecompiledHeaders::key(const std::string& prelude,
                                    const std::vector<std::string>& flags,
                                    const std::vector<std::string>& include_dirs) const {
  // The headers by content (paths alone would keep a stale .gch after an
  // edit), the compiler by its fingerprint; see the Note.
  Sha256 h;
  h.update_field("ignis-pch").update_field(toolchain_.fingerprint()).update_field(prelude);
  h.update_field(std::to_string(flags.size()));
  for (const auto& f : flags) h.update_field(f);
  h.update_field(std::to_string(include_dirs.size()));
  for (const auto& d : include_dirs) h.update_field(d);
  auto includes = quoted_includes(prelude, include_dirs);
  h.update_field(std::to_string(includes.size()));
  for (const auto& inc : includes) h.update_field(inc.name).update_field(inc.sha256);
  return h.hex_digest();
}

std::vector<std::string> PrecompiledHeaders::flags_for(
    const std::string& prelude, const std::vector<std::string>& flags,
    const std::vector<std::string>& include_dirs) {
  if (!enabled_ || prelude.empty()) return {};
  std::string k = key(prelude, flags, include_dirs);
  fs::path dir = root_ / k;
  std::error_code ec;
  if (fs::exists(dir / kPch, ec)) return {"-Winvalid-pch", "-include", (dir / kHeader).string()};
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (!shared_->building.insert(k).second) return {};
    shared_->builds++;
  }
  try {
    make_dirs(dir);
    remove_stale_temps(dir);
    write_file_atomic(dir / kHeader, prelude);
  } catch (const std::exception&) {
    // No PCH this time (a read-only cache, a full disk): compiles go on
    // without one, as they would on Clang.
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->building.erase(k);
    shared_->idle.notify_all();
    return {};
  }
  // The compiler writes a temporary and a shell renames it into place, so a
  // process that exits mid-build still leaves a complete .gch or none. It
  // runs at the lowest priority (nice 19): the program goes on running its
  // compiled code meanwhile, and a compiler holding one of the cores an
  // OpenMP team spreads over made every parallel region wait for the thread
  // it slowed (the first seconds after a cold compile of an MLP ran 1.6x
  // slower on this VM's two cores, 3.6x on a 16-core host).
  std::vector<std::string> argv = {"/bin/sh", "-c",
                                   "tmp=$1; out=$2; shift 2; "
                                   "if command -v nice >/dev/null 2>&1; then "
                                   "set -- nice -n 19 \"$@\"; fi; "
                                   "\"$@\" -o \"$tmp\" && mv -f \"$tmp\" \"$out\"",
                                   "ignis-pch", temp_path_for(dir / kPch).string(),
                                   (dir / kPch).string()};
  argv.insert(argv.end(), toolchain_.compiler.begin(), toolchain_.compiler.end());
  argv.insert(argv.end(), flags.begin(), flags.end());
  for (const auto& d : include_dirs) argv.push_back("-I" + d);
  argv.insert(argv.end(), {"-x", "c++-header", (dir / kHeader).string()});
  std::shared_ptr<Shared> shared = shared_;
  fs::path root = root_;
  std::thread([argv = std::move(argv), shared, root, dir, k] {
    bool ok = false;
    try {
      ok = run_process(argv).exit_code == 0;
    } catch (const std::exception&) {
    }
    if (ok) remove_old_pchs(root, dir);
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->building.erase(k);
    shared->idle.notify_all();
  }).detach();
  return {};
}

bool PrecompiledHeaders::output_rejects_pch(const std::string& compiler_output) {
  // GCC's -Winvalid-pch: "<file>.gch: not used because `...' not defined",
  // "... created by a different GCC executable", "... is not a valid PCH".
  return compiler_output.find(".gch: not used because") != std::string::npos ||
         compiler_output.find("-Winvalid-pch") != std::string::npos;
}

void PrecompiledHeaders::discard(const std::vector<std::string>& pch_flags) {
  if (pch_flags.empty()) return;
  fs::path dir = fs::path(pch_flags.back()).parent_path();
  std::error_code ec;
  fs::remove_all(dir, ec);
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->discards++;
}

void PrecompiledHeaders::wait_for_builds() {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->idle.wait(lock, [&] { return shared_->building.empty(); });
}

int PrecompiledHeaders::builds() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->builds;
}

int PrecompiledHeaders::discards() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->discards;
}

void PrecompiledHeaders::remove_old_pchs(const fs::path& root, const fs::path& keep) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> dirs;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.path() == keep) continue;
    auto t = fs::last_write_time(e.path() / kPch, ec);
    if (ec) t = fs::file_time_type::min();  // no .gch: a failed or running build
    dirs.emplace_back(t, e.path());
  }
  if (dirs.size() < kKeep) return;
  std::sort(dirs.begin(), dirs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = kKeep - 1; i < dirs.size(); ++i) {
    // A directory without a .gch may be another process's build in progress;
    // leave it unless it is old.
    if (dirs[i].first == fs::file_time_type::min()) {
      auto t = fs::last_write_time(dirs[i].second, ec);
      if (ec || fs::file_time_type::clock::now() - t < std::chrono::hours(1)) continue;
    }
    fs::remove_all(dirs[i].second, ec);
  }
}

}  // namespace ignis::runtime
