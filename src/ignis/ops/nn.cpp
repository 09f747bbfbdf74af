// Neural-network ops: softmax family, layer/RMS normalisation, dropout,
// embedding, one_hot, losses and activation functions. The heavy ones run
// fused kernels (kernels/cpu/softmax, norm, loss). Schemas follow PyTorch's
// ATen ops; where torch.nn.functional's signature differs (reduction
// strings, `inplace=`, `training=`), the op takes the functional form or
// gets a ".functional" overload, so ignis.nn.functional.<name> works.
#include <cmath>
#include <cstring>
#include <limits>

#include "ignis/autograd/formula.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cpu/fill.h"
#include "ignis/kernels/cpu/loops.h"
#include "ignis/kernels/cpu/loss.h"
#include "ignis/kernels/cpu/nn_util.h"
#include "ignis/kernels/cpu/norm.h"
#include "ignis/kernels/cpu/parallel.h"
#include "ignis/kernels/cpu/random.h"
#include "ignis/kernels/cpu/softmax.h"
#include "ignis/kernels/cpu/vec_math.h"
#include "ignis/kernels/cuda/pointwise.h"
#include "ignis/kernels/cuda/random_kernels.h"
#include "ignis/kernels/cuda/row_kernels.h"
#include "ignis/kernels/device_kernels.h"
#include "ignis/kernels/scalar_ops.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/pointwise.h"

namespace ignis {

namespace {

using cpu::Reduction;

[[noreturn]] void not_implemented_for(const std::string& kernel, ScalarType t) {
  IGNIS_NOT_IMPLEMENTED("\"", kernel, "\" not implemented for '", scalar_type_name(t), "'");
}

void ret(Stack& s, Tensor t) {
  s.clear();
  s.emplace_back(std::move(t));
}

// `t` as a contiguous tensor of dtype `dt`, broadcast to `shape` (a copy
// only when t is not already exactly that).
Tensor dense_as(const Tensor& t, ScalarType dt, const DimVector& shape) {
  if (t.dtype() == dt && t.is_contiguous() && t.sizes() == shape) return t;
  Tensor out = empty_tensor(shape, dt, t.device());
  copy_into(out, cpu::broadcast_view(t, shape));
  return out;
}
Tensor dense_as(const Tensor& t, ScalarType dt) { return dense_as(t, dt, t.sizes()); }
Tensor opt_dense_as(const Tensor& t, ScalarType dt) { return t.defined() ? dense_as(t, dt) : t; }


// Calls `op` with a prepared stack (defaults appended); returns result 0.
Tensor call_stack(const OpRef& op, Stack& s) {
  const OpHandle& h = op.handle();
  fill_defaults(h.schema(), s);
  h.call(s);
  return s.at(0).to_tensor();
}

// ---- softmax / log_softmax ---------------------------------------------------------
// softmax.int(Tensor self, int dim, ScalarType? dtype=None): with `dtype`,
// the input is converted first.
template <cpu::SoftmaxKind K>
void softmax_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  wrap_dim(c.int_arg(1), self.dim());
  ScalarType dt = c.args[2].is_none() ? self.dtype() : c.args[2].to_dtype();
  if (!is_floating(dt))
    not_implemented_for(K == cpu::SoftmaxKind::LogSoftmax ? "log_softmax_lastdim_kernel_impl"
                                                          : "softmax_lastdim_kernel_impl", dt);
  c.alloc(self.sizes(), dt);
}
// One kernel for both devices: kernels/cpu/softmax.h or kernels/cuda/row_kernels.h.
template <cpu::SoftmaxKind K>
void softmax_kernel(OpCall& c) {
  const Tensor& out = c.outputs[0];
  const int64_t dim = wrap_dim(c.int_arg(1), c.tensor(0).dim());
  auto run = c.device.is_cuda() ? cuda::softmax_into : cpu::softmax_into;
  run(out, dense_as(c.tensor(0), out.dtype()), dim, K);
}

OpRef softmax_op("softmax.int"), log_softmax_op("log_softmax.int");

// F.softmax(input, dim=None, _stacklevel=3, dtype=None): without dim, the
// legacy implicit choice (0 for 0-, 1- and 3-D inputs, else 1).
void softmax_functional(const OpHandle& op, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  int64_t dim = s[1].is_none() ? (x.dim() <= 1 || x.dim() == 3 ? 0 : 1) : s[1].to_int();
  IValue dtype = s[3];
  const OpRef& target = op.schema().name == "softmax" ? softmax_op : log_softmax_op;
  ret(s, target.tensor(x, dim, dtype));
}

// ---- layer_norm / rms_norm ----------------------------------------------------------
// Checks normalized_shape against input, weight and bias as PyTorch does.
void check_norm_shape(const Tensor& input, const std::vector<int64_t>& ns, const Tensor& w,
                         const Tensor& b) {
  IGNIS_CHECK(!ns.empty(), "Expected normalized_shape to be at least 1-dimensional, i.e., "
              "containing at least one element, but got normalized_shape = ", shape_str(ns));
  IGNIS_CHECK(!w.defined() || w.sizes() == DimVector(ns), "Expected weight to be of same shape "
              "as normalized_shape, but got weight of shape ", w.defined() ? w.shape_str() : "",
              " and normalized_shape = ", shape_str(ns));
  IGNIS_CHECK(!b.defined() || b.sizes() == DimVector(ns), "Expected bias to be of same shape as "
              "normalized_shape, but got bias of shape ", b.defined() ? b.shape_str() : "",
              " and normalized_shape = ", shape_str(ns));
  const int64_t nd = input.dim(), k = static_cast<int64_t>(ns.size());
  bool ok = nd >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.sizes()[nd - k + i] == ns[i];
  if (!ok) {
    std::string expect = "[*";
    for (int64_t v : ns) expect += ", " + std::to_string(v);
    IGNIS_FAIL("Given normalized_shape=", shape_str(ns), ", expected input with shape ", expect,
               "], but got input of size", input.shape_str());
  }
}

void check_norm_param(const Tensor& p, ScalarType input) {
  if (!p.defined()) return;
  bool ok = p.dtype() == input || p.dtype() == opmath_dtype(input);
  IGNIS_CHECK(ok, "mixed dtype (CPU): expect parameter to have scalar type of ",
              scalar_type_name(opmath_dtype(input)));
}

// native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out, mean, rstd)
void layer_norm_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  Tensor w = c.opt_tensor(2), b = c.opt_tensor(3);
  const auto& ns = c.int_list(1);
  if (!is_floating(in.dtype())) not_implemented_for("LayerNormKernelImpl", in.dtype());
  check_norm_shape(in, ns, w, b);
  check_norm_param(w, in.dtype());
  check_norm_param(b, in.dtype());
  DimVector stat = in.sizes();
  for (size_t i = stat.size() - ns.size(); i < stat.size(); ++i) stat[i] = 1;
  c.alloc(in.sizes(), in.dtype());
  c.alloc(stat, in.dtype());
  c.alloc(stat, in.dtype());
}
// The dtype CUDA's layer norm kernels read `ts` in: the input's when every
// defined one has it (16-bit parameters and statistics are widened as they
// are loaded, as a conversion would, without its launch and pass), else
// op-math. The CPU kernels take op-math.
ScalarType cuda_norm_operand_dtype(ScalarType in, std::initializer_list<Tensor> ts) {
  for (const Tensor& t : ts)
    if (t.defined() && t.dtype() != in) return opmath_dtype(in);
  return in;
}

void native_layer_norm_kernel(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const Tensor w = c.opt_tensor(2), b = c.opt_tensor(3);
  const ScalarType acc = opmath_dtype(in.dtype());
  const int64_t n = compute_numel(DimVector(c.int_list(1)));
  if (c.device.is_cuda()) {
    const ScalarType pt = cuda_norm_operand_dtype(in.dtype(), {w, b});
    cuda::layer_norm_into(c.outputs[0], c.outputs[1], c.outputs[2], dense_as(in, in.dtype()),
                          opt_dense_as(w, pt), opt_dense_as(b, pt), n, c.double_arg(4));
    return;
  }
  cpu::layer_norm_into(c.outputs[0], c.outputs[1], c.outputs[2], dense_as(in, in.dtype()),
                       opt_dense_as(w, acc), opt_dense_as(b, acc), n, c.double_arg(4));
}

