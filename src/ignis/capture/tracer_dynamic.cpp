// Dynamic shapes in the tracer (docs/dynamic_shapes.md): which sizes of the
// frame's tensors become symbols, symbolic ints (x.size(0), arithmetic on
// them, comparisons decided through the ShapeEnv), the outputs' symbolic
// sizes by the ops' rules (ops/sym_shape.h), and the shape guards.
//
// Note [Fakes stay concrete]
// Fake tensors keep the sizes of this call (the symbols' hints): every op
// runs on them as before, and the symbolic sizes ride beside them on the
// trackers. A rule's result is checked against the fake's sizes at the
// hints, so a wrong rule can only specialise, never give a wrong graph.
#include <algorithm>
#include <cctype>

#include "ignis/capture/log.h"
#include "ignis/capture/tracer_impl.h"
#include "ignis/core/str.h"
#include "ignis/ops/sym_shape.h"
#include "ignis/python/py_common.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::capture {

namespace {

// torch 2.13's symbol id for a source: sha256(source) % 100.
int torch_symbol_id(const std::string& source) {
  PyObject* sha256 = py_import_attr("hashlib", "sha256");
  Obj data = check(PyBytes_FromStringAndSize(source.data(), static_cast<Py_ssize_t>(source.size())));
  Obj h = check(PyObject_CallOneArg(sha256, data.get()));
  Obj hex = check(PyObject_CallMethod(h.get(), "hexdigest", nullptr));
  Obj n = check(PyLong_FromUnicodeObject(hex.get(), 16));
  Obj hundred = check(PyLong_FromLong(100));
  Obj r = check(PyNumber_Remainder(n.get(), hundred.get()));
  return static_cast<int>(PyLong_AsLong(r.get()));
}

// The dims in the set attribute `attr` of a tensor (torch's marks:
// _dynamo_dynamic_indices, _dynamo_weak_dynamic_indices, _dynamo_static_indices).
std::vector<bool> marked_dims(PyObject* t, const char* attr, size_t rank) {
  std::vector<bool> out(rank, false);
  Obj s = Obj::steal(PyObject_GetAttrString(t, attr));
  if (!s) {
    PyErr_Clear();
    return out;
  }
  for (size_t d = 0; d < rank; ++d) {
    Obj dd = check(PyLong_FromSize_t(d));
    int r = PySequence_Contains(s.get(), dd.get());
    if (r < 0) PyErr_Clear();
    out[d] = r == 1;
  }
  return out;
}

bool is_exact_int(PyObject* o) { return PyLong_Check(o) && !PyBool_Check(o); }

// The user's range of each dim from `_dynamo_dynamic_range` (mark_dynamic's
// min= and max=: a dict {dim: (min or None, max or None)}); [0, no upper
// bound] where the dict says nothing.
std::vector<std::pair<int64_t, int64_t>> marked_ranges(PyObject* t, size_t rank) {
  std::vector<std::pair<int64_t, int64_t>> out(rank, {0, sym::ShapeEnv::kNoUpper});
  Obj ranges = Obj::steal(PyObject_GetAttrString(t, "_dynamo_dynamic_range"));
  if (!ranges || !PyDict_Check(ranges.get())) {
    PyErr_Clear();
    return out;
  }
  for (size_t d = 0; d < rank; ++d) {
    Obj dd = check(PyLong_FromSize_t(d));
    PyObject* r = PyDict_GetItemWithError(ranges.get(), dd.get());  // borrowed
    if (!r || !PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2) {
      PyErr_Clear();
      continue;
    }
    PyObject* lo = PyTuple_GET_ITEM(r, 0);
    PyObject* hi = PyTuple_GET_ITEM(r, 1);
    if (lo != Py_None) out[d].first = PyLong_AsLongLong(lo);
    if (hi != Py_None) out[d].second = PyLong_AsLongLong(hi);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      out[d] = {0, sym::ShapeEnv::kNoUpper};
    }
  }
  return out;
}

sym::Expr int_of(const VTP& v) {
  if (v->kind == VK::SymInt) return sym::is_comparison(v->sym.kind()) ? sym::Expr() : v->sym;
  if (v->kind == VK::Const && is_exact_int(v->value.get())) {
    int ov = 0;
    long long x = PyLong_AsLongLongAndOverflow(v->value.get(), &ov);
    if (!ov) return sym::Expr(static_cast<int64_t>(x));
  }
  return {};
}

}  // namespace

std::string Tracer::user_location() {
  if (!cur || !cur->ci) return "";
  return str("# ", cur->ci->filename, ":", cur->line, " in ", cur->ci->name);
}

