#include "ignis/aot/trace.h"

#include "ignis/aot/fake.h"
#include "ignis/graph/interpreter.h"
#include "ignis/ops/op_def.h"

namespace ignis::aot {

using graph::Node;
using graph::Value;

namespace {

thread_local Tracer* tls_tracer = nullptr;

// True when t addresses exactly the bytes of its storage, densely and from
// offset 0: its value then determines the storage's contents, and every
// other tensor on the storage is an as_strided view of it.
bool covers_storage(const Tensor& t) {
  if (t.storage_offset() != 0) return false;
  int64_t numel = t.numel();
  if (static_cast<size_t>(numel) * t.itemsize() != t.impl()->storage()->nbytes()) return false;
  // Dense and non-overlapping: the strides, sorted, form a contiguous layout.
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes()[d] != 1) dims.emplace_back(t.strides()[d], t.sizes()[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.storage_offset() == b.storage_offset();
}

// A schema default equal to the given argument (such arguments are left out
// of recorded nodes, as torch's graphs leave them out).
bool equals_default(const Argument& a, const IValue& v) {
  if (!a.has_default) return false;
  const IValue& d = a.default_value;
  if (d.is_none()) return v.is_none();
  if (d.is_bool()) return v.is_bool() && v.to_bool() == d.to_bool();
  if (d.is_int()) return v.is_int() && v.to_int() == d.to_int();
  if (d.is_double()) return v.is_double() && v.to_double() == d.to_double();
  if (d.is_string()) return v.is_string() && v.to_string() == d.to_string();
  if (d.is_int_list()) return v.is_int_list() && v.to_int_list() == d.to_int_list();
  return false;
}

Value scalar_value(const Tensor& t) {
  if (t.dtype() == ScalarType::Bool) return Value(t.item_int() != 0);
  if (is_floating(t.dtype())) return Value(t.item_double());
  return Value(t.item_int());
}

void proxy_fallback(const OpHandle& op, DispatchKeySet ks, Stack& s) {
  Tracer* tr = tls_tracer;
  DispatchKeySet below = ks.below(DispatchKey::ProxyTrace);
  if (!tr) {
    op.redispatch(below, s);
    return;
  }
  const OpDef* d = op.def();
  if (d && d->decomposition && (!tr->decompose || tr->decompose(op))) {
    // The parts come back through the dispatcher (and are recorded or
    // decomposed in turn); autograd already recorded the whole op above.
    ExcludeDispatchKeyGuard no_autograd(kAutogradKeys);
    d->decomposition(op, s);
    return;
  }
  Node* n = tr->record(op, s);
  {
    // What the kernels below call is part of this op, not of the trace.
    ExcludeDispatchKeyGuard inner(
        DispatchKeySet(DispatchKey::ProxyTrace).add(DispatchKey::Functionalize));
    op.redispatch(below, s);
  }
  tr->bind_results(op, n, s);
}

}  // namespace

Tracer::Tracer(graph::Graph& g, bool functionalize) : g_(g), functionalize_(functionalize) {}

Tracer::StorageState& Tracer::state_of(const Tensor& t) {
  const StorageImpl* st = t.impl()->storage().get();
  auto it = storages_.find(st);
  if (it == storages_.end()) {
    keep_storages_.push_back(t.impl()->storage());
    it = storages_.emplace(st, StorageState{}).first;
  }
  return it->second;
}

void Tracer::bind(const Tensor& t, Node* n) {
  StorageState& st = state_of(t);
  bound_[t.impl()] = Binding{t, graph::NodePtr(n), st.generation};
  if (!st.root && covers_storage(t)) {
    st.root = graph::NodePtr(n);
    st.root_tensor = t;
  }
}

Node* Tracer::node_of(const Tensor& t) {
  Value v = value_of(t);
  return v.is_node() ? v.to_node() : nullptr;
}

Value Tracer::value_of(const Tensor& t) {
  if (!t.defined()) return Value();
  auto it = bound_.find(t.impl());
  const StorageState* st = nullptr;
  auto sit = storages_.find(t.impl()->storage().get());
  if (sit != storages_.end()) st = &sit->second;
  if (it != bound_.end() && (!st || it->second.generation == st->generation))
    return Value(it->second.node);
  if (st && st->root) {
    // The storage was written after t's node was recorded (or t is a view
    // made outside the trace): t's value is re-read from the storage's.
    if (same_geometry(t, st->root_tensor) && bound_.count(st->root_tensor.impl()) &&
        bound_[st->root_tensor.impl()].node == st->root)
      return Value(st->root);
    static OpRef as_strided("as_strided");
    Tensor root = st->root_tensor;
    Tensor v = as_strided.tensor(root, t.sizes().vec(), t.strides().vec(), t.storage_offset());
    Node* n = node_of(v);
    StorageState& s2 = state_of(t);
    bound_[t.impl()] = Binding{t, graph::NodePtr(n), s2.generation};
    return Value(n);
  }
  if (t.impl()->is_wrapped_number()) return scalar_value(t);
  IGNIS_CHECK(!t.is_fake(), "tracing: a fake tensor of shape ", t.shape_str(),
              " was not produced by this trace (was it created outside the traced function?)");
  return Value(constant(t));
}

Node* Tracer::constant(const Tensor& t) {
  auto it = bound_.find(t.impl());
  if (it != bound_.end()) return it->second.node.get();
  std::string name = "_tensor_constant" + std::to_string(constants_.size());
  Node* n = g_.get_attr(name);
  n->meta().tensors = {graph::TensorMeta::of(t)};
  constants_.emplace_back(name, t);
  bound_[t.impl()] = Binding{t, graph::NodePtr(n), state_of(t).generation};
  return n;
}

void Tracer::write(const Tensor& self, const Tensor& result) {
  StorageState& st = state_of(self);
  bool whole = covers_storage(self) && same_geometry(self, result);
  if (whole) {
    st.root = graph::NodePtr(node_of(result));
    st.root_tensor = result;
  } else {
    IGNIS_CHECK(static_cast<bool>(st.root),
                "functionalization: an in-place write into a view of shape ", self.shape_str(),
                " whose base is not known to the trace (a view passed as a graph input?)");
    static OpRef scatter("as_strided_scatter");
    Tensor base = st.root_tensor;
    Tensor nb = scatter.tensor(base, result, self.sizes().vec(), self.strides().vec(),
                               self.storage_offset());
    st.root = graph::NodePtr(node_of(nb));
    st.root_tensor = nb;
  }
  st.generation++;
  st.written = true;
  // self now reads the new value. Only a result laid out like self may stand
  // for it (a view of self must see self's strides); otherwise self is
  // re-read from the storage's value when next used.
  if (same_geometry(self, result))
    bound_[self.impl()] = Binding{self, graph::NodePtr(node_of(result)), st.generation};
  else
    bound_.erase(self.impl());
}

bool Tracer::written(const Tensor& t) const {
  auto it = storages_.find(t.impl()->storage().get());
  return it != storages_.end() && it->second.written;
}

Node* Tracer::record(const OpHandle& op, const Stack& s) {
  const FunctionSchema& fs = op.schema();
  std::vector<Value> args;
  graph::Kwargs kwargs;
  auto convert = [&](const IValue& v) -> Value {
    if (v.is_device()) return Value(stood_for(v.to_device()));
    return graph::from_ivalue(v, [&](const Tensor& t) { return value_of(t); }, /*lists=*/true);
  };
  size_t last_positional = 0;  // one past the last positional arg to keep
  for (size_t i = 0; i < fs.args.size(); ++i)
    if (!fs.args[i].kwarg_only && !equals_default(fs.args[i], s[i])) last_positional = i + 1;
  for (size_t i = 0; i < fs.args.size(); ++i) {
    const Argument& a = fs.args[i];
    if (i == 0 && s[0].is_tensor() && s[0].to_tensor().impl()->is_wrapped_number() &&
        !bound_.count(s[0].to_tensor().impl())) {
      // A number made into a tensor by C++ code: as self it must stay a
      // tensor (graph calls turn numbers into tensors only after self).
      args.push_back(Value(constant(s[0].to_tensor())));
      continue;
    }
    if (a.kwarg_only) {
      if (!equals_default(a, s[i])) kwargs.emplace_back(a.name, convert(s[i]));
    } else if (i < last_positional) {
      args.push_back(convert(s[i]));
    }
  }
  return g_.call_function(graph::Target(op), std::move(args), std::move(kwargs));
}

void Tracer::bind_results(const OpHandle& op, Node* n, const Stack& s) {
  const auto& rets = op.schema().returns;
  bool list_return = rets.size() == 1 && rets[0].type == ArgType::TensorList;
  if (rets.size() == 1 && !list_return) {
    if (s.at(0).is_tensor()) {
      n->meta().tensors = {graph::TensorMeta::of(s[0].to_tensor())};
      bind(s[0].to_tensor(), n);
    }
    return;
  }
  std::vector<Tensor> outs;
  if (list_return) {
    outs = s.at(0).to_tensor_list();
  } else {
    for (size_t i = 0; i < rets.size(); ++i)
      outs.push_back(s.at(i).is_tensor() ? s[i].to_tensor() : Tensor());
  }
  n->meta().tuple_output = true;
  graph::Graph& g = g_;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined()) continue;
    n->meta().tensors.push_back(graph::TensorMeta::of(outs[i]));
    Node* item = g.call_function(graph::getitem_target(), {Value(n), Value(int64_t(i))});
    item->meta().tensors = {graph::TensorMeta::of(outs[i])};
    bind(outs[i], item);
  }
}

TracingGuard::TracingGuard(Tracer& t)
    : prev_(tls_tracer), prev_included_(tls_dispatch_keys().included) {
  tls_tracer = &t;
  DispatchKeySet add = DispatchKeySet(DispatchKey::ProxyTrace);
  if (t.functionalize()) add = add.add(DispatchKey::Functionalize);
  tls_dispatch_keys().included = prev_included_ | add;
}

TracingGuard::~TracingGuard() {
  tls_tracer = prev_;
  tls_dispatch_keys().included = prev_included_;
}

Tracer* active_tracer() { return tls_tracer; }

void register_functionalize_kernel();  // functionalize.cpp

void register_tracing_kernels() {
  static bool done = false;
  if (done) return;
  done = true;
  register_fake_kernel();
  Dispatcher::get().register_fallback(DispatchKey::ProxyTrace, proxy_fallback);
  register_functionalize_kernel();
}

}  // namespace ignis::aot
