// Text: the string builder the compiler writes code and IR listings with.
//
// Numbers are formatted with std::to_string, not std::ostream: on the GPU
// host's toolchain (GCC 13), inserting an integer into a std::ostringstream
// inside _C crashed in libstdc++'s num_put (generate_cpp, 2026-12-01), while
// std::to_string has no locale machinery to go wrong.
#pragma once

#include <concepts>
#include <string>

namespace ignis::compiler {

class Text {
 public:
  Text& operator<<(const std::string& s) {
    s_ += s;
    return *this;
  }
  Text& operator<<(const char* s) {
    s_ += s;
    return *this;
  }
  Text& operator<<(char c) {
    s_ += c;
    return *this;
  }
  template <std::integral T>
    requires(!std::same_as<T, char> && !std::same_as<T, bool>)
  Text& operator<<(T v) {
    s_ += std::to_string(v);
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

}  // namespace ignis::compiler
