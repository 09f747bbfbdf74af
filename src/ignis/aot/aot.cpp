#include "ignis/aot/aot.h"

#include <algorithm>
#include <unordered_map>

#include "ignis/aot/fake.h"
#include "ignis/aot/trace.h"
#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/engine.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/cse.h"
#include "ignis/graph/passes/dce.h"
#include "ignis/graph/passes/lint.h"
#include "ignis/ops/op_def.h"

namespace ignis::aot {

using graph::Node;
using graph::Value;

namespace {

// The tensors fn returned, and how.
std::vector<Tensor> flatten_outputs(const Value& v, OutputKind* kind) {
  std::vector<Tensor> outs;
  if (v.is_tensor()) {
    *kind = OutputKind::Single;
    outs.push_back(v.to_tensor());
    return outs;
  }
  IGNIS_CHECK_TYPE(v.is_sequence(), "AOT: the traced function must return a tensor or a tuple or "
                   "list of tensors, got ", v.kind_name());
  *kind = v.kind() == Value::Kind::List ? OutputKind::List : OutputKind::Tuple;
  for (const Value& e : v.items()) {
    IGNIS_CHECK_TYPE(e.is_tensor(), "AOT: the traced function returned a ", v.kind_name(),
                     " holding a ", e.kind_name(), "; only tensors are supported");
    outs.push_back(e.to_tensor());
  }
  return outs;
}

// The tensors in a nested value, depth first.
void collect_tensors(const Value& v, std::vector<Tensor>* out) {
  if (v.is_tensor()) out->push_back(v.to_tensor());
  else if (v.is_sequence())
    for (const Value& e : v.items()) collect_tensors(e, out);
}

// v with its tensors replaced, in order, by the graph values in `values`.
Value rebuild(const Value& v, const std::vector<Value>& values, size_t* next) {
  if (v.is_tensor()) return values.at((*next)++);
  if (!v.is_sequence()) {
    IGNIS_CHECK_TYPE(!v.has_items() && v.kind() != Value::Kind::Foreign && !v.is_node(),
                     "make_fx: the traced function returned a ", v.kind_name(),
                     "; return tensors, numbers or tuples/lists of them");
    return v;
  }
  Value::Items items;
  for (const Value& e : v.items()) items.push_back(rebuild(e, values, next));
  return v.kind() == Value::Kind::List ? Value::list(std::move(items))
                                       : Value::tuple(std::move(items));
}

// The policy Tracer::decompose applies.
Tracer::DecomposePolicy decompose_policy(const AotOptions& o) {
  if (!o.decompose) return [](const OpHandle&) { return false; };
  auto named = [](const std::unordered_set<std::string>& set, const OpHandle& op) {
    return set.count(op.name()) || set.count(op.schema().name);
  };
  if (o.only_listed) {
    auto only = o.only;
    return [only, named](const OpHandle& op) { return named(only, op); };
  }
  if (o.keep.empty()) return nullptr;
  auto keep = o.keep;
  return [keep, named](const OpHandle& op) { return !named(keep, op); };
}

// A tensor that can carry a gradient: floating or complex (a complex input's
// outputs were traced as not requiring grad, and the compiled graph dropped
// their gradients: rfft's spectrum times a filter, compiled, had no grad_fn).
bool differentiable_tensor(const Tensor& t) {
  return t.defined() && autograd::is_differentiable_type(t.dtype());
}

// Elements share memory (a broadcast dimension): autograd's as_strided
// backward writes such a view's gradient instead of summing it.
bool self_overlapping(const Tensor& t) {
  for (size_t d = 0; d < t.sizes().size(); ++d)
    if (t.sizes()[d] > 1 && t.strides()[d] == 0) return true;
  return false;
}

// What kind of autograd alias of `input` the traced output t is: a view of
// it, or of something else sharing its storage (a view of input.detach()),
// which follows that instead (None).
AliasKind alias_kind(const Tensor& t, const Tensor& input, bool requires_grad) {
  if (t.is_same(input)) return AliasKind::Same;
  const autograd::AutogradMeta* m = autograd::get_meta(t);
  if (m && m->is_view_ && m->base_.is_same(input))
    return m->no_grad_view_ ? AliasKind::NoGradView : AliasKind::View;
  return requires_grad ? AliasKind::View : AliasKind::None;
}

}  // namespace


// Records, while the trace's backward runs eager's formulas, the inputs and
// outputs they read from what they saved (a saved tensor sharing the version counter of an input
// or an output: the tensor itself or a view of it), with the graph nodes of
// the gradients each reading node ran with (Note [Saving what eager saves],
// partition.cpp; the runtime checks these tensors' versions as eager would).
class EagerSavedRecorder : public autograd::SavedTensorObserver {
 public:
  EagerSavedRecorder(Tracer& tr, const std::vector<Tensor>& args, const std::vector<Tensor>& outs,
                     std::vector<EagerSaved>* out)
      : tr_(tr), args_(args), outs_(outs), out_(out) {}

