// Factories: empty, zeros, ones, full, arange, linspace, eye, the random
// factories, and the *_like forms (composites over the plain ones).
#include <cmath>
#include <type_traits>

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/random.h"
#include "ignis/kernels/cpu/sample.h"
#include "ignis/kernels/cuda/random_kernels.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

const char* kOpts = "*, ScalarType? dtype=None, Device? device=None";

// Runs a fill (kernels/cpu/fill.h) on t's device: kernels/cuda/random_kernels.h
// declares the same functions, which compute the same values.
template <class... A>
void fill_on(const Tensor& t, void (*on_cpu)(const Tensor&, A...),
             void (*on_cuda)(const Tensor&, A...), std::type_identity_t<A>... a) {
  (t.device().is_cuda() ? on_cuda : on_cpu)(t, a...);
}
#define IGNIS_FILL(fn, t, ...) fill_on(t, &cpu::fn, &cuda::fn, __VA_ARGS__)

ScalarType dtype_or(const IValue& v, ScalarType dflt) { return v.is_none() ? dflt : v.to_dtype(); }

DimVector sizes_arg(OpCall& c, int i) {
  DimVector s(c.int_list(i));
  for (int64_t x : s)
    IGNIS_CHECK(x >= 0, c.op.schema().name, "(): Trying to create tensor with negative dimension ",
                x, ": ", shape_str(s));
  return s;
}

// rand/randn and the in-place random fills exist for floating dtypes only.
void check_floating(ScalarType dt, const char* kernel) {
  if (!is_floating(dt))
    IGNIS_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", scalar_type_name(dt), "'");
}

// Integers drawn from [low, high) must be representable in the output dtype.
void check_random_bounds(int64_t low, int64_t high, ScalarType dt) {
  IGNIS_CHECK(low < high, "random_ expects 'from' to be less than 'to', but got from=", low,
              " >= to=", high);
  int64_t lo, hi;
  switch (dt) {
    case ScalarType::Bool: lo = 0, hi = 1; break;
    case ScalarType::UInt8: lo = 0, hi = 255; break;
    case ScalarType::Int8: lo = -128, hi = 127; break;
    case ScalarType::Int16: lo = -32768, hi = 32767; break;
    case ScalarType::Int32: lo = INT32_MIN, hi = INT32_MAX; break;
    default: return;  // int64, and floating types (which PyTorch only warns about)
  }
  IGNIS_CHECK(low >= lo && low <= hi, "from is out of bounds for ", dtype_name(dt));
  IGNIS_CHECK(high - 1 >= lo && high - 1 <= hi, "to - 1 is out of bounds for ", dtype_name(dt));
}

// ---- empty / zeros / ones / full ----------------------------------------------------
// Arguments: (int[] size, [Scalar fill_value], *, dtype, device)
template <int DtypeArg>
void sized_meta(OpCall& c) {
  ScalarType dt = dtype_or(c.args[DtypeArg], default_dtype());
  c.alloc(sizes_arg(c, 0), dt);
}
// empty(size, *, dtype, device, memory_format): strides in memory_format
// (preserve_format has no source to preserve: torch refuses it too).
void empty_meta(OpCall& c) {
  ScalarType dt = dtype_or(c.args[1], default_dtype());
  DimVector sizes = sizes_arg(c, 0);
  const MemoryFormat f =
      c.args[3].is_none() ? MemoryFormat::Contiguous : c.args[3].to_memory_format();
  IGNIS_CHECK(f != MemoryFormat::Preserve, "preserve memory format is unsupported by empty");
  c.alloc_in_format(sizes, dt, f);
}
void noop_impl(OpCall&) {}
void zeros_impl(OpCall& c) { fill_tensor(c.outputs[0], Scalar(int64_t(0))); }
void ones_impl(OpCall& c) { fill_tensor(c.outputs[0], Scalar(int64_t(1))); }

void empty_strided_meta(OpCall& c) {
  ScalarType dt = dtype_or(c.args[2], default_dtype());
  c.alloc_strided(sizes_arg(c, 0), DimVector(c.int_list(1)), dt);
}

