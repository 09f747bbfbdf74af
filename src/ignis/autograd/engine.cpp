#include "ignis/autograd/engine.h"

#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/functions.h"
#include "ignis/autograd/grad_mode.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/profiler/profiler.h"

namespace ignis::autograd {

namespace {

thread_local SavedTensorObserver* t_observer = nullptr;
thread_local const tensor_list* t_node_grads = nullptr;  // the running node's

OpRef add_op("add");
OpRef ones_like_op("ones_like");

// Sums gradients that meet at one node input.
void accumulate(Tensor& slot, Tensor g) {
  if (!g.defined()) return;
  if (!slot.defined()) slot = std::move(g);
  else slot = add_op.tensor(slot, g);
}

struct Capture {
  Node* fn;
  uint32_t input_nr;
};

struct GraphTask {
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, tensor_list> buffers;
  std::unordered_set<Node*> exec;  // nodes that run (all of them unless capturing)
  std::vector<Capture> captures;
  tensor_list captured;
};

void check_roots(const tensor_list& outputs, const tensor_list& grads, tensor_list& root_grads,
                 std::vector<Edge>& roots) {
  IGNIS_CHECK(grads.empty() || grads.size() == outputs.size(), "got ", grads.size(),
              " gradients for ", outputs.size(), " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    Edge e = gradient_edge(o);
    IGNIS_CHECK(e.valid(), "element ", i,
                " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grads.empty() ? Tensor() : grads[i];
    if (!g.defined()) {
      IGNIS_CHECK(o.numel() == 1, "grad can be implicitly created only for scalar outputs");
      g = ones_like_op.tensor(o);
    } else {
      IGNIS_CHECK(g.sizes() == o.sizes(), "Mismatch in shape: grad_output[", i,
                  "] has a shape of ", g.shape_str(), " and output[", i, "] has a shape of ",
                  o.shape_str(), ".");
    }
    roots.push_back(e);
    root_grads.push_back(std::move(g));
  }
}

void run(GraphTask& task, const std::vector<Edge>& roots, tensor_list& root_grads,
         const BackwardOptions& opt) {
  // Discover the graph.
  std::vector<Node*> order;  // DFS discovery order
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& r : roots)
    if (seen.insert(r.fn.get()).second) stack.push_back(r.fn.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& e : n->next_edges())
      if (e.valid() && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  bool capturing = !task.captures.empty() || task.captured.size();
  if (!capturing) {
    task.exec = seen;
  } else {
    // A node runs when a captured input is reachable from it (through the
    // nodes it feeds). Iterate to a fixed point over the discovered nodes.
    std::unordered_set<Node*> targets;
    for (auto& c : task.captures) targets.insert(c.fn);
    bool changed = true;
    while (changed) {
      changed = false;
      for (Node* n : order) {
        if (task.exec.count(n)) continue;
        for (auto& e : n->next_edges()) {
          if (e.valid() && (targets.count(e.fn.get()) || task.exec.count(e.fn.get()))) {
            task.exec.insert(n);
            changed = true;
            break;
          }
        }
      }
    }
  }
  for (Node* n : order) {
    if (!task.exec.count(n)) continue;
    for (auto& e : n->next_edges())
      if (e.valid()) task.deps[e.fn.get()]++;
  }

  auto cmp = [](Node* a, Node* b) { return a->sequence_nr() < b->sequence_nr(); };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  auto add_input = [&](Node* n, uint32_t nr, Tensor g) {
    tensor_list& buf = task.buffers[n];
    if (buf.size() <= nr) buf.resize(std::max<size_t>(nr + 1, n->input_geom().size()));
    accumulate(buf[nr], std::move(g));
  };
  for (size_t i = 0; i < roots.size(); ++i)
    add_input(roots[i].fn.get(), roots[i].input_nr, std::move(root_grads[i]));
  std::unordered_set<Node*> queued;
  for (auto& r : roots)
    if (task.deps[r.fn.get()] == 0 && queued.insert(r.fn.get()).second) ready.push(r.fn.get());

  GradModeGuard mode(opt.create_graph);
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    tensor_list inputs = std::move(task.buffers[n]);
    task.buffers.erase(n);
    for (auto& [nr, hook] : n->pre_hooks()) {
      if (nr >= inputs.size() || !inputs[nr].defined()) continue;
      Tensor r = hook.fn(inputs[nr]);
      if (r.defined()) inputs[nr] = std::move(r);
    }
    for (size_t i = 0; i < task.captures.size(); ++i) {
      const Capture& c = task.captures[i];
      if (c.fn == n && c.input_nr < inputs.size()) task.captured[i] = inputs[c.input_nr];
    }
    if (!task.exec.count(n)) continue;
    for (auto& [nr, meta] : n->retained()) {
      if (nr >= inputs.size() || !inputs[nr].defined()) continue;
      const Tensor& g = inputs[nr];
      if (!meta->grad_.defined()) meta->grad_ = opt.create_graph ? g : detach(g);
      else meta->grad_ = add_op.tensor(meta->grad_, g);
    }
    if (inputs.size() < n->input_geom().size()) inputs.resize(n->input_geom().size());
    std::shared_ptr<Node> keep = n->shared_from_this();
    // The node's event, named as torch's profiler names it; the ops its
    // formula calls nest inside (Note [Profiling through the dispatcher]).
    std::optional<profiler::Scope> event;
    if (profiler::active())
      event.emplace(profiler::EventKind::Backward,
                    "autograd::engine::evaluate_function: " + n->name());
    tensor_list outs;
    if (t_observer) {
      // The observer is told which gradients the node runs with.
      const tensor_list grads_in = inputs;
      const tensor_list* outer = t_node_grads;
      t_node_grads = &grads_in;
      outs = n->apply(std::move(inputs));
      t_node_grads = outer;
      t_observer->applied(grads_in, outs);
    } else {
      outs = n->apply(std::move(inputs));
    }
    if (!opt.keep_graph) n->release_variables();
    const auto& edges = n->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.valid()) continue;
      Node* c = e.fn.get();
      if (i < outs.size() && outs[i].defined()) add_input(c, e.input_nr, std::move(outs[i]));
      if (--task.deps[c] == 0 && queued.insert(c).second) ready.push(c);
    }
  }
}

}  // namespace

