#include "ignis/compiler/memory_plan.h"

#include <algorithm>

namespace ignis::compiler {

int64_t buffer_bytes(const Buffer& b) {
  int64_t span = 1;  // 1 + the largest element offset
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    int64_t s = b.sizes[d].value();
    if (s == 0) return 0;
    span += (s - 1) * b.strides[d].value();
  }
  return span * int64_t(element_size(b.dtype));
}

namespace {

// The buffers step s reads or writes.
std::vector<int> uses(const Program& p, const Step& s) {
  std::vector<int> out;
  if (s.kind == Step::Kind::RunKernel) {
    const Kernel& k = p.kernels[size_t(s.kernel)];
    for (const Loop& l : k.loops)
      for (const ScalarNode& n : l.body)
        if (n.kind == ScalarKind::Load) out.push_back(n.buffer);
    out.insert(out.end(), k.outputs.begin(), k.outputs.end());
    if (k.gemm) out.insert(out.end(), {k.gemm->a, k.gemm->b});
  } else {
    for (graph::Node* in : s.node->input_nodes()) {
      int b = p.buffer_of(in);
      if (b >= 0) out.push_back(b);
    }
    for (int b : s.outputs)
      if (b >= 0) out.push_back(b);
  }
  return out;
}

}  // namespace

MemoryPlan plan_memory(const Program& p) {
  const size_t nb = p.buffers.size();
  MemoryPlan plan;
  plan.release_after.resize(p.steps.size());
  plan.slot.assign(nb, -1);
  std::vector<bool> pinned(nb, false);  // never released or shared
  for (const ProgramOutput& o : p.outputs)
    if (o.buffer >= 0) pinned[size_t(o.buffer)] = true;
  std::vector<bool> extern_read(nb, false);
  std::vector<int> last(nb, -1);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    for (int b : uses(p, s)) last[size_t(b)] = int(i);
    if (s.kind == Step::Kind::CallExtern)
      for (graph::Node* in : s.node->input_nodes()) {
        int b = p.buffer_of(in);
        if (b >= 0) extern_read[size_t(b)] = true;
      }
  }
  // A view extern's result aliases its input: the input lives as long as it.
  for (size_t i = p.steps.size(); i-- > 0;) {
    const Step& s = p.steps[i];
    if (s.kind != Step::Kind::CallExtern || !s.view) continue;
    int out = s.outputs.empty() ? -1 : s.outputs[0];
    if (out < 0) continue;
    for (graph::Node* in : s.node->input_nodes()) {
      int b = p.buffer_of(in);
      if (b < 0) continue;
      last[size_t(b)] = std::max(last[size_t(b)], last[size_t(out)]);
      if (pinned[size_t(out)]) pinned[size_t(b)] = true;
    }
  }
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = p.buffers[b];
    bool owned = buf.kind == BufferKind::Computed || buf.kind == BufferKind::Extern;
    if (owned && !pinned[b] && last[b] >= 0) plan.release_after[size_t(last[b])].push_back(int(b));
  }
  // Slots: greedy in step order; a slot frees after its buffer's last step
  // and is taken by the next kernel output that fits in it (smallest first).
  std::vector<int> free_slots;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.kind == Step::Kind::RunKernel) {
      for (int b : p.kernels[size_t(s.kernel)].outputs) {
        // (a concatenation's later writers find it placed by its first)
        if (pinned[size_t(b)] || extern_read[size_t(b)] || plan.slot[size_t(b)] >= 0) continue;
        int64_t need = buffer_bytes(p.buffers[size_t(b)]);
        int best = -1;
        for (size_t f = 0; f < free_slots.size(); ++f) {
          int64_t have = plan.slot_bytes[size_t(free_slots[f])];
          // Reuse a slot of at least half the size (growing it), so a big
          // buffer does not pin a small one's storage and vice versa.
          if (2 * have < need || have > 2 * need) continue;
          if (best < 0 || have < plan.slot_bytes[size_t(free_slots[size_t(best)])])
            best = int(f);
        }
        if (best >= 0) {
          plan.slot[size_t(b)] = free_slots[size_t(best)];
          free_slots.erase(free_slots.begin() + best);
        } else {
          plan.slot[size_t(b)] = int(plan.slot_bytes.size());
          plan.slot_bytes.push_back(0);
        }
        int64_t& bytes = plan.slot_bytes[size_t(plan.slot[size_t(b)])];
        bytes = std::max(bytes, need);
      }
    }
    for (int b : plan.release_after[i])
      if (plan.slot[size_t(b)] >= 0) free_slots.push_back(plan.slot[size_t(b)]);
  }
  return plan;
}

std::string to_string(const Program& p, const MemoryPlan& plan) {
  std::string s;
  for (size_t k = 0; k < plan.slot_bytes.size(); ++k) {
    s += "slot " + std::to_string(k) + " (" + std::to_string(plan.slot_bytes[k]) + " bytes):";
    for (size_t b = 0; b < plan.slot.size(); ++b)
      if (plan.slot[b] == int(k)) s += " " + p.buffers[b].name;
    s += "\n";
  }
  for (size_t i = 0; i < plan.release_after.size(); ++i) {
    if (plan.release_after[i].empty()) continue;
    s += "after step " + std::to_string(i) + ": release";
    for (int b : plan.release_after[i]) s += " " + p.buffers[size_t(b)].name;
    s += "\n";
  }
  return s;
}

}  // namespace ignis::compiler
