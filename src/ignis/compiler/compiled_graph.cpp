#include "ignis/compiler/compiled_graph.h"

#include <chrono>
#include <set>

#include "ignis/compiler/autotune.h"
#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/lower.h"
#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/kernels/cpu/gemm.h"

namespace ignis::compiler {

namespace {

DimVector ints(const std::vector<sym::Expr>& v) {
  DimVector r;
  for (const sym::Expr& e : v) r.push_back(e.value());
  return r;
}

// Whether t has the layout the program was compiled for (strides of size-1
// dims do not matter: index 0 is the only one read).
bool has_layout(const Tensor& t, const Buffer& b) {
  if (t.dtype() != b.dtype || size_t(t.dim()) != b.sizes.size()) return false;
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (t.sizes()[d] != b.sizes[d].value()) return false;
    if (t.sizes()[d] != 1 && t.strides()[d] != b.strides[d].value()) return false;
  }
  return true;
}

// t in buffer b's layout: t itself when it has it, else a copy. Kernels index
// with the strides the graph was traced with, so a tensor that arrives (or an
// extern that returns one) in another layout is copied rather than misread.
Tensor conform(const Tensor& t, const Buffer& b) {
  if (has_layout(t, b)) return t;
  IGNIS_CHECK(t.dtype() == b.dtype, "compiled graph: ", b.name, " is ", dtype_name(t.dtype()),
              ", compiled for ", dtype_name(b.dtype));
  Tensor out = empty_strided_tensor(ints(b.sizes), ints(b.strides), b.dtype, t.device());
  graph::call_op_by_name("copy_", {graph::Value(out), graph::Value(t)}, {});
  return out;
}

// The bytes kernel k must move: every buffer it reads or writes, once.
int64_t kernel_bytes(const Program& p, const Kernel& k) {
  std::set<int> touched(k.outputs.begin(), k.outputs.end());
  for (const Loop& l : k.loops)
    for (const ScalarNode& n : l.body)
      if (n.kind == ScalarKind::Load) touched.insert(n.buffer);
  if (k.gemm) touched.insert({k.gemm->a, k.gemm->b, k.gemm->c});
  int64_t bytes = 0;
  for (int b : touched) {
    const Buffer& buf = p.buffers[size_t(b)];
    int64_t n = 1;
    for (const sym::Expr& s : buf.sizes) n *= s.value();
    bytes += n * int64_t(element_size(buf.dtype));
  }
  return bytes;
}

}  // namespace

void CompiledGraph::enable_profile(bool on) {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiling_ = on;
  if (!on || !profile_.empty()) return;
  for (const Step& s : program_.steps) {
    StepProfile row;
    if (s.kind == Step::Kind::RunKernel) {
      const Kernel& k = program_.kernels[size_t(s.kernel)];
      row.label = k.name + " (";
      for (size_t i = 0; i < k.origins.size() && i < 4; ++i) row.label += (i ? ", " : "") + k.origins[i];
      row.label += k.origins.size() > 4 ? ", ...)" : ")";
      row.bytes = kernel_bytes(program_, k);
    } else {
      row.label = (s.view ? "view " : "extern ") + s.op->schema().full_name();
    }
    profile_.push_back(std::move(row));
  }
}

std::vector<CompiledGraph::StepProfile> CompiledGraph::profile() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  return profile_;
}

CompiledGraph::CompiledGraph(const graph::Graph& g, CompileGraphOptions options)
    : program_(lower(g, options.compiler)), plan_(plan_memory(program_)) {
  runtime::CodeCache& cache = options.cache ? *options.cache : runtime::CodeCache::global();
  if (options.autotune && !program_.kernels.empty()) {
    AutotuneResult tuned = autotune(program_, options.compiler, cache);
    source_ = generate_cpp(program_, tuned.per_kernel);
    autotune_report_ = std::move(tuned.report);
    autotune_measured_ = tuned.measured;
  } else {
    source_ = generate_cpp(program_, options.compiler);
  }
  if (!program_.kernels.empty()) {
    runtime::CompileOptions co;
    co.name = "compiled_graph";
    library_ = cache.load_or_compile(source_, co);
    for (const Kernel& k : program_.kernels) kernels_.push_back(library_.function<KernelFn>(k.name));
  }
  constants_.resize(program_.buffers.size());
  for (size_t b = 0; b < program_.buffers.size(); ++b) {
    const Buffer& buf = program_.buffers[b];
    if (buf.kind != BufferKind::Constant) continue;
    auto it = options.constants.find(buf.attr);
    IGNIS_CHECK(it != options.constants.end(), "compiled graph: no constant '", buf.attr, "'");
    constants_[b] = conform(it->second, buf);
  }
}

