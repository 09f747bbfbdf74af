// Scalar types, their properties, and PyTorch's type-promotion lattice.
#pragma once

#include <cstdint>
#include <string>

#include "ignis/core/half.h"

namespace ignis {

// The storage of one complex element: real part, then imaginary part, as
// C's `float _Complex` and NumPy's complex64 lay it out. ignis computes on
// complex tensors through real views of them (ops/complex.cpp), so this type
// only sizes and copies elements.
template <typename T>
struct alignas(2 * sizeof(T)) Complex {
  T re, im;
};

// The order matters only for tables indexed by ScalarType.
#define IGNIS_FORALL_SCALAR_TYPES(_) \
  _(bool, Bool)                      \
  _(uint8_t, UInt8)                  \
  _(int8_t, Int8)                    \
  _(int16_t, Int16)                  \
  _(int32_t, Int32)                  \
  _(int64_t, Int64)                  \
  _(::ignis::Half, Float16)          \
  _(::ignis::BFloat16, BFloat16)     \
  _(float, Float32)                  \
  _(double, Float64)                 \
  _(::ignis::Complex<float>, ComplexFloat) \
  _(::ignis::Complex<double>, ComplexDouble)

enum class ScalarType : int8_t {
#define IGNIS_ENUM(ctype, name) name,
  IGNIS_FORALL_SCALAR_TYPES(IGNIS_ENUM)
#undef IGNIS_ENUM
      NumTypes,
  Undefined = -1,
};
constexpr int kNumScalarTypes = static_cast<int>(ScalarType::NumTypes);

size_t element_size(ScalarType t);
// The name PyTorch prints after "torch.": float32, int64, bool, ...
const char* dtype_name(ScalarType t);
// PyTorch's C++ name, used in its error messages: Float, Long, Bool, ...
const char* scalar_type_name(ScalarType t);
std::string to_string(ScalarType t);
bool parse_dtype_name(const std::string& s, ScalarType* out);

inline bool is_floating(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 ||
         t == ScalarType::Float32 || t == ScalarType::Float64;
}
inline bool is_complex(ScalarType t) {
  return t == ScalarType::ComplexFloat || t == ScalarType::ComplexDouble;
}
// complex64 <-> float32, complex128 <-> float64 (torch's toRealValueType /
// toComplexType; 16-bit floats widen to complex64, having no complex type).
inline ScalarType to_real_type(ScalarType t) {
  return t == ScalarType::ComplexFloat ? ScalarType::Float32
         : t == ScalarType::ComplexDouble ? ScalarType::Float64 : t;
}
inline ScalarType to_complex_type(ScalarType t) {
  return t == ScalarType::Float64 || t == ScalarType::ComplexDouble ? ScalarType::ComplexDouble
                                                                      : ScalarType::ComplexFloat;
}
// float16 and bfloat16: stored in 16 bits, computed in float (opmath_dtype).
inline bool is_reduced_float(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16;
}
// The dtype arithmetic on t runs in (opmath_t's ScalarType): float32 for
// 16-bit floats, t itself otherwise.
inline ScalarType opmath_dtype(ScalarType t) {
  return is_reduced_float(t) ? ScalarType::Float32 : t;
}
inline bool is_integral(ScalarType t, bool include_bool) {
  return (t >= ScalarType::UInt8 && t <= ScalarType::Int64) ||
         (include_bool && t == ScalarType::Bool);
}
inline bool is_signed(ScalarType t) {
  return t != ScalarType::Bool && t != ScalarType::UInt8;
}

// promote_types(a, b): the smallest type both a and b convert to safely.
ScalarType promote_types(ScalarType a, ScalarType b);

// Process-wide default floating dtype (torch.get_default_dtype).
ScalarType default_dtype();
void set_default_dtype(ScalarType t);

template <typename T> struct CppTypeToScalarType;
#define IGNIS_SPECIALIZE(ctype, name)                                \
  template <> struct CppTypeToScalarType<ctype> {                    \
    static constexpr ScalarType value = ScalarType::name;            \
  };
IGNIS_FORALL_SCALAR_TYPES(IGNIS_SPECIALIZE)
#undef IGNIS_SPECIALIZE

// opmath_t: the type arithmetic is carried out in (float for 16-bit floats).
template <typename T> struct OpMath { using type = T; };
template <> struct OpMath<Half> { using type = float; };
template <> struct OpMath<BFloat16> { using type = float; };
template <typename T> using opmath_t = typename OpMath<T>::type;

}  // namespace ignis