// native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
// weight, bias) -> (grad_input, grad_weight, grad_bias): autograd's fused
// derivative of native_layer_norm (grad_weight/grad_bias None without them).
void layer_norm_backward_meta(OpCall& c) {
  const Tensor& in = c.tensor(1);
  if (!is_floating(in.dtype())) not_implemented_for("LayerNormBackwardKernelImpl", in.dtype());
  IGNIS_CHECK(c.tensor(0).sizes() == in.sizes(), "native_layer_norm_backward: grad_out of shape ",
              c.tensor(0).shape_str(), " does not match input of shape ", in.shape_str());
  // The kernel indexes mean/rstd by row and weight/bias by column: check the
  // shapes it relies on (autograd always passes consistent ones).
  const DimVector norm(c.int_list(2));
  const int64_t nd = static_cast<int64_t>(norm.size());
  IGNIS_CHECK(nd <= in.dim() &&
                  std::equal(norm.begin(), norm.end(), in.sizes().end() - nd),
              "native_layer_norm_backward: normalized_shape ", shape_str(norm),
              " does not match the trailing dims of input of shape ", in.shape_str());
  const int64_t N = compute_numel(norm), M = N == 0 ? 0 : in.numel() / N;
  for (int i : {3, 4})
    IGNIS_CHECK(c.tensor(i).numel() == M && is_floating(c.tensor(i).dtype()),
                "native_layer_norm_backward: ", i == 3 ? "mean" : "rstd", " must be a floating "
                "tensor of ", M, " elements (one per row), got ", c.tensor(i).shape_str());
  Tensor w = c.opt_tensor(5), b = c.opt_tensor(6);
  for (const Tensor* p : {&w, &b})
    IGNIS_CHECK(!p->defined() || (p->numel() == N && is_floating(p->dtype())),
                "native_layer_norm_backward: ", p == &w ? "weight" : "bias", " must be a floating "
                "tensor of ", N, " elements (the normalized shape), got ", p->shape_str());
  c.alloc(in.sizes(), in.dtype());
  if (w.defined()) c.alloc(w.sizes(), w.dtype());
  else c.outputs.emplace_back();
  if (b.defined()) c.alloc(b.sizes(), b.dtype());
  else c.outputs.emplace_back();
}
// One pass over the rows: each row's grad_input, and (when wanted) its terms
// of grad_weight/grad_bias summed into the partials of the thread that owns
// the row, while the row is in cache. Threads own contiguous row ranges; the
// partials are added in thread order at the end, so a thread count gives
// one result (another count reassociates the column sums, as torch's does).
// The column sums were a serial second pass: at 16 threads on [2048, 128]
// it took 3.5x torch's time for the whole op.
template <typename scalar_t>
void layer_norm_backward_loop(OpCall& c, int64_t M, int64_t N) {
  using T = opmath_t<scalar_t>;
  const ScalarType dt = c.tensor(1).dtype(), acc = opmath_dtype(dt);
  Tensor g = dense_as(c.tensor(0), dt), x = dense_as(c.tensor(1), dt);
  Tensor mean = dense_as(c.tensor(3), acc), rstd = dense_as(c.tensor(4), acc);
  Tensor w = opt_dense_as(c.opt_tensor(5), acc);
  const scalar_t* gp = g.data<scalar_t>();
  const scalar_t* xp = x.data<scalar_t>();
  const T* mp = mean.data<T>();
  const T* rp = rstd.data<T>();
  const T* wp = w.defined() ? w.data<T>() : nullptr;
  scalar_t* dx = c.outputs[0].data<scalar_t>();
  const bool want_w = c.outputs[1].defined(), want_b = c.outputs[2].defined();
  const bool want_params = want_w || want_b;
  const int threads = cpu::threads_for(M * N);
  // Per thread: N partial sums of grad_weight, then N of grad_bias.
  std::vector<T> partial(want_params ? size_t(threads) * size_t(2 * N) : 0, T(0));
  auto rows = [&](int t, int64_t m0, int64_t m1) {
    T* dw = want_params ? partial.data() + size_t(t) * size_t(2 * N) : nullptr;
    T* db = want_params ? dw + N : nullptr;
    for (int64_t m = m0; m < m1; ++m) {
      const scalar_t* gr = gp + m * N;
      const scalar_t* xr = xp + m * N;
      const T mu = mp[m], rs = rp[m];
      T a = 0, b = 0;
      for (int64_t n = 0; n < N; ++n) {
        const T gv = T(gr[n]), xh = (T(xr[n]) - mu) * rs;
        const T gw = gv * (wp ? wp[n] : T(1));
        a += gw;
        b += gw * xh;
        if (want_params) {
          dw[n] += gv * xh;
          db[n] += gv;
        }
      }
      a /= T(N);
      b /= T(N);
      scalar_t* dr = dx + m * N;
      for (int64_t n = 0; n < N; ++n) {
        const T xh = (T(xr[n]) - mu) * rs;
        const T gw = T(gr[n]) * (wp ? wp[n] : T(1));
        dr[n] = static_cast<scalar_t>(rs * (gw - a - xh * b));
      }
    }
  };
  if (threads == 1) {
    rows(0, 0, M);
  } else {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      rows(t, M * t / nt, M * (t + 1) / nt);
    }
  }
  if (!want_params) return;
  for (int t = 1; t < threads; ++t) {
    const T* src = partial.data() + size_t(t) * size_t(2 * N);
    for (int64_t n = 0; n < 2 * N; ++n) partial[size_t(n)] += src[n];
  }
  // Sums in the op-math type, converted into the parameter's dtype and layout.
  auto store = [N, acc](Tensor& out, const T* v) {
    Tensor tmp = empty_tensor(out.sizes(), acc, out.device());
    std::copy(v, v + N, tmp.data<T>());
    copy_into(out, tmp);
  };
  if (want_w) store(c.outputs[1], partial.data());
  if (want_b) store(c.outputs[2], partial.data() + N);
}
void layer_norm_backward_cpu(OpCall& c) {
  const Tensor& in = c.tensor(1);
  const int64_t N = compute_numel(DimVector(c.int_list(2)));
  const int64_t M = N == 0 ? 0 : in.numel() / N;
  IGNIS_DISPATCH_FLOAT(in.dtype(), "native_layer_norm_backward",
                       [&] { layer_norm_backward_loop<scalar_t>(c, M, N); });
}

void layer_norm_backward_cuda(OpCall& c) {
  const Tensor& in = c.tensor(1);
  const ScalarType dt = in.dtype();
  const int64_t N = compute_numel(DimVector(c.int_list(2)));
  const int64_t M = N == 0 ? 0 : in.numel() / N;
  const Tensor mean = c.tensor(3), rstd = c.tensor(4), w = c.opt_tensor(5);
  const ScalarType st = cuda_norm_operand_dtype(dt, {mean, rstd});
  cuda::layer_norm_backward(c.outputs[0], c.outputs[1], c.outputs[2], dense_as(c.tensor(0), dt),
                            dense_as(in, dt), dense_as(mean, st), dense_as(rstd, st),
                            opt_dense_as(w, cuda_norm_operand_dtype(dt, {w})), M, N);
}

OpRef native_layer_norm_op("native_layer_norm");
void layer_norm_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Stack r = native_layer_norm_op.call(s[0], s[1], s[2], s[3], s[4]);
  ret(s, r[0].to_tensor());
}

double finfo_eps(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 0.0009765625;
    case ScalarType::BFloat16: return 0.0078125;
    case ScalarType::Float32: return std::numeric_limits<float>::epsilon();
    default: return std::numeric_limits<double>::epsilon();
  }
}

// rms_norm(input, normalized_shape, weight=None, eps=None): the output has
// input's dtype; eps defaults to finfo(input.dtype).eps.
void rms_norm_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  if (!is_floating(in.dtype())) not_implemented_for("rms_norm", in.dtype());
  check_norm_shape(in, c.int_list(1), c.opt_tensor(2), Tensor());
  c.alloc(in.sizes(), in.dtype());
}
void rms_norm_cpu(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const double eps = c.args[3].is_none() ? finfo_eps(in.dtype()) : c.double_arg(3);
  const int64_t n = compute_numel(DimVector(c.int_list(1)));
  cpu::rms_norm_into(c.outputs[0], dense_as(in, in.dtype()),
                     opt_dense_as(c.opt_tensor(2), opmath_dtype(in.dtype())), n, eps);
}

// normalize(input, p=2, dim=1, eps=1e-12): input / max(||input||_p, eps).
void normalize_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  IGNIS_CHECK(is_floating(in.dtype()), "linalg.vector_norm: Expected a floating point or complex "
              "tensor as input. Got ", scalar_type_name(in.dtype()));
  wrap_dim(c.int_arg(2), in.dim());
  c.alloc(in.sizes(), in.dtype());
}
void normalize_cpu(OpCall& c) {
  const Tensor& in = c.tensor(0);
  cpu::normalize_into(c.outputs[0], dense_as(in, in.dtype()), c.double_arg(1),
                      wrap_dim(c.int_arg(2), in.dim()), c.double_arg(3));
}

// cosine_similarity(x1, x2, dim=1, eps=1e-8): x1 and x2 broadcast; the
// result drops dim.
DimVector cosine_shape(const OpCall& c, ScalarType* dt, int64_t* dim) {
  const Tensor &a = c.tensor(0), &b = c.tensor(1);
  DimVector shape = broadcast_shapes(a.sizes(), b.sizes());
  *dt = result_type({&a, &b});
  IGNIS_CHECK(is_floating(*dt), "expected common dtype to be floating point, yet common dtype is ",
              scalar_type_name(*dt));
  *dim = wrap_dim(c.int_arg(2), static_cast<int64_t>(shape.size()));
  return shape;
}
void cosine_meta(OpCall& c) {
  ScalarType dt;
  int64_t dim;
  DimVector shape = cosine_shape(c, &dt, &dim);
  if (!shape.empty()) shape.erase(dim);
  c.alloc(shape, dt);
}
void cosine_cpu(OpCall& c) {
  ScalarType dt;
  int64_t dim;
  DimVector shape = cosine_shape(c, &dt, &dim);
  cpu::cosine_similarity_into(c.outputs[0], dense_as(c.tensor(0), dt, shape),
                              dense_as(c.tensor(1), dt, shape), dim, c.double_arg(3));
}

// ---- dropout ----------------------------------------------------------------------------
void check_dropout_p(double p) {
  IGNIS_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
}

// native_dropout(input, p, train) -> (out, mask): out = input * mask / (1 - p)
// with mask ~ Bernoulli(1 - p), drawn from the counter-based generator.
void native_dropout_meta(OpCall& c) {
  const Tensor& in = c.tensor(0);
  check_dropout_p(c.double_arg(1));
  const bool train = c.args[2].is_none() || c.bool_arg(2);
  IGNIS_CHECK(!train || is_floating(in.dtype()), "result type Float can't be cast to the desired "
              "output type ", scalar_type_name(in.dtype()));
  c.alloc(in.sizes(), in.dtype());
  c.alloc(in.sizes(), ScalarType::Bool);
}

template <typename T>
void dropout_typed(const Tensor& out, const Tensor& mask, const Tensor& in, double p) {
  using A = opmath_t<T>;
  const int64_t n = in.numel();
  const T* x = in.data<T>();
  T* y = out.data<T>();
  bool* m = mask.data<bool>();
  const float keep = static_cast<float>(1.0 - p);
  const A scale = p < 1 ? static_cast<A>(1.0 / (1.0 - p)) : A(0);
  // One Philox block gives the uniforms of four consecutive elements.
  const int64_t blocks = (n + 3) / 4;
  auto [seed, offset] = default_generator().reserve(static_cast<uint64_t>(blocks));
  cpu::parallel_rows(blocks, 4, [&](int64_t b0, int64_t b1) {
    philox_uniform_floats(seed, offset, b0 * 4, std::min(b1 * 4, n), [&](int64_t i, float u) {
      // (x read whatever the mask: a select, not a branch on random bits)
      const bool kept = u < keep;
      const A v = static_cast<A>(x[i]) * scale;
      m[i] = kept;
      y[i] = static_cast<T>(kept ? v : A(0));
    });
  });
}

// On CUDA the kernel draws the same numbers from the same generator
// (kernels/cuda/random_kernels.h), so a seed gives both devices one mask.
void native_dropout_impl(OpCall& c) {
  const Tensor &out = c.outputs[0], &mask = c.outputs[1];
  const Tensor& in = c.tensor(0);
  if (!(c.args[2].is_none() || c.bool_arg(2))) {
    copy_into(out, in);
    fill_tensor(mask, Scalar(true));
    return;
  }
  if (in.numel() == 0) return;
  Tensor x = dense_as(in, in.dtype());
  if (in.device().is_cuda())
    return cuda::dropout(out, mask, x, c.double_arg(1), default_generator());
  IGNIS_DISPATCH_FLOAT(in.dtype(), "dropout", [&] {
    dropout_typed<scalar_t>(out, mask, x, c.double_arg(1));
  });
}

OpRef native_dropout_op("native_dropout"), dropout_op("dropout"), dropout_inplace_op("dropout_"),
    copy_op("copy_");

// One op serves torch.dropout and F.dropout (same positional form), so the
// range error is F's ValueError; native_dropout raises RuntimeError.
void check_functional_dropout_p(double p) {
  IGNIS_CHECK_VALUE(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
}

// dropout(input, p, train): the input itself when nothing is dropped.
void dropout_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  const double p = s[1].to_double();
  const bool train = s[2].to_bool();
  check_functional_dropout_p(p);
  if (!train || p == 0) return ret(s, x);
  ret(s, native_dropout_op.call(x, p, train)[0].to_tensor());
}
void dropout_inplace_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  const double p = s[1].to_double();
  const bool train = s[2].to_bool();
  check_functional_dropout_p(p);
  if (train && p != 0) copy_op.call(x, native_dropout_op.call(x, p, train)[0].to_tensor());
  ret(s, x);
}
// F.dropout(input, p=0.5, training=True, inplace=False)
void dropout_functional_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  check_functional_dropout_p(s[1].to_double());
  const bool inplace = s[3].to_bool();
  s.pop_back();
  ret(s, call_stack(inplace ? dropout_inplace_op : dropout_op, s));
}