void full_meta(OpCall& c) {
  Scalar v = c.scalar(1);
  ScalarType dflt = v.is_bool() ? ScalarType::Bool : v.is_int() ? ScalarType::Int64 : default_dtype();
  ScalarType dt = dtype_or(c.args[2], dflt);
  cpu::check_scalar_fits(v, dt);
  c.alloc(sizes_arg(c, 0), dt);
}
void full_impl(OpCall& c) { fill_tensor(c.outputs[0], c.scalar(1)); }

// ---- arange ---------------------------------------------------------------------------
struct Range { Scalar start, end, step; int dtype_arg; };
Range range_args(OpCall& c) {
  if (c.op.schema().overload.empty()) return {Scalar(int64_t(0)), c.scalar(0), Scalar(int64_t(1)), 1};
  return {c.scalar(0), c.scalar(1), c.scalar(2), 3};
}
// As in PyTorch, bounds are checked in double, but an integer output takes
// start and step truncated to integers (its values are start + step * i in
// int64); an int64 output also takes its length from the truncated bounds.
void arange_meta(OpCall& c) {
  Range r = range_args(c);
  bool any_float = r.start.is_float() || r.end.is_float() || r.step.is_float();
  ScalarType dt = dtype_or(c.args[r.dtype_arg], any_float ? default_dtype() : ScalarType::Int64);
  if (dt == ScalarType::Bool) IGNIS_NOT_IMPLEMENTED("\"arange_cpu\" not implemented for 'Bool'");
  double start = r.start.to_double(), end = r.end.to_double(), step = r.step.to_double();
  IGNIS_CHECK(step != 0, "step must be nonzero");
  IGNIS_CHECK(std::isfinite(start) && std::isfinite(end), "unsupported range: ", start, " -> ",
              end);
  IGNIS_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
              "upper bound and lower bound inconsistent with step sign");
  double n;
  if (dt == ScalarType::Int64) {
    int64_t s = r.start.to_int(), e = r.end.to_int(), st = r.step.to_int();
    IGNIS_CHECK_VALUE(st != 0, "step must be nonzero");
    int64_t span;
    bool overflow = __builtin_sub_overflow(e, s, &span) ||
                    __builtin_add_overflow(span, st - (st > 0 ? 1 : -1), &span);
    IGNIS_CHECK(!overflow, "arange: the range ", s, " -> ", e, " overflows int64");
    n = static_cast<double>(span / st);
  } else {
    n = std::ceil((end - start) / step);
  }
  IGNIS_CHECK(n >= 0 && n < 9.2e18, "arange: invalid number of elements ", n);
  c.alloc({static_cast<int64_t>(n)}, dt);
}
void arange_impl(OpCall& c) {
  Range r = range_args(c);
  Tensor& out = c.outputs[0];
  if (is_floating(out.dtype()))
    IGNIS_FILL(fill_affine, out, r.start.to_double(), r.step.to_double());
  else
    IGNIS_FILL(fill_affine_int, out, r.start.to_int(), r.step.to_int());
}

// ---- linspace ------------------------------------------------------------------------
void linspace_meta(OpCall& c) {
  int64_t steps = c.int_arg(2);
  IGNIS_CHECK(steps >= 0, "number of steps must be non-negative");
  ScalarType dt = dtype_or(c.args[3], default_dtype());
  // With fewer than two steps no values are computed, so bool is allowed.
  if (dt == ScalarType::Bool && steps > 1)
    IGNIS_NOT_IMPLEMENTED("\"linspace_cpu\" not implemented for 'Bool'");
  cpu::check_scalar_fits(c.scalar(0), dt);
  cpu::check_scalar_fits(c.scalar(1), dt);
  c.alloc({steps}, dt);
}
// An integer output takes start and end converted to its dtype first (so
// truncated, and wrapped for uint8), as in PyTorch; the step between them
// stays fractional.
void linspace_impl(OpCall& c) {
  ScalarType dt = c.outputs[0].dtype();
  double start = c.scalar(0).to_double(), end = c.scalar(1).to_double();
  if (!is_floating(dt)) {
    IGNIS_DISPATCH_INT_AND_BOOL(dt, "linspace", [&] {
      start = static_cast<double>(c.scalar(0).to<scalar_t>());
      end = static_cast<double>(c.scalar(1).to<scalar_t>());
    });
  }
  cpu::fill_linspace(c.outputs[0], start, end);
}