// Dispatch a runtime ScalarType to a templated lambda body. Inside the body,
// `scalar_t` names the C++ type. Each macro lists the types it accepts; any
// other dtype raises NotImplementedError naming the op, as PyTorch does.
#define IGNIS_DTYPE_CASE(ctype, name, ...) \
  case ::ignis::ScalarType::name: {        \
    using scalar_t = ctype;                \
    return __VA_ARGS__();                  \
  }

#define IGNIS_DISPATCH_SWITCH(TYPE, OPNAME, CASES)                                  \
  [&] {                                                                          \
    switch (TYPE) {                                                              \
      CASES                                                                      \
      default:                                                                   \
        IGNIS_FAIL_KIND(NotImplemented, "\"", OPNAME, "\" not implemented for '", \
                        ::ignis::scalar_type_name(TYPE), "'");                   \
    }                                                                            \
  }()

#define IGNIS_CASES_FLOAT(...)                                 \
  IGNIS_DTYPE_CASE(float, Float32, __VA_ARGS__)                \
  IGNIS_DTYPE_CASE(double, Float64, __VA_ARGS__)               \
  IGNIS_DTYPE_CASE(::ignis::Half, Float16, __VA_ARGS__)        \
  IGNIS_DTYPE_CASE(::ignis::BFloat16, BFloat16, __VA_ARGS__)

#define IGNIS_CASES_INT(...)                         \
  IGNIS_DTYPE_CASE(uint8_t, UInt8, __VA_ARGS__)      \
  IGNIS_DTYPE_CASE(int8_t, Int8, __VA_ARGS__)        \
  IGNIS_DTYPE_CASE(int16_t, Int16, __VA_ARGS__)      \
  IGNIS_DTYPE_CASE(int32_t, Int32, __VA_ARGS__)      \
  IGNIS_DTYPE_CASE(int64_t, Int64, __VA_ARGS__)

#define IGNIS_DISPATCH_FLOAT(TYPE, NAME, ...) \
  IGNIS_DISPATCH_SWITCH(TYPE, NAME, IGNIS_CASES_FLOAT(__VA_ARGS__))
#define IGNIS_DISPATCH_INT(TYPE, NAME, ...) \
  IGNIS_DISPATCH_SWITCH(TYPE, NAME, IGNIS_CASES_INT(__VA_ARGS__))
#define IGNIS_DISPATCH_INT_AND_BOOL(TYPE, NAME, ...)                    \
  IGNIS_DISPATCH_SWITCH(TYPE, NAME, IGNIS_CASES_INT(__VA_ARGS__)        \
                                        IGNIS_DTYPE_CASE(bool, Bool, __VA_ARGS__))
#define IGNIS_DISPATCH_NUMERIC(TYPE, NAME, ...) \
  IGNIS_DISPATCH_SWITCH(TYPE, NAME, IGNIS_CASES_FLOAT(__VA_ARGS__) IGNIS_CASES_INT(__VA_ARGS__))
#define IGNIS_DISPATCH_ALL(TYPE, NAME, ...)                               \
  IGNIS_DISPATCH_SWITCH(TYPE, NAME, IGNIS_CASES_FLOAT(__VA_ARGS__)        \
                                        IGNIS_CASES_INT(__VA_ARGS__)      \
                                            IGNIS_DTYPE_CASE(bool, Bool, __VA_ARGS__))
