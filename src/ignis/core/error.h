// Errors raised by the runtime.
//
// User errors (bad shapes, dtypes, indices, argument types) throw one of the
// typed exceptions below; the Python layer maps each to the Python exception
// PyTorch raises for the same mistake. Internal invariants use
// IGNIS_INTERNAL_ASSERT, which throws InternalError: a bug in ignis, never in
// user code.
#pragma once

#include <stdexcept>
#include <string>

#include "ignis/core/str.h"

namespace ignis {

// LinAlg: a factorization that cannot be completed (a singular or
// non-positive-definite input): torch.linalg.LinAlgError, a RuntimeError.
enum class ErrorKind { Runtime, Value, Index, Type, NotImplemented, Internal, LinAlg };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string msg)
      : std::runtime_error(std::move(msg)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Args>
[[noreturn]] void fail(ErrorKind kind, const Args&... args) {
  throw Error(kind, str(args...));
}
}  // namespace detail

}  // namespace ignis

// IGNIS_CHECK(cond, "message parts", ...) throws RuntimeError when cond is false.
#define IGNIS_CHECK_KIND(kind, cond, ...)                        \
  do {                                                           \
    if (__builtin_expect(!(cond), 0))                            \
      ::ignis::detail::fail(::ignis::ErrorKind::kind, __VA_ARGS__); \
  } while (0)

#define IGNIS_CHECK(cond, ...) IGNIS_CHECK_KIND(Runtime, cond, __VA_ARGS__)
#define IGNIS_CHECK_VALUE(cond, ...) IGNIS_CHECK_KIND(Value, cond, __VA_ARGS__)
#define IGNIS_CHECK_INDEX(cond, ...) IGNIS_CHECK_KIND(Index, cond, __VA_ARGS__)
#define IGNIS_CHECK_TYPE(cond, ...) IGNIS_CHECK_KIND(Type, cond, __VA_ARGS__)
#define IGNIS_FAIL(...) ::ignis::detail::fail(::ignis::ErrorKind::Runtime, __VA_ARGS__)
#define IGNIS_FAIL_KIND(kind, ...) ::ignis::detail::fail(::ignis::ErrorKind::kind, __VA_ARGS__)
#define IGNIS_NOT_IMPLEMENTED(...) \
  ::ignis::detail::fail(::ignis::ErrorKind::NotImplemented, __VA_ARGS__)
#define IGNIS_INTERNAL_ASSERT(cond, ...)                                   \
  do {                                                                     \
    if (__builtin_expect(!(cond), 0))                                      \
      ::ignis::detail::fail(::ignis::ErrorKind::Internal, "internal error at ", \
                            __FILE__, ":", __LINE__, ": " #cond " ",        \
                            ##__VA_ARGS__);                                \
  } while (0)
