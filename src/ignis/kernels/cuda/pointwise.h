// Pointwise ops on CUDA tensors: the GPU side of TensorIterator.
//
// The op's meta rule builds the same TensorIterator as on the CPU
// (broadcasting, type promotion, output allocation and layout, dim
// coalescing; on CUDA the inputs keep their dtypes and the kernel converts
// them as it loads, exactly as the CPU's cast would). pointwise() then runs
// one generated kernel over it:
//   * contiguous operands, aligned: each thread reads and writes vectors of
//     up to 16 bytes (4 floats, 8 halves), two vectors an iteration (both
//     loads issued before either store), then a scalar tail;
//   * a contiguous fastest dim of whole aligned vectors in every operand
//     (or broadcast along it), any outer strides (a row-broadcast operand:
//     x + b): vectors too, their offsets from the outer dims;
//   * otherwise: a grid-stride loop whose offsets come from the coalesced
//     sizes and byte strides, in 32-bit index math when every offset fits,
//     else in 64-bit.
// CPU 0-dim inputs (Python numbers, CPU scalars) and the op's Scalar
// arguments are kernel arguments, so one compiled kernel serves every value.
// The kernel's body is the op's scalar function from kernels/scalar_ops.h
// (device_scalar_ops.h); its source is compiled by NVRTC on first use and
// cached by source hash (cuda/kernel_cache.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ignis/core/scalar.h"

namespace ignis {
class TensorIterator;
}

namespace ignis::cuda {

struct KernelRequest;  // cuda/kernel_cache.h (kept out of the op files that include this)

// One call: which scalar function runs on the iterator, in which dtype.
struct PointwiseOp {
  std::string fn;  // the scalar function's name (scalar_ops::Add::name: "add")
  // The dtype the CPU kernel instantiates (its scalar_t): inputs are
  // converted to it, arithmetic runs in its op-math type (float for 16-bit
  // floats), the result is converted to the output's dtype.
  ScalarType compute = ScalarType::Undefined;
  std::vector<Scalar> scalars;  // the function's trailing arguments (add's alpha)
  int nargs = -1;               // the iterator inputs it reads, from the first (-1: all)
};

void pointwise(TensorIterator& it, const PointwiseOp& op);

// ---- the generated source (also for tests that compile every variant) ----
// Vectorized: contiguous operands, V elements a vector. VectorRows: the
// fastest dim is contiguous (or broadcast: stride 0) in every operand and
// holds whole aligned vectors; the other dims any strides (32-bit offsets):
// a row-broadcast operand (x + b[n]) keeps 16-byte accesses. Strided32/64:
// one element at a time, offsets in 32 or 64 bits.
enum class PointwiseLayout : uint8_t { Vectorized, VectorRows, Strided32, Strided64 };

struct PointwiseKernel {
  std::string fn;
  ScalarType compute = ScalarType::Undefined;
  ScalarType out = ScalarType::Undefined;
  // Per input of fn: its dtype, or Undefined for a value passed as a kernel
  // argument (already in the op-math type).
  std::vector<ScalarType> inputs;
  int nscalars = 0;
  PointwiseLayout layout = PointwiseLayout::Strided32;
  int vec = 1;  // elements a vector (Vectorized, VectorRows)
};
KernelRequest pointwise_kernel(const PointwiseKernel& k);

// The kernels a pointwise op's declaration can ask for, recorded as ops are
// registered (ops/pointwise.h's declare_cuda_pointwise), so that a test can build
// the source of every (function, dtype) variant without a GPU.
struct PointwiseDecl {
  std::string op;     // the op's name, for messages
  std::string fn;     // scalar function
  int nargs = 1;      // tensor inputs the function reads
  int nscalars = 0;   // its trailing Scalar arguments
  uint32_t dtypes = 0;  // bit t: dtype t is accepted as the compute dtype
  bool bool_out = false;
};
void declare_pointwise(PointwiseDecl d);
const std::vector<PointwiseDecl>& declared_pointwise();

// Dtype sets as the CPU's dispatch macros spell them (core/dtype.h).
constexpr uint32_t dtype_bit(ScalarType t) { return uint32_t(1) << static_cast<int>(t); }
inline constexpr uint32_t kFloatDtypes = dtype_bit(ScalarType::Float16) |
                                         dtype_bit(ScalarType::BFloat16) |
                                         dtype_bit(ScalarType::Float32) |
                                         dtype_bit(ScalarType::Float64);
inline constexpr uint32_t kIntDtypes =
    dtype_bit(ScalarType::UInt8) | dtype_bit(ScalarType::Int8) | dtype_bit(ScalarType::Int16) |
    dtype_bit(ScalarType::Int32) | dtype_bit(ScalarType::Int64);
inline constexpr uint32_t kNumericDtypes = kFloatDtypes | kIntDtypes;
inline constexpr uint32_t kIntBoolDtypes = kIntDtypes | dtype_bit(ScalarType::Bool);
inline constexpr uint32_t kAllDtypes = kNumericDtypes | dtype_bit(ScalarType::Bool);
// Raises the CPU dispatch's NotImplementedError ("\"exp\" not implemented
// for 'Int'") when `t` is not in `dtypes`.
void check_dtype(uint32_t dtypes, ScalarType t, const char* op);

}  // namespace ignis::cuda
