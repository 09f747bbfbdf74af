// SHA-256 (FIPS 180-4): the content hash of the on-disk caches.
//
// The caches name entries by this hash and check every entry against it before
// trusting it, so it has to be a real cryptographic hash (a 64-bit hash would
// let two kernels collide by accident in a large cache). Test vectors from
// FIPS 180-4 / NIST are in tests/cpp/test_code_cache.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ignis::runtime {

using Sha256Digest = std::array<uint8_t, 32>;

// Incremental hashing: update() any number of times, then digest() once.
class Sha256 {
 public:
  Sha256();
  Sha256& update(const void* data, size_t size);
  Sha256& update(std::string_view s) { return update(s.data(), s.size()); }
  // Appends the length as 8 bytes before the bytes: a sequence of fields
  // hashed this way cannot be re-split into different fields with the same
  // hash input ("ab"+"c" vs "a"+"bc").
  Sha256& update_field(std::string_view s);
  // Finishes the hash; the object must not be updated afterwards.
  Sha256Digest digest();
  std::string hex_digest() { return to_hex(digest()); }

  static std::string to_hex(const Sha256Digest& d);

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

// The lowercase hex SHA-256 of `data` (64 characters).
std::string sha256_hex(std::string_view data);

}  // namespace ignis::runtime