std::vector<graph::Value> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  const Program& p = program_;
  IGNIS_CHECK_TYPE(inputs.size() == p.inputs.size(), "compiled graph takes ", p.inputs.size(),
                   " inputs, got ", inputs.size());
  std::vector<Tensor> bufs = constants_;
  std::vector<char*> ptrs(p.buffers.size(), nullptr);
  auto set = [&](int b, Tensor t) {
    ptrs[size_t(b)] = static_cast<char*>(t.data_ptr());
    bufs[size_t(b)] = std::move(t);
  };
  for (size_t b = 0; b < bufs.size(); ++b)
    if (bufs[b].defined()) ptrs[b] = static_cast<char*>(bufs[b].data_ptr());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer& b = p.buffers[size_t(p.inputs[i])];
    IGNIS_CHECK_TYPE(inputs[i].defined(), "compiled graph: input ", b.name, " is undefined");
    set(p.inputs[i], conform(inputs[i], b));
  }
  auto tensor_of = [&](graph::Node* n) -> graph::Value {
    int b = p.buffer_of(n);
    IGNIS_INTERNAL_ASSERT(b >= 0, "compiled graph: no buffer for ", n->name());
    return graph::Value(bufs[size_t(b)]);
  };
  std::vector<Storage> slots(plan_.slot_bytes.size());
  auto release = [&](size_t step) {
    for (int b : plan_.release_after[step]) {
      bufs[size_t(b)] = Tensor();
      ptrs[size_t(b)] = nullptr;
    }
  };
  using Clock = std::chrono::steady_clock;
  std::vector<double> step_seconds(profiling_ ? p.steps.size() : 0);
  Clock::time_point started;
  auto timed = [&](size_t si) {
    if (profiling_) step_seconds[si] = std::chrono::duration<double>(Clock::now() - started).count();
  };
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& s = p.steps[si];
    if (profiling_) started = Clock::now();
    if (s.kind == Step::Kind::RunKernel) {
      const Kernel& k = p.kernels[size_t(s.kernel)];
      for (int b : k.outputs) {
        const Buffer& out = p.buffers[size_t(b)];
        int slot = plan_.slot[size_t(b)];
        if (slot < 0) {
          set(b, empty_strided_tensor(ints(out.sizes), ints(out.strides), out.dtype, Device()));
          continue;
        }
        Storage& st = slots[size_t(slot)];
        if (!st) st = allocate_storage(size_t(plan_.slot_bytes[size_t(slot)]), Device());
        set(b, Tensor(make_intrusive<TensorImpl>(st, out.dtype, ints(out.sizes), ints(out.strides),
                                                 0)));
      }
      kernels_[size_t(s.kernel)](ptrs.data(), cpu::kernel_runtime());
      timed(si);
      release(si);
      continue;
    }
    std::vector<graph::Value> args;
    for (const graph::Value& a : s.args) args.push_back(graph::map_nodes(a, tensor_of));
    graph::Kwargs kwargs;
    for (const auto& [k, v] : s.kwargs) kwargs.emplace_back(k, graph::map_nodes(v, tensor_of));
    graph::Value r = graph::call_op(*s.op, args, kwargs);
    std::vector<graph::Value> results =
        r.is_sequence() ? r.items() : std::vector<graph::Value>{r};
    IGNIS_CHECK(results.size() >= s.outputs.size(), "compiled graph: ", s.op->name(),
                " returned ", results.size(), " values, expected ", s.outputs.size());
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      if (s.outputs[i] < 0) continue;  // an element no node reads (or a None)
      IGNIS_CHECK(results[i].is_tensor(), "compiled graph: ", s.op->name(), " returned ",
                  results[i].kind_name(), " at position ", i, " where the trace had a tensor");
      const Buffer& b = p.buffers[size_t(s.outputs[i])];
      const Tensor& t = results[i].to_tensor();
      // conform() keeps a result in the traced layout as it is, so a view
      // (an output aliasing an input) stays a view.
      set(s.outputs[i], conform(t, b));
    }
    timed(si);
    release(si);
  }
  if (profiling_) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    for (size_t si = 0; si < profile_.size(); ++si) {
      profile_[si].calls += 1;
      profile_[si].seconds += step_seconds[si];
    }
  }
  std::vector<graph::Value> outs;
  for (const ProgramOutput& o : p.outputs)
    outs.push_back(o.buffer >= 0 ? graph::Value(bufs[size_t(o.buffer)]) : o.value);
  return outs;
}

}  // namespace ignis::compiler