void Tracer::make_dynamic(const VTP& v, PyObject* tensor, int reg, TensorGuardSpec& spec) {
  const Tensor& t = py::unwrap(tensor);
  const size_t rank = t.sizes().size();
  if (rank == 0 || rank > 63) return;
  const std::string& source = guards().source_name(reg);
  // Parameters and buffers keep static shapes (torch's
  // force_parameter_static_shapes and nn-module property defaults).
  if (source.find("._parameters[") != std::string::npos ||
      source.find("._buffers[") != std::string::npos ||
      std::string(Py_TYPE(tensor)->tp_name).find("Parameter") != std::string::npos)
    return;
  std::vector<bool> dyn(rank, false), dyn_stride(rank, false);
  PyObject* mode = cfg->dynamic;
  FrameDynamicState* state = nullptr;  // automatic dynamic's memory of this code
  // The first trace's size (stride) of dim d, for symbol s.
  auto note_prior = [&](bool stride, size_t d, const sym::Expr& s) {
    if (!state) return;
    const auto& first = stride ? state->first_strides : state->first_sizes;
    auto it = first.find(source);
    if (it != first.end() && it->second.size() == rank) prior_value[s] = it->second[d];
  };
  const DimVector& st = t.strides();
  if (mode == Py_True) {
    std::fill(dyn.begin(), dyn.end(), true);
    std::fill(dyn_stride.begin(), dyn_stride.end(), true);
  } else if (mode == nullptr || mode == Py_None) {
    // Automatic dynamic: a dim whose size (stride) differs from an earlier
    // trace of this code is dynamic from now on.
    if ((state = frame_dynamic_state(fv.code))) {
      auto mark = [&](std::vector<int64_t>& seen, std::vector<int64_t>& first,
                      const DimVector& now, std::vector<bool>& out, const char* what) {
        if (seen.size() != rank) {
          seen.assign(now.begin(), now.end());
          first.assign(now.begin(), now.end());
          return;
        }
        for (size_t d = 0; d < rank; ++d) {
          if (seen[d] != now[d] && seen[d] != -1) {
            if (log_on(kLogDynamic))
              log_write(kLogDynamic, str("automatic dynamic ", source, " ", what, "(", d, ") ",
                                         seen[d], " != ", now[d]));
            seen[d] = -1;
          }
          out[d] = seen[d] == -1;
        }
      };
      mark(state->sizes[source], state->first_sizes[source], t.sizes(), dyn, "size");
      mark(state->strides[source], state->first_strides[source], st, dyn_stride, "stride");
    }
  }
  std::vector<bool> marked = marked_dims(tensor, "_dynamo_dynamic_indices", rank);
  std::vector<bool> weak = marked_dims(tensor, "_dynamo_weak_dynamic_indices", rank);
  std::vector<bool> pinned = marked_dims(tensor, "_dynamo_static_indices", rank);
  const std::vector<std::pair<int64_t, int64_t>> ranges = marked_ranges(tensor, rank);
  for (size_t d = 0; d < rank; ++d) {
    if (marked[d] || weak[d]) dyn[d] = true;
    if (pinned[d]) dyn[d] = false;
    if (t.sizes()[d] < 2) dyn[d] = false;  // 0 and 1 are specialized, as in torch
    // strides too; a size-1 dim's stride is not checked at all
    if (st[d] < 2 || t.sizes()[d] == 1) dyn_stride[d] = false;
  }
  auto any = [](const std::vector<bool>& b) { return std::any_of(b.begin(), b.end(), [](bool x) { return x; }); };
  if (!any(dyn) && !any(dyn_stride)) return;

  if (log_on(kLogDynamic))
    shape_env.set_logger([](const std::string& m) { log_write(kLogDynamic, m); });
  shape_env.set_location(user_location());
  v->sym_sizes.assign(rank, sym::Expr());
  spec.size_text.assign(rank, "");
  for (size_t d = 0; d < rank; ++d) {
    const int64_t n = t.sizes()[d];
    if (!dyn[d]) {
      v->sym_sizes[d] = sym::Expr(n);
      spec.size_text[d] = str(n);
      continue;
    }
    std::string src = str(source, ".size()[", d, "]");
    size_t before = shape_env.symbols().size();
    sym::Expr s = shape_env.create_symbol(n, src, torch_symbol_id(src));
    const auto [lo, hi] = ranges[d];
    IGNIS_CHECK_VALUE(shape_env.constrain_range(s, lo, hi), "mark_dynamic: ", src, " is ", n,
                      ", outside the range it was marked with, [", lo, ", ",
                      hi == sym::ShapeEnv::kNoUpper ? std::string("inf") : std::to_string(hi),
                      "]");
    pending_sizes.push_back({src, static_cast<int>(d), s, shape_env.symbols().size() > before});
    note_prior(false, d, s);
    v->sym_sizes[d] = s;
    spec.dynamic_dims |= uint64_t{1} << d;
    spec.size_text[d] = sym::str(s);
  }
  // Note [Strides of size-1 dims]
  // Only index 0 of a size-1 dim is ever read, so its stride changes no
  // element's address: the tensor guard does not check it (as the compiled
  // program's inputs are conformed, compiled_graph.cpp has_layout), it
  // takes no part in the products below, and it never becomes a symbol.
  // nanoGPT's generation loop feeds idx[:, -64:] of a growing [1, L]
  // sequence, [1, 64] with stride [L, 1]: one graph hit at every step (torch
  // recompiles there). A Python int read from it (x.stride()) is the one
  // thing that sees it: that read adds a guard on it (pin_layout).
  //
  // Note [Stride symbols]
  // The strides, innermost first (by stride): each is a product of the
  // sizes inside it times the stride it continues from, where the layout
  // gives it so (contiguous: stride[0] == size[1]) and the guard checks that
  // product; a stride that is no such product is pinned to its value,
  // unless it varied between traces (automatic dynamic, or dynamic=True),
  // when it is a symbol of its own, read from x.stride()[d] (torch's
  // dynamic strides): x[:, -1:] of a growing [B, L] sequence is [B, 1] with
  // stride [L, 1], one graph for every L instead of a recompile per step.
  // The strides continuing from a stride symbol are products with it,
  // checked by the shape guards (StrideProduct); the placeholder's metadata
  // carries them all (v->sym_strides), so AOT makes its fakes at the hints
  // with them and fits the graph's numbers to them like any size's.
  std::vector<size_t> order(rank);
  for (size_t i = 0; i < rank; ++i) order[i] = i;
  // Ties (size-1 dims) put the inner dim first, as a contiguous layout has it.
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return st[a] != st[b] ? st[a] < st[b] : a > b; });
  spec.stride_dims.assign(rank, 0);
  spec.stride_text.assign(rank, "");
  v->sym_strides.assign(rank, sym::Expr());
  uint64_t mask = 0;
  int64_t factor = 1;
  sym::Expr base(1);  // a stride symbol the strides continue from, else 1
  int64_t base_hint = 1;
  for (size_t d : order) {
    if (t.sizes()[d] == 1) {  // unchecked (Note [Strides of size-1 dims]); a factor of 1
      v->sym_strides[d] = sym::Expr(st[d]);
      spec.stride_text[d] = str(st[d]);
      continue;
    }
    int64_t expected = factor * base_hint;
    for (size_t k = 0; k < rank; ++k)
      if ((mask >> k) & 1) expected *= t.sizes()[k];
    sym::Expr e;
    if (st[d] == expected && factor != 0) {
      spec.stride_dims[d] = mask;
      spec.strides[d] = factor;
      e = base * factor;
      for (size_t k = 0; k < rank; ++k)
        if ((mask >> k) & 1) e = e * v->sym_sizes[k];
      if (!base.is_const()) {
        spec.dynamic_strides |= uint64_t{1} << d;
        pending_stride_products.push_back(
            {PendingSize{str(source, ".stride()[", d, "]"), static_cast<int>(d), base, false, true},
             sym::simplify(e)});
      }
    } else if (dyn_stride[d]) {
      std::string src = str(source, ".stride()[", d, "]");
      size_t before = shape_env.symbols().size();
      sym::Expr s = shape_env.create_symbol(st[d], src, torch_symbol_id(src));
      pending_sizes.push_back({src, static_cast<int>(d), s, shape_env.symbols().size() > before, true});
      note_prior(true, d, s);
      stride_symbols.push_back(s);
      spec.dynamic_strides |= uint64_t{1} << d;
      spec.stride_dims[d] = 0;
      mask = 0;
      factor = 1;
      base = e = s;
      base_hint = st[d];
    } else {
      spec.stride_dims[d] = 0;  // pinned
      mask = 0;
      factor = st[d];
      base = sym::Expr(1);
      base_hint = 1;
      e = sym::Expr(st[d]);
    }
    v->sym_strides[d] = sym::simplify(e);
    spec.stride_text[d] = sym::str(v->sym_strides[d]);
    if (dyn[d]) mask |= uint64_t{1} << d;
    else factor *= t.sizes()[d];
  }
}

