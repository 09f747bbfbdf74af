// Complex tensors: their ops as real ops on real views.
//
// Note [Complex tensors]
// complex64 and complex128 tensors store (real, imaginary) pairs, as torch
// and NumPy lay them out. ignis has no complex kernels. A complex tensor
// carries the Complex dispatch key, which sits above autograd
// (dispatch_key.h), and the kernels registered here rewrite an op on
// complex tensors into real ops on their real views (view_as_real, select),
// then view the real result as complex again (view_as_complex of the pairs
// stacked on a last dim). Autograd records the real ops, so gradients come
// out in torch's convention -- a real loss's gradient with respect to
// z = x + iy is dL/dx + i dL/dy -- with no complex derivative formulas (the
// two views' derivatives are each other); AOT, capture and the compiler
// see real ops between view_as_real and view_as_complex. View ops need no
// rule (a view keeps its dtype); copies, casts and fills handle complex
// tensors in their kernels (copy.cpp, device_kernels.cpp) through the same
// real views; an op with no rule here falls through to the real kernels,
// whose dtype dispatch raises torch's NotImplementedError ("\"exp\" not
// implemented for 'ComplexFloat'") for what is not written yet. The Python
// functions real, imag, conj, angle, polar and complex (_more_functions.py)
// are written the same way. Unlike torch, conj() copies (torch's is a lazy
// view with a conjugate bit).
#include <string>
#include <unordered_set>
#include <vector>

#include "ignis/dispatch/dispatcher.h"
#include "ignis/kernels/cpu/tensor_iterator.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

OpRef view_as_real_op("view_as_real"), view_as_complex_op("view_as_complex"),
    select_op("select.int"), stack_op("stack"), to_copy_op("_to_copy"), add_op("add"),
    sub_op("sub"), mul_op("mul"), div_op("div"), neg_op("neg"), exp_op("exp"), cos_op("cos"),
    sin_op("sin"), sqrt_op("sqrt"), eq_op("eq"), ne_op("ne"), and_op("logical_and"),
    or_op("logical_or"), sum_op("sum"), sum_dim_op("sum.dim_IntList"), mean_op("mean"),
    mean_dim_op("mean.dim"), mm_op("mm"), bmm_op("bmm"), copy_op("copy_"),
    contiguous_op("contiguous"), broadcast_op("broadcast_tensors"), log_op("log"),
    atan2_op("atan2"), cosh_op("cosh"), sinh_op("sinh"), pow_op("pow"), where_op("where.self"),
    lt_op("lt"), index_op("index.Tensor"), index_select_op("index_select"), flip_op("flip"),
    roll_op("roll"), repeat_op("repeat"), masked_fill_op("masked_fill"), reshape_op("reshape"),
    zeros_like_op("zeros_like");

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}

}  // namespace

Tensor as_complex(Tensor pairs) {
  const auto& st = pairs.strides();
  bool ok = st.back() == 1 && pairs.storage_offset() % 2 == 0;
  for (size_t d = 0; ok && d + 1 < st.size(); ++d) ok = st[d] % 2 == 0;
  if (!ok) pairs = contiguous_op.tensor(pairs);
  return view_as_complex_op.tensor(pairs);
}

