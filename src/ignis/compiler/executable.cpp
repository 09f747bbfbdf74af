#include "ignis/compiler/executable.h"

#include <cstring>
#include <functional>
#include <set>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis::compiler {

namespace {

// The bytes kernel k must move: every buffer it reads or writes, once.
int64_t kernel_bytes(const Program& p, const Kernel& k) {
  std::set<int> touched(k.outputs.begin(), k.outputs.end());
  for (const Loop& l : k.loops)
    for (const ScalarNode& n : l.body)
      if (n.kind == ScalarKind::Load) touched.insert(n.buffer);
  if (k.gemm) touched.insert({k.gemm->a, k.gemm->b, k.gemm->c});
  int64_t bytes = 0;
  for (int b : touched) bytes += buffer_bytes(p.buffers[size_t(b)]);
  return bytes;
}

std::string kernel_label(const Kernel& k) {
  std::string s = k.name + " (";
  for (size_t i = 0; i < k.origins.size() && i < 4; ++i) s += (i ? ", " : "") + k.origins[i];
  return s + (k.origins.size() > 4 ? ", ...)" : ")");
}

// The placeholder standing for buffer b in e's own graph.
graph::Node* ref_node(Executable& e, std::unordered_map<int, graph::Node*>& made, int b) {
  auto it = made.find(b);
  if (it != made.end()) return it->second;
  graph::Node* n = e.refs->placeholder("buf" + std::to_string(b));
  e.ref_buffer[n] = b;
  made.emplace(b, n);
  return n;
}

// ---- the byte format: tagged, length-prefixed, little-endian ----

// 5: CPU kernels take their own buffers (Note [Kernels of one text]); 6: a
// CUDA kernel's one_round.
constexpr char kMagic[] = "ignis-executable-6";

class Writer {
 public:
  void i64(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void f64(double v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void str(std::string_view s) {
    i64(int64_t(s.size()));
    out_.append(s);
  }
  void ints(const std::vector<int64_t>& v) {
    i64(int64_t(v.size()));
    for (int64_t x : v) i64(x);
  }
  void ints(const std::vector<int>& v) {
    i64(int64_t(v.size()));
    for (int x : v) i64(x);
  }
  // False for a value with no portable spelling (a tensor, a foreign object).
  bool value(const graph::Value& v, const std::unordered_map<const graph::Node*, int>& refs) {
    using K = graph::Value::Kind;
    switch (v.kind()) {
      case K::None: out_ += 'N'; return true;
      case K::Bool: out_ += 'b'; i64(v.to_bool()); return true;
      case K::Int: out_ += 'i'; i64(v.to_int()); return true;
      case K::Double: out_ += 'd'; f64(v.to_double()); return true;
      case K::Str: out_ += 's'; str(v.to_str()); return true;
      case K::Dtype: out_ += 't'; i64(int64_t(v.to_dtype())); return true;
      case K::Device: out_ += 'D'; i64(int64_t(v.to_device().type)); i64(v.to_device().index); return true;
      case K::Node: {
        auto it = refs.find(v.to_node());
        if (it == refs.end()) return false;
        out_ += 'r';
        i64(it->second);
        return true;
      }
      case K::List:
      case K::Tuple: {
        out_ += v.kind() == K::List ? 'L' : 'T';
        i64(int64_t(v.items().size()));
        for (const graph::Value& x : v.items())
          if (!value(x, refs)) return false;
        return true;
      }
      default: return false;
    }
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what Writer wrote; any inconsistency sets `bad` and yields zeros,
// so a truncated or foreign entry becomes a miss, never a crash.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool bad() const { return bad_; }
  bool done() const { return pos_ == in_.size(); }
  int64_t i64() {
    int64_t v = 0;
    take(&v, sizeof v);
    return v;
  }
  double f64() {
    double v = 0;
    take(&v, sizeof v);
    return v;
  }
  std::string str() {
    int64_t n = i64();
    if (n < 0 || size_t(n) > in_.size() - pos_) return fail(), std::string();
    std::string s(in_.substr(pos_, size_t(n)));
    pos_ += size_t(n);
    return s;
  }
  template <typename T>
  std::vector<T> ints() {
    int64_t n = count();
    std::vector<T> v;
    for (int64_t i = 0; i < n && !bad_; ++i) v.push_back(T(i64()));
    return v;
  }
  // A count that cannot exceed the bytes left (each element takes >= 1).
  int64_t count() {
    int64_t n = i64();
    if (n < 0 || size_t(n) > in_.size() - pos_) return fail(), 0;
    return n;
  }
  graph::Value value(const std::function<graph::Node*(int)>& ref, int depth = 0) {
    if (depth > 64 || pos_ >= in_.size()) return fail(), graph::Value();
    char tag = in_[pos_++];
    switch (tag) {
      case 'N': return graph::Value();
      case 'b': return graph::Value(i64() != 0);
      case 'i': return graph::Value(i64());
      case 'd': return graph::Value(f64());
      case 's': return graph::Value(str());
      case 't': {
        int64_t t = i64();
        if (t < 0 || t >= int64_t(ScalarType::NumTypes)) return fail(), graph::Value();
        return graph::Value(ScalarType(t));
      }
      case 'D': {
        int64_t type = i64(), index = i64();
        if (type < 0 || type > int64_t(DeviceType::Meta)) return fail(), graph::Value();
        return graph::Value(Device(DeviceType(type), int(index)));
      }
      case 'r': {
        graph::Node* n = ref(int(i64()));
        if (!n) return fail(), graph::Value();
        return graph::Value(n);
      }
      case 'L':
      case 'T': {
        int64_t n = count();
        graph::Value::Items items;
        for (int64_t i = 0; i < n && !bad_; ++i) items.push_back(value(ref, depth + 1));
        return tag == 'L' ? graph::Value::list(std::move(items))
                          : graph::Value::tuple(std::move(items));
      }
      default: return fail(), graph::Value();
    }
  }

 private:
  void fail() { bad_ = true; }
  void take(void* dst, size_t n) {
    if (bad_ || in_.size() - pos_ < n) {
      bad_ = true;
      std::memset(dst, 0, n);
      return;
    }
    std::memcpy(dst, in_.data() + pos_, n);
    pos_ += n;
  }
  std::string_view in_;
  size_t pos_ = 0;
  bool bad_ = false;
};

}  // namespace

Executable make_executable(const Program& p, const MemoryPlan& plan) {
  Executable e;
  e.refs = std::make_shared<graph::Graph>();
  std::unordered_map<int, graph::Node*> made;
  e.device = p.device;
  for (const Buffer& b : p.buffers) {
    Executable::Buf x;
    x.name = b.name;
    x.kind = b.kind;
    x.dtype = b.dtype;
    for (const sym::Expr& s : b.sizes) x.sizes.push_back(s.value());
    for (const sym::Expr& s : b.strides) x.strides.push_back(s.value());
    x.attr = b.attr;
    e.buffers.push_back(std::move(x));
  }
  e.inputs = p.inputs;
  for (const Kernel& k : p.kernels) e.kernels.push_back({k.name, k.outputs});
  auto to_ref = [&](graph::Node* n) -> graph::Value {
    int b = p.buffer_of(n);
    IGNIS_INTERNAL_ASSERT(b >= 0, "compiled graph: no buffer for ", n->name());
    return graph::Value(ref_node(e, made, b));
  };
  for (const Step& s : p.steps) {
    Executable::Call c;
    if (s.kind == Step::Kind::RunKernel) {
      const Kernel& k = p.kernels[size_t(s.kernel)];
      c.kernel = true;
      c.index = s.kernel;
      c.label = kernel_label(k);
      c.bytes = kernel_bytes(p, k);
    } else {
      c.op = s.op;
      for (const graph::Value& a : s.args) c.args.push_back(graph::map_nodes(a, to_ref));
      for (const auto& [k, v] : s.kwargs) c.kwargs.emplace_back(k, graph::map_nodes(v, to_ref));
      c.outputs = s.outputs;
      c.view = s.view;
      c.label = (s.view ? "view " : "extern ") + s.op->schema().full_name();
    }
    e.steps.push_back(std::move(c));
  }
  for (const ProgramOutput& o : p.outputs) e.outputs.push_back({o.buffer, o.value});
  e.plan = plan;
  e.program_text = to_string(p);
  e.memory_plan_text = to_string(p, plan);
  for (const std::string& line : p.schedule_log) e.schedule_text += line + "\n";
  return e;
}

std::optional<std::string> serialize(const Executable& e) {
  Writer w;
  w.str(kMagic);
  w.i64(int64_t(e.buffers.size()));
  for (const Executable::Buf& b : e.buffers) {
    w.str(b.name);
    w.i64(int64_t(b.kind));
    w.i64(int64_t(b.dtype));
    w.ints(b.sizes);
    w.ints(b.strides);
    w.str(b.attr);
  }
  w.ints(e.inputs);
  w.i64(int64_t(e.kernels.size()));
  w.i64(int64_t(e.device.type));
  w.i64(e.device.index);
  w.i64(e.size_generic);
  for (const Executable::Kern& k : e.kernels) {
    w.str(k.name);
    w.ints(k.outputs);
    w.str(k.symbol);
    w.ints(k.params);
    w.i64(k.threads);
    w.i64(k.blocks);
    w.i64(k.workspace_bytes);
    w.i64(k.zeroed_bytes);
    w.i64(k.one_round);
    w.ints(k.size_params);
    w.i64(k.source_begin);
    w.i64(k.source_end);
  }
  w.i64(int64_t(e.steps.size()));
  for (const Executable::Call& c : e.steps) {
    w.i64(c.kernel);
    w.str(c.label);
    w.i64(c.bytes);
    if (c.kernel) {
      w.i64(c.index);
      continue;
    }
    w.str(c.op->schema().full_name());
    w.i64(int64_t(c.args.size()));
    for (const graph::Value& a : c.args)
      if (!w.value(a, e.ref_buffer)) return std::nullopt;
    w.i64(int64_t(c.kwargs.size()));
    for (const auto& [k, v] : c.kwargs) {
      w.str(k);
      if (!w.value(v, e.ref_buffer)) return std::nullopt;
    }
    w.ints(c.outputs);
    w.i64(c.view);
  }
  w.i64(int64_t(e.outputs.size()));
  for (const Executable::Output& o : e.outputs) {
    w.i64(o.buffer);
    if (!w.value(o.value, e.ref_buffer)) return std::nullopt;
  }
  w.i64(int64_t(e.plan.release_after.size()));
  for (const std::vector<int>& r : e.plan.release_after) w.ints(r);
  w.ints(e.plan.slot);
  w.ints(e.plan.slot_bytes);
  w.str(e.program_text);
  w.str(e.memory_plan_text);
  w.str(e.schedule_text);
  w.str(e.source);
  w.i64(e.source_prelude_bytes);
  w.i64(int64_t(e.autotune_report.size()));
  for (const std::string& line : e.autotune_report) w.str(line);
  return w.take();
}

std::optional<Executable> deserialize(std::string_view bytes) {
  Reader r(bytes);
  if (r.str() != kMagic || r.bad()) return std::nullopt;
  Executable e;
  e.refs = std::make_shared<graph::Graph>();
  std::unordered_map<int, graph::Node*> made;
  const int64_t nbuf = r.count();
  for (int64_t i = 0; i < nbuf && !r.bad(); ++i) {
    Executable::Buf b;
    b.name = r.str();
    int64_t kind = r.i64(), dtype = r.i64();
    if (kind < 0 || kind > int64_t(BufferKind::Computed) || dtype < 0 ||
        dtype >= int64_t(ScalarType::NumTypes))
      return std::nullopt;
    b.kind = BufferKind(kind);
    b.dtype = ScalarType(dtype);
    b.sizes = r.ints<int64_t>();
    b.strides = r.ints<int64_t>();
    if (b.sizes.size() != b.strides.size()) return std::nullopt;
    b.attr = r.str();
    e.buffers.push_back(std::move(b));
  }
  const int nb = int(e.buffers.size());
  auto valid = [nb](int b) { return b >= -1 && b < nb; };
  auto ref = [&](int b) -> graph::Node* {
    return b >= 0 && b < nb ? ref_node(e, made, b) : nullptr;
  };
  e.inputs = r.ints<int>();
  for (int b : e.inputs)
    if (b < 0 || b >= nb) return std::nullopt;
  const int64_t nk = r.count();
  const int64_t device_type = r.i64(), device_index = r.i64();
  if (device_type != int64_t(DeviceType::CPU) && device_type != int64_t(DeviceType::CUDA))
    return std::nullopt;
  e.device = Device(DeviceType(device_type), int(device_index));
  e.size_generic = r.i64() != 0;
  for (int64_t i = 0; i < nk && !r.bad(); ++i) {
    Executable::Kern k;
    k.name = r.str();
    k.outputs = r.ints<int>();
    k.symbol = r.str();
    k.params = r.ints<int>();
    k.threads = r.i64();
    k.blocks = r.i64();
    k.workspace_bytes = r.i64();
    k.zeroed_bytes = r.i64();
    k.one_round = r.i64() != 0;
    k.size_params = r.ints<int64_t>();
    k.source_begin = r.i64();
    k.source_end = r.i64();
    if (k.workspace_bytes < 0 || k.zeroed_bytes < 0 || k.zeroed_bytes > k.workspace_bytes)
      return std::nullopt;
    for (int b : k.outputs)
      if (b < 0 || b >= nb) return std::nullopt;
    for (int b : k.params)
      if (b < 0 || b >= nb) return std::nullopt;
    e.kernels.push_back(std::move(k));
  }
  const int64_t ns = r.count();
  for (int64_t i = 0; i < ns && !r.bad(); ++i) {
    Executable::Call c;
    c.kernel = r.i64() != 0;
    c.label = r.str();
    c.bytes = r.i64();
    if (c.kernel) {
      c.index = int(r.i64());
      if (c.index < 0 || c.index >= int(e.kernels.size())) return std::nullopt;
      e.steps.push_back(std::move(c));
      continue;
    }
    c.op = Dispatcher::get().find(r.str());
    if (!c.op) return std::nullopt;  // an op this build does not have
    const int64_t na = r.count();
    for (int64_t j = 0; j < na && !r.bad(); ++j) c.args.push_back(r.value(ref));
    const int64_t nkw = r.count();
    for (int64_t j = 0; j < nkw && !r.bad(); ++j) {
      std::string k = r.str();
      c.kwargs.emplace_back(std::move(k), r.value(ref));
    }
    c.outputs = r.ints<int>();
    for (int b : c.outputs)
      if (!valid(b)) return std::nullopt;
    c.view = r.i64() != 0;
    e.steps.push_back(std::move(c));
  }
  const int64_t no = r.count();
  for (int64_t i = 0; i < no && !r.bad(); ++i) {
    Executable::Output o;
    o.buffer = int(r.i64());
    if (!valid(o.buffer)) return std::nullopt;
    o.value = r.value(ref);
    e.outputs.push_back(std::move(o));
  }
  const int64_t nr = r.count();
  for (int64_t i = 0; i < nr && !r.bad(); ++i) {
    e.plan.release_after.push_back(r.ints<int>());
    for (int b : e.plan.release_after.back())
      if (b < 0 || b >= nb) return std::nullopt;
  }
  e.plan.slot = r.ints<int>();
  e.plan.slot_bytes = r.ints<int64_t>();
  if (e.plan.release_after.size() != e.steps.size() || e.plan.slot.size() != size_t(nb))
    return std::nullopt;
  for (int s : e.plan.slot)
    if (s < -1 || s >= int(e.plan.slot_bytes.size())) return std::nullopt;
  e.program_text = r.str();
  e.memory_plan_text = r.str();
  e.schedule_text = r.str();
  e.source = r.str();
  e.source_prelude_bytes = r.i64();
  const int64_t na = r.count();
  for (int64_t i = 0; i < na && !r.bad(); ++i) e.autotune_report.push_back(r.str());
  if (r.bad() || !r.done()) return std::nullopt;
  // (a kernel's text lies in the source, after the prelude)
  const int64_t n = int64_t(e.source.size());
  if (e.source_prelude_bytes < 0 || e.source_prelude_bytes > n) return std::nullopt;
  for (const Executable::Kern& k : e.kernels)
    if (e.device.is_cuda() && (k.source_begin < e.source_prelude_bytes ||
                               k.source_end < k.source_begin || k.source_end > n))
      return std::nullopt;
  return e;
}

}  // namespace ignis::compiler