void Tracer::bind_sizes(int reg) {
  // After the tensor's own check, so that a rank change fails there (with
  // torch's reason) rather than on a missing size.
  for (const PendingSize& p : pending_sizes) {
    int sreg = p.stride ? guards().tensor_stride(reg, p.dim) : guards().tensor_size(reg, p.dim);
    size_reg[p.source] = sreg;
    if (p.is_new) symbol_reg[p.sym] = sreg;
  }
  pending_sizes.clear();
  for (const auto& [p, e] : pending_stride_products)
    stride_products.push_back({guards().tensor_stride(reg, p.dim), e, p.source});
  pending_stride_products.clear();
}

VTP Tracer::dynamic_int(PyObject* value, int reg) {
  if (!PyLong_CheckExact(value)) return nullptr;  // not bool
  PyObject* mode = cfg->dynamic;
  if (mode == Py_False) return nullptr;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow) return nullptr;
  const std::string& source = guards().source_name(reg);
  if (source.rfind("L['", 0) != 0 || source.find(']') + 1 != source.size())
    return nullptr;  // only the frame's own int arguments (torch: also globals, attributes)
  bool dyn = mode == Py_True;
  if (mode == nullptr || mode == Py_None) {
    if (FrameDynamicState* st = frame_dynamic_state(fv.code)) {
      auto it = st->sizes.find(source);
      if (it == st->sizes.end() || it->second.size() != 1) {
        st->sizes[source] = {v};
        st->first_sizes[source] = {v};
      } else if (it->second[0] != v || it->second[0] == -1) {
        if (it->second[0] != -1 && log_on(kLogDynamic))
          log_write(kLogDynamic, str("automatic dynamic ", source, " ", it->second[0], " != ", v));
        it->second[0] = -1;
        dyn = true;
      }
    }
  }
  if (!dyn || v < 2) return nullptr;  // 0 and 1 specialize, as sizes do
  if (log_on(kLogDynamic))
    shape_env.set_logger([](const std::string& m) { log_write(kLogDynamic, m); });
  shape_env.set_location(user_location());
  guards().check_type(reg, &PyLong_Type);
  size_reg[source] = reg;
  // Duck sizing only onto a symbol whose placeholder exists already (the one
  // create_symbol would pick: the first unreplaced symbol of that value).
  sym::Expr same;
  for (const sym::ShapeEnv::Symbol& e : shape_env.symbols())
    if (!e.unbacked && e.hint == v && shape_env.replace(e.sym) == e.sym) {
      same = e.sym;
      break;
    }
  bool duck = same.defined() && symbol_vt.count(same);
  sym::Expr s = shape_env.create_symbol(v, source, torch_symbol_id(source), duck);
  if (duck) return symbol_vt.at(s);
  if (FrameDynamicState* st = mode == Py_True ? nullptr : frame_dynamic_state(fv.code)) {
    auto first = st->first_sizes.find(source);
    if (first != st->first_sizes.end() && first->second.size() == 1) prior_value[s] = first->second[0];
  }
  symbol_reg[s] = reg;
  auto t = std::make_shared<VT>(VK::SymInt);
  t->sym = s;
  t->hint = v;
  t->reg = reg;
  symbol_vt[s] = t;
  return t;  // its placeholder comes with its first use (lift_int), as Dynamo orders them
}