namespace {

Tensor pairs_of(const Tensor& x) { return view_as_real_op.tensor(x); }

Tensor cast(const Tensor& t, ScalarType dt) {
  return t.dtype() == dt ? t : to_copy_op.tensor(t, dt, IValue(), false);
}

// An operand's real and imaginary parts in the real type `r`; a real
// operand has no imaginary part (im undefined: zero, and never computed).
struct Parts {
  Tensor re, im;
};
Parts parts(const Tensor& x, ScalarType r) {
  if (!is_complex(x.dtype())) return {cast(x, r), Tensor()};
  Tensor pairs = cast(pairs_of(x), r);
  return {select_op.tensor(pairs, int64_t(-1), int64_t(0)),
          select_op.tensor(pairs, int64_t(-1), int64_t(1))};
}

// An imaginary part that is zero where the operand is real (zeros, not
// re * 0, which is NaN where re is infinite).
Tensor or_zero(const Tensor& im, const Tensor& re) {
  return im.defined() ? im : zeros_like_op.tensor(re);
}

// The complex tensor with these parts (broadcast to one shape); a missing
// imaginary part is zero.
Tensor assemble(Tensor re, Tensor im) {
  im = or_zero(im, re);
  if (re.sizes() != im.sizes()) {
    std::vector<Tensor> both = broadcast_op.call(std::vector<Tensor>{re, im})[0].to_tensor_list();
    re = both[0], im = both[1];
  }
  return view_as_complex_op.tensor(stack_op.tensor(std::vector<Tensor>{re, im}, int64_t(-1)));
}

// Arithmetic on parts where an undefined tensor is zero.
Tensor padd(const Tensor& u, const Tensor& v) {
  if (!u.defined()) return v;
  if (!v.defined()) return u;
  return add_op.tensor(u, v);
}
Tensor psub(const Tensor& u, const Tensor& v) {
  if (!v.defined()) return u;
  if (!u.defined()) return neg_op.tensor(v);
  return sub_op.tensor(u, v);
}
Tensor pmul(const Tensor& u, const Tensor& v) {
  if (!u.defined() || !v.defined()) return Tensor();
  return mul_op.tensor(u, v);
}
Tensor pscale(const Tensor& u, const Scalar& alpha) {
  if (!u.defined()) return u;
  if (alpha.is_int() && alpha.to_int() == 1) return u;
  return mul_op.tensor(u, scalar_to_tensor(alpha.to_double(), u.dtype(), true));
}

// The operands' common complex type and its real type.
std::pair<ScalarType, ScalarType> types_of(const Tensor& a, const Tensor& b) {
  ScalarType c = result_type({&a, &b});
  IGNIS_INTERNAL_ASSERT(is_complex(c), "a complex rule with no complex operand");
  return {c, to_real_type(c)};
}

enum class Arith { Add, Sub, Mul, Div };

Tensor arith(Arith kind, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const ScalarType r = types_of(a, b).second;
  const Parts x = parts(a, r), y = parts(b, r);
  switch (kind) {
    case Arith::Add: return assemble(padd(x.re, pscale(y.re, alpha)), padd(x.im, pscale(y.im, alpha)));
    case Arith::Sub: return assemble(psub(x.re, pscale(y.re, alpha)), psub(x.im, pscale(y.im, alpha)));
    case Arith::Mul:
      return assemble(psub(pmul(x.re, y.re), pmul(x.im, y.im)),
                      padd(pmul(x.re, y.im), pmul(x.im, y.re)));
    case Arith::Div: {
      if (!y.im.defined())  // by a real divisor: each part
        return assemble(div_op.tensor(x.re, y.re),
                        x.im.defined() ? div_op.tensor(x.im, y.re) : Tensor());
      // (a + bi) / (c + di) = ((ac + bd) + (bc - ad)i) / (c^2 + d^2)
      Tensor den = add_op.tensor(mul_op.tensor(y.re, y.re), mul_op.tensor(y.im, y.im));
      return assemble(div_op.tensor(padd(pmul(x.re, y.re), pmul(x.im, y.im)), den),
                      div_op.tensor(psub(pmul(x.im, y.re), pmul(x.re, y.im)), den));
    }
  }
  return Tensor();
}

template <Arith K>
void arith_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  const bool has_alpha = K == Arith::Add || K == Arith::Sub;
  const bool inplace = op.schema().name.back() == '_';
  Tensor a = s[0].to_tensor(), b = s[1].to_tensor();
  Scalar alpha = has_alpha ? s[2].to_scalar() : Scalar(int64_t(1));
  IGNIS_CHECK(!(K == Arith::Div && s.size() > 2 && !s[2].is_none()),
              "div with a rounding_mode is not supported for complex tensors");
  Tensor out = arith(K, a, b, alpha);
  if (inplace) {
    IGNIS_CHECK(is_complex(a.dtype()), "result type ", dtype_name(out.dtype()),
                " can't be cast to the desired output type ", dtype_name(a.dtype()));
    copy_op.call(a, out);
    out = a;
  }
  ret(s, out);
}

void neg_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  ret(s, as_complex(neg_op.tensor(pairs_of(s[0].to_tensor()))));
}

void exp_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Tensor x = s[0].to_tensor();
  const Parts p = parts(x, to_real_type(x.dtype()));
  Tensor e = exp_op.tensor(p.re);
  ret(s, assemble(mul_op.tensor(e, cos_op.tensor(p.im)), mul_op.tensor(e, sin_op.tensor(p.im))));
}