// ---- eye -------------------------------------------------------------------------------
void eye_meta(OpCall& c) {
  int64_t n = c.int_arg(0);
  int64_t m = c.args[1].is_none() ? n : c.int_arg(1);
  IGNIS_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  IGNIS_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  c.alloc({n, m}, dtype_or(c.args[2], default_dtype()));
}
void eye_impl(OpCall& c) { cpu::fill_eye(c.outputs[0]); }

// ---- random ------------------------------------------------------------------------------
void rand_meta(OpCall& c) {
  ScalarType dt = dtype_or(c.args[1], default_dtype());
  check_floating(dt, c.op.schema().name == "rand" ? "check_uniform_bounds" : "normal_kernel_cpu");
  c.alloc(sizes_arg(c, 0), dt);
}
void rand_impl(OpCall& c) {
  IGNIS_FILL(fill_uniform, c.outputs[0], 0.0, 1.0, current_generator());
}
void randn_impl(OpCall& c) {
  IGNIS_FILL(fill_normal, c.outputs[0], 0.0, 1.0, current_generator());
}

// randint(high, size) / randint.low(low, high, size)
void randint_meta(OpCall& c) {
  bool low_form = !c.op.schema().overload.empty();
  int size_arg = low_form ? 2 : 1;
  int64_t low = low_form ? c.int_arg(0) : 0, high = c.int_arg(low_form ? 1 : 0);
  ScalarType dt = dtype_or(c.args[size_arg + 1], ScalarType::Int64);
  check_random_bounds(low, high, dt);
  c.alloc(sizes_arg(c, size_arg), dt);
}
void randint_impl(OpCall& c) {
  bool low_form = !c.op.schema().overload.empty();
  int64_t low = low_form ? c.int_arg(0) : 0, high = c.int_arg(low_form ? 1 : 0);
  IGNIS_FILL(fill_randint, c.outputs[0], low, high, current_generator());
}

// randperm(n): a random permutation of 0 .. n - 1.
void randperm_meta(OpCall& c) {
  const int64_t n = c.int_arg(0);
  IGNIS_CHECK(n >= 0, "Trying to create tensor with negative dimension ", n, ": [", n, "]");
  ScalarType dt = dtype_or(c.args[1], ScalarType::Int64);
  IGNIS_CHECK(dt != ScalarType::Bool || n <= 1, "randperm: bool cannot hold the values 0 .. ",
              n - 1);
  c.alloc({n}, dt);
}
void randperm_impl(OpCall& c) {
  if (c.device.is_cuda()) cuda::fill_randperm(c.outputs[0], current_generator());
  else cpu::fill_randperm(c.outputs[0], current_generator());
}

// multinomial(self, num_samples, replacement): category indices drawn by
// the weights of each row of self. The data checks run in the kernel.
void multinomial_meta(OpCall& c) {
  const Tensor& p = c.tensor(0);
  const int64_t k = c.int_arg(1);
  IGNIS_CHECK(is_floating(p.dtype()), "multinomial only supports floating-point dtypes for "
              "input, got: ", scalar_type_name(p.dtype()));
  IGNIS_CHECK(p.dim() == 1 || p.dim() == 2, "prob_dist must be 1 or 2 dim");
  const int64_t n = p.sizes()[p.dim() - 1];
  IGNIS_CHECK(n > 0, "multinomial: the number of categories (prob_dist.size(-1)) must be "
              "positive");
  IGNIS_CHECK(k > 0, "cannot sample n_sample <= 0 samples");
  IGNIS_CHECK(c.bool_arg(2) || k <= n, "cannot sample n_sample > prob_dist.size(-1) samples "
              "without replacement");
  if (p.dim() == 1) c.alloc({k}, ScalarType::Int64);
  else c.alloc({p.sizes()[0], k}, ScalarType::Int64);
}
void multinomial_impl(OpCall& c) {
  auto run = c.device.is_cuda() ? cuda::multinomial_out : cpu::multinomial_out;
  run(c.outputs[0], c.tensor(0), c.int_arg(1), c.bool_arg(2), current_generator());
}