graph::Node* Tracer::lift_int(const VTP& t) {
  if (t->node) return t->node.get();
  // Named as Dynamo names a lifted int: L_n_, bound to l_n_.
  std::string target = guards().source_name(t->reg);
  for (char& c : target)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  while (target.find("__") != std::string::npos) target.replace(target.find("__"), 2, "_");
  graph::Node* ph = ir->placeholder(target);
  py::py_set_node_type(ph, py_import_attr("ignis", "SymInt"));
  std::string lower = target;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  ph->rename(lower);
  for (graph::Node* n : ir->nodes()) {
    if (n->op() != graph::OpKind::Placeholder) {
      n->prepend(ph);
      break;
    }
  }
  ph->meta().sym_value = t->sym;
  t->node = graph::NodePtr(ph);
  t->name_set = true;
  inputs.push_back(t);
  example_inputs.push_back(check(PyLong_FromLongLong(t->hint)));
  return ph;
}

std::vector<sym::Expr> Tracer::sizes_of(const VTP& t) {
  std::vector<sym::Expr> out;
  const Tensor& f = py::unwrap(t->fake.get());
  if (!t->sym_sizes.empty()) {
    bool agree = t->sym_sizes.size() == f.sizes().size();
    for (size_t d = 0; agree && d < t->sym_sizes.size(); ++d) {
      out.push_back(shape_env.replace(t->sym_sizes[d]));
      agree = shape_env.hint_of(out.back()) == f.sizes()[d];
    }
    if (agree) return out;
    // The tensor changed shape in place (unsqueeze_, resize_, ...): its sizes
    // are the fake's from now on, and the symbols they came from are pinned.
    for (const sym::Expr& e : t->sym_sizes)
      if (!shape_env.replace(e).is_const()) shape_env.specialize(e, "an in-place shape change");
    for (const sym::Expr& e : t->sym_strides)
      for (const sym::Expr& x : sym::free_symbols(shape_env.replace(e)))
        shape_env.specialize(x, "an in-place shape change");
    t->sym_sizes.clear();
    t->sym_strides.clear();
    out.clear();
  }
  for (int64_t n : f.sizes()) out.push_back(sym::Expr(n));
  return out;
}

bool Tracer::is_symbolic(const VTP& t) {
  if (t->kind == VK::SymInt) return shape_env.is_symbolic(t->sym);
  if (t->kind != VK::Tensor || t->sym_sizes.empty()) return false;
  for (const sym::Expr& e : t->sym_sizes)
    if (shape_env.is_symbolic(e)) return true;
  return false;
}

void Tracer::lift_symbols(const VTP& t) {
  std::vector<sym::Expr> syms;
  std::vector<sym::Expr> exprs = sizes_of(t);
  for (const sym::Expr& e : t->sym_strides) exprs.push_back(shape_env.replace(e));
  for (const sym::Expr& e : exprs)
    for (const sym::Expr& s : sym::free_symbols(e))
      if (!symbol_vt.count(s) && std::find(syms.begin(), syms.end(), s) == syms.end())
        syms.push_back(s);
  for (const sym::Expr& s : syms) {
    graph::Node* ph = ir->placeholder(sym::symbol_name(s));
    PyObject* symint_type = py_import_attr("ignis", "SymInt");
    py::py_set_node_type(ph, symint_type);
    for (graph::Node* n : ir->nodes()) {
      if (n->op() != graph::OpKind::Placeholder) {
        n->prepend(ph);
        break;
      }
    }
    ph->meta().sym_value = s;
    auto v = std::make_shared<VT>(VK::SymInt);
    v->node = graph::NodePtr(ph);
    v->name_set = true;
    v->sym = s;
    v->hint = shape_env.hint_of(s);
    v->reg = symbol_reg.at(s);
    symbol_vt[s] = v;
    inputs.push_back(v);
    example_inputs.push_back(check(PyLong_FromLongLong(v->hint)));
  }
}

VTP Tracer::sym_value_of(graph::Node* n, sym::Expr e) {
  ++call_nodes;
  n->meta().sym_value = e;
  auto v = std::make_shared<VT>(VK::SymInt);
  v->node = graph::NodePtr(n);
  v->sym = e;
  v->hint = shape_env.hint_of(e);
  note_unbacked_reads(v);
  return v;
}

VTP Tracer::sym_int(sym::Expr e, const VTP& tensor, int64_t dim) {
  e = shape_env.replace(e);
  if (e.is_const()) {
    Obj n = check(PyLong_FromLongLong(e.value()));
    return make_const(n.get());
  }
  if (e.is_symbol()) {
    if (!symbol_vt.count(e) && tensor) node_of(tensor);  // an input's placeholder lifts its symbols
    auto it = symbol_vt.find(e);
    if (it != symbol_vt.end()) return it->second;
  }
  // A size that is an expression (or a symbol not lifted): read it from the
  // tensor at run time, as torch's sym_size does.
  if (!tensor) throw Unsupported{"internal: a symbolic size with no tensor to read it from"};
  graph::Node* n = ir->call_method("size", {graph::Value(node_of(tensor)), graph::Value(dim)});
  VTP v = sym_value_of(n, e);
  // An unbacked symbol is read once and that node used from then on (its
  // size() call is what the graph knows it by, as torch's sym_size).
  if (e.is_symbol() && unbacked_source.count(e)) symbol_vt[e] = v;
  return v;
}

