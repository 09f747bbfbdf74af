#include "ignis/runtime/toolchain.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "ignis/runtime/process.h"

#ifndef IGNIS_SOURCE_INCLUDE_DIR
#define IGNIS_SOURCE_INCLUDE_DIR ""
#endif
// The flags CMake builds the eager kernels with (IGNIS_KERNEL_FLAGS).
#ifndef IGNIS_EAGER_KERNEL_FLAGS
#define IGNIS_EAGER_KERNEL_FLAGS \
  "-O3 -fno-math-errno -fno-trapping-math -march=native -mprefer-vector-width=512"
#endif

namespace ignis::runtime {

namespace {

std::vector<std::string> split_blanks(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t b = s.find_first_not_of(" \t", i);
    if (b == std::string::npos) break;
    size_t e = s.find_first_of(" \t", b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    i = e == std::string::npos ? s.size() : e;
  }
  return out;
}

bool on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "";
  size_t i = 0;
  while (i <= p.size()) {
    size_t e = p.find(':', i);
    if (e == std::string::npos) e = p.size();
    std::string dir = e > i ? p.substr(i, e - i) : ".";
    if (::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
    i = e + 1;
  }
  return false;
}

std::vector<std::string> find_compiler() {
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) return split_blanks(cxx);
  for (const char* name : {"c++", "g++", "clang++"})
    if (on_path(name)) return {name};
  return {};
}

// `--version` costs a process start (~10 ms), so it runs once per compiler
// command per process.
std::string compiler_version(const std::vector<std::string>& compiler) {
  static std::mutex mu;
  static std::map<std::vector<std::string>, std::string> versions;
  std::lock_guard<std::mutex> lock(mu);
  auto it = versions.find(compiler);
  if (it != versions.end()) return it->second;
  std::string version;
  std::vector<std::string> argv = compiler;
  argv.push_back("--version");
  try {
    ProcessResult r = run_process(argv);
    if (r.exit_code == 0) version = r.output.substr(0, r.output.find('\n'));
  } catch (const std::exception&) {
    // Left empty: the first compile reports that the compiler cannot run.
  }
  versions.emplace(compiler, version);
  return version;
}

}  // namespace

std::vector<std::string> default_kernel_flags() {
  // gnu++20 as CMake builds the eager kernels (CMAKE_CXX_EXTENSIONS): the
  // language mode sets the default of -ffp-contract, i.e. whether a * b + c
  // becomes one fused multiply-add.
  std::vector<std::string> flags = {"-std=gnu++20"};
  for (auto& f : split_blanks(IGNIS_EAGER_KERNEL_FLAGS)) flags.push_back(std::move(f));
  return flags;
}

Toolchain detect_toolchain() {
  Toolchain t;
  t.compiler = find_compiler();
  if (!t.compiler.empty()) t.version = compiler_version(t.compiler);
  t.is_clang = t.version.find("clang") != std::string::npos;
  t.flags = default_kernel_flags();
  t.openmp_flag = "-fopenmp";
  t.shared_flags = {"-shared", "-fPIC"};
  const char* inc = std::getenv("IGNIS_INCLUDE_DIR");
  std::string dir = inc && *inc ? inc : IGNIS_SOURCE_INCLUDE_DIR;
  if (!dir.empty()) t.include_dirs.push_back(dir);
  t.cpu = cpu_info();
  return t;
}

const Toolchain& default_toolchain() {
  static const Toolchain t = detect_toolchain();
  return t;
}

std::string Toolchain::fingerprint() const {
  // Include dirs are left out: a path does not change the code, the headers'
  // contents do, and the code cache hashes those separately.
  std::string s = "compiler:";
  for (const auto& c : compiler) s += " " + c;
  s += "\nversion: " + version + "\ncpu: " + cpu.describe() + "\nflags:";
  for (const auto& f : flags) s += " " + f;
  s += "\nopenmp: " + openmp_flag + "\nshared:";
  for (const auto& f : shared_flags) s += " " + f;
  return s + "\n";
}

}  // namespace ignis::runtime
