#include "ignis/autograd/formula.h"

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/engine.h"
#include "ignis/autograd/grad_mode.h"

namespace ignis::grad_ops {

namespace {
OpRef add_op("add"), sub_op("sub"), mul_op("mul"), div_op("div"), neg_op("neg"),
    pow_op("pow"), where_op("where.self"), zeros_like_op("zeros_like"), zeros_op("zeros"),
    ones_like_op("ones_like"), expand_op("expand"), reshape_op("reshape"),
    sum_op("sum.dim_IntList"), unsqueeze_op("unsqueeze"), transpose_op("transpose.int"),
    to_op("to.dtype"), to_device_op("to.device");
}  // namespace

Tensor scalar(double v) { return scalar_to_tensor(v, ScalarType::Float64, true); }
Tensor add(const Tensor& a, const Tensor& b) { return add_op.tensor(a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return sub_op.tensor(a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return mul_op.tensor(a, b); }
Tensor mul(const Tensor& a, double s) {
  return mul_op.tensor(a, scalar_to_tensor(s, ScalarType::Float64, true));
}
Tensor div(const Tensor& a, const Tensor& b) { return div_op.tensor(a, b); }
Tensor neg(const Tensor& a) { return neg_op.tensor(a); }
Tensor pow(const Tensor& a, double e) {
  return pow_op.tensor(a, scalar_to_tensor(e, ScalarType::Float64, true));
}
Tensor pow(const Tensor& a, const Tensor& e) { return pow_op.tensor(a, e); }
Tensor sq(const Tensor& a) { return mul_op.tensor(a, a); }
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  return where_op.tensor(c, a, b);
}
Tensor zeros_like(const Tensor& a) { return zeros_like_op.tensor(a); }
Tensor zeros(const DimVector& sizes, ScalarType dtype, Device device) {
  return zeros_op.tensor(sizes.vec(), dtype, device);
}
Tensor ones_like(const Tensor& a) { return ones_like_op.tensor(a); }
Tensor expand(const Tensor& a, const DimVector& sizes) { return expand_op.tensor(a, sizes.vec()); }
Tensor reshape(const Tensor& a, const DimVector& sizes) {
  return reshape_op.tensor(a, sizes.vec());
}
Tensor sum_dims(const Tensor& g, const std::vector<int64_t>& dims, bool keepdim) {
  return sum_op.tensor(g, dims, keepdim);
}

Tensor sum_to(const Tensor& g, const DimVector& sizes) {
  if (g.sizes() == sizes) return g;
  int64_t lead = g.dim() - static_cast<int64_t>(sizes.size());
  IGNIS_CHECK(lead >= 0, "autograd: cannot sum a gradient of shape ", g.shape_str(),
              " to shape ", shape_str(sizes));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < lead; ++d) dims.push_back(d);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t gs = g.sizes()[lead + static_cast<int64_t>(i)];
    if (sizes[i] == 1 && gs != 1) dims.push_back(lead + static_cast<int64_t>(i));
    else
      IGNIS_CHECK(sizes[i] == gs, "autograd: cannot sum a gradient of shape ", g.shape_str(),
                  " to shape ", shape_str(sizes));
  }
  Tensor r = dims.empty() ? g : sum_op.tensor(g, dims, true);
  return r.sizes() == sizes ? r : reshape_op.tensor(r, sizes.vec());
}

Tensor unsqueeze(const Tensor& a, int64_t dim) { return unsqueeze_op.tensor(a, dim); }
Tensor conj_t(const Tensor& a) { return transpose_op.tensor(a, int64_t(-2), int64_t(-1)); }
Tensor to_dtype(const Tensor& a, ScalarType dt) { return to_op.tensor(a, dt); }
Tensor to_device(const Tensor& a, Device device) { return to_device_op.tensor(a, device); }

Tensor embed_slice(const Tensor& g, const DimVector& sizes, int64_t dim, int64_t start,
                   int64_t step) {
  int64_t nd = static_cast<int64_t>(sizes.size());
  int64_t len = g.sizes()[dim];
  if (step == 1) {
    std::vector<int64_t> pad;
    for (int64_t d = nd - 1; d > dim; --d) pad.insert(pad.end(), {0, 0});
    pad.push_back(start);
    pad.push_back(sizes[dim] - start - len);
    return OpRef("pad").tensor(g, pad, std::string("constant"), 0.0);
  }
  Tensor idx = OpRef("arange.start").tensor(start, start + step * len, step, ScalarType::Int64);
  return OpRef("index_copy").tensor(zeros(sizes, g.dtype(), g.device()), dim, idx, g);
}

void vjp_decomposition(GradCtx& c, std::initializer_list<int> which, const Decomposition& f) {
  vjp_decomposition_outputs(c, which, [&f](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{f(in)};
  });
}

void vjp_decomposition_outputs(GradCtx& c, std::initializer_list<int> which,
                               const Decompositions& f) {
  bool create_graph = autograd::grad_enabled();
  std::vector<int> wanted;
  for (int i : which)
    if (c.needs_grad(i) && c.args[i].is_tensor()) wanted.push_back(i);
  if (wanted.empty()) return;
  // f reads every saved tensor (each read through c.in: version-checked).
  std::vector<Tensor> in(c.args.size());
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!c.args[i].is_tensor()) continue;
    const Tensor& t = c.in(static_cast<int>(i));
    in[i] = create_graph ? t : autograd::detach(t);
  }
  std::vector<Tensor> leaves;
  for (int i : wanted) {
    if (!create_graph) autograd::set_requires_grad(in[i], true);
    leaves.push_back(in[i]);
  }
  autograd::GradModeGuard on(true);
  std::vector<Tensor> outs = f(in);
  std::vector<Tensor> grads;
  for (size_t j = 0; j < outs.size(); ++j) grads.push_back(c.grad(static_cast<int>(j)));
  autograd::BackwardOptions opt;
  opt.keep_graph = create_graph;
  opt.create_graph = create_graph;
  opt.allow_unused = true;
  std::vector<Tensor> gs = autograd::grad(outs, grads, leaves, opt);
  for (size_t k = 0; k < wanted.size(); ++k)
    if (gs[k].defined()) c.set(wanted[k], gs[k]);
}

std::vector<int64_t> reduced_dims(const IValue& dim, int64_t ndim) {
  std::vector<int64_t> dims;
  if (dim.is_int()) dims.push_back(wrap_dim(dim.to_int(), ndim));
  else if (dim.is_int_list())
    for (int64_t d : dim.to_int_list()) dims.push_back(wrap_dim(d, ndim));
  if (dims.empty())
    for (int64_t d = 0; d < ndim; ++d) dims.push_back(d);
  return dims;
}

Tensor unreduce(const Tensor& g, const DimVector& in_sizes, const std::vector<int64_t>& dims,
                bool keepdim) {
  int64_t nd = static_cast<int64_t>(in_sizes.size());
  if (keepdim || nd == 0 || g.dim() == nd) return g;
  DimVector shape;
  std::vector<bool> red(static_cast<size_t>(nd), false);
  for (int64_t d : dims) red[static_cast<size_t>(wrap_dim(d, nd))] = true;
  for (int64_t d = 0; d < nd; ++d) shape.push_back(red[static_cast<size_t>(d)] ? 1 : in_sizes[d]);
  return reshape_op.tensor(g, shape.vec());
}

}  // namespace ignis::grad_ops
