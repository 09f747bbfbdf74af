// Scalar: a Python number carried into C++ (bool, int or float), keeping its
// kind because type promotion treats each kind differently.
#pragma once

#include <cstdint>
#include <string>

#include "ignis/core/dtype.h"

namespace ignis {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };

  Scalar() : kind_(Kind::Int) { v_.i = 0; }
  Scalar(bool b) : kind_(Kind::Bool) { v_.i = b; }
  Scalar(int v) : kind_(Kind::Int) { v_.i = v; }
  Scalar(int64_t v) : kind_(Kind::Int) { v_.i = v; }
  Scalar(double v) : kind_(Kind::Float) { v_.d = v; }
  Scalar(float v) : kind_(Kind::Float) { v_.d = v; }

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }

  double to_double() const { return kind_ == Kind::Float ? v_.d : double(v_.i); }
  int64_t to_int() const { return kind_ == Kind::Float ? int64_t(v_.d) : v_.i; }
  bool to_bool() const { return kind_ == Kind::Float ? v_.d != 0 : v_.i != 0; }
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(to_int());
    else return static_cast<T>(static_cast<float>(to_double()));
  }
  // The dtype PyTorch gives a Python number of this kind on its own.
  ScalarType natural_dtype() const {
    return kind_ == Kind::Bool ? ScalarType::Bool
           : kind_ == Kind::Int ? ScalarType::Int64
                                : ScalarType::Float64;
  }
  std::string repr() const;

 private:
  Kind kind_;
  union {
    int64_t i;
    double d;
  } v_;
};

template <> inline double Scalar::to<double>() const { return to_double(); }

}  // namespace ignis
