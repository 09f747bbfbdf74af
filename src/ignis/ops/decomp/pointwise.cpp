// Pointwise decompositions: activations (and gelu's derivative) and the
// binary/ternary ops that are formulas over core pointwise ops. Each
// computes in the op-math type of its result and is rounded once, as the
// fused kernels compute (torch's decompositions do the same through
// pw_cast_for_opmath). Constants and formulas follow ops/unary.cpp,
// ops/nn.cpp and ops/ternary.cpp.
#include <cmath>

#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
constexpr double kSqrtHalf = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kGeluK = 0.79788456080286535588;       // sqrt(2 / pi)
constexpr double kGeluA = 0.044715;

bool is_one(const Scalar& v) { return v.to_double() == 1.0; }
}  // namespace

void silu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = up(a.tensor(0), a.dtype());
  a.ret(mul(x, op("sigmoid", x)));
}

void mish(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = up(a.tensor(0), a.dtype());
  a.ret(mul(x, op("tanh", op("log1p", op("exp", x)))));
}

// square of bool is int64 (PyTorch promotes it with an integer 2).
void square(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = convert(a.tensor(0), a.dtype());
  a.ret(mul(x, x));
}

void frac(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = up(a.tensor(0), a.dtype());
  a.ret(sub(x, op("trunc", x)));
}

// 0.5 x (1 + erf(x / sqrt 2)), or with approximate='tanh'
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
void gelu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = up(a.tensor(0), a.dtype());
  Tensor t;
  if (a.str(1) == "tanh") {
    Tensor cube = mul(mul(mul(x, kGeluA), x), x);
    t = op("tanh", mul(add(x, cube), kGeluK));
  } else {
    t = op("erf", mul(x, kSqrtHalf));
  }
  a.ret(mul(mul(x, 0.5), add(t, scalar(1.0))));
}

// grad * d gelu(x) / dx: Phi(x) + x phi(x) for the erf form; for tanh,
// 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2).
void gelu_backward(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor g = up(a.tensor(0), a.dtype()), x = up(a.tensor(1), a.dtype());
  Tensor d;
  if (a.str(2) == "tanh") {
    Tensor x2 = mul(x, x);
    Tensor t = op("tanh", mul(add(x, mul(mul(x2, x), kGeluA)), kGeluK));
    Tensor left = mul(add(t, scalar(1.0)), 0.5);
    Tensor dinner = mul(add(mul(x2, 3 * kGeluA), scalar(1.0)), kGeluK);
    Tensor right = mul(mul(mul(x, 0.5), sub(scalar(1.0), mul(t, t))), dinner);
    d = add(left, right);
  } else {
    Tensor cdf = mul(add(op("erf", mul(x, kSqrtHalf)), scalar(1.0)), 0.5);
    Tensor pdf = mul(op("exp", mul(mul(x, x), -0.5)), kInvSqrt2Pi);
    d = add(cdf, mul(x, pdf));
  }
  a.ret(mul(g, d));
}

// softplus(x, beta, threshold): x where beta x > threshold, else
// log(1 + exp(beta x)) / beta.
void softplus(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor x = up(a.tensor(0), dt);
  Tensor beta = wrapped_as(a.scalar(1), dt);
  Tensor bx = is_one(a.scalar(1)) ? x : mul(x, beta);
  Tensor soft = op("log1p", op("exp", bx));
  if (!is_one(a.scalar(1))) soft = div(soft, beta);
  a.ret(where(cmp("gt", bx, wrapped_as(a.scalar(2), dt)), x, soft));
}

void leaky_relu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor x = up(a.tensor(0), dt);
  a.ret(where(cmp("gt", x, scalar(0.0)), x, mul(x, wrapped_as(a.scalar(1), dt))));
}

// elu(x, alpha, scale, input_scale): scale x where x > 0, else
// alpha scale (exp(input_scale x) - 1).
void elu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor x = up(a.tensor(0), dt);
  const Scalar scale = a.scalar(2), in_scale = a.scalar(3);
  const double neg_scale = a.scalar(1).to_double() * scale.to_double();
  Tensor pos = is_one(scale) ? x : mul(x, wrapped_as(scale, dt));
  Tensor e = op("expm1", is_one(in_scale) ? x : mul(x, wrapped_as(in_scale, dt)));
  a.ret(where(cmp("gt", x, scalar(0.0)), pos, mul(e, neg_scale)));
}

// log(sigmoid(x)) = min(x, 0) - log(1 + exp(-|x|)), which never overflows.
void logsigmoid(const OpHandle& o, Stack& s) {
  Args a(o, s);
  Tensor x = up(a.tensor(0), a.dtype());
  Tensor tail = op("log1p", op("exp", neg(op("abs", x))));
  a.ret(sub(op("minimum", x, scalar(0.0)), tail));
}