// ---- embedding / one_hot -------------------------------------------------------------
void embedding_meta(OpCall& c) {
  const Tensor &w = c.tensor(0), &idx = c.tensor(1);
  IGNIS_CHECK(idx.dtype() == ScalarType::Int64 || idx.dtype() == ScalarType::Int32,
              "Expected tensor for argument #1 'indices' to have one of the following scalar "
              "types: Long, Int; but got torch.", scalar_type_name(idx.dtype()),
              "Tensor instead (while checking arguments for embedding)");
  IGNIS_CHECK(w.dim() == 2, "'weight' must be 2-D");
  DimVector shape = idx.sizes();
  shape.push_back(w.sizes()[1]);
  c.alloc(shape, w.dtype());
}

template <typename I>
void embedding_rows(const Tensor& out, const Tensor& w, const Tensor& idx) {
  const I* ix = idx.data<I>();
  const int64_t n = idx.numel(), rows = w.sizes()[0], d = w.sizes()[1];
  for (int64_t i = 0; i < n; ++i)
    IGNIS_CHECK_INDEX(ix[i] >= 0 && ix[i] < rows, "index out of range in self");
  const size_t es = w.itemsize();
  const char* wp = static_cast<const char*>(w.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t rs = w.strides()[0], cs = w.strides()[1];
  cpu::parallel_rows(n, d, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const char* src = wp + static_cast<int64_t>(ix[i]) * rs * static_cast<int64_t>(es);
      char* dst = op + i * d * static_cast<int64_t>(es);
      if (cs == 1 || d == 1) {
        std::memcpy(dst, src, d * es);
      } else {
        for (int64_t j = 0; j < d; ++j) std::memcpy(dst + j * es, src + j * cs * es, es);
      }
    }
  });
}

void embedding_cpu(OpCall& c) {
  Tensor idx = dense_as(c.tensor(1), c.tensor(1).dtype());
  if (idx.dtype() == ScalarType::Int64) embedding_rows<int64_t>(c.outputs[0], c.tensor(0), idx);
  else embedding_rows<int32_t>(c.outputs[0], c.tensor(0), idx);
}

// one_hot(self, num_classes=-1): int64 [..., num_classes]; -1 infers
// max(self) + 1, which needs the data.
void one_hot_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK(self.dtype() == ScalarType::Int64,
              "one_hot is only applicable to index tensor of type LongTensor.");
  int64_t classes = c.int_arg(1);
  if (!self.device().is_meta()) {
    Tensor x = dense_as(self, ScalarType::Int64);
    const int64_t* p = x.data<int64_t>();
    int64_t lo = 0, hi = -1;
    for (int64_t i = 0; i < x.numel(); ++i) {
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
    IGNIS_CHECK(lo >= 0, "Class values must be non-negative.");
    if (classes == -1) {
      IGNIS_CHECK(x.numel() > 0, "Can not infer total number of classes from empty tensor.");
      classes = hi + 1;
    }
    IGNIS_CHECK(hi < classes, "Class values must be smaller than num_classes.");
  }
  IGNIS_CHECK(classes >= 0, "Can not infer total number of classes from a meta tensor; pass "
              "num_classes.");
  DimVector shape = self.sizes();
  shape.push_back(classes);
  c.alloc(shape, ScalarType::Int64);
}
void one_hot_cpu(OpCall& c) {
  const Tensor& out = c.outputs[0];
  cpu::fill(out, Scalar(int64_t(0)));
  Tensor x = dense_as(c.tensor(0), ScalarType::Int64);
  const int64_t* p = x.data<int64_t>();
  int64_t* o = out.data<int64_t>();
  const int64_t classes = out.sizes()[out.dim() - 1];
  for (int64_t i = 0; i < x.numel(); ++i) o[i * classes + p[i]] = 1;
}

// ---- losses -------------------------------------------------------------------------------
// The reduction of a loss: the legacy size_average/reduce flags (argument
// indices, -1 when the op has none) win when given, as in
// torch.nn.functional. *batchmean (kl_div only) is set for 'batchmean'.
Reduction reduction_of(const OpCall& c, int size_average, int reduce, int reduction,
                       bool* batchmean = nullptr) {
  const IValue none;
  const IValue& sa = size_average >= 0 ? c.args[size_average] : none;
  const IValue& rd = reduce >= 0 ? c.args[reduce] : none;
  if (!sa.is_none() || !rd.is_none()) {
    const bool avg = sa.is_none() || sa.to_bool();
    if (!rd.is_none() && !rd.to_bool()) return Reduction::None;
    return avg ? Reduction::Mean : Reduction::Sum;
  }
  const std::string& r = c.args[reduction].to_string();
  if (r == "none") return Reduction::None;
  if (r == "mean") return Reduction::Mean;
  if (r == "sum") return Reduction::Sum;
  if (r == "batchmean" && batchmean) {
    *batchmean = true;
    return Reduction::Mean;
  }
  IGNIS_FAIL_KIND(Value, r, " is not a valid value for reduction");
}

// Geometry of a class-index loss: input [N, C, d...] (or [C]) as
// [N, C, inner]; checks the target's shape and dtype and the weight.
struct ClassGeom {
  int64_t N, C, inner;
  DimVector none_shape;  // per-element loss shape (target's)
};
ClassGeom class_geom(const Tensor& in, const Tensor& target, const Tensor& weight,
                     Reduction red) {
  IGNIS_CHECK_VALUE(in.dim() >= 1, "Expected 1 or more dimensions (got ", in.dim(), ")");
  ClassGeom g{1, 0, 1, {}};
  if (in.dim() == 1) {
    IGNIS_CHECK(target.dim() <= 1 && target.numel() == 1, "0D or 1D target tensor expected, "
                "multi-target not supported");
    g.C = in.sizes()[0];
    g.none_shape = target.sizes();
  } else {
    g.N = in.sizes()[0];
    g.C = in.sizes()[1];
    const int64_t tn = target.dim() == 0 ? 0 : target.sizes()[0];
    IGNIS_CHECK_VALUE(tn == g.N, "Expected input batch_size (", g.N,
                      ") to match target batch_size (", tn, ").");
    if (in.dim() == 2) {
      IGNIS_CHECK(target.dim() == 1, "0D or 1D target tensor expected, multi-target not "
                  "supported");
    } else {
      bool ok = target.dim() == in.dim() - 1;
      for (int64_t d = 2; ok && d < in.dim(); ++d) ok = target.sizes()[d - 1] == in.sizes()[d];
      IGNIS_CHECK(ok, "size mismatch (got input: ", in.shape_str(), " , target: ",
                  target.shape_str());
      for (int64_t d = 2; d < in.dim(); ++d) g.inner *= in.sizes()[d];
    }
    g.none_shape = target.sizes();
  }
  IGNIS_CHECK(target.dtype() == ScalarType::Int64 || target.dtype() == ScalarType::UInt8,
              "expected target dtype to be Long or Byte, but got ",
              scalar_type_name(target.dtype()));
  // torch takes uint8 targets only for 1-D and 2-D inputs: more dims go to
  // its nll_loss2d, which wants int64 (and is skipped for an empty input
  // reduced to a scalar).
  IGNIS_CHECK(target.dtype() != ScalarType::UInt8 || in.dim() <= 2 ||
              (red != Reduction::None && in.numel() == 0),
              "expected scalar type Long but found Byte");
  if (weight.defined()) {
    IGNIS_CHECK(weight.dim() == 1 && weight.numel() == g.C, "weight tensor should be defined "
                "either for all ", g.C, " classes or no classes but got weight tensor of shape: ",
                weight.shape_str());
    IGNIS_CHECK(weight.dtype() == in.dtype(), "expected scalar type ",
                scalar_type_name(in.dtype()), " but found ", scalar_type_name(weight.dtype()));
  }
  return g;
}

// Target values must be class indices (or ignore_index). Returns how many
// are not ignored.
int64_t check_targets(const Tensor& target, int64_t C, int64_t ignore_index) {
  int64_t counted = 0;
  auto scan = [&](auto* p) {
    for (int64_t i = 0; i < target.numel(); ++i) {
      const int64_t t = static_cast<int64_t>(p[i]);
      IGNIS_CHECK_INDEX(t == ignore_index || (t >= 0 && t < C), "Target ", t,
                        " is out of bounds.");
      counted += t != ignore_index;
    }
  };
  if (target.dtype() == ScalarType::UInt8) scan(target.data<uint8_t>());
  else scan(target.data<int64_t>());
  return counted;
}

// nll_loss(input, target, weight=None, size_average=None, ignore_index=-100,
//          reduce=None, reduction='mean')
void nll_loss_meta(OpCall& c) {
  const Tensor &in = c.tensor(0), &target = c.tensor(1);
  const Reduction red = reduction_of(c, 3, 5, 6);
  ClassGeom g = class_geom(in, target, c.opt_tensor(2), red);
  if (!is_floating(in.dtype())) not_implemented_for("nll_loss_out_frame", in.dtype());
  if (red == Reduction::None) c.alloc(g.none_shape, in.dtype());
  else c.alloc({}, in.dtype());
}
void nll_loss_cpu(OpCall& c) {
  const Tensor& in = c.tensor(0);
  const Reduction red = reduction_of(c, 3, 5, 6);
  ClassGeom g = class_geom(in, c.tensor(1), c.opt_tensor(2), red);
  Tensor target = dense_as(c.tensor(1), c.tensor(1).dtype());
  const int64_t ignore = c.int_arg(4);
  check_targets(target, g.C, ignore);
  cpu::class_loss_into(c.outputs[0], dense_as(in, in.dtype()), target,
                       opt_dense_as(c.opt_tensor(2), in.dtype()), red, ignore, false, 0.0, g.N,
                       g.C, g.inner);
}

