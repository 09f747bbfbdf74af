// The graph cache: a small key-value store beside the code cache, mapping
// the structural hash of a graph to the key of its compiled library and a
// metadata blob (the compiler's description of its wrapper), so that a new
// process can skip lowering and code generation.
//
//   <dir>/graphs/<k[0:2]>/<k>.graph   k = SHA-256 of (format, toolchain
//                                     fingerprint, graph hash)
//
// The toolchain is part of k because a hit skips code generation: an entry
// made for another CPU or compiler must not be found. A file holds a magic
// string, the graph hash, the code key and the metadata (each
// length-prefixed) and ends with the SHA-256 of all that; get() checks it
// and treats a bad file as a miss. Files are published by rename (Note
// [Cache files are published by rename]); when two processes put the same
// graph, the last rename wins and both entries are valid.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "ignis/runtime/code_cache.h"

namespace ignis::runtime {

struct GraphCacheEntry {
  // The CodeCache key of the graph's library (CodeCache::load_cached).
  std::string code_key;
  // Whatever the compiler needs to rebuild its wrapper; opaque bytes here.
  std::string metadata;
};

class GraphCache {
 public:
  // Uses the directory and the toolchain of `code_cache`.
  explicit GraphCache(const CodeCache& code_cache);

  // The entry for `graph_hash`, or nullopt when there is none or it is
  // invalid (truncated, corrupt, or made for another graph hash).
  std::optional<GraphCacheEntry> get(std::string_view graph_hash) const;
  void put(std::string_view graph_hash, const GraphCacheEntry& entry) const;

  std::filesystem::path path_for(std::string_view graph_hash) const;

 private:
  std::filesystem::path dir_;
  std::string fingerprint_;
};

}  // namespace ignis::runtime