void hardtanh(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  a.ret(clamp(a.tensor(0), wrapped_as(a.scalar(1), dt), wrapped_as(a.scalar(2), dt)));
}

// glu(x, dim): first half * sigmoid(second half) along dim.
void glu(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& x = a.tensor(0);
  const int64_t dim = wrap_dim(a.int_arg(1), x.dim()), n = x.size(dim);
  Tensor first = up(slice(x, dim, 0, n / 2), a.dtype());
  Tensor second = up(slice(x, dim, n / 2, n), a.dtype());
  a.ret(mul(first, op("sigmoid", second)));
}

// rsub(self, other, alpha) = other - alpha * self: sub with the operands
// swapped (same promotion, same formula in the kernel).
void rsub(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(OpRef("sub").tensor(a.tensor(1), a.tensor(0), a.scalar(2)));
}

// PyTorch defines floor_divide as div(rounding_mode='floor').
void floor_divide(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(OpRef("div").tensor(a.tensor(0), a.tensor(1), std::string("floor")));
}

void clamp_min(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(clamp(a.tensor(0), a.tensor(1), Tensor()));
}

void clamp_max(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(clamp(a.tensor(0), Tensor(), a.tensor(1)));
}

// lerp(self, end, weight): PyTorch's two-sided formula, exact at weight 0
// and 1: self + w (end - self) for |w| < 0.5, else end - (end - self)(1 - w).
void lerp(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor x = up(a.tensor(0), dt), e = up(a.tensor(1), dt), w = up(a.tensor(2), dt);
  Tensor d = sub(e, x);
  if (w.impl()->is_wrapped_number()) {
    // A Python number: pick the side here.
    const double wv = w.item_double();
    a.ret(std::abs(wv) < 0.5 ? add(x, mul(d, wv)) : sub(e, mul(d, 1.0 - wv)));
    return;
  }
  Tensor low = add(x, mul(w, d));
  Tensor high = sub(e, mul(d, sub(scalar(1.0), w)));
  a.ret(where(cmp("lt", op("abs", w), scalar(0.5)), low, high));
}

// self + value * tensor1 * tensor2, multiplied in the kernel's order.
void addcmul(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor t1 = up(a.tensor(1), dt);
  if (!is_one(a.scalar(3))) t1 = mul(t1, wrapped_as(a.scalar(3), dt));
  a.ret(add(up(a.tensor(0), dt), mul(t1, up(a.tensor(2), dt))));
}

// self + value * tensor1 / tensor2.
void addcdiv(const OpHandle& o, Stack& s) {
  Args a(o, s);
  ScalarType dt = a.dtype();
  Tensor t1 = up(a.tensor(1), dt);
  if (!is_one(a.scalar(3))) t1 = mul(t1, wrapped_as(a.scalar(3), dt));
  a.ret(add(up(a.tensor(0), dt), div(t1, up(a.tensor(2), dt))));
}

// The value takes self's dtype (it never promotes the result).
void masked_fill(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const Tensor& self = a.tensor(0);
  a.ret(where(a.tensor(1), convert(a.tensor(2), self.dtype()), self));
}

// Shifts as arithmetic on the result's integer type, which wraps as the
// shifted bits do: a << b = a * 2^b and a >> b = floor(a / 2^b) for counts
// in range; out of range, 0 (left) or the sign (right). A signed right
// shift by width - 1 is out of range too, as 2^(width - 1) does not fit.
void bitwise_shift(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const ScalarType dt = a.dtype();
  const bool left = a.name() == "bitwise_left_shift";
  const bool is_signed = dt != ScalarType::UInt8;
  const int64_t bits = int64_t(element_size(dt)) * 8;
  const int64_t top = left || !is_signed ? bits - 1 : bits - 2;
  Tensor x = convert(a.tensor(0), dt), n = convert(a.tensor(1), dt);
  Tensor in_range = OpRef("logical_and").tensor(cmp("ge", n, wrapped_as(0, dt)),
                                                cmp("le", n, wrapped_as(top, dt)));
  Tensor p = pow(wrapped_as(2, dt), clamp(n, wrapped_as(0, dt), wrapped_as(top, dt)));
  Tensor shifted = left ? mul(x, p) : OpRef("div").tensor(x, p, std::string("floor"));
  Tensor out_value = left || !is_signed
                         ? wrapped_as(0, dt)
                         : convert(where(cmp("lt", x, wrapped_as(0, dt)), wrapped_as(-1, dt),
                                         wrapped_as(0, dt)), dt);
  a.ret(where(in_range, shifted, out_value));
}

}  // namespace ignis::decomp