VTP Tracer::size_of(const VTP& t, int64_t dim) {
  std::vector<sym::Expr> s = sizes_of(t);
  int64_t r = static_cast<int64_t>(s.size());
  int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r)
    throw Unsupported{str("Tensor.size(", dim, ") out of range for a ", r, "-d tensor")};
  return sym_int(s[d], t, d);
}

VTP Tracer::shape_of(const VTP& t) {
  std::vector<VTP> items;
  std::vector<sym::Expr> s = sizes_of(t);
  for (size_t d = 0; d < s.size(); ++d) items.push_back(sym_int(s[d], t, static_cast<int64_t>(d)));
  VTP out = make_tuple(items);
  out->pytype = Obj::borrow(py_import_attr("ignis", "Size"));
  return out;
}

VTP Tracer::numel_of(const VTP& t) {
  sym::Expr p = 1;
  for (const sym::Expr& e : sizes_of(t)) p = p * e;
  p = shape_env.replace(p);
  if (p.is_const()) {
    Obj n = check(PyLong_FromLongLong(p.value()));
    return make_const(n.get());
  }
  graph::Node* n = ir->call_method("numel", {graph::Value(node_of(t))});
  return sym_value_of(n, p);
}

VTP Tracer::sym_binary(const char* name, const VTP& a, const VTP& b) {
  std::string op = name;
  if (op.size() > 1 && op[0] == 'i' && op != "invert") op = op.substr(1);  // x += n on ints is x + n
  sym::Expr x = int_of(a), y = b ? int_of(b) : sym::Expr();
  if (!x.defined() || (b && !y.defined())) return nullptr;
  sym::Expr r;
  if (op == "add") r = x + y;
  else if (op == "sub") r = x - y;
  else if (op == "mul") r = x * y;
  else if (op == "neg" && !b) r = -x;
  else if ((op == "floordiv" || op == "mod") && !(y.is_const() && y.value() <= 0))
    r = op == "floordiv" ? sym::floordiv(x, y) : sym::mod(x, y);
  else return nullptr;
  r = shape_env.replace(r);
  if (r.is_const()) {
    Obj n = check(PyLong_FromLongLong(r.value()));
    return make_const(n.get());
  }
  // n * 1, n + 0, ...: the operand itself, no node.
  if (a->kind == VK::SymInt && r == shape_env.replace(x)) return a;
  if (b && b->kind == VK::SymInt && r == shape_env.replace(y)) return b;
  std::vector<graph::Value> gargs{graph_arg(a)};
  if (b) gargs.push_back(graph_arg(b));
  graph::Node* n = ir->call_function(target_of(operator_fn(op.c_str())), std::move(gargs));
  n->meta().loc = graph::SourceLoc{cur && cur->ci ? cur->ci->filename : "", cur ? cur->line : 0};
  return sym_value_of(n, r);
}

VTP Tracer::sym_compare(const char* name, const VTP& a, const VTP& b) {
  sym::Expr x = int_of(a), y = int_of(b);
  if (!x.defined() || !y.defined()) return nullptr;
  std::string op = name;
  sym::Expr cond = op == "lt"   ? sym::lt(x, y)
                   : op == "le" ? sym::le(x, y)
                   : op == "gt" ? sym::gt(x, y)
                   : op == "ge" ? sym::ge(x, y)
                   : op == "eq" ? sym::eq(x, y)
                   : op == "ne" ? sym::ne(x, y)
                                : sym::Expr();
  if (!cond.defined()) return nullptr;
  shape_env.set_location(user_location());
  try {
    return make_const(shape_env.evaluate(cond) ? Py_True : Py_False);
  } catch (const sym::DataDependentError&) {
    // Left undecided (torch's SymBool): a branch on it breaks the graph at
    // the jump, whose resume function gets it computed from the sizes.
    auto v = std::make_shared<VT>(VK::SymInt);
    v->sym = shape_env.replace(cond);
    for (const VTP& e : {a, b})
      for (const VTP& t : e->items) v->items.push_back(t);
    note_unbacked_reads(v);
    return v;
  }
}

VTP Tracer::sym_minmax(bool is_max, const std::vector<VTP>& args) {
  if (args.size() < 2) return nullptr;
  bool symbolic = false;
  sym::Expr r;
  for (const VTP& a : args) {
    sym::Expr x = int_of(a);
    if (!x.defined()) return nullptr;
    symbolic |= a->kind == VK::SymInt;
    r = !r.defined() ? x : is_max ? sym::max(r, x) : sym::min(r, x);
  }
  if (!symbolic) return nullptr;
  r = shape_env.replace(r);
  if (r.is_const()) return make_const(check(PyLong_FromLongLong(r.value())).get());
  for (const VTP& a : args)
    if (a->kind == VK::SymInt && r == shape_env.replace(a->sym)) return a;
  std::vector<graph::Value> gargs;
  for (const VTP& a : args) gargs.push_back(graph_arg(a));
  PyObject* fn = PyDict_GetItemString(builtins_dict(), is_max ? "max" : "min");
  graph::Node* n = ir->call_function(target_of(fn), std::move(gargs));
  return sym_value_of(n, r);
}

int64_t Tracer::specialize(const VTP& v, const std::string& why) {
  shape_env.set_location(user_location());
  return shape_env.specialize(v->sym, why);
}