// |x|: the modulus, a real tensor (sqrt(re^2 + im^2)).
void abs_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Tensor pairs = pairs_of(s[0].to_tensor());
  ret(s, sqrt_op.tensor(sum_dim_op.tensor(mul_op.tensor(pairs, pairs),
                                          std::vector<int64_t>{-1}, false, IValue())));
}

// eq / ne: both parts equal (either differs).
template <bool Eq>
void compare_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor a = s[0].to_tensor(), b = s[1].to_tensor();
  const ScalarType r = types_of(a, b).second;
  const Parts x = parts(a, r), y = parts(b, r);
  const Tensor xi = or_zero(x.im, x.re), yi = or_zero(y.im, y.re);
  if (Eq) ret(s, and_op.tensor(eq_op.tensor(x.re, y.re), eq_op.tensor(xi, yi)));
  else ret(s, or_op.tensor(ne_op.tensor(x.re, y.re), ne_op.tensor(xi, yi)));
}

// The complex dtype a reduction's `dtype=` asks for (none: self's).
ScalarType reduce_dtype(const Tensor& self, const IValue& dtype) {
  if (dtype.is_none()) return self.dtype();
  ScalarType t = dtype.to_dtype();
  IGNIS_CHECK(is_complex(t), "the dtype of a complex tensor's reduction must be complex, got ",
              dtype_name(t));
  return t;
}

// sum / mean over the pairs' dims (the last one, the pair, kept apart).
template <bool Mean>
void reduce_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  const Tensor self = s[0].to_tensor();
  const bool all = op.schema().overload.empty();
  std::vector<int64_t> dims;
  bool keepdim = false;
  IValue dtype;
  if (all) {
    dtype = s[1];
  } else {
    if (!s[1].is_none()) dims = s[1].to_int_list();
    keepdim = s[2].to_bool();
    dtype = s[3];
  }
  const int64_t nd = self.dim();
  if (dims.empty()) {  // every dim of self
    for (int64_t d = 0; d < nd; ++d) dims.push_back(d);
  }
  for (int64_t& d : dims) d = nd == 0 ? 0 : wrap_dim(d, nd);
  const ScalarType want = reduce_dtype(self, dtype);
  Tensor pairs = cast(pairs_of(self), to_real_type(want));
  Tensor out = nd == 0 ? pairs
               : Mean ? mean_dim_op.tensor(pairs, dims, keepdim, IValue())
                      : sum_dim_op.tensor(pairs, dims, keepdim, IValue());
  ret(s, as_complex(out));
}

// (A + Bi)(C + Di) = (AC - BD) + (AD + BC)i, four real products.
void product_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  Tensor a = s[0].to_tensor(), b = s[1].to_tensor();
  const ScalarType r = types_of(a, b).second;
  const Parts x = parts(a, r), y = parts(b, r);
  const OpRef& prod = op.schema().name == "bmm" ? bmm_op : mm_op;
  auto p = [&](const Tensor& u, const Tensor& v) {
    return u.defined() && v.defined() ? prod.tensor(u, v) : Tensor();
  };
  ret(s, assemble(psub(p(x.re, y.re), p(x.im, y.im)), padd(p(x.re, y.im), p(x.im, y.re))));
}


// ---- more math: each through the parts, as the formulas of complex analysis ----
Parts parts_of(const Tensor& x) { return parts(x, to_real_type(x.dtype())); }
Tensor modulus_sq(const Parts& p) {
  return add_op.tensor(mul_op.tensor(p.re, p.re), mul_op.tensor(p.im, p.im));
}

void reciprocal_kernel(const OpHandle&, DispatchKeySet, Stack& s) {  // conj(z) / |z|^2
  const Parts p = parts_of(s[0].to_tensor());
  Tensor d = modulus_sq(p);
  ret(s, assemble(div_op.tensor(p.re, d), neg_op.tensor(div_op.tensor(p.im, d))));
}

void square_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor z = s[0].to_tensor();
  ret(s, arith(Arith::Mul, z, z, Scalar(int64_t(1))));
}

void log_kernel(const OpHandle&, DispatchKeySet, Stack& s) {  // log|z| + i arg z
  const Parts p = parts_of(s[0].to_tensor());
  ret(s, assemble(mul_op.tensor(log_op.tensor(modulus_sq(p)), scalar_to_tensor(0.5, p.re.dtype(), true)),
                  atan2_op.tensor(p.im, p.re)));
}

