#include "ignis/compiler/memory_plan.h"

#include <algorithm>

#include "ignis/dispatch/op_variants.h"

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

bool same_layout(const Buffer& a, const Buffer& b) {
  if (a.dtype != b.dtype || a.sizes.size() != b.sizes.size()) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (sym::compare(a.sizes[d], b.sizes[d]) != 0 || sym::compare(a.strides[d], b.strides[d]) != 0)
      return false;
  return true;
}

// Whether kernel k may store its output `out` over buffer `in`: every load
// of `in` in k is in the loop that stores `out`, at the element stored, and
// nothing else in k writes either buffer at other elements. A loop that
// spills a value to a row scratch may not load `in` either: a printer
// without a scratch row (the GPU's streaming rows) recomputes the spilled
// value in a later loop from its loads, which would read `in` after `out`
// overwrote it (fuzz seed 4522223 on the fake driver: an amax's mask made
// from an overwritten row, every gradient NaN).
bool rewrites_element_for_element(const Kernel& k, int in, int out) {
  if (k.columns) return false;
  for (const Loop& l : k.loops) {
    if (l.spills.empty()) continue;
    for (const ScalarNode& n : l.body)
      if (n.kind == ScalarKind::Load && n.buffer == in) return false;
  }
  for (const Kernel::ScratchInOutput& s : k.scratch_in_output)
    if (s.buffer == out || s.buffer == in) return false;
  if (k.gemm && (k.gemm->a == in || k.gemm->b == in || k.gemm->a == out || k.gemm->b == out))
    return false;
  bool stored = false;
  for (const Loop& l : k.loops) {
    const Store* st = nullptr;
    for (const Store& s : l.stores) {
      if (s.buffer == in || (s.fold && s.buffer == out)) return false;
      if (s.buffer != out) continue;
      if (st || stored) return false;  // stored twice
      st = &s;
    }
    for (const ScalarNode& n : l.body) {
      if (n.kind != ScalarKind::Load || (n.buffer != in && n.buffer != out)) continue;
      if (!st || sym::compare(n.index, st->index) != 0) return false;
    }
    stored |= st != nullptr;
  }
  return stored;
}

// The functional forms worth turning back into their in-place twins
// (op_variants.h): ops that copy their first argument and then write a part
// of the copy (index_put_, scatter_add_, ... as functionalization leaves
// them). Pointwise ones are fused instead, and random fillers' functional
// names mean other draws (bernoulli(self) is not bernoulli_(self, p)).
bool copies_self_then_writes(const std::string& name) {
  static const char* const kOps[] = {"index_put", "index_add", "index_copy", "index_fill",
                                     "scatter", "scatter_add", "scatter_reduce", "put",
                                     "masked_scatter"};
  for (const char* op : kOps)
    if (name == op) return true;
  return false;
}

// An extern step copying a buffer it reads for the last time (an
// embedding's gradient: index_put(zeros, [idx], grad, accumulate=True)
// cloned a [vocabulary, width] buffer every step) calls the in-place op on
// that buffer instead, and its result is that buffer's tensor. The buffer
// is extern-read, so it never shares a slot (memory_plan's slots free after
// the last step, while the result lives on).
void reinplace_extern(Program& p, Step& s, int step, const std::vector<int>& last,
                      const std::vector<bool>& pinned) {
  if (s.view || !s.op || s.outputs.size() != 1 || s.outputs[0] < 0 || s.args.empty() ||
      !s.args[0].is_node() || !copies_self_then_writes(s.op->schema().name))
    return;
  const int self = p.buffer_of(s.args[0].to_node()), out = s.outputs[0];
  if (self < 0 || p.buffers[size_t(self)].kind != BufferKind::Computed || pinned[size_t(self)] ||
      last[size_t(self)] != step || !same_layout(p.buffers[size_t(self)], p.buffers[size_t(out)]))
    return;
  // Self must appear once among the arguments (an index or source that is
  // self as well would be read while it is written).
  int seen = 0;
  auto count = [&](graph::Node* n) { seen += p.buffer_of(n) == self; };
  for (const graph::Value& a : s.args) graph::for_each_node(a, count);
  for (const auto& [k, v] : s.kwargs) graph::for_each_node(v, count);
  if (seen != 1) return;
  const OpHandle* inplace = inplace_variant(s.op->schema());
  if (!inplace || !inplace->schema().is_inplace() ||
      inplace->schema().args.size() != s.op->schema().args.size())
    return;
  s.op = inplace;
}

}  // namespace

