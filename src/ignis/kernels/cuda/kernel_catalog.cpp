#include "ignis/kernels/cuda/kernel_catalog.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "ignis/core/error.h"
#include "ignis/kernels/cuda/batch_norm.h"
#include "ignis/kernels/cuda/conv.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/flash_attention.h"
#include "ignis/kernels/cuda/index_kernels.h"
#include "ignis/kernels/cuda/multi_tensor.h"
#include "ignis/kernels/cuda/pointwise.h"
#include "ignis/kernels/cuda/pooling.h"
#include "ignis/kernels/cuda/random_kernels.h"
#include "ignis/kernels/cuda/reduce.h"
#include "ignis/kernels/cuda/row_kernels.h"
#include "ignis/kernels/cuda/sort.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/ops/op_def.h"

namespace ignis::cuda {

namespace {

// Groups requests whose sources share everything before their first
// extern "C" kernel: the unit is that prelude once, then each request's
// kernels in a namespace of their own (its typedefs stay apart).
class Grouper {
 public:
  void add(const std::string& group, const KernelRequest& r) {
    const size_t split = r.source.find(kKernelBodyMarker);
    IGNIS_INTERNAL_ASSERT(split != std::string::npos, "kernel ", r.symbol, " has no body marker");
    Unit& u = units_[group];
    if (u.prefix.empty()) {
      u.prefix = r.source.substr(0, split);
      u.request.source = u.prefix;
      u.request.symbol = r.symbol;
      u.request.label = group + ".cu";
      u.request.options = r.options;
    }
    IGNIS_INTERNAL_ASSERT(split == u.prefix.size() && r.source.compare(0, split, u.prefix) == 0,
                          "kernel sources of group ", group, " differ before their kernels");
    const std::string body = r.source.substr(split);
    if (!bodies_[group].insert(body).second) return;  // the same kernels twice
    u.request.source += str("\nnamespace ig_v", u.bodies++, " {", body, "}\n");
    for (size_t at = body.find("extern \"C\""); at != std::string::npos;
         at = body.find("extern \"C\"", at + 1))
      ++u.kernels;
  }
  std::vector<KernelUnit> units() const {
    std::vector<KernelUnit> v;
    for (const auto& [name, u] : units_) v.push_back({u.request, u.kernels});
    return v;
  }