// The principal square root: sqrt((|z| + re) / 2) + i sign(im) sqrt((|z| - re) / 2).
void sqrt_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Parts p = parts_of(s[0].to_tensor());
  Tensor r = sqrt_op.tensor(modulus_sq(p));
  Tensor half = scalar_to_tensor(0.5, p.re.dtype(), true);
  Tensor re = sqrt_op.tensor(mul_op.tensor(add_op.tensor(r, p.re), half));
  Tensor im = sqrt_op.tensor(mul_op.tensor(sub_op.tensor(r, p.re), half));
  im = where_op.tensor(lt_op.tensor(p.im, scalar_to_tensor(0.0, p.re.dtype(), true)),
                       neg_op.tensor(im), im);
  ret(s, assemble(re, im));
}

// sin(a + bi) = sin a cosh b + i cos a sinh b; cos(a + bi) = cos a cosh b - i sin a sinh b.
template <bool Sin>
void trig_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Parts p = parts_of(s[0].to_tensor());
  Tensor sa = sin_op.tensor(p.re), ca = cos_op.tensor(p.re);
  Tensor chb = cosh_op.tensor(p.im), shb = sinh_op.tensor(p.im);
  if (Sin) ret(s, assemble(mul_op.tensor(sa, chb), mul_op.tensor(ca, shb)));
  else ret(s, assemble(mul_op.tensor(ca, chb), neg_op.tensor(mul_op.tensor(sa, shb))));
}

// z ** w = exp(w log z); a real w: |z|^w (cos w arg z + i sin w arg z).
void pow_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor z = s[0].to_tensor(), w = s[1].to_tensor();
  IGNIS_CHECK(is_complex(z.dtype()), "pow of a real base with a complex exponent is not "
              "supported yet");
  const ScalarType r = types_of(z, w).second;
  const Parts p = parts(z, r), e = parts(w, r);
  Tensor half = scalar_to_tensor(0.5, r, true);
  Tensor log_mod = mul_op.tensor(log_op.tensor(modulus_sq(p)), half);  // log|z|
  Tensor arg = atan2_op.tensor(p.im, p.re);
  // w log z = (c + di)(L + i t) = (cL - dt) + (ct + dL) i
  Tensor re = psub(pmul(e.re, log_mod), pmul(e.im, arg));
  Tensor im = padd(pmul(e.re, arg), pmul(e.im, log_mod));
  Tensor m = exp_op.tensor(re);
  ret(s, assemble(mul_op.tensor(m, cos_op.tensor(im)), mul_op.tensor(m, sin_op.tensor(im))));
}

// ---- data movement: the same op on the pairs, the pair dim carried along ----

void index_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  ret(s, as_complex(index_op.tensor(pairs_of(s[0].to_tensor()), s[1])));
}
void index_select_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Tensor x = s[0].to_tensor();
  const int64_t d = wrap_dim(s[1].to_int(), std::max<int64_t>(x.dim(), 1));
  ret(s, as_complex(index_select_op.tensor(pairs_of(x), d, s[2].to_tensor())));
}
void flip_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Tensor x = s[0].to_tensor();
  std::vector<int64_t> dims = s[1].to_int_list();
  for (int64_t& d : dims) d = wrap_dim(d, std::max<int64_t>(x.dim(), 1));
  ret(s, as_complex(flip_op.tensor(pairs_of(x), dims)));
}
void roll_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const Tensor x = s[0].to_tensor();
  std::vector<int64_t> dims = s[2].to_int_list();
  if (dims.empty()) {  // the flattened tensor rolls, then takes x's shape again
    Tensor flat = reshape_op.tensor(x, std::vector<int64_t>{-1});
    Tensor rolled = as_complex(roll_op.tensor(pairs_of(flat), s[1], std::vector<int64_t>{0}));
    ret(s, reshape_op.tensor(rolled, std::vector<int64_t>(x.sizes().begin(), x.sizes().end())));
    return;
  }
  for (int64_t& d : dims) d = wrap_dim(d, std::max<int64_t>(x.dim(), 1));
  ret(s, as_complex(roll_op.tensor(pairs_of(x), s[1], dims)));
}
void repeat_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::vector<int64_t> reps = s[1].to_int_list();
  reps.push_back(1);
  ret(s, as_complex(repeat_op.tensor(pairs_of(s[0].to_tensor()), reps)));
}
void where_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor c = s[0].to_tensor(), a = s[1].to_tensor(), b = s[2].to_tensor();
  const ScalarType r = types_of(a, b).second;
  const Parts x = parts(a, r), y = parts(b, r);
  ret(s, assemble(where_op.tensor(c, x.re, y.re),
                  where_op.tensor(c, or_zero(x.im, x.re), or_zero(y.im, y.re))));
}
void masked_fill_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor(), mask = s[1].to_tensor(), v = s[2].to_tensor();
  IGNIS_CHECK(is_complex(self.dtype()), "masked_fill of a real tensor with a complex value");
  const Parts x = parts_of(self), val = parts(v, to_real_type(self.dtype()));
  Tensor im_v = val.im.defined() ? val.im : scalar_to_tensor(0.0, x.re.dtype());
  Tensor out = assemble(masked_fill_op.tensor(x.re, mask, val.re),
                        masked_fill_op.tensor(x.im, mask, im_v));
  if (op.schema().name.back() == '_') {
    copy_op.call(self, out);
    out = self;
  }
  ret(s, out);
}