// cross_entropy(input, target, weight=None, size_average=None,
//               ignore_index=-100, reduce=None, reduction='mean',
//               label_smoothing=0.0): class indices, or class
// probabilities when target has input's shape.
bool prob_targets(const Tensor& in, const Tensor& target) {
  return in.sizes() == target.sizes();
}
// Class indices: torch computes these through nll_loss, whose class weight
// is not differentiable (class probabilities weigh with differentiable ops).
bool class_index_call(const Stack& s) {
  return !prob_targets(s[0].to_tensor(), s[1].to_tensor());
}
void cross_entropy_meta(OpCall& c) {
  const Tensor &in = c.tensor(0), &target = c.tensor(1);
  Tensor weight = c.opt_tensor(2);
  const double eps = c.double_arg(7);
  IGNIS_CHECK(eps >= 0 && eps <= 1, "label_smoothing must be between 0.0 and 1.0. Got: ", eps);
  const Reduction red = reduction_of(c, 3, 5, 6);
  if (prob_targets(in, target)) {
    IGNIS_CHECK(is_floating(target.dtype()), "Expected floating point type for target with class "
                "probabilities, got ", scalar_type_name(target.dtype()));
    if (!is_floating(in.dtype()))
      not_implemented_for("log_softmax_lastdim_kernel_impl", in.dtype());
    IGNIS_CHECK_VALUE(in.dim() >= 1, "Expected 1 or more dimensions (got ", in.dim(), ")");
    const int64_t cdim = in.dim() == 1 ? 0 : 1;
    IGNIS_CHECK(!weight.defined() || weight.numel() == in.sizes()[cdim], "weight tensor should "
                "be defined either for all ", in.sizes()[cdim], " classes or no classes but got "
                "weight tensor of shape: ", weight.defined() ? weight.shape_str() : "");
    const ScalarType dt = promote_types(in.dtype(), target.dtype());
    DimVector shape = in.sizes();
    shape.erase(cdim);
    if (red == Reduction::None) c.alloc(shape, dt);
    else c.alloc({}, dt);
    return;
  }
  ClassGeom g = class_geom(in, target, weight, red);
  if (!is_floating(in.dtype())) not_implemented_for("log_softmax_lastdim_kernel_impl", in.dtype());
  if (red == Reduction::None) c.alloc(g.none_shape, in.dtype());
  else c.alloc({}, in.dtype());
}
void cross_entropy_cpu(OpCall& c) {
  const Tensor &in = c.tensor(0), &out = c.outputs[0];
  const Reduction red = reduction_of(c, 3, 5, 6);
  const double eps = c.double_arg(7);
  if (prob_targets(in, c.tensor(1))) {
    const ScalarType dt = out.dtype();
    const int64_t N = in.dim() == 1 ? 1 : in.sizes()[0];
    const int64_t C = in.dim() == 1 ? in.sizes()[0] : in.sizes()[1];
    const int64_t inner = N * C == 0 ? 0 : in.numel() / (N * C);
    cpu::prob_cross_entropy_into(out, dense_as(in, dt), dense_as(c.tensor(1), dt),
                                 opt_dense_as(c.opt_tensor(2), dt), red, eps, N, C, inner);
    return;
  }
  ClassGeom g = class_geom(in, c.tensor(1), c.opt_tensor(2), red);
  Tensor target = dense_as(c.tensor(1), c.tensor(1).dtype());
  const int64_t ignore = c.int_arg(4);
  const int64_t counted = check_targets(target, g.C, ignore);
  // torch's label-smoothed, weighted mean gathers the weights of the counted
  // targets with the targets as indices, and gather takes no uint8 indices:
  // it fails there, so the same call fails here (in forward, not backward).
  IGNIS_CHECK(target.dtype() != ScalarType::UInt8 || eps <= 0 || !c.opt_tensor(2).defined() ||
              red != Reduction::Mean || counted == 0,
              "gather(): Expected dtype int32/int64 for index (torch's cross_entropy takes no "
              "uint8 target with label_smoothing, a class weight and reduction='mean')");
  cpu::class_loss_into(out, dense_as(in, in.dtype()), target,
                       opt_dense_as(c.opt_tensor(2), in.dtype()), red, ignore, true, eps, g.N,
                       g.C, g.inner);
}

// Note [Fused cross-entropy on CUDA]
// cross_entropy with class indices over [N, C] or [C] logits runs on CUDA as
// two row kernels (kernels/cuda/row_kernels.h): the forward reads each row
// once for its log-softmax statistics, picked logit and (label smoothing)
// weighted sum, and writes a loss and a weight per row, which the
// reduction sums; the backward writes softmax minus one-hot, scaled by the
// incoming gradient, in one kernel too. Statistics accumulate in float for
// float16/bfloat16 logits. Everything else (class probabilities, [N, C, d...]
// inputs, and the uint8-target case the CPU refuses) runs the decomposition,
// as before. The declaration is unchanged, so the AOT stage and the compiler
// still see cross_entropy decompose. A target out of range is not checked
// on the GPU (that needs the data on the host): its row's loss is NaN.
bool fused_cross_entropy_applies(const OpCall& c) {
  const Tensor &in = c.tensor(0), &target = c.tensor(1);
  if (prob_targets(in, target) || in.dim() > 2 || !is_floating(in.dtype())) return false;
  return !(target.dtype() == ScalarType::UInt8 && c.double_arg(7) > 0 &&
           c.opt_tensor(2).defined() && reduction_of(c, 3, 5, 6) == Reduction::Mean);
}
// `t` contiguous in dtype `dt` on `device`: a 0-dim CPU target may join CUDA
// logits (as any scalar may), and the kernel reads it on the GPU.
Tensor dense_on(const Tensor& t, ScalarType dt, Device device) {
  if (!t.defined()) return t;
  if (t.device() == device) return dense_as(t, dt);
  Tensor out = empty_tensor(t.sizes(), dt, device);
  copy_tensor(out, t);
  return out;
}
cuda::CrossEntropyRows cross_entropy_rows_of(const Tensor& in, const Tensor& target,
                                             const Tensor& weight, int64_t ignore, double eps) {
  cuda::CrossEntropyRows a;
  a.logits = dense_as(in, in.dtype());
  a.target = dense_on(target, target.dtype(), in.device());
  a.weight = dense_on(weight, opmath_dtype(in.dtype()), in.device());
  a.ignore_index = ignore;
  a.label_smoothing = eps;
  return a;
}
void cross_entropy_cuda(OpCall& c) {
  const Tensor &in = c.tensor(0), &out = c.outputs[0];
  if (!fused_cross_entropy_applies(c)) {
    Stack s(c.args.begin(), c.args.end());
    ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
    decomp::cross_entropy(c.op, s);
    copy_tensor(out, s[0].to_tensor());
    return;
  }
  static OpRef sum_op("sum"), div_op("div");
  const Reduction red = reduction_of(c, 3, 5, 6);
  const cuda::CrossEntropyRows a =
      cross_entropy_rows_of(in, c.tensor(1), c.opt_tensor(2), c.int_arg(4), c.double_arg(7));
  const int64_t N = in.dim() == 1 ? 1 : in.size(0);
  const ScalarType acc = opmath_dtype(in.dtype());
  const DimVector rows = red == Reduction::None ? out.sizes() : DimVector{N};
  Tensor loss = empty_tensor(rows, acc, in.device());
  Tensor picked = empty_tensor({N}, acc, in.device());
  cuda::cross_entropy_rows(loss, picked, a);
  if (red == Reduction::None) return copy_tensor(out, loss);
  Tensor total = sum_op.tensor(loss);
  if (red == Reduction::Mean) total = div_op.tensor(total, sum_op.tensor(picked));
  copy_tensor(out, total);
}

// Elementwise losses, one fused kernel (kernels/cpu/loss) for all of them.
// Each op's argument positions and rules, from torch.nn.functional:
enum class LossOp : uint8_t { MSE, L1, SmoothL1, Huber, BCE, BCEWithLogits, KLDiv };
struct LossSpec {
  const char* kernel;  // named in "not implemented for" errors
  int size_average, reduce, reduction, weight, pos_weight, param;  // arg index or -1
  // mse/l1/huber: weight must have input's shape; bce*: it broadcasts
  bool weight_same_shape;
  // bce*: target must have input's shape (else it broadcasts)
  bool target_same_shape;
};
constexpr LossSpec spec_of(LossOp op) {
  switch (op) {
    case LossOp::MSE: return {"mse_cpu", 2, 3, 4, 5, -1, -1, true, false};
    case LossOp::L1: return {"l1_cpu", 2, 3, 4, 5, -1, -1, true, false};
    case LossOp::SmoothL1: return {"smooth_l1_cpu", 2, 3, 4, -1, -1, 5, false, false};
    case LossOp::Huber: return {"huber_cpu", -1, -1, 2, 4, -1, 3, true, false};
    case LossOp::BCE: return {"binary_cross_entropy", 3, 4, 5, 2, -1, -1, false, true};
    case LossOp::BCEWithLogits:
      return {"log_sigmoid_cpu", 3, 4, 5, 2, 6, -1, false, true};
    case LossOp::KLDiv: return {"kl_div", 2, 3, 4, -1, -1, -1, false, false};
  }
  return {};
}

Tensor opt_arg(const OpCall& c, int i) { return i >= 0 ? c.opt_tensor(i) : Tensor(); }

// Checks the arguments; returns the result dtype and the loss shape.
template <LossOp Op>
std::pair<ScalarType, DimVector> loss_geometry(const OpCall& c) {
  constexpr LossSpec sp = spec_of(Op);
  const Tensor &in = c.tensor(0), &target = c.tensor(1);
  const Tensor w = opt_arg(c, sp.weight);
  if (sp.target_same_shape && target.sizes() != in.sizes()) {
    if (Op == LossOp::BCE)
      IGNIS_FAIL_KIND(Value, "Using a target size (", target.shape_str(), ") that is different "
                      "to the input size (", in.shape_str(), ") is deprecated. Please ensure "
                      "they have the same size.");
    IGNIS_FAIL_KIND(Value, "Target size (", target.shape_str(), ") must be the same as input "
                    "size (", in.shape_str(), ")");
  }
  IGNIS_CHECK_VALUE(!sp.weight_same_shape || !w.defined() || w.sizes() == in.sizes(),
                    "Weights and input must have the same size.");
  ScalarType dt = result_type({&in, &target});
  if (Op == LossOp::BCE) {
    IGNIS_CHECK(target.dtype() == in.dtype(), "Found dtype ", scalar_type_name(target.dtype()),
                " but expected ", scalar_type_name(in.dtype()));
    dt = in.dtype();
  }
  if (Op == LossOp::BCEWithLogits) {
    // PyTorch computes in place into a tensor of target's dtype, so the
    // result has target's dtype whatever input's and the weights' are.
    if (!is_floating(in.dtype())) not_implemented_for(sp.kernel, in.dtype());
    IGNIS_CHECK(is_floating(target.dtype()), "result type ", scalar_type_name(in.dtype()),
                " can't be cast to the desired output type ", scalar_type_name(target.dtype()));
    dt = target.dtype();
  }
  if (!is_floating(dt)) not_implemented_for(sp.kernel, dt);
  if constexpr (Op == LossOp::SmoothL1)
    IGNIS_CHECK(c.double_arg(sp.param) >= 0, "smooth_l1_loss does not support negative values "
                "for beta.");
  if constexpr (Op == LossOp::Huber)
    IGNIS_CHECK(c.double_arg(sp.param) > 0, "huber_loss does not support non-positive values "
                "for delta.");
  DimVector shape = broadcast_shapes(in.sizes(), target.sizes());
  if (w.defined()) shape = broadcast_shapes(shape, w.sizes());
  const Tensor pw = opt_arg(c, sp.pos_weight);
  if (pw.defined()) shape = broadcast_shapes(shape, pw.sizes());
  return {dt, shape};
}

template <LossOp Op>
Reduction loss_reduction(const OpCall& c, bool* batchmean) {
  constexpr LossSpec sp = spec_of(Op);
  return reduction_of(c, sp.size_average, sp.reduce, sp.reduction,
                      Op == LossOp::KLDiv ? batchmean : nullptr);
}

template <LossOp Op>
void point_loss_meta(OpCall& c) {
  auto [dt, shape] = loss_geometry<Op>(c);
  bool batchmean = false;
  if (loss_reduction<Op>(c, &batchmean) == Reduction::None) c.alloc(shape, dt);
  else c.alloc({}, dt);
}