void write_results_in_place(Program& p) {
  const size_t nb = p.buffers.size();
  // Per buffer: its last step, whether it is a graph output, whether an
  // extern reads it (an extern may return an alias of it), and how many
  // kernels of the program as scheduled write it (a concatenation's parts
  // are written by several; a buffer renamed onto another below is then
  // written by several kernels one after the other, each in full, and
  // these counts stay as they were).
  std::vector<int> last(nb, -1), parts(nb, 0);
  std::vector<bool> pinned(nb, false), extern_read(nb, false);
  for (const ProgramOutput& o : p.outputs)
    if (o.buffer >= 0) pinned[size_t(o.buffer)] = true;
  for (int b : p.inputs)
    if (b >= 0) pinned[size_t(b)] = true;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    for (int b : uses(p, s)) last[size_t(b)] = int(i);
    if (s.kind == Step::Kind::RunKernel) {
      for (int b : p.kernels[size_t(s.kernel)].outputs) ++parts[size_t(b)];
    } else {
      for (graph::Node* in : s.node->input_nodes())
        if (int b = p.buffer_of(in); b >= 0) extern_read[size_t(b)] = true;
    }
  }
  auto free_to_take = [&](int b, int step) {
    return p.buffers[size_t(b)].kind == BufferKind::Computed && !pinned[size_t(b)] &&
           !extern_read[size_t(b)] && last[size_t(b)] == step && parts[size_t(b)] == 1;
  };
  // Every reference to buffer `from` in steps from `step` on, and in the
  // outputs, names `to` instead.
  auto rename = [&](int from, int to, size_t step) {
    for (size_t i = step; i < p.steps.size(); ++i) {
      const Step& s = p.steps[i];
      if (s.kind != Step::Kind::RunKernel) continue;
      Kernel& k = p.kernels[size_t(s.kernel)];
      for (Loop& l : k.loops) {
        for (ScalarNode& n : l.body)
          if (n.kind == ScalarKind::Load && n.buffer == from) n.buffer = to;
        for (Store& st : l.stores)
          if (st.buffer == from) st.buffer = to;
      }
      for (int& b : k.outputs)
        if (b == from) b = to;
      if (k.gemm) {
        for (int* b : {&k.gemm->a, &k.gemm->b, &k.gemm->c})
          if (*b == from) *b = to;
      }
    }
    for (auto& [node, b] : p.node_buffers)
      if (b == from) b = to;
    for (ProgramOutput& o : p.outputs)
      if (o.buffer == from) o.buffer = to;
    last[size_t(to)] = std::max(last[size_t(to)], last[size_t(from)]);
    pinned[size_t(to)] = pinned[size_t(to)] || pinned[size_t(from)];
    extern_read[size_t(to)] = extern_read[size_t(to)] || extern_read[size_t(from)];
    last[size_t(from)] = -1;
    p.buffers[size_t(from)].written_as = to;
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    Step& s = p.steps[i];
    if (s.kind == Step::Kind::CallExtern) {
      reinplace_extern(p, s, int(i), last, pinned);
      continue;
    }
    Kernel& k = p.kernels[size_t(s.kernel)];
    std::vector<int> stored;
    for (const Loop& l : k.loops)
      for (const Store& st : l.stores)
        if (std::find(stored.begin(), stored.end(), st.buffer) == stored.end())
          stored.push_back(st.buffer);
    std::vector<int> read;
    for (const Loop& l : k.loops)
      for (const ScalarNode& n : l.body)
        if (n.kind == ScalarKind::Load && std::find(read.begin(), read.end(), n.buffer) == read.end())
          read.push_back(n.buffer);
    for (int out : stored) {
      if (parts[size_t(out)] != 1 || p.buffers[size_t(out)].kind != BufferKind::Computed)
        continue;
      for (int in : read) {
        if (in == out || !same_layout(p.buffers[size_t(in)], p.buffers[size_t(out)])) continue;
        // A GEMM's own result (written by this kernel), or a buffer an
        // earlier step wrote and this kernel reads for the last time.
        const bool gemm_result = k.gemm && k.gemm->c == in;
        if (!gemm_result && std::find(k.outputs.begin(), k.outputs.end(), in) != k.outputs.end())
          continue;
        if (!free_to_take(in, int(i)) || !rewrites_element_for_element(k, in, out)) continue;
        if (gemm_result) {
          // The epilogue's result takes the GEMM's place: c is dropped.
          k.outputs.erase(std::find(k.outputs.begin(), k.outputs.end(), in));
          rename(in, out, i);
        } else {
          rename(out, in, i);
        }
        read.erase(std::find(read.begin(), read.end(), in));
        break;
      }
    }
  }
}

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