// The Complex key's fallback, for ops with no rule above: an op for which
// complex tensors are safe runs on below the key -- a view, a composite
// (its parts meet this key again), a creation op, or one of the ops whose
// kernels copy, cast or fill complex tensors through their real views --
// and any other raises torch's NotImplementedError naming the op and the
// dtype. (A real kernel would read complex numbers as their real parts:
// sin of a complex tensor gave the sines of its real parts.)
bool safe_without_rule(const OpHandle& op) {
  static const std::unordered_set<std::string> kernels_handle_complex = {
      "copy_", "copy", "clone", "_to_copy", "fill_", "zero_", "cat", "resize_", "detach_",
      "lift_fresh", "alias", "_fft_c2c", "_fft_c2r"};
  const OpDef* d = op.def();
  if (d && (d->category == OpCategory::View || d->composite_implicit ||
            d->category == OpCategory::Creation))
    return true;
  return kernels_handle_complex.count(op.schema().name) > 0;
}

void complex_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  if (!safe_without_rule(op)) {
    ScalarType complex_dtype = ScalarType::ComplexFloat;
    for (const IValue& v : s)
      if (v.is_tensor() && is_complex(v.to_tensor().dtype())) {
        complex_dtype = v.to_tensor().dtype();
        break;
      }
    IGNIS_FAIL_KIND(NotImplemented, "\"", op.schema().name, "\" not implemented for '",
                    scalar_type_name(complex_dtype), "' (ignis computes complex tensors ",
                    "through real views; this op has no rule yet: ops/complex.cpp)");
  }
  op.redispatch(ks.below(DispatchKey::Complex), s);
}

void on(const char* name, KernelFn k) {
  Dispatcher::get().find_or_throw(name).set_kernel(DispatchKey::Complex, std::move(k));
}

}  // namespace

void register_complex_kernels() {
  Dispatcher::get().register_fallback(DispatchKey::Complex, complex_fallback);
  on("add", arith_kernel<Arith::Add>);
  on("add_", arith_kernel<Arith::Add>);
  on("sub", arith_kernel<Arith::Sub>);
  on("sub_", arith_kernel<Arith::Sub>);
  on("mul", arith_kernel<Arith::Mul>);
  on("mul_", arith_kernel<Arith::Mul>);
  on("div", arith_kernel<Arith::Div>);
  on("div_", arith_kernel<Arith::Div>);
  on("neg", neg_kernel);
  on("exp", exp_kernel);
  on("abs", abs_kernel);
  on("eq", compare_kernel<true>);
  on("ne", compare_kernel<false>);
  on("sum", reduce_kernel<false>);
  on("sum.dim_IntList", reduce_kernel<false>);
  on("mean", reduce_kernel<true>);
  on("mean.dim", reduce_kernel<true>);
  on("mm", product_kernel);
  on("bmm", product_kernel);
  on("reciprocal", reciprocal_kernel);
  on("square", square_kernel);
  on("log", log_kernel);
  on("sqrt", sqrt_kernel);
  on("sin", trig_kernel<true>);
  on("cos", trig_kernel<false>);
  on("pow", pow_kernel);
  on("index.Tensor", index_kernel);
  on("index_select", index_select_kernel);
  on("flip", flip_kernel);
  on("roll", roll_kernel);
  on("repeat", repeat_kernel);
  on("where.self", where_kernel);
  on("masked_fill", masked_fill_kernel);
  on("masked_fill_", masked_fill_kernel);
}

}  // namespace ignis
