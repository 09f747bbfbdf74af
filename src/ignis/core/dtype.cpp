#include "ignis/core/dtype.h"

#include <atomic>

#include "ignis/core/error.h"

namespace ignis {

size_t element_size(ScalarType t) {
  switch (t) {
#define IGNIS_SIZE(ctype, name) \
  case ScalarType::name:        \
    return sizeof(ctype);
    IGNIS_FORALL_SCALAR_TYPES(IGNIS_SIZE)
#undef IGNIS_SIZE
    default:
      IGNIS_INTERNAL_ASSERT(false, "element_size of undefined dtype");
  }
}

const char* dtype_name(ScalarType t) {
  static const char* names[] = {"bool",    "uint8",    "int8",     "int16",   "int32",
                                "int64",   "float16",  "bfloat16", "float32", "float64",
                                "complex64", "complex128"};
  static_assert(sizeof(names) / sizeof(names[0]) == kNumScalarTypes);
  if (t == ScalarType::Undefined) return "undefined";
  return names[static_cast<int>(t)];
}

const char* scalar_type_name(ScalarType t) {
  static const char* names[] = {"Bool", "Byte", "Char",     "Short", "Int",
                                "Long", "Half", "BFloat16", "Float", "Double",
                                "ComplexFloat", "ComplexDouble"};
  static_assert(sizeof(names) / sizeof(names[0]) == kNumScalarTypes);
  if (t == ScalarType::Undefined) return "Undefined";
  return names[static_cast<int>(t)];
}

std::string to_string(ScalarType t) { return std::string("ignis.") + dtype_name(t); }

bool parse_dtype_name(const std::string& s, ScalarType* out) {
  struct Alias { const char* name; ScalarType t; };
  static const Alias aliases[] = {
      {"bool", ScalarType::Bool},       {"uint8", ScalarType::UInt8},
      {"int8", ScalarType::Int8},       {"int16", ScalarType::Int16},
      {"short", ScalarType::Int16},     {"int32", ScalarType::Int32},
      {"int", ScalarType::Int32},       {"int64", ScalarType::Int64},
      {"long", ScalarType::Int64},      {"float16", ScalarType::Float16},
      {"half", ScalarType::Float16},    {"bfloat16", ScalarType::BFloat16},
      {"float32", ScalarType::Float32}, {"float", ScalarType::Float32},
      {"float64", ScalarType::Float64}, {"double", ScalarType::Float64},
      {"complex64", ScalarType::ComplexFloat}, {"cfloat", ScalarType::ComplexFloat},
      {"complex128", ScalarType::ComplexDouble}, {"cdouble", ScalarType::ComplexDouble},
  };
  for (const auto& a : aliases) {
    if (s == a.name) {
      *out = a.t;
      return true;
    }
  }
  return false;
}

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  constexpr auto b1 = ScalarType::Bool, u1 = ScalarType::UInt8, i1 = ScalarType::Int8,
                 i2 = ScalarType::Int16, i4 = ScalarType::Int32, i8 = ScalarType::Int64,
                 f2 = ScalarType::Float16, bf = ScalarType::BFloat16,
                 f4 = ScalarType::Float32, f8 = ScalarType::Float64,
                 c4 = ScalarType::ComplexFloat, c8 = ScalarType::ComplexDouble;
  // Same table as PyTorch's c10::promoteTypes restricted to these types.
  static constexpr ScalarType table[kNumScalarTypes][kNumScalarTypes] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8  c4  c8 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8, c4, c8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8, c4, c8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8, c4, c8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8, c4, c8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8, c4, c8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8},
      /* c4 */ {c4, c4, c4, c4, c4, c4, c4, c4, c4, c8, c4, c8},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

static std::atomic<ScalarType> g_default_dtype{ScalarType::Float32};
ScalarType default_dtype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  IGNIS_CHECK_TYPE(t == ScalarType::Float32 || t == ScalarType::Float64 ||
                       t == ScalarType::Float16 || t == ScalarType::BFloat16,
                   "only floating-point types are supported as the default type, got ",
                   dtype_name(t));
  g_default_dtype.store(t);
}

}  // namespace ignis
