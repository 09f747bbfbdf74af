// The project headers a generated source includes, for the code cache key.
//
// A kernel's machine code depends on the headers it includes as much as on
// its own text: a kernel that calls scalar_ops::Exp must be rebuilt when
// scalar_ops.h changes. System headers (<cmath>) belong to the compiler and
// are covered by its version; quoted includes ("ignis/kernels/scalar_ops.h")
// are found here, followed transitively, and hashed by content.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ignis::runtime {

struct IncludedFile {
  std::string name;    // as written in the #include
  std::string path;    // where it was found
  std::string sha256;  // of its contents
};

// Every `#include "..."` reachable from `source`, each once, sorted by name.
// A name resolves against the including file's directory, then
// `include_dirs` in order. Lines are matched textually (an include inside
// #if 0 still counts: a superset only costs a spurious rebuild); names that
// resolve nowhere are skipped, for the compiler to report.
std::vector<IncludedFile> quoted_includes(std::string_view source,
                                          const std::vector<std::string>& include_dirs);

}  // namespace ignis::runtime