  void checked(const Tensor& saved, const autograd::tensor_list& grads) override {
    const VersionCounter* v = saved.impl()->shared_version_counter().get();
    int index = -1;
    for (size_t i = 0; i < args_.size() && index < 0; ++i)
      if (args_[i].impl()->shared_version_counter().get() == v) index = static_cast<int>(i);
    for (size_t k = 0; k < outs_.size() && index < 0; ++k)
      if (outs_[k].impl()->shared_version_counter().get() == v)
        index = static_cast<int>(args_.size() + k);
    if (index < 0) return;
    std::vector<const Node*> nodes;
    for (const Tensor& g : grads)
      if (const Node* n = node_or_null(g)) nodes.push_back(n);
    out_->push_back(EagerSaved{index, {}});
    gradients_.push_back(std::move(nodes));
  }

  // A node's results exist because it ran with a defined gradient (eager's
  // nodes return nothing when none is): each result's node depends on the
  // nodes of those gradients even when its value does not (zero_'s
  // gradient, zeros_like(grad), traces as a fresh empty + fill; fuzz seed
  // 736182: mul's saved input written after the graph went unchecked).
  void applied(const autograd::tensor_list& grads, const autograd::tensor_list& results) override {
    std::vector<const Node*> from;
    for (const Tensor& g : grads)
      if (const Node* n = node_or_null(g)) from.push_back(n);
    if (from.empty()) return;
    for (const Tensor& r : results)
      if (const Node* n = node_or_null(r)) {
        std::vector<const Node*>& v = ran_with_[n];
        v.insert(v.end(), from.begin(), from.end());
      }
  }

  // Fills each record's tangents from its gradients' nodes, on the whole
  // graph as traced (dead code not yet gone): the tangents each node is
  // computed from, by one pass in graph order.
  void resolve_tangents(const graph::Graph& g, const std::vector<Node*>& tangent_placeholders) {
    if (out_->empty()) return;
    std::unordered_map<const Node*, std::vector<int>> reach;
    for (size_t k = 0; k < tangent_placeholders.size(); ++k)
      reach[tangent_placeholders[k]] = {static_cast<int>(k)};
    for (const Node* n : g.nodes()) {
      if (n->op() == graph::OpKind::Placeholder) continue;
      std::vector<int> r;
      auto add = [&](const Node* in) {
        if (auto it = reach.find(in); in != n && it != reach.end())
          r.insert(r.end(), it->second.begin(), it->second.end());
      };
      for (const Node* in : n->input_nodes()) add(in);
      if (auto it = ran_with_.find(n); it != ran_with_.end())  // made earlier: reached already
        for (const Node* in : it->second) add(in);
      if (!r.empty()) reach[n] = sorted_unique(std::move(r));
    }
    for (size_t i = 0; i < out_->size(); ++i) {
      std::vector<int> t;
      for (const Node* n : gradients_[i])
        if (auto it = reach.find(n); it != reach.end())
          t.insert(t.end(), it->second.begin(), it->second.end());
      (*out_)[i].tangents = sorted_unique(std::move(t));
    }
  }

 private:
  const Node* node_or_null(const Tensor& t) {
    if (!t.defined()) return nullptr;
    try {
      return tr_.node_of(t);
    } catch (const std::exception&) {
      return nullptr;  // a gradient the trace did not make (a constant): no tangent in it
    }
  }
  static std::vector<int> sorted_unique(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }

