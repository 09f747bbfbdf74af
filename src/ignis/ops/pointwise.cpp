#include "ignis/ops/pointwise.h"

#include "ignis/kernels/cpu/copy.h"
#include "ignis/kernels/cuda/pointwise.h"

namespace ignis {

void check_no_internal_overlap(const Tensor& t) {
  if (t.numel() == 0) return;  // no elements, none shared (a (0, 3) tensor of strides (0, 0))
  for (int64_t d = 0; d < t.dim(); ++d)
    IGNIS_CHECK(t.strides()[d] != 0 || t.sizes()[d] <= 1,
                "unsupported operation: more than one element of the written-to tensor refers to "
                "a single memory location. Please clone() the tensor before performing the "
                "operation.");
}

void check_no_partial_overlap(const Tensor& out, const Tensor& in) {
  // As PyTorch: only dense tensors are judged (other layouts are too hard to
  // tell); the same memory with the same strides is a full overlap, which is fine.
  if (out.is_same(in) || out.numel() == 0 || in.numel() == 0) return;
  if (!is_non_overlapping_and_dense(out) || !is_non_overlapping_and_dense(in)) return;
  // Tensors without data (fakes, meta) are judged by their storage and
  // offsets, which fakes share as the real tensors do: the check raises while
  // tracing where eager's raises, so the graph breaks there (fuzz seed 78034:
  // the functionalized graph copied and did not raise).
  const bool no_data = !out.data_ptr() || !in.data_ptr();
  if (no_data && out.impl()->storage().get() != in.impl()->storage().get()) return;
  auto start = [no_data](const Tensor& t) {
    return no_data ? t.storage_offset() * static_cast<int64_t>(t.itemsize())
                   : static_cast<int64_t>(reinterpret_cast<intptr_t>(t.data_ptr()));
  };
  const int64_t ob = start(out), ib = start(in);
  const int64_t oe = ob + out.numel() * static_cast<int64_t>(out.itemsize());
  const int64_t ie = ib + in.numel() * static_cast<int64_t>(in.itemsize());
  bool full = ob == ib && oe == ie && out.strides() == in.strides();
  IGNIS_CHECK(full || !(ob < ie && ib < oe),
              "unsupported operation: some elements of the input tensor and the written-to "
              "tensor refer to a single memory location. Please clone() the tensor before "
              "performing the operation.");
}

void pointwise_meta(OpCall& c, std::initializer_list<int> inputs, DtypeRule rule, bool inplace) {
  auto it = std::make_shared<TensorIterator>();
  const char* name = c.op.schema().name.c_str();
  if (inplace) {
    check_no_internal_overlap(c.tensor(0));
    for (int i : inputs) check_no_partial_overlap(c.tensor(0), c.tensor(i));
  }
  if (inplace) it->add_output(c.tensor(0));
  else it->add_output(Tensor());
  for (int i : inputs) it->add_input(c.tensor(i));
  IterConfig cfg;
  cfg.op_name = name;
  switch (rule) {
    case DtypeRule::Promote: break;
    case DtypeRule::PromoteToFloat: cfg.promote_int_to_float = true; break;
    case DtypeRule::BoolOut: cfg.output_dtype = ScalarType::Bool; break;
    case DtypeRule::LogicalOut:
      cfg.output_dtype = ScalarType::Bool;
      cfg.keep_input_dtypes = true;
      break;
    case DtypeRule::PromoteWithInt:
      if (c.tensor(*inputs.begin()).dtype() == ScalarType::Bool)
        cfg.common_dtype = ScalarType::Int64;
      break;
  }
  it->build(cfg, c.device);
  c.outputs.push_back(inplace ? c.tensor(0) : it->output(0));
  if (inplace && !c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
  c.iter = std::move(it);
}

void cuda_pointwise(OpCall& c, const char* fn, ScalarType compute, uint32_t dtypes,
                    std::vector<Scalar> scalars, int nargs) {
  cuda::check_dtype(dtypes, compute, c.op.schema().name.c_str());
  cuda::pointwise(*c.iter, cuda::PointwiseOp{fn, compute, std::move(scalars), nargs});
}

void declare_cuda_pointwise(const std::string& op, const char* fn, int nargs, int nscalars,
                            uint32_t dtypes, bool bool_out) {
  cuda::declare_pointwise(cuda::PointwiseDecl{op, fn, nargs, nscalars, dtypes, bool_out});
}

}  // namespace ignis