void backward(const tensor_list& outputs, const tensor_list& grads, const BackwardOptions& opt) {
  std::vector<Edge> roots;
  tensor_list root_grads;
  check_roots(outputs, grads, root_grads, roots);
  GraphTask task;
  run(task, roots, root_grads, opt);
}

ObserveSavedTensors::ObserveSavedTensors(SavedTensorObserver* o) : previous_(t_observer) {
  t_observer = o;
}
ObserveSavedTensors::~ObserveSavedTensors() { t_observer = previous_; }

void notify_checked(const Tensor& saved) {
  static const tensor_list kNone;
  if (t_observer && saved.defined()) t_observer->checked(saved, t_node_grads ? *t_node_grads : kNone);
}

tensor_list grad(const tensor_list& outputs, const tensor_list& grads,
                 const std::vector<Edge>& input_edges, const BackwardOptions& opt) {
  std::vector<Edge> roots;
  tensor_list root_grads;
  check_roots(outputs, grads, root_grads, roots);
  GraphTask task;
  for (const Edge& e : input_edges) task.captures.push_back(Capture{e.fn.get(), e.input_nr});
  task.captured.resize(input_edges.size());
  run(task, roots, root_grads, opt);
  for (size_t i = 0; i < input_edges.size(); ++i) {
    IGNIS_CHECK(task.captured[i].defined() || opt.allow_unused,
                "One of the differentiated Tensors appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior.");
    if (task.captured[i].defined() && !opt.create_graph && requires_grad(task.captured[i]))
      task.captured[i] = detach(task.captured[i]);
  }
  return task.captured;
}

tensor_list grad(const tensor_list& outputs, const tensor_list& grads, const tensor_list& inputs,
                 const BackwardOptions& opt) {
  std::vector<Edge> input_edges;
  for (const Tensor& t : inputs) {
    IGNIS_CHECK(requires_grad(t), "One of the differentiated Tensors does not require grad");
    input_edges.push_back(gradient_edge(t));
  }
  return grad(outputs, grads, input_edges, opt);
}

}  // namespace ignis::autograd