// ---- *_like: composites over empty_strided + an in-place fill ----------------------------
OpRef empty_strided_op("empty_strided");
OpRef fill_op("fill_");
OpRef uniform_op("uniform_");
OpRef normal_op("normal_");
OpRef random_op("random_.from");

// A tensor like self: its dtype and device unless given, laid out like it
// (preserve_format, the default) or in memory_format.
Tensor empty_like_impl(const Tensor& self, const IValue& dtype, const IValue& device,
                       const IValue& memory_format) {
  ScalarType dt = dtype.is_none() ? self.dtype() : dtype.to_dtype();
  Device dev = device.is_none() ? self.user_device() : device.to_device();
  const MemoryFormat f =
      memory_format.is_none() ? MemoryFormat::Preserve : memory_format.to_memory_format();
  return empty_strided_op.tensor(self.sizes(), strides_for_copy(self, f), dt, dev);
}

template <int Kind>  // 0 empty, 1 zeros, 2 ones, 3 full, 4 rand, 5 randn
void like_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  const int dtype_arg = Kind == 3 ? 2 : 1;
  Tensor out = empty_like_impl(s[0].to_tensor(), s[dtype_arg], s[dtype_arg + 1],
                               s[dtype_arg + 2]);
  if (Kind == 1) fill_op.call(out, scalar_to_tensor_int(0, ScalarType::Int64, true));
  if (Kind == 2) fill_op.call(out, scalar_to_tensor_int(1, ScalarType::Int64, true));
  if (Kind == 3) {
    Scalar v = s[1].to_scalar();
    fill_op.call(out, v.is_float() ? scalar_to_tensor(v.to_double(), ScalarType::Float64, true)
                                   : scalar_to_tensor_int(v.to_int(), v.natural_dtype(), true));
  }
  if (Kind == 4) uniform_op.call(out, 0.0, 1.0);
  if (Kind == 5) normal_op.call(out, 0.0, 1.0);
  s.clear();
  s.emplace_back(std::move(out));
}

void randint_like_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  bool low_form = !op.schema().overload.empty();
  int64_t low = low_form ? s[1].to_int() : 0, high = s[low_form ? 2 : 1].to_int();
  int dtype_arg = low_form ? 3 : 2;
  Tensor out = empty_like_impl(s[0].to_tensor(), s[dtype_arg], s[dtype_arg + 1],
                               s[dtype_arg + 2]);
  random_op.call(out, low, high);
  s.clear();
  s.emplace_back(std::move(out));
}

// random_.to(self, to) and random_(self): random_.from with from = 0 and, for
// random_(), to one past every integer the dtype holds exactly (2^digits for
// floating types, as torch) or past its largest value for integer types.
int64_t random_default_to(ScalarType dt) {
  switch (dt) {
    case ScalarType::Float16: return (int64_t(1) << 11) + 1;
    case ScalarType::BFloat16: return (int64_t(1) << 8) + 1;
    case ScalarType::Float32: return (int64_t(1) << 24) + 1;
    case ScalarType::Float64: return (int64_t(1) << 53) + 1;
    case ScalarType::Bool: return 2;
    case ScalarType::UInt8: return 256;
    case ScalarType::Int8: return 128;
    case ScalarType::Int16: return 32768;
    case ScalarType::Int32: return int64_t(1) << 31;
    default: return INT64_MAX;
  }
}

void random_to_kernel(const OpHandle& op, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const int64_t to = op.schema().overload == "to" ? s[1].to_int() : random_default_to(self.dtype());
  random_op.call(self, int64_t(0), to);
  s.clear();
  s.emplace_back(std::move(self));
}

// bernoulli_.Tensor(self, p): each element 1 with the probability of p there
// (p broadcast to self), drawn as uniform < p.
OpRef lt_op("lt");
OpRef copy_op("copy_");
void bernoulli_tensor_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor self = s[0].to_tensor();
  const Tensor& p = s[1].to_tensor();
  ScalarType ut = is_floating(p.dtype()) ? p.dtype() : ScalarType::Float32;
  Tensor u = empty_like_impl(self, IValue(ut), IValue(), IValue());
  uniform_op.call(u, 0.0, 1.0);
  copy_op.call(self, lt_op.tensor(u, p));
  s.clear();
  s.emplace_back(std::move(self));
}