template <LossOp Op>
void point_loss_cpu(OpCall& c) {
  constexpr LossSpec sp = spec_of(Op);
  auto [dt, shape] = loss_geometry<Op>(c);
  bool batchmean = false;
  const Reduction red = loss_reduction<Op>(c, &batchmean);
  const Tensor &in = c.tensor(0), &target = c.tensor(1);
  const Tensor w = opt_arg(c, sp.weight), pw = opt_arg(c, sp.pos_weight);
  Tensor x = dense_as(in, dt, shape);
  if (Op == LossOp::BCE) {
    IGNIS_DISPATCH_FLOAT(dt, "binary_cross_entropy", [&] {
      const scalar_t* p = x.data<scalar_t>();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const float v = static_cast<float>(p[i]);
        IGNIS_CHECK(v >= 0 && v <= 1, "all elements of input should be between 0 and 1");
      }
    });
  }
  cpu::PointLoss kind = Op == LossOp::MSE ? cpu::PointLoss::MSE
                        : Op == LossOp::L1 ? cpu::PointLoss::L1
                        : Op == LossOp::SmoothL1 ? cpu::PointLoss::SmoothL1
                        : Op == LossOp::Huber ? cpu::PointLoss::Huber
                        : Op == LossOp::BCE ? cpu::PointLoss::BCE
                        : Op == LossOp::BCEWithLogits ? cpu::PointLoss::BCEWithLogits
                        : c.bool_arg(5) ? cpu::PointLoss::KLDivLogTarget
                                        : cpu::PointLoss::KLDiv;
  // torch.nn.functional's weighted mse/l1 divide by the weight sum;
  // kl_div's batchmean by the batch size; everything else by numel.
  double count = static_cast<double>(compute_numel(shape));
  // (A negative count asks for the weight sum: torch sums the weight before
  // broadcasting, so the kernel's sum of the broadcast weight is divided by
  // how many times broadcasting repeats each weight.)
  if ((Op == LossOp::MSE || Op == LossOp::L1) && w.defined())
    count = -(w.numel() == 0 ? 1.0 : count / static_cast<double>(w.numel()));
  if (batchmean) count = in.dim() == 0 ? 1.0 : static_cast<double>(in.sizes()[0]);
  cpu::pointwise_loss_into(c.outputs[0], x, dense_as(target, dt, shape),
                           w.defined() ? dense_as(w, dt, shape) : w,
                           pw.defined() ? dense_as(pw, dt, shape) : pw, kind,
                           sp.param >= 0 ? c.double_arg(sp.param) : 0.0, red, count);
}

// ---- activations ------------------------------------------------------------------------
// Floating-point-only pointwise ops: PyTorch raises NotImplementedError
// naming "<op>_cpu" (or "<op>_cuda") for other dtypes.
template <bool Inplace>
void float_act_meta(OpCall& c) {
  pointwise_meta(c, {0}, DtypeRule::Promote, Inplace);
  std::string name = c.op.schema().name;
  if (Inplace) name.pop_back();
  const ScalarType dt = c.iter->common_dtype();
  if (!is_floating(dt)) not_implemented_for(name + (c.device.is_cuda() ? "_cuda" : "_cpu"), dt);
}

template <typename S>
void run_float(OpCall& c, S make) {
  IGNIS_DISPATCH_FLOAT(c.iter->common_dtype(), c.op.schema().name.c_str(), [&] {
    cpu::cpu_kernel<scalar_t, scalar_t>(*c.iter, make(opmath_t<scalar_t>()));
  });
}

// softplus(self, beta=1, threshold=20): log(1 + exp(beta x)) / beta, linear
// above the threshold.
void softplus_cpu(OpCall& c) {
  const double beta = c.scalar(1).to_double(), thr = c.scalar(2).to_double();
  run_float(c, [&](auto tag) {
    using T = decltype(tag);
    const T b = T(beta), th = T(thr);
    return [b, th](T x) -> T { return scalar_ops::Softplus()(x, b, th); };
  });
}
void leaky_relu_cpu(OpCall& c) {
  const double slope = c.scalar(1).to_double();
  run_float(c, [&](auto tag) {
    using T = decltype(tag);
    const T s = T(slope);
    return [s](T x) -> T { return scalar_ops::LeakyRelu()(x, s); };
  });
}
// elu(self, alpha=1, scale=1, input_scale=1)
void elu_cpu(OpCall& c) {
  const double alpha = c.scalar(1).to_double(), scale = c.scalar(2).to_double(),
               in_scale = c.scalar(3).to_double();
  run_float(c, [&](auto tag) {
    using T = decltype(tag);
    const T neg = T(alpha * scale), pos = T(scale), is = T(in_scale);
    return [neg, pos, is](T x) -> T { return scalar_ops::Elu()(x, neg, pos, is); };
  });
}
void logsigmoid_cpu(OpCall& c) {
  run_float(c, [](auto tag) {
    using T = decltype(tag);
    return [](T x) -> T { return scalar_ops::LogSigmoid()(x); };
  });
}

// The CUDA kernels: the same functions and arguments (elu's negcoef is
// alpha * scale in double, as above).
void softplus_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Softplus::name, c.iter->common_dtype(), cuda::kFloatDtypes,
                 {Scalar(c.scalar(1).to_double()), Scalar(c.scalar(2).to_double())});
}
void leaky_relu_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::LeakyRelu::name, c.iter->common_dtype(), cuda::kFloatDtypes,
                 {Scalar(c.scalar(1).to_double())});
}
void elu_cuda(OpCall& c) {
  const double alpha = c.scalar(1).to_double(), scale = c.scalar(2).to_double();
  cuda_pointwise(c, scalar_ops::Elu::name, c.iter->common_dtype(), cuda::kFloatDtypes,
                 {Scalar(alpha * scale), Scalar(scale), Scalar(c.scalar(3).to_double())});
}
void logsigmoid_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::LogSigmoid::name, c.iter->common_dtype(), cuda::kFloatDtypes);
}

// hardtanh(self, min_val=-1, max_val=1): every numeric dtype but bool.
template <bool Inplace>
void hardtanh_meta(OpCall& c) {
  IGNIS_CHECK(c.tensor(0).dtype() != ScalarType::Bool, "Bool inputs not supported for hardtanh");
  pointwise_meta(c, {0}, DtypeRule::Promote, Inplace);
}
void hardtanh_cpu(OpCall& c) {
  const Scalar lo = c.scalar(1), hi = c.scalar(2);
  IGNIS_DISPATCH_NUMERIC(c.iter->common_dtype(), "hardtanh", [&] {
    using T = opmath_t<scalar_t>;
    const T l = lo.to<T>(), h = hi.to<T>();
    cpu::cpu_kernel<scalar_t, scalar_t>(
        *c.iter, [l, h](T x) -> T { return scalar_ops::Hardtanh()(x, l, h); });
  });
}

void hardtanh_cuda(OpCall& c) {
  cuda_pointwise(c, scalar_ops::Hardtanh::name, c.iter->common_dtype(), cuda::kNumericDtypes,
                 {c.scalar(1), c.scalar(2)});
}

OpRef hardtanh_op("hardtanh"), hardtanh_inplace_op("hardtanh_");
template <bool Inplace>
void relu6_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  ret(s, (Inplace ? hardtanh_inplace_op : hardtanh_op).tensor(x, int64_t(0), int64_t(6)));
}

// prelu(self, weight): self where it is positive, weight * self elsewhere;
// the weight one value or one per channel (dim 1). A composite (autograd
// records its parts), declared as an op so that autocast can list it:
// torch runs prelu in the autocast dtype on both device types.
OpRef gt_op("gt"), where_op("where.self"), mul_op("mul");
void prelu_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor(), w = s[1].to_tensor();
  IGNIS_CHECK(w.dim() == 1, "prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
              "ndim = ", w.dim());
  const int64_t n = w.numel();
  if (n != 1) {
    const int64_t channels = x.dim() >= 2 ? x.sizes()[1] : 1;
    IGNIS_CHECK(x.dim() != 0 && channels == n, "Mismatch of parameter numbers and input channel "
                "size. Found parameter numbers = ", n, " and channel size = ", channels, ".");
    if (x.dim() >= 2) {
      DimVector shape{n};
      for (int64_t i = 2; i < x.dim(); ++i) shape.push_back(1);
      w = OpRef("reshape").tensor(w, shape);
    }
  }
  Tensor zero = scalar_to_tensor(0.0, ScalarType::Float64, true);
  ret(s, where_op.tensor(gt_op.tensor(x, zero), x, mul_op.tensor(w, x)));
}

// glu(self, dim=-1): first half * sigmoid(second half) along dim.
void glu_meta(OpCall& c) {
  const Tensor& self = c.tensor(0);
  IGNIS_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t dim = wrap_dim(c.int_arg(1), self.dim());
  const int64_t n = self.sizes()[dim];
  IGNIS_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", dim, " is size ", n);
  if (!is_floating(self.dtype())) not_implemented_for("glu_cpu", self.dtype());
  DimVector half = self.sizes();
  half[dim] = n / 2;
  Tensor a = make_view(self, half, self.strides(), self.storage_offset());
  Tensor b = make_view(self, half, self.strides(),
                       self.storage_offset() + (n / 2) * self.strides()[dim]);
  auto it = std::make_shared<TensorIterator>();
  it->add_output(Tensor());
  it->add_input(a);
  it->add_input(b);
  IterConfig cfg;
  cfg.op_name = "glu";
  it->build(cfg, c.device);
  c.outputs.push_back(it->output(0));
  c.iter = std::move(it);
}
void glu_cpu(OpCall& c) {
  run_float(c, [](auto tag) {
    using T = decltype(tag);
    return [](T a, T b) -> T { return a * cpu::sigmoid(b); };
  });
}

// F.<name>(..., inplace=False): the out-of-place or the in-place op.
OpRef leaky_relu_op("leaky_relu"), leaky_relu_inplace_op("leaky_relu_"), elu_op("elu"),
    elu_inplace_op("elu_"), relu6_op("relu6"), relu6_inplace_op("relu6_");
KernelFn inplace_switch(const OpRef* out_of_place, const OpRef* in_place) {
  return [out_of_place, in_place](const OpHandle&, DispatchKeySet, Stack& s) {
    const bool inplace = s.back().to_bool();
    s.pop_back();
    ret(s, call_stack(inplace ? *in_place : *out_of_place, s));
  };
}

// Declares a floating-point activation `name`, and its in-place form.
// ---- derivatives ------------------------------------------------------------------
using namespace grad_ops;  // NOLINT

