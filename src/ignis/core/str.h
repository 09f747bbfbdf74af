// ignis::str(parts...): concatenates strings and numbers into a std::string.
//
// The runtime never uses iostreams: a toolchain that links libstdc++
// statically into the extension (the GPU machine's does) may leave the
// iostream locale uninitialised, and the first `os << 42` then crashes.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

namespace ignis {

namespace detail {
inline void put(std::string& s, std::string_view v) { s.append(v.data(), v.size()); }
inline void put(std::string& s, const std::string& v) { s += v; }
inline void put(std::string& s, const char* v) { s += v; }
inline void put(std::string& s, char c) { s += c; }
inline void put(std::string& s, bool b) { s += b ? "True" : "False"; }
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>)
void put(std::string& s, T v) {
  s += std::to_string(v);
}
template <typename T>
  requires std::is_floating_point_v<T>
void put(std::string& s, T v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.10g", static_cast<double>(v));
  s += buf;
}
}  // namespace detail

template <typename... Args>
std::string str(const Args&... parts) {
  std::string s;
  (detail::put(s, parts), ...);
  return s;
}

// Stream-style builder for code that appends piece by piece.
class StrBuilder {
 public:
  template <typename T>
  StrBuilder& operator<<(const T& v) {
    detail::put(s_, v);
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

}  // namespace ignis
