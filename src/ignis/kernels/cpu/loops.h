// Inner loops for elementwise kernels, built on TensorIterator.
//
// cpu_kernel<out_t, in_t...>(iter, f) runs f over every element: f takes the
// inputs in their op-math type (float for 16-bit floats) and returns the
// output value. Contiguous and scalar-broadcast inner loops are written as
// plain counted loops so that the compiler vectorises them.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "ignis/core/dtype.h"
#include "ignis/kernels/cpu/tensor_iterator.h"

namespace ignis::cpu {

template <typename T>
inline opmath_t<T> load(const char* p) {
  return static_cast<opmath_t<T>>(*reinterpret_cast<const T*>(p));
}

template <typename out_t, typename F>
struct NullaryLoop {
  static void run(char** data, const int64_t* strides, int64_t n, void* ctx) {
    F& f = *static_cast<F*>(ctx);
    out_t* __restrict o = reinterpret_cast<out_t*>(data[0]);
    if (strides[0] == sizeof(out_t)) {
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<out_t>(f());
    } else {
      char* op = data[0];
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<out_t*>(op + i * strides[0]) = static_cast<out_t>(f());
    }
  }
};

// Note [Flattened loops]
// The unary, binary and ternary loops inline everything they call
// (`flatten`): GCC's inliner left some kernels' functors a call per element
// -- a lambda around vec_math.h's vpow or vexpm1 (F.elu), bodies of a few
// hundred instructions -- and a loop with a call in it stays scalar (4M
// floats at two threads: F.elu 14.6 -> 2.3 ms, pow 40 -> 5.8 ms once pow was
// vpow). The functors are scalar code over vec_math.h and scalar_ops.h,
// always meant to be inlined.
#define IGNIS_FLATTEN __attribute__((flatten))

template <typename out_t, typename in_t, typename F>
struct UnaryLoop {
  IGNIS_FLATTEN static void run(char** data, const int64_t* strides, int64_t n, void* ctx) {
    F& f = *static_cast<F*>(ctx);
    if (strides[0] == sizeof(out_t) && strides[1] == sizeof(in_t)) {
      out_t* __restrict o = reinterpret_cast<out_t*>(data[0]);
      const in_t* __restrict a = reinterpret_cast<const in_t*>(data[1]);
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<out_t>(f(static_cast<opmath_t<in_t>>(a[i])));
    } else {
      char *op = data[0], *ap = data[1];
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<out_t*>(op + i * strides[0]) =
            static_cast<out_t>(f(load<in_t>(ap + i * strides[1])));
    }
  }
};

template <typename out_t, typename in_t, typename F>
struct BinaryLoop {
  IGNIS_FLATTEN static void run(char** data, const int64_t* strides, int64_t n, void* ctx) {
    F& f = *static_cast<F*>(ctx);
    using op_t = opmath_t<in_t>;
    out_t* __restrict o = reinterpret_cast<out_t*>(data[0]);
    const in_t* __restrict a = reinterpret_cast<const in_t*>(data[1]);
    const in_t* __restrict b = reinterpret_cast<const in_t*>(data[2]);
    if (strides[0] == sizeof(out_t)) {
      if (strides[1] == sizeof(in_t) && strides[2] == sizeof(in_t)) {
        for (int64_t i = 0; i < n; ++i)
          o[i] = static_cast<out_t>(f(static_cast<op_t>(a[i]), static_cast<op_t>(b[i])));
        return;
      }
      if (strides[1] == sizeof(in_t) && strides[2] == 0) {
        const op_t bv = static_cast<op_t>(b[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<out_t>(f(static_cast<op_t>(a[i]), bv));
        return;
      }
      if (strides[1] == 0 && strides[2] == sizeof(in_t)) {
        const op_t av = static_cast<op_t>(a[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<out_t>(f(av, static_cast<op_t>(b[i])));
        return;
      }
    }
    char *op = data[0], *ap = data[1], *bp = data[2];
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<out_t*>(op + i * strides[0]) = static_cast<out_t>(
          f(load<in_t>(ap + i * strides[1]), load<in_t>(bp + i * strides[2])));
  }
};

template <typename out_t, typename in_t, typename F>
struct TernaryLoop {
  IGNIS_FLATTEN static void run(char** data, const int64_t* strides, int64_t n, void* ctx) {
    F& f = *static_cast<F*>(ctx);
    char *op = data[0], *ap = data[1], *bp = data[2], *cp = data[3];
    if (strides[0] == sizeof(out_t) && strides[1] == sizeof(in_t) && strides[2] == sizeof(in_t) &&
        strides[3] == sizeof(in_t)) {
      out_t* __restrict o = reinterpret_cast<out_t*>(op);
      const in_t* __restrict a = reinterpret_cast<const in_t*>(ap);
      const in_t* __restrict b = reinterpret_cast<const in_t*>(bp);
      const in_t* __restrict c = reinterpret_cast<const in_t*>(cp);
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<out_t>(f(static_cast<opmath_t<in_t>>(a[i]), static_cast<opmath_t<in_t>>(b[i]),
                                    static_cast<opmath_t<in_t>>(c[i])));
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      *reinterpret_cast<out_t*>(op + i * strides[0]) = static_cast<out_t>(
          f(load<in_t>(ap + i * strides[1]), load<in_t>(bp + i * strides[2]),
            load<in_t>(cp + i * strides[3])));
  }
};

// Runs f over the iterator: the number of inputs picks the loop.
template <typename out_t, typename in_t, typename F>
void cpu_kernel(TensorIterator& iter, F f) {
  using T = opmath_t<in_t>;
  IGNIS_INTERNAL_ASSERT(iter.noutputs() == 1);
  const int nin = iter.ntensors() - 1;
  if constexpr (std::is_invocable_v<F>) {
    IGNIS_INTERNAL_ASSERT(nin == 0);
    iter.for_each(&NullaryLoop<out_t, F>::run, &f);
  } else if constexpr (std::is_invocable_v<F, T>) {
    IGNIS_INTERNAL_ASSERT(nin == 1);
    iter.for_each(&UnaryLoop<out_t, in_t, F>::run, &f);
  } else if constexpr (std::is_invocable_v<F, T, T>) {
    IGNIS_INTERNAL_ASSERT(nin == 2);
    iter.for_each(&BinaryLoop<out_t, in_t, F>::run, &f);
  } else {
    static_assert(std::is_invocable_v<F, T, T, T>, "kernel functor takes 0 to 3 arguments");
    IGNIS_INTERNAL_ASSERT(nin == 3);
    iter.for_each(&TernaryLoop<out_t, in_t, F>::run, &f);
  }
  iter.finish();
}

}  // namespace ignis::cpu