// On CUDA, outside create_graph (grad mode off), the derivative of softmax
// along the last dim is one row kernel (kernels/cuda/row_kernels.h: the
// formulas below in op-math, rounded once) instead of four ops' passes.
bool fused_softmax_backward(GradCtx& c, cpu::SoftmaxKind kind) {
  const Tensor& y = c.result();
  const Tensor& g = c.grad();
  if (!y.device().is_cuda() || autograd::grad_enabled() || !is_floating(y.dtype()) ||
      g.dtype() != y.dtype() || g.sizes() != y.sizes())
    return false;
  if (y.dim() > 0 && wrap_dim(c.int_arg(1), y.dim()) != y.dim() - 1) return false;
  Tensor dx = empty_tensor(y.sizes(), y.dtype(), y.device());
  cuda::softmax_backward_into(dx, dense_as(g, y.dtype()), dense_as(y, y.dtype()), kind);
  c.set(0, dx);
  return true;
}
void softmax_bw(GradCtx& c) {
  if (fused_softmax_backward(c, cpu::SoftmaxKind::Softmax)) return;
  const Tensor& y = c.result();
  std::vector<int64_t> dim{c.int_arg(1)};
  c.set(0, mul(y, sub(c.grad(), sum_dims(mul(c.grad(), y), dim, true))));
}
void log_softmax_bw(GradCtx& c) {
  if (fused_softmax_backward(c, cpu::SoftmaxKind::LogSoftmax)) return;
  std::vector<int64_t> dim{c.int_arg(1)};
  c.set(0, sub(c.grad(), mul(op("exp", c.result()), sum_dims(c.grad(), dim, true))));
}
std::vector<int64_t> last_dims(int64_t nd, size_t k) {
  std::vector<int64_t> dims;
  for (int64_t d = nd - static_cast<int64_t>(k); d < nd; ++d) dims.push_back(d);
  return dims;
}
// native_layer_norm -> (out, mean, rstd); the stats keep the normalized dims as 1.
void layer_norm_bw(GradCtx& c) {
  const Tensor& x = c.in(0);
  auto dims = last_dims(x.dim(), c.int_list(1).size());
  if (autograd::grad_enabled()) {
    // create_graph: the closed form below treats the saved mean and rstd as
    // constants, so differentiate a decomposition instead.
    double eps = c.double_arg(4);
    vjp_decomposition(c, {0, 2, 3}, [&](const std::vector<Tensor>& in) {
      Tensor xc = sub(in[0], op("mean.dim", in[0], dims, true));
      Tensor var = op("mean.dim", mul(xc, xc), dims, true);
      Tensor y = mul(xc, op("rsqrt", add(var, scalar(eps))));
      if (in[2].defined()) y = mul(y, in[2]);
      return in[3].defined() ? add(y, in[3]) : y;
    });
    return;
  }
  Tensor w = c.opt_in(2);
  const Tensor& g = c.grad(0);
  Stack r = OpRef("native_layer_norm_backward")
                .call(g, x, c.int_list(1), c.result(1), c.result(2), w, c.opt_in(3));
  c.set(0, r[0].to_opt_tensor());
  c.set(2, r[1].to_opt_tensor());
  c.set(3, r[2].to_opt_tensor());
}
// The closed form of layer_norm_bw, written with ops (kept as the reference
// the fused kernel is tested against).
[[maybe_unused]] void layer_norm_bw_ops(GradCtx& c) {
  const Tensor& x = c.in(0);
  auto dims = last_dims(x.dim(), c.int_list(1).size());
  Tensor w = c.opt_in(2);
  const Tensor& g = c.grad(0);
  Tensor xhat = mul(sub(x, c.result(1)), c.result(2));
  if (c.needs_grad(0)) {
    Tensor gw = w.defined() ? mul(g, w) : g;
    Tensor a = op("mean.dim", gw, dims, true);
    Tensor b = mul(xhat, op("mean.dim", mul(gw, xhat), dims, true));
    c.set(0, mul(c.result(2), sub(sub(gw, a), b)));
  }
  if (c.needs_grad(2)) c.set(2, mul(g, xhat));  // summed to weight's shape by the caller
  c.set(3, g);
}
double eps_of(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 0.0009765625;
    case ScalarType::BFloat16: return 0.0078125;
    case ScalarType::Float32: return 1.1920928955078125e-07;
    default: return 2.220446049250313e-16;
  }
}
void rms_norm_bw(GradCtx& c) {
  auto dims = last_dims(static_cast<int64_t>(c.sizes(0).size()), c.int_list(1).size());
  double eps = c.args[3].is_none() ? eps_of(c.dtype(0)) : c.double_arg(3);
  vjp_decomposition(c, {0, 2}, [&](const std::vector<Tensor>& in) {
    Tensor r = op("rsqrt", add(op("mean.dim", mul(in[0], in[0]), dims, true), scalar(eps)));
    Tensor y = mul(in[0], r);
    return in[2].defined() ? mul(y, in[2]) : y;
  });
}
void normalize_bw(GradCtx& c) {
  double p = c.double_arg(1), eps = c.double_arg(3);
  std::vector<int64_t> dim{c.int_arg(2)};
  vjp_decomposition(c, {0}, [&](const std::vector<Tensor>& in) {
    Tensor n = op("norm", in[0], p, dim, true);
    return div(in[0], op("clamp_min", n, scalar(eps)));
  });
}
// x1 and x2 broadcast against each other, and dim indexes the broadcast
// shape, so the norms are taken of the expanded inputs (a smaller input's
// own dims need not include dim); expand's derivative sums the gradient back.
// As in torch, a norm below eps is raised to eps outside autograd: the
// gradient flows through the norm as if unclamped.
void cosine_similarity_bw(GradCtx& c) {
  double eps = c.double_arg(3);
  DimVector shape = broadcast_shapes(c.sizes(0), c.sizes(1));
  std::vector<int64_t> dim{wrap_dim(c.int_arg(2), static_cast<int64_t>(shape.size()))};
  vjp_decomposition(c, {0, 1}, [&](const std::vector<Tensor>& in) {
    Tensor x1 = expand(in[0], shape), x2 = expand(in[1], shape);
    auto clamped_norm = [&](const Tensor& x) {
      Tensor n = op("norm", x, 2.0, dim, false), raise;
      {
        autograd::GradModeGuard off(false);
        raise = sub(op("clamp_min", n, scalar(eps)), n);
      }
      return add(n, raise);
    };
    return div(sum_dims(mul(x1, x2), dim, false), mul(clamped_norm(x1), clamped_norm(x2)));
  });
}
void native_dropout_bw(GradCtx& c) {
  bool train = c.args[2].is_none() || c.bool_arg(2);
  double p = c.double_arg(1);
  if (!train) return c.set(0, c.grad());
  c.set(0, mul(mul(c.grad(), c.result(1)), p >= 1.0 ? 0.0 : 1.0 / (1.0 - p)));
}
void embedding_bw(GradCtx& c) {
  IGNIS_CHECK_KIND(NotImplemented, !c.bool_arg(3),
                   "the derivative of embedding with scale_grad_by_freq=True is not implemented");
  const Tensor& idx = c.in(1);
  int64_t pad = c.int_arg(2);
  Tensor g = c.grad();
  if (pad >= 0) g = mul(g, unsqueeze(op("ne", idx, scalar(static_cast<double>(pad))), -1));
  Tensor z = zeros(c.sizes(0), g.dtype(), g.user_device());
  c.set(0, op("index_put", z, IValue::OptTensors{{idx}}, g, true));
}
void softplus_bw(GradCtx& c) {
  double beta = c.scalar(1).to_double(), thr = c.scalar(2).to_double();
  Tensor bx = mul(c.in(0), beta);
  c.set(0, where(op("gt", bx, scalar(thr)), c.grad(), mul(c.grad(), op("sigmoid", bx))));
}
void leaky_relu_bw(GradCtx& c) {
  double s = c.scalar(1).to_double();
  c.set(0, where(op("gt", c.in(0), scalar(0.0)), c.grad(), mul(c.grad(), s)));
}
void elu_bw(GradCtx& c) {
  double alpha = c.scalar(1).to_double(), scale = c.scalar(2).to_double();
  double in_scale = c.scalar(3).to_double();
  const Tensor& x = c.in(0);
  Tensor neg_part = mul(mul(c.grad(), op("exp", mul(x, in_scale))), in_scale * scale * alpha);
  c.set(0, where(op("gt", x, scalar(0.0)), mul(c.grad(), scale), neg_part));
}
void logsigmoid_bw(GradCtx& c) { c.set(0, mul(c.grad(), op("sigmoid", neg(c.in(0))))); }
void hardtanh_bw(GradCtx& c) {
  double lo = c.scalar(1).to_double(), hi = c.scalar(2).to_double();
  const Tensor& x = c.in(0);
  Tensor inside = op("logical_and", op("gt", x, scalar(lo)), op("lt", x, scalar(hi)));
  c.set(0, where(inside, c.grad(), zeros_like(c.grad())));
}
void glu_bw(GradCtx& c) {
  int64_t dim = c.int_arg(1);
  vjp_decomposition(c, {0}, [&](const std::vector<Tensor>& in) {
    int64_t h = in[0].size(dim) / 2;
    Tensor a = op("narrow", in[0], dim, int64_t(0), h);
    Tensor b = op("narrow", in[0], dim, h, h);
    return mul(a, op("sigmoid", b));
  });
}

// ---- loss derivatives: reductions as the forward kernels apply them ---------------
enum class Red { None, Mean, Sum, BatchMean };
Red red_of(const GradCtx& c, int size_average, int reduce, int reduction) {
  if (size_average >= 0 && (!c.args[size_average].is_none() || !c.args[reduce].is_none())) {
    bool sa = c.args[size_average].is_none() || c.bool_arg(size_average);
    bool rd = c.args[reduce].is_none() || c.bool_arg(reduce);
    return !rd ? Red::None : sa ? Red::Mean : Red::Sum;
  }
  const std::string& r = c.args[reduction].to_string();
  return r == "none" ? Red::None : r == "sum" ? Red::Sum : r == "batchmean" ? Red::BatchMean
                                                                           : Red::Mean;
}
// batch: batchmean's divisor, input's first dim (not the loss's, which a
// broadcasting target can give more rows).
Tensor reduce_loss(const Tensor& l, Red r, const Tensor& weight_sum = Tensor(),
                   double batch = 1.0) {
  switch (r) {
    case Red::None: return l;
    case Red::Sum: return op("sum", l);
    case Red::BatchMean: return div(op("sum", l), scalar(batch));
    case Red::Mean:
      return weight_sum.defined() ? div(op("sum", l), weight_sum) : op("mean", l);
  }
  return l;
}
// Which arguments of each point loss hold what (as in the forward's LossSpec).
template <LossOp Op>
void point_loss_bw(GradCtx& c) {
  constexpr LossSpec sp = spec_of(Op);
  Red red = red_of(c, sp.size_average, sp.reduce, sp.reduction);
  double param = sp.param >= 0 ? c.double_arg(sp.param) : 0.0;
  bool log_target = Op == LossOp::KLDiv && c.bool_arg(5);
  auto loss = [&](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &t = in[1];
    Tensor w = sp.weight >= 0 ? in[sp.weight] : Tensor();
    Tensor l, d = sub(x, t);
    Tensor one = scalar(1.0), zero = scalar(0.0);
    switch (Op) {
      case LossOp::MSE: l = mul(d, d); break;
      case LossOp::L1: l = op("abs", d); break;
      case LossOp::SmoothL1: {
        Tensor ad = op("abs", d);
        l = param == 0.0 ? ad
                         : where(op("lt", ad, scalar(param)), mul(mul(d, d), 0.5 / param),
                                 sub(ad, scalar(0.5 * param)));
        break;
      }
      case LossOp::Huber: {
        Tensor ad = op("abs", d);
        l = where(op("le", ad, scalar(param)), mul(mul(d, d), 0.5),
                  mul(sub(ad, scalar(0.5 * param)), param));
        break;
      }
      case LossOp::BCE: {
        Tensor lx = op("clamp_min", op("log", x), scalar(-100.0));
        Tensor l1x = op("clamp_min", op("log", sub(one, x)), scalar(-100.0));
        l = neg(add(mul(t, lx), mul(sub(one, t), l1x)));
        break;
      }
      case LossOp::BCEWithLogits: {
        Tensor pw = in[sp.pos_weight];
        // softplus(-x) as -logsigmoid(x): differentiable at 0, as the
        // forward's decomposition (decomp/loss.cpp) explains.
        Tensor sp_ = neg(op("logsigmoid", x));
        Tensor lw = pw.defined() ? add(one, mul(sub(pw, one), t)) : one;
        l = add(mul(sub(one, t), x), mul(lw, sp_));
        break;
      }
      case LossOp::KLDiv:
        if (log_target) {
          l = mul(op("exp", t), sub(t, x));
        } else {
          Tensor v = mul(t, sub(op("log", t), x));
          l = where(op("gt", t, zero), v, zeros_like(v));
        }
        break;
    }
    if (w.defined()) l = mul(l, w);
    // A weighted mse/l1 mean divides by the weight's own sum, not that of
    // the weight broadcast to the loss's shape (as torch.nn.functional).
    Tensor wsum;
    if ((Op == LossOp::MSE || Op == LossOp::L1) && w.defined()) wsum = op("sum", w);
    return reduce_loss(l, red, wsum, x.dim() == 0 ? 1.0 : static_cast<double>(x.size(0)));
  };
  // torch.nn.functional computes weighted mse/l1/huber with differentiable
  // ops, so their weight has a gradient; bce's weights are declared not
  // differentiable, so they never need one here.
  if constexpr (sp.weight >= 0) vjp_decomposition(c, {0, 1, sp.weight}, loss);
  else vjp_decomposition(c, {0, 1}, loss);
}

