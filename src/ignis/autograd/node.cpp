#include "ignis/autograd/node.h"

#include <atomic>

#include "ignis/autograd/autograd_meta.h"
#include "ignis/autograd/engine.h"

namespace ignis::autograd {

const char* const kFreedGraphMessage =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward.";

static std::atomic<uint64_t> next_sequence_nr{0};

Node::Node() : seq_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

// Nodes whose last reference was dropped while another node was being freed:
// the outermost release_node frees them one by one.
static thread_local std::vector<std::shared_ptr<Node>>* pending_release = nullptr;

void release_node(std::shared_ptr<Node>&& n) {
  if (!n) return;
  if (pending_release) {
    pending_release->push_back(std::move(n));
    return;
  }
  std::vector<std::shared_ptr<Node>> pending;
  pending_release = &pending;
  pending.push_back(std::move(n));
  while (!pending.empty()) {
    std::shared_ptr<Node> q = std::move(pending.back());
    pending.pop_back();
    q.reset();  // may free the node, whose destructor defers its children here
  }
  pending_release = nullptr;
}

// A tensor registered in retained_ holds this node as its grad_fn, so the
// node cannot die first: nothing to unregister here.
Node::~Node() {
  for (auto& e : next_edges_) release_node(std::move(e.fn));
}

uint32_t Node::add_input_geom(const Tensor& t) {
  if (t.defined()) input_geom_.push_back(TensorGeom{t.sizes(), t.dtype(), t.device()});
  else input_geom_.push_back(TensorGeom{{}, ScalarType::Bool, Device()});  // never zero-filled
  return static_cast<uint32_t>(input_geom_.size() - 1);
}

namespace {
thread_local std::shared_ptr<SavedTensorHooks> t_saved_hooks;
}  // namespace

SavedTensorHooksGuard::SavedTensorHooksGuard(std::shared_ptr<SavedTensorHooks> hooks)
    : previous_(std::move(t_saved_hooks)) {
  t_saved_hooks = std::move(hooks);
}
SavedTensorHooksGuard::~SavedTensorHooksGuard() { t_saved_hooks = std::move(previous_); }

const std::shared_ptr<SavedTensorHooks>& current_saved_tensor_hooks() { return t_saved_hooks; }

SavedVariable::SavedVariable(const Tensor& t, bool is_output) {
  if (!t.defined()) return;
  was_defined_ = true;
  is_output_ = is_output;
  version_ = t.impl()->version_counter().value();
  if (is_output) {
    AutogradMeta* m = get_meta(t);
    output_nr_ = m ? m->output_nr_ : 0;
  }
  Tensor kept = is_output ? detach(t) : t;
  if (std::shared_ptr<SavedTensorHooks> hooks = t_saved_hooks) {  // a copy: the guard below moves it
    // The hooks run with none installed: what pack computes saves nothing
    // into them (a hook that copies to the CPU records no history anyway).
    SavedTensorHooksGuard none(nullptr);
    packed_ = hooks->pack(kept);
    hooks_ = hooks;
    return;
  }
  data_ = std::move(kept);
}

static const char* dtype_tensor_name(ScalarType t) {
  switch (t) {
    case ScalarType::Float64: return "torch.DoubleTensor";
    case ScalarType::Float32: return "torch.FloatTensor";
    case ScalarType::Float16: return "torch.HalfTensor";
    case ScalarType::BFloat16: return "torch.BFloat16Tensor";
    default: return "torch.Tensor";
  }
}

void SavedVariable::check_version(const std::shared_ptr<Node>& owner, const char* what) const {
  if (!was_defined_ || !data_.defined()) return;
  notify_checked(data_);
  uint64_t now = data_.impl()->version_counter().value();
  if (now != version_) {
    std::string node_name = owner ? owner->name() : std::string("?");
    IGNIS_FAIL("one of the variables needed for gradient computation has been modified by an "
               "inplace operation: [", dtype_tensor_name(data_.dtype()), " ", data_.shape_str(),
               "], which is ", is_output_ ? "output " : "input '",
               is_output_ ? str(output_nr_) : std::string(what),
               is_output_ ? "" : "'", " of ", node_name, ", is at version ", now,
               "; expected version ", version_,
               " instead. Hint: the operation that saved it is ", node_name,
               "; clone() the tensor before modifying it in place, or do the in-place "
               "operation after backward.");
  }
}

Tensor SavedVariable::unpack(const std::shared_ptr<Node>& owner, const char* what,
                             bool check) const {
  if (!was_defined_) return Tensor();
  Tensor t;
  if (hooks_) {
    IGNIS_CHECK(packed_ != nullptr, kFreedGraphMessage);
    SavedTensorHooksGuard none(nullptr);
    t = hooks_->unpack(packed_);
    IGNIS_CHECK_TYPE(t.defined(), "saved_tensors_hooks: the unpack hook returned no tensor");
    notify_checked(t);
    if (!is_output_) return t;
  } else {
    IGNIS_CHECK(data_.defined(), kFreedGraphMessage);
    if (check) check_version(owner, what);
    if (!is_output_) return data_;
    t = data_;
  }
  // Outputs get their history back (so that double backward can see it).
  t = detach(t);
  if (owner && is_differentiable_type(t.dtype())) set_history(t, owner, output_nr_);
  return t;
}

}  // namespace ignis::autograd
