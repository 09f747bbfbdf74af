// Loading compiled kernels (dlopen) and finding their functions.
//
// Each path is opened once per process and never closed: compiled graphs keep
// raw function pointers into their libraries, and a kernel library costs a
// few pages. Content-addressed names make this safe: a path always names the
// same code (see Note [Cache files are published by rename]).
#pragma once

#include <memory>
#include <string>

namespace ignis::runtime {

// A loaded shared object. Cheap to copy; all copies share one handle.
class LoadedLibrary {
 public:
  LoadedLibrary() = default;

  // The address of the exported symbol `name`; throws when there is none.
  void* symbol(const std::string& name) const;
  // symbol() cast to a function pointer type: lib.function<int(int, int)>("add").
  template <typename Fn>
  Fn* function(const std::string& name) const {
    return reinterpret_cast<Fn*>(symbol(name));
  }
  // The symbol's address, or nullptr when it is not exported.
  void* find_symbol(const std::string& name) const;

  const std::string& path() const;
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  struct Handle;
  friend LoadedLibrary load_library(const std::string& path);
  explicit LoadedLibrary(std::shared_ptr<const Handle> h) : handle_(std::move(h)) {}
  std::shared_ptr<const Handle> handle_;
};

// dlopen(path, RTLD_NOW | RTLD_LOCAL) the first time a path is asked for,
// the same handle after that. Throws with dlerror()'s message on failure.
LoadedLibrary load_library(const std::string& path);

}  // namespace ignis::runtime