namespace {

sym_shape::SymArg const_arg(PyObject* o) {
  using sym_shape::SymArg;
  SymArg a;
  if (o == Py_None) a.kind = SymArg::None;
  else if (o == Py_Ellipsis) a.kind = SymArg::Ellipsis;
  else if (PyBool_Check(o)) {
    a.kind = SymArg::Bool;
    a.flag = o == Py_True;
  } else if (PyLong_Check(o)) {
    int ov = 0;
    long long x = PyLong_AsLongLongAndOverflow(o, &ov);
    if (!ov) {
      a.kind = SymArg::Int;
      a.value = sym::Expr(static_cast<int64_t>(x));
    }
  } else if (PyUnicode_Check(o)) {
    a.kind = SymArg::Str;
    a.text = utf8(o);
  } else if (PySlice_Check(o)) {
    a.kind = SymArg::Slice;
    auto* s = reinterpret_cast<PySliceObject*>(o);
    a.items = {const_arg(s->start), const_arg(s->stop), const_arg(s->step)};
  } else if (PyTuple_Check(o) || PyList_Check(o)) {
    a.kind = SymArg::List;
    for (Py_ssize_t i = 0; i < PySequence_Size(o); ++i) {
      Obj e = Obj::steal(PySequence_GetItem(o, i));
      if (!e) {
        PyErr_Clear();
        a.kind = SymArg::Other;
        break;
      }
      a.items.push_back(const_arg(e.get()));
    }
  }
  return a;
}

}  // namespace

void Tracer::pin_layout(const std::string& what) {
  // A value read from a layout: the stride symbols it may depend on (any
  // tensor may be a view of an input with one) become their values, and a
  // stride read sees the unchecked strides of size-1 dims too.
  static const char* layout_reads[] = {"stride", "is_contiguous", "storage_offset",
                                       "is_non_overlapping_and_dense"};
  if (std::none_of(std::begin(layout_reads), std::end(layout_reads),
                   [&](const char* n) { return what == n; }))
    return;
  for (const sym::Expr& x : stride_symbols)
    if (!shape_env.replace(x).is_const()) {
      shape_env.set_location(user_location());
      shape_env.specialize(x, str("a Python value from Tensor.", what));
    }
  if (what == "stride") {
    for (const UnitStride& u : unit_strides)
      stride_products.push_back({guards().tensor_stride(u.reg, u.dim), sym::Expr(u.value), u.source});
    unit_strides.clear();
  }
}

void Tracer::propagate_shapes(PyObject* fn, const std::string& method, const std::vector<VTP>& args,
                              const std::vector<std::pair<std::string, VTP>>& kwargs,
                              const VTP& result) {
  if (!has_symbols() || !result) return;
  if (result->kind == VK::Const) {
    // A Python int (or ints) computed on the fakes, at the hints: sound only
    // with the sizes it may depend on pinned (x.size(dim=0), ignis.numel(x),
    // x.stride()). Results that no size changes are left alone.
    static const char* size_free[] = {"dim", "ndimension", "element_size", "get_device",
                                      "is_contiguous", "is_floating_point", "is_complex"};
    std::string what = method.empty() ? target_of(fn).base_name() : method;
    for (const char* n : size_free)
      if (what == n) return;
    PyObject* r = result->value.get();
    bool ints = is_exact_int(r);
    if (PyTuple_Check(r))
      for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r); ++i) ints |= is_exact_int(PyTuple_GET_ITEM(r, i));
    if (!ints) return;
    shape_env.set_location(user_location());
    std::string why = str("a Python int from ", method.empty() ? "" : "Tensor.", what);
    std::function<void(const VTP&)> pin = [&](const VTP& v) {
      if (v->kind == VK::Tensor) {
        for (const sym::Expr& e : sizes_of(v))
          if (!e.is_const()) shape_env.specialize(e, why);
      } else if (v->kind == VK::List || v->kind == VK::Tuple) {
        for (const VTP& e : v->items) pin(e);
      }
    };
    for (const VTP& a : args) pin(a);
    for (const auto& kv : kwargs) pin(kv.second);
    return;
  }
  // The result's tensors.
  std::vector<VTP> outs;
  if (result->kind == VK::Tensor) outs.push_back(result);
  else if (result->kind == VK::Tuple || result->kind == VK::List)
    for (const VTP& e : result->items)
      if (e->kind == VK::Tensor) outs.push_back(e);
  if (outs.empty()) return;
  // Symbolic arguments (tensors with symbolic sizes, SymInts, in containers).
  bool symbolic = false;
  std::function<sym_shape::SymArg(const VTP&)> to_arg = [&](const VTP& v) -> sym_shape::SymArg {
    sym_shape::SymArg a;
    switch (v->kind) {
      case VK::Tensor:
        a.kind = sym_shape::SymArg::Tensor;
        a.sizes = sizes_of(v);
        symbolic |= is_symbolic(v);
        return a;
      case VK::SymInt:
        a.kind = sym_shape::SymArg::Int;
        a.value = shape_env.replace(v->sym);
        symbolic |= !a.value.is_const();
        return a;
      case VK::Const: return const_arg(v->value.get());
      case VK::Slice:
        a.kind = sym_shape::SymArg::Slice;
        for (const VTP& e : v->items) a.items.push_back(to_arg(e));
        return a;
      case VK::List:
      case VK::Tuple:
        a.kind = sym_shape::SymArg::List;
        for (const VTP& e : v->items) a.items.push_back(to_arg(e));
        return a;
      default: return a;
    }
  };
  sym_shape::SymCall call;
  call.method = !method.empty();
  if (call.method) {
    call.name = method;
  } else {
    call.name = target_of(fn).base_name();
  }
  for (const VTP& a : args) call.args.push_back(to_arg(a));
  for (const auto& [k, v] : kwargs) call.kwargs.emplace_back(k, to_arg(v));
  if (!symbolic) return;
  shape_env.set_location(user_location());
  std::optional<std::vector<sym_shape::Sizes>> rule;
  try {
    rule = sym_shape::output_sizes(call, shape_env);
  } catch (const sym::DataDependentError&) {
    throw;
  } catch (const std::exception&) {
    rule.reset();
  }
  // Never trust a rule that disagrees with the fakes (Note [Fakes stay concrete]).
  bool ok = rule && rule->size() == outs.size();
  for (size_t i = 0; ok && i < outs.size(); ++i) {
    const Tensor& f = py::unwrap(outs[i]->fake.get());
    const auto& s = (*rule)[i];
    ok = s.size() == f.sizes().size();
    for (size_t d = 0; ok && d < s.size(); ++d) {
      try {
        ok = s[d].defined() && shape_env.hint_of(s[d]) == f.sizes()[d];
      } catch (const std::exception&) {
        ok = false;
      }
    }
  }
  if (ok) {
    for (size_t i = 0; i < outs.size(); ++i) {
      std::vector<sym::Expr> s;
      bool any = false;
      for (const sym::Expr& e : (*rule)[i]) {
        s.push_back(shape_env.replace(e));
        any |= !s.back().is_const();
      }
      if (!any) continue;
      outs[i]->sym_sizes = s;
      if (outs[i]->node && !outs[i]->node->meta().tensors.empty()) {
        graph::TensorMeta& m = outs[i]->node->meta().tensors[0];
        m.sym_sizes = s;
        const Tensor& f = py::unwrap(outs[i]->fake.get());
        if (f.is_contiguous()) {
          m.sym_strides = sym_shape::contiguous_strides(s);
        } else {
          m.sym_strides.clear();
          for (int64_t st : f.strides()) m.sym_strides.push_back(sym::Expr(st));
        }
      }
    }
    return;
  }
  // No rule (or one that disagrees): the inputs' symbols become their values.
  std::string why = str(rule ? "the symbolic shape rule of " : "no symbolic shape rule for ",
                        call.method ? "Tensor." : "", call.name);
  if (log_on(kLogDynamic))
    log_write(kLogDynamic, str(why, ": specializing its inputs' sizes ", user_location()));
  std::function<void(const VTP&)> pin = [&](const VTP& v) {
    if (v->kind == VK::Tensor) {
      for (const sym::Expr& e : sizes_of(v))
        if (!e.is_const()) shape_env.specialize(e, why);
    } else if (v->kind == VK::SymInt) {
      shape_env.specialize(v->sym, why);
    } else if (v->kind == VK::List || v->kind == VK::Tuple) {
      for (const VTP& e : v->items) pin(e);
    }
  };
  for (const VTP& a : args) pin(a);
  for (const auto& kv : kwargs) pin(kv.second);
}

