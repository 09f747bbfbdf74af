// Precompiled headers for the code cache: the #include lines every generated
// source begins with, parsed once per machine instead of once per compile.
//
// A generated graph includes <cmath>, <vector>, <omp.h> and ignis's op
// headers: some 48,000 lines that GCC parses in ~0.4 s before it reaches the
// kernels, which themselves often take less (measured on the 2-core VM: a
// small graph 0.55 s -> 0.16 s, a 370-line one 1.30 s -> 0.70 s). GCC reads a
// `prelude.h.gch` in place of `prelude.h` when the source is compiled with
// `-include prelude.h` and the .gch was built by the same compiler with the
// same flags; the source's own #includes of the same headers are then no-ops.
//
// Note [A precompiled header changes speed, never code]
// The .gch holds what parsing prelude.h produced, and the source includes
// the same headers first anyway, so a compile with it and one without it
// see the same declarations in the same order: the code cache's keys leave
// the PCH out. What could break that, and what guards it:
//   * headers that changed after the .gch was built: the PCH's own key hashes
//     the prelude's project headers by content (as the code cache does), so
//     changed headers name a different .gch;
//   * a .gch from another compiler or other flags: GCC checks both and, with
//     -Winvalid-pch, says so and reads prelude.h as text; the code cache
//     then discards the .gch;
//   * a torn or corrupt .gch: it is published by rename (cache_dir.h), and a
//     compile that fails with it is run again without it; the .gch is then
//     discarded and built again, never trusted.
//
// The first compile that wants a PCH that does not exist starts its build in
// the background and goes on without it, so a cold cache costs no extra
// latency (the build takes ~1.5 s); later compiles use it once published.
// GCC only: Clang's PCHs are a different mechanism (-include-pch, checked
// against header timestamps), left for when Clang matters here.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ignis/runtime/toolchain.h"

namespace ignis::runtime {

class PrecompiledHeaders {
 public:
  // PCHs live in <cache_dir>/pch/<key>/ (prelude.h and prelude.h.gch).
  PrecompiledHeaders(std::filesystem::path cache_dir, const Toolchain& toolchain);

  // The flags that make a compile with `flags` (everything but the source,
  // the output and -include) and `include_dirs` read `prelude` precompiled:
  // {"-Winvalid-pch", "-include", "<dir>/prelude.h"} once the .gch is
  // published, else empty (starting its build when none is running). Empty
  // also when PCHs are off: a non-GCC compiler, an empty prelude, or
  // IGNIS_PCH=0.
  std::vector<std::string> flags_for(const std::string& prelude,
                                     const std::vector<std::string>& flags,
                                     const std::vector<std::string>& include_dirs);

  // False for a non-GCC compiler and under IGNIS_PCH=0.
  bool enabled() const { return enabled_; }

  // Whether GCC's output says it could not use a precompiled header.
  static bool output_rejects_pch(const std::string& compiler_output);

  // Removes the PCH that `pch_flags` (from flags_for) name, so that the next
  // compile builds it again: it was rejected or a compile failed with it.
  void discard(const std::vector<std::string>& pch_flags);

  // Waits for the background builds this object started (for tests).
  void wait_for_builds();

  // Builds run so far by this object, and PCHs discarded.
  int builds() const;
  int discards() const;

 private:
  // State the background builds share with this object (which may be gone by
  // the time a build ends: a test's own CodeCache).
  struct Shared;

  std::string key(const std::string& prelude, const std::vector<std::string>& flags,
                  const std::vector<std::string>& include_dirs) const;
  static void remove_old_pchs(const std::filesystem::path& root,
                              const std::filesystem::path& keep);

  std::filesystem::path root_;
  Toolchain toolchain_;
  bool enabled_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace ignis::runtime