// ---- in-place random fills ------------------------------------------------------------------
// The argument checks run in the meta rules so that meta tensors see them too.
void inplace_meta(OpCall& c) {
  c.outputs.push_back(c.tensor(0));
  if (!c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
}
void uniform_meta(OpCall& c) {
  check_floating(c.tensor(0).dtype(), "check_uniform_bounds");
  double from = c.double_arg(1), to = c.double_arg(2);
  IGNIS_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from,
              " > to=", to);
  inplace_meta(c);
}
void uniform_impl(OpCall& c) {
  IGNIS_FILL(fill_uniform, c.tensor(0), c.double_arg(1), c.double_arg(2), current_generator());
}
void normal_meta(OpCall& c) {
  check_floating(c.tensor(0).dtype(), "normal_kernel_cpu");
  IGNIS_CHECK(c.double_arg(2) >= 0, "normal expects std >= 0.0, but found std ", c.double_arg(2));
  inplace_meta(c);
}
void normal_impl(OpCall& c) {
  IGNIS_FILL(fill_normal, c.tensor(0), c.double_arg(1), c.double_arg(2), current_generator());
}
void random_meta(OpCall& c) {
  check_random_bounds(c.int_arg(1), c.int_arg(2), c.tensor(0).dtype());
  inplace_meta(c);
}
void random_impl(OpCall& c) {
  IGNIS_FILL(fill_randint, c.tensor(0), c.int_arg(1), c.int_arg(2), current_generator());
}
void bernoulli_meta(OpCall& c) {
  double p = c.double_arg(1);
  IGNIS_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  inplace_meta(c);
}
void bernoulli_impl(OpCall& c) {
  IGNIS_FILL(fill_bernoulli, c.tensor(0), c.double_arg(1), current_generator());
}

}  // namespace


