#include "ignis/runtime/graph_cache.h"

#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace fs = std::filesystem;

namespace ignis::runtime {

namespace {

constexpr std::string_view kMagic = "ignis-graph-cache 1\n";

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += char(uint8_t(v >> (8 * i)));
}

void put_field(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

// Reads one length-prefixed field at `*pos` from `body`; false when it runs
// past the end.
bool get_field(std::string_view body, size_t* pos, std::string* out) {
  if (body.size() - *pos < 8) return false;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(body[*pos + i])) << (8 * i);
  *pos += 8;
  if (n > body.size() - *pos) return false;
  *out = std::string(body.substr(*pos, n));
  *pos += n;
  return true;
}

}  // namespace

GraphCache::GraphCache(const CodeCache& code_cache)
    : dir_(code_cache.dir() / "graphs"), fingerprint_(code_cache.toolchain().fingerprint()) {}

fs::path GraphCache::path_for(std::string_view graph_hash) const {
  Sha256 h;
  h.update_field("ignis-graph-cache").update_field(kMagic);
  h.update_field(fingerprint_).update_field(graph_hash);
  std::string k = h.hex_digest();
  return dir_ / k.substr(0, 2) / (k + ".graph");
}

std::optional<GraphCacheEntry> GraphCache::get(std::string_view graph_hash) const {
  fs::path path = path_for(graph_hash);
  auto text = read_file(path);
  if (!text) return std::nullopt;
  std::string_view all(*text);
  std::string hash, code_key, metadata;
  size_t pos = kMagic.size();
  bool ok = all.size() >= kMagic.size() + 32 && all.substr(0, kMagic.size()) == kMagic;
  if (ok) {
    std::string_view body = all.substr(0, all.size() - 32);
    Sha256Digest d = Sha256().update(body).digest();
    ok = all.substr(body.size()) == std::string_view(reinterpret_cast<const char*>(d.data()), 32) &&
         get_field(body, &pos, &hash) && get_field(body, &pos, &code_key) &&
         get_field(body, &pos, &metadata) && pos == body.size() && hash == graph_hash;
  }
  // A bad file is left in place, not deleted: another process may have just
  // renamed a good one onto that name. The caller's put() replaces it.
  if (!ok) return std::nullopt;
  return GraphCacheEntry{std::move(code_key), std::move(metadata)};
}

void GraphCache::put(std::string_view graph_hash, const GraphCacheEntry& entry) const {
  std::string body(kMagic);
  put_field(body, graph_hash);
  put_field(body, entry.code_key);
  put_field(body, entry.metadata);
  Sha256Digest d = Sha256().update(body).digest();
  body.append(reinterpret_cast<const char*>(d.data()), d.size());
  fs::path path = path_for(graph_hash);
  make_dirs(path.parent_path());
  remove_stale_temps(path.parent_path());
  write_file_atomic(path, body);
}

}  // namespace ignis::runtime
