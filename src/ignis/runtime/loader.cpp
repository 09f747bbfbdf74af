#include "ignis/runtime/loader.h"

#include <dlfcn.h>

#include <map>
#include <mutex>

#include "ignis/core/error.h"

namespace ignis::runtime {

struct LoadedLibrary::Handle {
  void* dl = nullptr;
  std::string path;
};

void* LoadedLibrary::find_symbol(const std::string& name) const {
  IGNIS_CHECK(handle_, "symbol lookup in an empty LoadedLibrary");
  return ::dlsym(handle_->dl, name.c_str());
}

void* LoadedLibrary::symbol(const std::string& name) const {
  void* p = find_symbol(name);
  IGNIS_CHECK(p, "compiled library ", handle_->path, " has no symbol `", name,
              "` (is it declared extern \"C\" and visible?)");
  return p;
}

const std::string& LoadedLibrary::path() const {
  static const std::string empty;
  return handle_ ? handle_->path : empty;
}

LoadedLibrary load_library(const std::string& path) {
  // Handles are never closed: leaked on purpose, see the header.
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, std::shared_ptr<const LoadedLibrary::Handle>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(path);
  if (it != loaded->end()) return LoadedLibrary(it->second);
  // RTLD_LOCAL: kernels of different graphs may export the same names.
  void* dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    const char* err = ::dlerror();
    IGNIS_FAIL("cannot load compiled library ", path, ": ", err ? err : "unknown dlopen error");
  }
  auto h = std::make_shared<const LoadedLibrary::Handle>(LoadedLibrary::Handle{dl, path});
  loaded->emplace(path, h);
  return LoadedLibrary(h);
}

}  // namespace ignis::runtime