void register_creation_ops() {
  const std::string o = kOpts;
  // The *_like creators and empty take torch's memory_format= too.
  const std::string mf = ", MemoryFormat? memory_format=None";
  def("empty(int[] size, " + o + mf + ") -> Tensor").category(OpCategory::Creation).uninitialized()
      .meta(empty_meta).cpu_and_cuda(noop_impl).doc("uninitialised tensor").core();
  def("empty_strided(int[] size, int[] stride, " + o + ") -> Tensor")
      .category(OpCategory::Creation).uninitialized().meta(empty_strided_meta)
      .cpu_and_cuda(noop_impl)
      .core();
  def("zeros(int[] size, " + o + ") -> Tensor").category(OpCategory::Creation).meta(sized_meta<1>)
      .cpu_and_cuda(zeros_impl).decomposition(decomp::zeros);
  def("ones(int[] size, " + o + ") -> Tensor").category(OpCategory::Creation).meta(sized_meta<1>)
      .cpu_and_cuda(ones_impl).decomposition(decomp::ones);
  def("full(int[] size, Scalar fill_value, " + o + ") -> Tensor").category(OpCategory::Creation)
      .meta(full_meta).cpu_and_cuda(full_impl).doc("dtype follows fill_value when not given").core();
  def("arange(Scalar end, " + o + ") -> Tensor").category(OpCategory::Creation).meta(arange_meta)
      .cpu_and_cuda(arange_impl).decomposition(decomp::arange);
  def("arange.start(Scalar start, Scalar end, Scalar step=1, " + o + ") -> Tensor")
      .category(OpCategory::Creation).meta(arange_meta).cpu_and_cuda(arange_impl).core();
  def("linspace(Scalar start, Scalar end, int steps, " + o + ") -> Tensor")
      .category(OpCategory::Creation).meta(linspace_meta).cpu(linspace_impl)
      .decomposition(decomp::linspace);
  def("eye(int n, int? m=None, " + o + ") -> Tensor").category(OpCategory::Creation).meta(eye_meta)
      .cpu(eye_impl).decomposition(decomp::eye);
  def("rand(int[] size, " + o + ") -> Tensor").category(OpCategory::Creation).random_with_generator()
      .meta(rand_meta).cpu_and_cuda(rand_impl)
      .doc("uniform on [0, 1); same numbers for the same seed at any thread count").core();
  def("randn(int[] size, " + o + ") -> Tensor").category(OpCategory::Creation).random_with_generator()
      .meta(rand_meta).cpu_and_cuda(randn_impl).doc("standard normal").core();
  def("randint(int high, int[] size, " + o + ") -> Tensor").category(OpCategory::Creation)
      .random_with_generator().meta(randint_meta).cpu_and_cuda(randint_impl).decomposition(decomp::randint);
  def("randint.low(int low, int high, int[] size, " + o + ") -> Tensor")
      .category(OpCategory::Creation).random_with_generator().meta(randint_meta).cpu_and_cuda(randint_impl).core();

  def("randperm(int n, " + o + ") -> Tensor").category(OpCategory::Creation).random_with_generator()
      .meta(randperm_meta).cpu_and_cuda(randperm_impl)
      .doc("a random permutation of 0 .. n - 1 (int64 unless dtype is given)").core();
  def("multinomial(Tensor self, int num_samples, bool replacement=False) -> Tensor")
      .category(OpCategory::Other).both().random_with_generator().nondifferentiable()
      .meta(multinomial_meta).cpu_and_cuda(multinomial_impl)
      .doc("num_samples category indices per row, drawn by the row's (unnormalised) weights")
      .core();

  def("uniform_(Tensor(a!) self, float from=0, float to=1) -> Tensor(a!)")
      .category(OpCategory::Creation).random_with_generator().method_only().meta(uniform_meta)
      .cpu_and_cuda(uniform_impl).core();
  def("normal_(Tensor(a!) self, float mean=0, float std=1) -> Tensor(a!)")
      .category(OpCategory::Creation).random_with_generator().method_only().meta(normal_meta).cpu_and_cuda(normal_impl)
      .core();
  def("random_.from(Tensor(a!) self, int from, int to) -> Tensor(a!)")
      .category(OpCategory::Creation).random_with_generator().method_only().meta(random_meta).cpu_and_cuda(random_impl)
      .core();
  def("bernoulli_(Tensor(a!) self, float p=0.5) -> Tensor(a!)").category(OpCategory::Creation)
      .random_with_generator().method_only().meta(bernoulli_meta).cpu_and_cuda(bernoulli_impl).core();
  def("random_.to(Tensor(a!) self, int to) -> Tensor(a!)").category(OpCategory::Creation)
      .random_with_generator().method_only().composite(random_to_kernel);
  def("random_(Tensor(a!) self) -> Tensor(a!)").category(OpCategory::Creation)
      .random_with_generator().method_only().composite(random_to_kernel)
      .doc("integers in [0, 2^digits] for floating types, [0, max) for integer types");
  def("bernoulli_.Tensor(Tensor(a!) self, Tensor p) -> Tensor(a!)")
      .category(OpCategory::Creation).random_with_generator().method_only()
      .composite(bernoulli_tensor_kernel);

  def("empty_like(Tensor self, " + o + mf + ") -> Tensor").category(OpCategory::Creation)
      .uninitialized().composite(like_kernel<0>);
  def("zeros_like(Tensor self, " + o + mf + ") -> Tensor").category(OpCategory::Creation)
      .composite(like_kernel<1>);
  def("ones_like(Tensor self, " + o + mf + ") -> Tensor").category(OpCategory::Creation)
      .composite(like_kernel<2>);
  def("full_like(Tensor self, Scalar fill_value, " + o + mf + ") -> Tensor")
      .category(OpCategory::Creation).composite(like_kernel<3>);
  def("rand_like(Tensor self, " + o + mf + ") -> Tensor").category(OpCategory::Creation).random_with_generator()
      .composite(like_kernel<4>);
  def("randn_like(Tensor self, " + o + mf + ") -> Tensor").category(OpCategory::Creation).random_with_generator()
      .composite(like_kernel<5>);
  def("randint_like(Tensor self, int high, " + o + mf + ") -> Tensor").category(OpCategory::Creation)
      .random_with_generator().composite(randint_like_kernel);
  def("randint_like.low(Tensor self, int low, int high, " + o + mf + ") -> Tensor")
      .category(OpCategory::Creation).random_with_generator().composite(randint_like_kernel);
}

}  // namespace ignis