// nll_loss(input, target, weight, size_average, ignore_index, reduce, reduction):
// -w[t] * g (scaled by the reduction) at each target's class. Targets may be
// uint8, which index_select and scatter do not take as indices: int64 here.
void nll_loss_bw(GradCtx& c) {
  const Tensor t = to_dtype(c.in(1), ScalarType::Int64);
  Tensor w = c.opt_in(2);
  int64_t ignore = c.int_arg(4);
  Red red = red_of(c, 3, 5, 6);
  int64_t cdim = c.sizes(0).size() == 1 ? 0 : 1;
  ScalarType dt = c.grad().dtype();
  Tensor valid = op("ne", t, scalar_to_tensor_int(ignore, ScalarType::Int64, true));  // exact
  Tensor t_safe = where(valid, t, zeros_like(t));
  Tensor wt = to_dtype(valid, dt);
  if (w.defined())
    wt = mul(wt, reshape(op("index_select", w, int64_t(0), reshape(t_safe, DimVector{-1})),
                         t.sizes()));
  Tensor scale = c.grad();
  if (red == Red::Mean) scale = div(scale, op("sum", wt));
  // Ignored targets get no gradient, also where a mean's total weight is 0
  // (every target ignored: 0 * inf), as torch writes only the others'.
  Tensor src = neg(mul(wt, scale));
  src = unsqueeze(where(valid, src, zeros_like(src)), cdim);
  Tensor z = zeros(c.sizes(0), dt, c.grad().user_device());
  c.set(0, op("scatter.src", z, cdim, unsqueeze(t_safe, cdim), src));
}

// Note [Cross-entropy backward recomputes its statistics]
// On CUDA, for the calls the fused kernel takes (Note [Fused cross-entropy on
// CUDA]), the gradient is one row kernel: it recomputes each row's max and
// sum of exp from the saved logits (one more read of them) because the
// autograd node saves cross_entropy's arguments and its one output, which
// has no room for per-row statistics. Under create_graph (grad mode on) and
// on other devices, the decomposition is differentiated as before.
bool fused_cross_entropy_backward(GradCtx& c) {
  const Tensor& x = c.in(0);
  const Tensor& t = c.in(1);
  Tensor w = c.opt_in(2);
  const Red red = red_of(c, 3, 5, 6);
  const double eps = c.double_arg(7);
  if (!x.device().is_cuda() || autograd::grad_enabled() || is_floating(t.dtype()) ||
      x.dim() > 2 ||
      (t.dtype() == ScalarType::UInt8 && eps > 0 && w.defined() && red == Red::Mean))
    return false;
  const ScalarType acc = opmath_dtype(x.dtype());
  const cuda::CrossEntropyRows a = cross_entropy_rows_of(x, t, w, c.int_arg(4), eps);
  Tensor total;
  if (red == Red::Mean) {
    const int64_t N = x.dim() == 1 ? 1 : x.size(0);
    Tensor picked = empty_tensor({N}, acc, x.device());
    cuda::cross_entropy_rows(Tensor(), picked, a, /*weights_only=*/true);
    total = op("sum", picked);
  }
  Tensor dx = empty_tensor(x.sizes(), x.dtype(), x.device());
  cuda::cross_entropy_rows_backward(dx, dense_as(c.grad(), acc), total, a);
  c.set(0, dx);
  return true;
}

// cross_entropy = nll_loss(log_softmax(input)) (+ label smoothing), or the
// soft-target form; differentiated through that decomposition.
void cross_entropy_bw(GradCtx& c) {
  Red red = red_of(c, 3, 5, 6);
  double eps = c.double_arg(7);
  int64_t ignore = c.int_arg(4);
  if (fused_cross_entropy_backward(c)) return;
  if (!autograd::grad_enabled() && eps <= 0 && !is_floating(c.dtype(1))) {
    // Class indices, no label smoothing, outside create_graph: the closed
    // form w_t (softmax(x) - onehot(t)) * grad (over the total weight for a
    // mean): softmax's fused kernel, one product and a scatter at the
    // targets, where differentiating log_softmax + nll_loss op by op makes
    // ~8 passes over the logits ([700, 1000] of the word language model:
    // 2.0 -> 0.8 ms).
    const Tensor& x = c.in(0);
    const Tensor t = to_dtype(c.in(1), ScalarType::Int64);
    const Tensor w = c.opt_in(2);
    const int64_t cdim = x.dim() == 1 ? 0 : 1;
    const ScalarType dt = c.grad().dtype();
    Tensor valid = op("ne", t, scalar_to_tensor_int(ignore, ScalarType::Int64, true));
    Tensor t_safe = unsqueeze(where(valid, t, zeros_like(t)), cdim);
    Tensor wt = to_dtype(valid, dt);
    if (w.defined())
      wt = mul(wt, reshape(op("index_select", w, int64_t(0), reshape(t_safe, DimVector{-1})),
                           t.sizes()));
    Tensor scale = c.grad();
    if (red == Red::Mean) scale = div(scale, op("sum", wt));
    // Ignored targets get no gradient, also where a mean's total weight is 0.
    Tensor rows = mul(wt, scale);
    rows = unsqueeze(where(valid, rows, zeros_like(rows)), cdim);
    Tensor g = mul(op("softmax.int", x, cdim), rows);
    OpRef("scatter_add_").call(g, cdim, t_safe, neg(rows));
    c.set(0, g);
    return;
  }
  const std::string reduction = red == Red::None ? "none" : red == Red::Sum ? "sum" : "mean";
  vjp_decomposition(c, {0, 1, 2}, [&](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &w = in[2];
    // uint8 class indices as int64, for index_select below.
    const Tensor t = is_floating(in[1].dtype()) ? in[1] : to_dtype(in[1], ScalarType::Int64);
    int64_t cdim = x.dim() == 1 ? 0 : 1;
    int64_t C = x.size(cdim);
    Tensor lp = op("log_softmax.int", x, cdim);
    Tensor wb;  // weight broadcast against the class dim
    if (w.defined()) {
      DimVector shape(static_cast<size_t>(x.dim() - cdim), 1);
      shape[0] = C;
      wb = reshape(w, shape);
    }
    if (is_floating(t.dtype())) {
      Tensor tt = eps > 0 ? add(mul(t, 1.0 - eps), scalar(eps / static_cast<double>(C))) : t;
      Tensor prod = mul(lp, tt);
      if (wb.defined()) prod = mul(prod, wb);
      Tensor per = neg(sum_dims(prod, {cdim}, false));
      if (red == Red::Mean) {
        double rows = static_cast<double>(x.numel() / std::max<int64_t>(C, 1));
        return div(op("sum", per), scalar(rows));
      }
      return reduce_loss(per, red);
    }
    Tensor nll = op("nll_loss", lp, t, w, None{}, ignore, None{}, reduction);
    if (eps <= 0) return nll;
    Tensor prod = wb.defined() ? mul(lp, wb) : lp;
    Tensor s = neg(sum_dims(prod, {cdim}, false));
    Tensor valid = op("ne", t, scalar_to_tensor_int(ignore, ScalarType::Int64, true));  // exact
    s = where(valid, s, zeros_like(s));
    Tensor sr;
    if (red == Red::Mean) {
      Tensor denom;
      if (w.defined()) {
        Tensor ts = where(valid, t, zeros_like(t));
        Tensor wt = reshape(op("index_select", w, int64_t(0), reshape(ts, DimVector{-1})),
                            t.sizes());
        denom = op("sum", mul(wt, valid));
      } else {
        denom = op("sum", to_dtype(valid, s.dtype()));
      }
      sr = div(op("sum", s), denom);
    } else {
      sr = reduce_loss(s, red);
    }
    return add(mul(nll, 1.0 - eps), mul(sr, eps / static_cast<double>(C)));
  });
}

// `F` is the kernel's scalar function (kernels/scalar_ops.h).
// `nscalars`: F's Scalar arguments (recorded for the CUDA compile test).
template <typename F>
void activation(const std::string& name, const std::string& params, ImplFn cpu, ImplFn gpu,
                int nscalars, const char* doc, bool with_inplace, DerivativeFn d,
                DecompFn decomp) {
  declare_cuda_pointwise(name, F::name, 1, nscalars, cuda::kFloatDtypes);
  def(name + "(Tensor self" + params + ") -> Tensor").category(OpCategory::Pointwise).both()
      .scalar(F::name).meta(float_act_meta<false>).cpu(cpu).cuda(gpu).doc(doc)
      .derivative(d, "self").decomposition(decomp);
  if (with_inplace) {
    def(name + "_(Tensor(a!) self" + params + ") -> Tensor(a!)").category(OpCategory::Pointwise)
        .both().scalar(F::name).meta(float_act_meta<true>).cpu(cpu).cuda(gpu).doc(doc)
        .derivative(d, "self");
  }
}

}  // namespace