 private:
  struct Unit {
    std::string prefix;  // the text every kernel of the group starts with
    KernelRequest request;
    int bodies = 0, kernels = 0;
  };
  std::map<std::string, Unit> units_;
  std::map<std::string, std::set<std::string>> bodies_;
};

// A dtype of the other kind, to exercise loads that convert twice (an
// integer input of a float op, a bool input of an integer op).
ScalarType other_kind(ScalarType t) {
  return is_floating(t) ? ScalarType::Int32 : ScalarType::Bool;
}

}  // namespace

std::vector<std::pair<std::string, KernelRequest>> eager_kernel_variants() {
  register_all_ops();
  std::vector<std::pair<std::string, KernelRequest>> v;
  struct Collector {
    std::vector<std::pair<std::string, KernelRequest>>* out;
    void add(const std::string& group, KernelRequest r) { out->emplace_back(group, std::move(r)); }
  } g{&v};
  // Pointwise: one unit per scalar function.
  using DeclKey = std::tuple<std::string, int, int, bool>;
  std::map<DeclKey, uint32_t> decls;
  for (const PointwiseDecl& d : declared_pointwise())
    decls[{d.fn, d.nargs, d.nscalars, d.bool_out}] |= d.dtypes;
  for (const auto& [key, dtypes] : decls) {
    const auto& [fn, nargs, nscalars, bool_out] = key;
    bool first = true;
    for (int i = 0; i < kNumScalarTypes; ++i) {
      const auto t = static_cast<ScalarType>(i);
      if (!(dtypes & dtype_bit(t))) continue;
      PointwiseKernel k;
      k.fn = fn;
      k.compute = t;
      k.out = bool_out ? ScalarType::Bool : t;
      k.inputs.assign(nargs, t);
      k.nscalars = nscalars;
      k.layout = PointwiseLayout::Vectorized;
      k.vec = static_cast<int>(std::min<size_t>(8, 16 / element_size(t)));
      g.add("pw_" + fn, pointwise_kernel(k));
      k.layout = PointwiseLayout::Strided32;
      g.add("pw_" + fn, pointwise_kernel(k));
      if (nargs >= 2) {  // a CPU scalar as the last operand
        PointwiseKernel s = k;
        s.inputs.back() = ScalarType::Undefined;
        g.add("pw_" + fn, pointwise_kernel(s));
      }
      if (first) {  // once per function: 64-bit indexing, rows of vectors, a converting load
        PointwiseKernel w = k;
        w.layout = PointwiseLayout::Strided64;
        g.add("pw_" + fn, pointwise_kernel(w));
        PointwiseKernel r = k;
        r.layout = PointwiseLayout::VectorRows;
        r.vec = static_cast<int>(std::min<size_t>(8, 16 / element_size(t)));
        g.add("pw_" + fn, pointwise_kernel(r));
        PointwiseKernel m = k;
        m.inputs[0] = other_kind(t);
        g.add("pw_" + fn, pointwise_kernel(m));
        first = false;
      }
    }
  }
  for (const ReduceVariant& v : reduce_variants())
    g.add("red_" + v.kind, reduce_kernel(v.kind, v.in, v.out, false));
  for (ScalarType t : {ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                       ScalarType::Float64}) {
    for (const KernelRequest& r : row_kernel_requests(t)) g.add(str("rows_", dtype_name(t)), r);
    for (const KernelRequest& r : multi_tensor_kernel_requests(t))
      g.add(str("multi_tensor_", dtype_name(t)), r);
  }
  // The nn kernels that compute in float32 or float64 (pooling, batch norm,
  // convolution).
  for (ScalarType t : {ScalarType::Float32, ScalarType::Float64}) {
    for (const KernelRequest& r : pooling_kernel_requests(t))
      g.add(str("pool_", dtype_name(t)), r);
    for (const KernelRequest& r : conv_kernel_requests(t)) g.add(str("conv_", dtype_name(t)), r);
    for (const KernelRequest& r : batch_norm_kernel_requests(t))
      g.add(str("batch_norm_", dtype_name(t)), r);
  }
  // Indexing (mapped copies, atomic adds, triangles) and ranges/random
  // numbers, per dtype.
  for (ScalarType t : {ScalarType::Bool, ScalarType::UInt8, ScalarType::Int8, ScalarType::Int16,
                       ScalarType::Int32, ScalarType::Int64, ScalarType::Float16,
                       ScalarType::BFloat16, ScalarType::Float32, ScalarType::Float64}) {
    for (const KernelRequest& r : index_kernel_requests(t)) g.add(str("index_", dtype_name(t)), r);
    for (const KernelRequest& r : random_kernel_requests(t))
      g.add(str("random_", dtype_name(t)), r);
    for (const KernelRequest& r : sort_kernel_requests(t)) g.add(str("sort_", dtype_name(t)), r);
  }
  // Flash attention: one unit per kernel (each is a few hundred lines of
  // unrolled tensor-core code).
  for (const KernelRequest& r : flash_attention_kernel_requests()) g.add(r.symbol, r);
  for (const KernelRequest& r : row_copy_kernel_requests()) g.add("copy_rows", r);
  for (const KernelRequest& r : copy_unit_kernel_requests()) g.add("map_copy_units", r);
  return v;
}

std::vector<KernelUnit> eager_kernel_units() {
  Grouper g;
  for (const auto& [group, r] : eager_kernel_variants()) g.add(group, r);
  return g.units();
}

}  // namespace ignis::cuda