VTP Tracer::make_slice(std::vector<VTP> parts) {
  while (parts.size() < 3) parts.push_back(make_const(Py_None));
  bool symbolic = false;
  for (const VTP& p : parts) symbolic |= p->kind == VK::SymInt;
  if (symbolic) {
    for (const VTP& p : parts)
      if (p->kind != VK::SymInt && !(p->kind == VK::Const && (p->value.get() == Py_None ||
                                                              is_exact_int(p->value.get()))))
        symbolic = false;
  }
  if (symbolic) {
    auto s = std::make_shared<VT>(VK::Slice);
    s->items = std::move(parts);
    return s;
  }
  Obj p[3];
  for (size_t i = 0; i < 3; ++i) {
    p[i] = const_value(parts[i]);
    if (!p[i]) throw Unsupported{"slice bounds that are not Python numbers"};
  }
  return make_const(check(PySlice_New(p[0].get(), p[1].get(), p[2].get())).get());
}

bool Tracer::emit_sym(sym::Expr e, ValueProgram& prog, const std::vector<VTP>* outputs) {
  // Only these kinds can be spelt (checked first, so a failure appends nothing).
  std::function<bool(sym::Expr)> spellable = [&](sym::Expr x) {
    switch (x.kind()) {
      case sym::Kind::Const: return true;
      case sym::Kind::Symbol: return symbol_reg.count(x) > 0 || (outputs && unbacked_source.count(x));
      case sym::Kind::Add: case sym::Kind::Mul: case sym::Kind::FloorDiv: case sym::Kind::Mod:
      case sym::Kind::Min: case sym::Kind::Max:
      case sym::Kind::Eq: case sym::Kind::Ne: case sym::Kind::Lt: case sym::Kind::Le:
        for (const sym::Expr& a : x.args())
          if (!spellable(a)) return false;
        return true;
      default: return false;
    }
  };
  if (!spellable(e)) return false;
  auto push_const = [&](PyObject* o) {  // borrowed o
    Py_INCREF(o);
    prog.push_back(ValueOp{ValueOp::Const, 0, o});
  };
  auto push_int = [&](int64_t v) {
    Obj n = check(PyLong_FromLongLong(v));
    push_const(n.get());
  };
  // fn(a, b) where `emit_a` and `emit_b` push the operands: the stack program
  // wants the callable first.
  auto call2 = [&](PyObject* fn, const std::function<void()>& emit_a,
                   const std::function<void()>& emit_b) {
    push_const(fn);
    emit_a();
    emit_b();
    prog.push_back(ValueOp{ValueOp::Call, 2});
  };
  std::function<void(sym::Expr)> emit = [&](sym::Expr x) {
    switch (x.kind()) {
      case sym::Kind::Const: push_int(x.value()); return;
      case sym::Kind::Symbol: {
        auto reg = symbol_reg.find(x);
        if (reg != symbol_reg.end()) {
          prog.push_back(ValueOp{ValueOp::Reg, reg->second});
          return;
        }
        // An unbacked size: Tensor.size(t, dim) of the graph output it is read
        // from; an item() value: Tensor.item(t).
        const UnbackedSource& src = unbacked_source.at(x);
        static PyObject* size_fn = check(PyObject_GetAttrString(py_import_attr("ignis", "Tensor"), "size")).release();
        static PyObject* item_fn = check(PyObject_GetAttrString(py_import_attr("ignis", "Tensor"), "item")).release();
        if (src.value) {
          push_const(item_fn);
          emit_value(src.tensor, prog, *outputs);
          prog.push_back(ValueOp{ValueOp::Call, 1});
          return;
        }
        call2(size_fn, [&] { emit_value(src.tensor, prog, *outputs); }, [&] { push_int(src.dim); });
        return;
      }
      case sym::Kind::Add: {
        // c + k0*t0 + k1*t1 + ...: a right fold of operator.add over the pieces.
        std::vector<std::function<void()>> pieces;
        for (size_t i = 0; i < x.args().size(); ++i) {
          sym::Expr t = x.args()[i];
          int64_t k = x->coeffs[i];
          if (k == 1) pieces.push_back([&, t] { emit(t); });
          else pieces.push_back([&, t, k] { call2(operator_fn("mul"), [&] { push_int(k); }, [&] { emit(t); }); });
        }
        if (x->value != 0) {
          int64_t c = x->value;
          pieces.push_back([&, c] { push_int(c); });
        }
        std::function<void(size_t)> sum = [&](size_t i) {
          if (i + 1 == pieces.size()) return pieces[i]();
          call2(operator_fn("add"), pieces[i], [&, i] { sum(i + 1); });
        };
        sum(0);
        return;
      }
      case sym::Kind::Mul: {
        const auto& f = x.args();
        std::function<void(size_t)> prod = [&](size_t i) {
          if (i + 1 == f.size()) return emit(f[i]);
          call2(operator_fn("mul"), [&, i] { emit(f[i]); }, [&, i] { prod(i + 1); });
        };
        prod(0);
        return;
      }
      case sym::Kind::FloorDiv:
      case sym::Kind::Mod:
      case sym::Kind::Min:
      case sym::Kind::Max: {
        PyObject* fn = x.kind() == sym::Kind::FloorDiv ? operator_fn("floordiv")
                       : x.kind() == sym::Kind::Mod    ? operator_fn("mod")
                       : PyDict_GetItemString(builtins_dict(), x.kind() == sym::Kind::Min ? "min" : "max");
        sym::Expr a = x.arg(0), b = x.arg(1);
        call2(fn, [&, a] { emit(a); }, [&, b] { emit(b); });
        return;
      }
      case sym::Kind::Eq:
      case sym::Kind::Ne:
      case sym::Kind::Lt:
      case sym::Kind::Le: {  // an undecided comparison (sym_compare): Python's operator
        PyObject* fn = operator_fn(x.kind() == sym::Kind::Eq   ? "eq"
                                   : x.kind() == sym::Kind::Ne ? "ne"
                                   : x.kind() == sym::Kind::Lt ? "lt"
                                                               : "le");
        sym::Expr a = x.arg(0), b = x.arg(1);
        call2(fn, [&, a] { emit(a); }, [&, b] { emit(b); });
        return;
      }
      default: return;  // not spellable: excluded above
    }
  };
  emit(e);
  return true;
}