void register_nn_ops() {
  using cpu::SoftmaxKind;
  def("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Other).both().meta(softmax_meta<SoftmaxKind::Softmax>)
      .cpu_and_cuda(softmax_kernel<SoftmaxKind::Softmax>)
      .doc("exp(x) / sum(exp(x)) along dim (numerically stable)").derivative(softmax_bw, "result")
      .decomposition(decomp::softmax);
  def("softmax.functional(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Composite).composite(softmax_functional);
  def("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Other).both().meta(softmax_meta<SoftmaxKind::LogSoftmax>)
      .cpu_and_cuda(softmax_kernel<SoftmaxKind::LogSoftmax>).doc("x - log(sum(exp(x))) along dim")
      .derivative(log_softmax_bw, "result").decomposition(decomp::softmax);
  def("log_softmax.functional(Tensor input, int? dim=None, int _stacklevel=3, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Composite).composite(softmax_functional);
  def("_safe_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
      .category(OpCategory::Other).meta(softmax_meta<SoftmaxKind::SafeSoftmax>)
      .cpu_and_cuda(softmax_kernel<SoftmaxKind::SafeSoftmax>)
      .doc("softmax whose fully masked (all -inf) slices are 0, not NaN")
      .derivative(softmax_bw, "result").decomposition(decomp::softmax);

  def("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(layer_norm_meta).cpu_and_cuda(native_layer_norm_kernel)
      .doc("layer_norm that also returns the per-row mean and 1/std (for backward)")
      .derivative(layer_norm_bw, "input, weight, bias, result1, result2")
      .decomposition(decomp::native_layer_norm);
  def("native_layer_norm_backward(Tensor grad_out, Tensor input, int[] normalized_shape, "
      "Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias) -> (Tensor, Tensor, Tensor)")
      .category(OpCategory::Other).meta(layer_norm_backward_meta).cpu(layer_norm_backward_cpu)
      .cuda(layer_norm_backward_cuda)
      .doc("the gradients of native_layer_norm's input, weight and bias (fused)")
      .decomposition(decomp::native_layer_norm_backward);
  def("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor")
      .category(OpCategory::Composite).composite(layer_norm_kernel)
      .doc("(x - mean) / sqrt(var + eps) * weight + bias over the trailing normalized_shape");
  def("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor")
      .category(OpCategory::Other).meta(rms_norm_meta).cpu(rms_norm_cpu)
      .doc("x / sqrt(mean(x^2) + eps) * weight; eps defaults to finfo(dtype).eps")
      .derivative(rms_norm_bw, "input, weight").decomposition(decomp::rms_norm);
  def("normalize(Tensor input, float p=2.0, int dim=1, float eps=1e-12) -> Tensor")
      .category(OpCategory::Other).meta(normalize_meta).cpu(normalize_cpu)
      .doc("input / max(||input||_p, eps) along dim").derivative(normalize_bw, "input")
      .decomposition(decomp::normalize);
  def("cosine_similarity(Tensor x1, Tensor x2, int dim=1, float eps=1e-08) -> Tensor")
      .category(OpCategory::Other).meta(cosine_meta).cpu(cosine_cpu)
      .doc("x1 . x2 / (max(||x1||, eps) * max(||x2||, eps)) along dim")
      .derivative(cosine_similarity_bw, "x1, x2").decomposition(decomp::cosine_similarity);

  def("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)")
      .category(OpCategory::Other).random().meta(native_dropout_meta)
      .cpu_and_cuda(native_dropout_impl)
      .doc("(input * mask / (1 - p), mask) with mask ~ Bernoulli(1 - p)")
      .derivative(native_dropout_bw, "result1").decomposition(decomp::native_dropout);
  def("dropout(Tensor input, float p=0.5, bool train=True) -> Tensor")
      .category(OpCategory::Composite).random().composite(dropout_kernel)
      .doc("zeroes elements with probability p, scales the rest");
  def("dropout.functional(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor")
      .category(OpCategory::Composite).random().composite(dropout_functional_kernel);
  def("dropout_(Tensor(a!) self, float p=0.5, bool train=True) -> Tensor(a!)")
      .category(OpCategory::Composite).random().composite(dropout_inplace_kernel);

  def("embedding(Tensor weight, Tensor indices, int padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor")
      .category(OpCategory::Other).meta(embedding_meta).cpu(embedding_cpu)
      .doc("rows of weight picked by indices (torch.embedding argument order)")
      .derivative(embedding_bw, "indices").decomposition(decomp::embedding);
  def("one_hot(Tensor self, int num_classes=-1) -> Tensor").category(OpCategory::Other)
      .meta(one_hot_meta).cpu(one_hot_cpu).doc("int64 one-hot encoding along a new last dimension")
      .decomposition(decomp::one_hot);

  def("nll_loss(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean') -> Tensor")
      .category(OpCategory::Other).meta(nll_loss_meta).cpu(nll_loss_cpu)
      .doc("negative log-likelihood of class indices given log-probabilities")
      .derivative(nll_loss_bw, "target, weight").not_differentiable("weight")
      .decomposition(decomp::nll_loss);
  def("cross_entropy(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, int ignore_index=-100, bool? reduce=None, str reduction='mean', float label_smoothing=0.0) -> Tensor")
      .category(OpCategory::Other).meta(cross_entropy_meta).cpu(cross_entropy_cpu)
      .cuda(cross_entropy_cuda)
      .doc("log_softmax + nll_loss in one pass; class indices or class probabilities")
      .derivative(cross_entropy_bw, "input, target, weight")
      .not_differentiable("weight", class_index_call).decomposition(decomp::cross_entropy);
  def("mse_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', Tensor? weight=None) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::MSE>)
      .cpu(point_loss_cpu<LossOp::MSE>).doc("(input - target)^2, reduced")
      .derivative(point_loss_bw<LossOp::MSE>, "input, target, weight")
      .decomposition(decomp::mse_loss);
  def("l1_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', Tensor? weight=None) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::L1>).cpu(point_loss_cpu<LossOp::L1>)
      .doc("|input - target|, reduced")
      .derivative(point_loss_bw<LossOp::L1>, "input, target, weight")
      .decomposition(decomp::l1_loss);
  def("smooth_l1_loss(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', float beta=1.0) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::SmoothL1>)
      .cpu(point_loss_cpu<LossOp::SmoothL1>)
      .doc("0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta")
      .derivative(point_loss_bw<LossOp::SmoothL1>, "input, target")
      .decomposition(decomp::smooth_l1_loss);
  def("huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0, Tensor? weight=None) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::Huber>)
      .cpu(point_loss_cpu<LossOp::Huber>)
      .doc("0.5 d^2 where |d| < delta, else delta * (|d| - 0.5 delta)")
      .derivative(point_loss_bw<LossOp::Huber>, "input, target, weight")
      .decomposition(decomp::huber_loss);
  def("binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, bool? reduce=None, str reduction='mean') -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::BCE>)
      .cpu(point_loss_cpu<LossOp::BCE>)
      .doc("-(t log(p) + (1 - t) log(1 - p)) on probabilities, logs clamped at -100")
      .derivative(point_loss_bw<LossOp::BCE>, "input, target, weight")
      .not_differentiable("weight")
      .decomposition(decomp::binary_cross_entropy);
  def("binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, bool? size_average=None, bool? reduce=None, str reduction='mean', Tensor? pos_weight=None) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::BCEWithLogits>)
      .cpu(point_loss_cpu<LossOp::BCEWithLogits>)
      .doc("binary_cross_entropy(sigmoid(input), target), computed stably")
      .derivative(point_loss_bw<LossOp::BCEWithLogits>, "input, target, weight, pos_weight")
      .not_differentiable("weight, pos_weight")
      .decomposition(decomp::binary_cross_entropy_with_logits);
  def("kl_div(Tensor input, Tensor target, bool? size_average=None, bool? reduce=None, str reduction='mean', bool log_target=False) -> Tensor")
      .category(OpCategory::Other).meta(point_loss_meta<LossOp::KLDiv>)
      .cpu(point_loss_cpu<LossOp::KLDiv>)
      .doc("target * (log(target) - input); input holds log-probabilities")
      .derivative(point_loss_bw<LossOp::KLDiv>, "input, target").decomposition(decomp::kl_div);

  activation<scalar_ops::Softplus>(
      "softplus", ", Scalar beta=1, Scalar threshold=20", softplus_cpu, softplus_cuda, 2,
      "log(1 + exp(beta * x)) / beta, x itself where beta * x > threshold", false, softplus_bw,
      decomp::softplus);
  activation<scalar_ops::LeakyRelu>("leaky_relu", ", Scalar negative_slope=0.01", leaky_relu_cpu,
                                    leaky_relu_cuda, 1,
                                    "x if x > 0 else negative_slope * x", true, leaky_relu_bw,
                                    decomp::leaky_relu);
  def("leaky_relu.functional(Tensor input, Scalar negative_slope=0.01, bool inplace=False) -> Tensor")
      .category(OpCategory::Composite)
      .composite(inplace_switch(&leaky_relu_op, &leaky_relu_inplace_op));
  activation<scalar_ops::Elu>(
      "elu", ", Scalar alpha=1, Scalar scale=1, Scalar input_scale=1", elu_cpu, elu_cuda, 3,
      "scale * x if x > 0 else scale * alpha * (exp(input_scale * x) - 1)", true, elu_bw,
      decomp::elu);
  def("elu.functional(Tensor input, Scalar alpha=1.0, bool inplace=False) -> Tensor")
      .category(OpCategory::Composite).composite(inplace_switch(&elu_op, &elu_inplace_op));
  declare_cuda_pointwise("logsigmoid", scalar_ops::LogSigmoid::name, 1, 0, cuda::kFloatDtypes);
  declare_cuda_pointwise("hardtanh", scalar_ops::Hardtanh::name, 1, 2, cuda::kNumericDtypes);
  def("logsigmoid(Tensor self) -> Tensor").category(OpCategory::Pointwise)
      .scalar(scalar_ops::LogSigmoid::name).meta(float_act_meta<false>).cpu(logsigmoid_cpu)
      .cuda(logsigmoid_cuda)
      .doc("log(sigmoid(x)), computed stably")
      .derivative(logsigmoid_bw, "self").decomposition(decomp::logsigmoid);
  def("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor")
      .category(OpCategory::Pointwise).both().scalar(scalar_ops::Hardtanh::name)
      .meta(hardtanh_meta<false>).cpu(hardtanh_cpu).cuda(hardtanh_cuda)
      .doc("clamp(x, min_val, max_val)").derivative(hardtanh_bw, "self")
      .decomposition(decomp::hardtanh);
  def("hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)")
      .category(OpCategory::Pointwise).both().scalar(scalar_ops::Hardtanh::name)
      .meta(hardtanh_meta<true>).cpu(hardtanh_cpu).cuda(hardtanh_cuda)
      .derivative(hardtanh_bw, "self");
  def("hardtanh.functional(Tensor input, Scalar min_val=-1.0, Scalar max_val=1.0, bool inplace=False) -> Tensor")
      .category(OpCategory::Composite)
      .composite(inplace_switch(&hardtanh_op, &hardtanh_inplace_op));
  def("relu6(Tensor self) -> Tensor").category(OpCategory::Composite).both()
      .composite(relu6_kernel<false>).doc("hardtanh(x, 0, 6)");
  def("relu6_(Tensor(a!) self) -> Tensor(a!)").category(OpCategory::Composite).both()
      .composite(relu6_kernel<true>);
  def("relu6.functional(Tensor input, bool inplace=False) -> Tensor")
      .category(OpCategory::Composite).composite(inplace_switch(&relu6_op, &relu6_inplace_op));
  def("prelu(Tensor self, Tensor weight) -> Tensor").category(OpCategory::Composite).both()
      .composite(prelu_kernel).doc("self if self > 0 else weight * self, weight per channel");
  def("glu(Tensor self, int dim=-1) -> Tensor").category(OpCategory::Other).both().meta(glu_meta)
      .cpu(glu_cpu).doc("first half * sigmoid(second half) along dim").derivative(glu_bw, "self")
      .decomposition(decomp::glu);
}

}  // namespace ignis