  Tracer& tr_;
  const std::vector<Tensor>& args_;
  const std::vector<Tensor>& outs_;
  std::vector<EagerSaved>* out_;
  std::vector<std::vector<const Node*>> gradients_;  // per record: its readers' gradients
  // A backward result's node -> the nodes of the gradients its node ran with.
  std::unordered_map<const Node*, std::vector<const Node*>> ran_with_;
};

TracedGraph trace(const TraceFn& fn, const std::vector<Value>& inputs, const AotOptions& opt) {
  TracedGraph r;
  r.graph = std::make_unique<graph::Graph>();
  graph::Graph& g = *r.graph;
  FakeTensorMode mode;
  // What the trace's own autograd saves stays with it: a caller's
  // saved-tensor hooks (Note [Saved-tensor hooks]) never see fakes.
  autograd::SavedTensorHooksGuard no_saved_hooks(nullptr);
  Tracer tr(g, opt.functionalize);
  tr.decompose = decompose_policy(opt);

  bool any_grad = false;
  for (const Value& v : inputs) {
    IGNIS_CHECK_TYPE(v.is_tensor(), "AOT: graph inputs must be tensors, got ", v.kind_name());
    any_grad |= autograd::requires_grad(v.to_tensor());
  }
  bool caller_grad = autograd::grad_enabled();
  r.joint = !opt.inference && !opt.as_is && any_grad && (caller_grad || opt.enables_grad);

  // 1. Inputs.
  std::vector<Tensor> args;
  std::vector<Node*> placeholders;
  std::vector<Value> arg_values;
  std::unordered_map<const TensorImpl*, size_t> first_use;  // inputs passed twice
  auto placeholder_name = [&](size_t i) {  // torch's names
    return r.joint ? "primals_" + std::to_string(i + 1) : "arg" + std::to_string(i) + "_1";
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& real = inputs[i].to_tensor();
    auto [dup, fresh] = first_use.emplace(real.impl(), i);
    if (!fresh) {
      // The same tensor again (a tied weight): the graph reads the first
      // placeholder; this one only keeps the arity, and gets no gradient.
      Node* ph = g.placeholder(placeholder_name(i));
      ph->meta().tensors = {graph::TensorMeta::of(args[dup->second])};
      args.push_back(args[dup->second]);
      placeholders.push_back(placeholders[dup->second]);
      arg_values.emplace_back(args.back());
      r.inputs.push_back(InputInfo{false, false, static_cast<int>(dup->second)});
      continue;
    }
    Tensor a = opt.fake ? mode.from_tensor(real) : real;
    if (!opt.fake && autograd::requires_grad(real) && !autograd::is_leaf(real)) {
      // A non-leaf input would carry its history into the trace.
      a = autograd::detach(real);
      autograd::set_requires_grad(a, true);
    }
    if (!r.joint && !opt.as_is && opt.fake && autograd::requires_grad(a))
      autograd::set_requires_grad(a, false);
    Node* ph = g.placeholder(placeholder_name(i));
    ph->meta().tensors = {graph::TensorMeta::of(a)};
    tr.bind(a, ph);
    args.push_back(a);
    placeholders.push_back(ph);
    arg_values.emplace_back(a);
    r.inputs.push_back(InputInfo{r.joint && autograd::requires_grad(a), false, -1});
  }
  // An input that is an autograd view of another input (t4 = buf[:, :]
  // returned by an earlier graph, then passed in beside buf) is made the same
  // kind of view of that input's fake: a write into the base inside the graph
  // (buf[-1].copy_(a[0])) then gives the view the base's history, as eager's
  // autograd does; as two unrelated fakes, t4 * t1 took no gradient to a
  // (fuzz seed 78888: wrong gradients).
  // Such a view is written back through its base (one storage): it gets no
  // write-back of its own, which would write into a view of a leaf.
  std::vector<bool> view_of_input(inputs.size(), false);
  if (opt.fake && r.joint) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const autograd::AutogradMeta* m = autograd::get_meta(inputs[i].to_tensor());
      if (!m || !m->is_view_ || r.inputs[i].duplicate_of >= 0) continue;
      for (size_t j = 0; j < inputs.size(); ++j) {
        if (j == i || r.inputs[j].duplicate_of >= 0 || !m->base_.is_same(inputs[j].to_tensor()))
          continue;
        // (Their fakes share a version counter already: from_tensor's.)
        // A no-grad view requires grad only through its base and has no
        // gradient edge of its own (eager drops what reaches it): its fake is
        // no leaf that requires grad, or the joint graph would give it a
        // gradient and the runtime would ask for its edge after the graph
        // wrote its base, which a stale no-grad view refuses (fuzz seed
        // 405889: t1 = b[:, :] under no_grad, t1 - t3, then b.clamp_()).
        if (m->no_grad_view_) autograd::set_requires_grad(args[i], false);
        autograd::set_view_of(args[i], args[j], m->no_grad_view_);
        view_of_input[i] = true;
        break;
      }
    }
  }
  // The gradients of the inputs are those reaching their edges as they are
  // now: a view input whose base the graph writes (even under no_grad)
  // regenerates its history at the write, but what read it before still
  // leads to the edge it had (fuzz seed 71758: t11 = t1 * s, then
  // a.mul_(0.9) under no_grad, with t1 = a[:, -1] an input).
  std::vector<autograd::Edge> input_edges;
  for (size_t i = 0; i < args.size(); ++i)
    if (r.inputs[i].requires_grad) input_edges.push_back(autograd::gradient_edge(args[i]));
  std::vector<Value> results;
  Value returned;
  std::vector<Tensor> outs;
  {
    std::unique_ptr<FakeModeGuard> fake_guard;
    if (opt.fake) fake_guard = std::make_unique<FakeModeGuard>(mode);
    TracingGuard tracing(tr);
    autograd::GradModeGuard grad_mode((opt.as_is || r.joint) && caller_grad);

    // 2. The forward.
    returned = fn(arg_values);
    if (opt.as_is) {
      // make_fx: any nesting of tuples and lists of tensors and constants;
      // the output node keeps it (the tensors are read back after step 3).
      collect_tensors(returned, &outs);
      r.output_kind = OutputKind::Nested;
    } else {
      outs = flatten_outputs(returned, &r.output_kind);
    }
    // The graph may leave grad mode switched (a captured graph that ends
    // inside `with no_grad()`); the rest of the trace runs in its own mode.
    if (!opt.as_is) autograd::set_grad_enabled(r.joint);
    for (const Tensor& o : outs) {
      OutputInfo info;
      bool differentiable = r.joint && autograd::requires_grad(o) && differentiable_tensor(o);
      for (size_t i = args.size(); i-- > 0;)
        if (o.impl()->storage().get() == args[i].impl()->storage().get())
          info.aliased_input = static_cast<int>(i);
      // An autograd view is remade from its own base when that is an input
      // (inputs may share storage); an input returned as it is stays itself.
      if (const autograd::AutogradMeta* m = autograd::get_meta(o);
          info.aliased_input >= 0 && m && m->is_view_)
        for (size_t i = 0; i < args.size(); ++i)
          if (m->base_.is_same(args[i])) info.aliased_input = static_cast<int>(i);
      for (size_t i = 0; i < args.size(); ++i)
        if (o.is_same(args[i]) && r.inputs[i].duplicate_of < 0)
          info.aliased_input = static_cast<int>(i);
      // A view of an input is remade by the runtime (schema.h): no tangent;
      // unless the view or the input overlaps itself (as_strided could not
      // remake it with the right gradient): then it stays the node's output.
      bool remade = info.aliased_input >= 0 && !self_overlapping(o) &&
                    !self_overlapping(args[info.aliased_input]);
      // A view of another output (not of an input) is remade the same way
      // from that output (OutputInfo::aliased_output).
      if (const autograd::AutogradMeta* m = autograd::get_meta(o);
          r.joint && info.aliased_input < 0 && m && m->is_view_)
        for (size_t j = 0; j < outs.size(); ++j)
          if (!outs[j].is_same(o) && m->base_.is_same(outs[j]) && !self_overlapping(o) &&
              !self_overlapping(outs[j])) {
            info.aliased_output = static_cast<int>(j);
            remade = true;
            break;
          }
      info.requires_grad = differentiable && !remade;
      if (const autograd::AutogradMeta* m = autograd::get_meta(o);
          r.joint && !remade && info.aliased_input < 0 && m && m->is_view_ && m->no_grad_view_) {
        info.no_grad_view = true;
        info.stale_no_grad_view = m->stale_view();
      }
      if (r.joint && remade)
        info.alias_kind = alias_kind(
            o, info.aliased_input >= 0 ? args[info.aliased_input] : outs[info.aliased_output],
            differentiable);
      if (const autograd::AutogradMeta* m = autograd::get_meta(o);
          r.joint && remade && info.aliased_input >= 0 && !o.is_same(args[info.aliased_input]) &&
          info.alias_kind != AliasKind::None && m && m->is_view_ && m->version_ &&
          m->version_->value() != m->view_version_) {
        info.made_before_write = true;
        info.view_sizes = o.sizes().vec();
        info.view_strides = o.strides().vec();
        info.view_offset = o.storage_offset();
      }
      r.outputs.push_back(info);
      results.push_back(tr.value_of(o));
    }
    // Outputs viewing one intermediate that is not returned: that base is
    // returned after them and they are remade from it (schema.h).
    if (r.joint) {
      const size_t num_user = outs.size();
      for (size_t k = 0; k < num_user; ++k) {
        auto base_of = [&](size_t j) -> const autograd::AutogradMeta* {
          const autograd::AutogradMeta* m = autograd::get_meta(outs[j]);
          const OutputInfo& oi = r.outputs[j];
          if (!m || !m->is_view_ || oi.aliased_input >= 0 || oi.aliased_output >= 0 ||
              self_overlapping(outs[j]) || self_overlapping(m->base_))
            return nullptr;
          for (size_t i = 0; i < outs.size(); ++i)
            if (m->base_.is_same(outs[i])) return nullptr;  // a returned base
          for (const Tensor& a : args)
            if (m->base_.is_same(a)) return nullptr;
          return m;
        };
        const autograd::AutogradMeta* mk = base_of(k);
        if (!mk) continue;
        std::vector<size_t> group{k};
        for (size_t j = k + 1; j < num_user; ++j)
          if (const autograd::AutogradMeta* mj = base_of(j); mj && mj->base_.is_same(mk->base_))
            group.push_back(j);
        if (group.size() < 2) continue;
        const Tensor base = mk->base_;
        OutputInfo bi;
        bi.requires_grad = autograd::requires_grad(base) && differentiable_tensor(base);
        bi.intermediate_base = true;
        const int b = static_cast<int>(outs.size());
        r.outputs.push_back(bi);
        outs.push_back(base);
        results.push_back(tr.value_of(base));
        for (size_t j : group) {
          OutputInfo& oi = r.outputs[j];
          bool differentiable = oi.requires_grad || oi.no_grad_view;
          oi.aliased_output = b;
          oi.alias_kind = alias_kind(outs[j], base, differentiable);
          oi.requires_grad = false;
          oi.no_grad_view = false;
        }
      }
    }

    // 3. Mutated inputs: one write-back each, at the end of the forward;
    // a new value with autograd history is an output instead (schema.h).
    static OpRef copy("copy_");
    std::vector<size_t> written_by_runtime;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!tr.written(args[i]) || r.inputs[i].duplicate_of >= 0 || view_of_input[i]) continue;
      r.inputs[i].mutated = true;
      // The fakes start as leaves: history on one came from a write.
      if (r.joint && !autograd::is_leaf(args[i])) {
        written_by_runtime.push_back(i);
        continue;
      }
      Node* c = g.call_function(graph::Target(copy.handle()),
                                {Value(placeholders[i]), tr.value_of(args[i])});
      c->meta().tensors = {graph::TensorMeta::of(args[i])};
    }
    // An output viewing a mutated input is read back from the input after
    // its write-back, so that it stays a view of it (as eager's would be).
    static OpRef as_strided("as_strided");
    for (size_t k = 0; k < outs.size(); ++k) {
      int i = r.outputs[k].aliased_input;
      if (i < 0 || !r.inputs[i].mutated) continue;
      const Tensor& o = outs[k];
      Value::Items size, stride;
      for (int64_t v : o.sizes()) size.emplace_back(v);
      for (int64_t v : o.strides()) stride.emplace_back(v);
      Node* v = g.call_function(graph::Target(as_strided.handle()),
                                {Value(placeholders[i]), Value::list(std::move(size)),
                                 Value::list(std::move(stride)), Value(o.storage_offset())});
      v->meta().tensors = {graph::TensorMeta::of(o)};
      results[k] = Value(v);
    }
    for (size_t i : written_by_runtime) {
      OutputInfo info;
      info.requires_grad = differentiable_tensor(args[i]);
      info.mutated_input = static_cast<int>(i);
      r.outputs.push_back(info);
      outs.push_back(args[i]);
      results.push_back(tr.value_of(args[i]));
    }

    // 4. The backward.
    if (r.joint) {
      autograd::tensor_list roots, tangents;
      std::vector<autograd::Edge> primals;
      Node* first_body = nullptr;
      for (Node* n : g.nodes())
        if (n->op() != graph::OpKind::Placeholder) {
          first_body = n;
          break;
        }
      size_t num_tangents = 0;
      std::vector<Node*> tangent_placeholders;
      for (size_t k = 0; k < outs.size(); ++k) {
        if (!r.outputs[k].requires_grad) continue;
        const Tensor& o = outs[k];
        Tensor t = opt.fake ? make_fake(o.sizes(), contiguous_strides(o.sizes()), o.dtype(),
                                        o.user_device())
                            : OpRef("ones_like").tensor(o);
        g.set_insert_point(first_body);
        Node* ph = g.placeholder("tangents_" + std::to_string(++num_tangents));
        tangent_placeholders.push_back(ph);
        g.set_insert_point(nullptr);
        ph->meta().tensors = {graph::TensorMeta::of(t)};
        tr.bind(t, ph);
        // A no-grad view has no gradient edge: its gradient goes nowhere, as
        // eager's does (its tangent stays unused).
        if (r.outputs[k].no_grad_view) continue;
        roots.push_back(o);
        tangents.push_back(t);
      }
      std::vector<size_t> grad_index;  // primal -> position in `primals`
      for (size_t i = 0; i < args.size(); ++i) {
        grad_index.push_back(primals.size());
        if (r.inputs[i].requires_grad) primals.push_back(input_edges[primals.size()]);
      }
      autograd::tensor_list grads;
      if (!roots.empty() && !primals.empty()) {
        autograd::BackwardOptions bo;
        bo.allow_unused = true;
        EagerSavedRecorder rec(tr, args, outs, &r.eager_saved);
        autograd::ObserveSavedTensors observe(&rec);
        grads = autograd::grad(roots, tangents, primals, bo);
        rec.resolve_tangents(g, tangent_placeholders);
      }
      for (size_t i = 0; i < args.size(); ++i) {
        if (!r.inputs[i].requires_grad || grads.empty()) {
          results.emplace_back();
          continue;
        }
        const Tensor& gi = grads[grad_index[i]];
        results.push_back(gi.defined() ? tr.value_of(gi) : Value());
      }
    }
  }

  // 5. Output.
  if (opt.as_is) {
    size_t next = 0;
    g.output(rebuild(returned, results, &next));
  } else {
    g.output(Value::tuple(std::move(results)));
  }
  r.constants = tr.constants();
  // Note [One computation for the forward and the backward]
  // A backward formula that computes a forward value again from the same
  // inputs records it again: cross_entropy's gradient is softmax(logits),
  // whose max and sum of exps over the logits log_softmax reduced in the
  // forward. A repeated reduction (or GEMM) is merged with the forward's:
  // one value, which the partitioner saves (a reduction much smaller than
  // its input is never recomputed) where the backward read all of its input
  // again -- GPT-2's step read its 412 MB of logits twice more (257 us on
  // the H100, docs/benchmarks.md run 16). The repeated casts and pointwise
  // nodes that feed it stay: equal up to the repeats (merge_repeated), they
  // are what tells the partitioner that a backward formula reads the
  // logits, which decides what it may recompute from a value the program
  // holds (Note [Recomputing from what the program holds]); merged too,
  // the forward saved the 412 MB softmax instead. Functional graphs only:
  // with in-place ops recorded as they are, two equal calls may read
  // different values.
  if (r.joint && opt.functionalize)
    graph::merge_repeated(g, [](const Node& n) {
      if (n.op() != graph::OpKind::CallFunction || n.target().kind != graph::Target::Kind::Op)
        return false;
      const OpDef* d = n.target().op->def();  // none for ops declared without one
      return d && (d->category == OpCategory::Reduction || d->category == OpCategory::Template);
    });
  graph::eliminate_dead_code(g);
  graph::lint(g);
  return r;
}

TracedGraph trace_graph(const graph::Graph& g, const std::vector<Value>& inputs,
                        const Value& root, const AotOptions& options) {
  return trace([&](const std::vector<Value>& in) { return graph::interpret(g, in, root); },
               inputs, options);
}

}  // namespace ignis::aot