void Tracer::finish_shape_guards() {
  if (!has_symbols() && stride_products.empty()) return;
  ShapeGuards g;
  for (const sym::ShapeEnv::Symbol& s : shape_env.symbols())
    if (!s.unbacked) g.symbols.emplace_back(s.sym, symbol_reg.at(s.sym));
  for (const auto& q : shape_env.source_equalities())
    g.checks.push_back({q.expr, size_reg.at(q.source), q.source + " == " + shape_env.source_str(q.expr)});
  for (const StrideProduct& p : stride_products)
    g.checks.push_back({shape_env.replace(p.expr), p.reg,
                        p.source + " == " + shape_env.source_str(shape_env.replace(p.expr))});
  for (const sym::Expr& r : shape_env.relations())
    g.checks.push_back({r, -1, shape_env.source_str(r)});
  for (const sym::ShapeEnv::Symbol& s : shape_env.symbols()) {
    if (s.unbacked) continue;  // no source: nothing to check before the graph runs
    std::string text = sym::ShapeEnv::range_str(s, s.source);
    if (s.lo == s.hi) {
      g.checks.push_back({sym::eq(s.sym, sym::Expr(s.lo)), -1, text});
      continue;
    }
    g.checks.push_back({sym::le(sym::Expr(s.lo), s.sym), -1, text});
    if (s.hi != sym::ShapeEnv::kNoUpper) g.checks.push_back({sym::le(s.sym, sym::Expr(s.hi)), -1, text});
  }
  if (g.symbols.empty() && g.checks.empty()) return;  // only unbacked sizes
  guards().check_shapes(std::move(g));
}

}  // namespace ignis::capture
