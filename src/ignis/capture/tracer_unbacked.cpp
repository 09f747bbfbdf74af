// Data-dependent sizes in the tracer (docs/dynamic_shapes.md "Data-dependent
// sizes"; Note [Unbacked symbols] in sym/shape_env.h).
//
// x[mask], masked_select, nonzero, where(cond), unique and unique_consecutive
// give tensors whose first size is a count only the data decide. With capture_dynamic_output_shape_ops
// (ignis's default) such a call joins the graph: its result gets an unbacked
// size u0 in [0, the input's element count], a fake of kUnbackedHint rows
// (made by ignis/_unbacked.py under the fake mode, through index_select
// where the result is differentiable, so that it carries the input's autograd
// history), and its node the meta entry "unbacked" = "u0", by which the
// concrete backends split the graph there (_unbacked.py). Later ops see u0 as
// any symbolic size; a decision on it that its range does not settle breaks
// the graph at that line (the ShapeEnv's DataDependentError). Without the
// setting, these calls break the graph as Dynamo's default does.
#include <algorithm>
#include <limits>
#include <optional>

#include "ignis/capture/log.h"
#include "ignis/capture/tracer_impl.h"
#include "ignis/core/str.h"
#include "ignis/ops/sym_shape.h"
#include "ignis/python/py_common.h"
#include "ignis/sym/eval.h"

namespace ignis::capture {

namespace {

bool is_bool_tensor(const VTP& v) {
  return v && v->kind == VK::Tensor && py::unwrap(v->fake.get()).dtype() == ScalarType::Bool;
}

// The value of keyword `name` among `kwargs` when it is a constant; `dflt`
// when absent; nullptr when it is something else.
PyObject* const_kwarg(const std::vector<std::pair<std::string, VTP>>& kwargs, const char* name,
                      PyObject* dflt) {
  for (const auto& [k, v] : kwargs)
    if (k == name) return v->kind == VK::Const ? v->value.get() : nullptr;
  return dflt;
}

}  // namespace

bool makes_unbacked_size(const std::string& name) {
  static const char* const names[] = {"nonzero", "where", "masked_select", "getitem",
                                      "unique", "unique_consecutive", "argwhere"};
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

sym::Expr Tracer::new_unbacked(const std::string& what, const std::vector<sym::Expr>& counted) {
  int64_t upper = 1;
  for (const sym::Expr& e : counted) {
    sym::Expr r = shape_env.replace(e);
    if (!r.is_const() || upper > sym::ShapeEnv::kNoUpper / std::max<int64_t>(r.value(), 1)) {
      upper = sym::ShapeEnv::kNoUpper;
      break;
    }
    upper *= r.value();
  }
  return unbacked_at_line(str("the count of ", what), 0, upper);
}

sym::Expr Tracer::unbacked_at_line(const std::string& origin, int64_t lower, int64_t upper) {
  if (log_on(kLogDynamic))
    shape_env.set_logger([](const std::string& m) { log_write(kLogDynamic, m); });
  shape_env.set_location(user_location());
  std::string at = cur && cur->ci ? str(" at ", cur->ci->filename, ":", cur->line) : "";
  return shape_env.create_unbacked(origin + at, upper, lower);
}

VTP Tracer::call_unbacked(PyObject* fn, const std::string& name, bool method,
                          const std::vector<VTP>& args,
                          const std::vector<std::pair<std::string, VTP>>& kwargs) {
  if (!makes_unbacked_size(name)) return nullptr;
  if (!cfg->capture_dynamic_output_shape_ops || args.empty() || args[0]->kind != VK::Tensor)
    return nullptr;
  const VTP& x = args[0];
  // What the call is: its output's shape after the count, and the fake maker.
  enum { Nonzero, NonzeroTuple, MaskedSelect, MaskedRows, Unique } kind;
  VTP mask;
  size_t lead = 0;  // MaskedRows: the dims before the mask's (x[:, mask]); Unique: dim
  bool return_inverse = false, return_counts = false;
  std::optional<int64_t> unique_dim;  // unique(x, dim=d): slices along d
  if (name == "argwhere" && args.size() == 1 && kwargs.empty()) {
    kind = Nonzero;
  } else if (name == "nonzero" && args.size() == 1) {
    PyObject* as_tuple = const_kwarg(kwargs, "as_tuple", Py_False);
    if (!as_tuple || !PyBool_Check(as_tuple)) return nullptr;
    kind = as_tuple == Py_True ? NonzeroTuple : Nonzero;
  } else if (name == "where" && !method && args.size() == 1 && kwargs.empty()) {
    kind = NonzeroTuple;
  } else if (name == "masked_select" && args.size() == 2 && kwargs.empty() && is_bool_tensor(args[1])) {
    kind = MaskedSelect;
    mask = args[1];
  } else if (name == "getitem" && args.size() == 2 && is_bool_tensor(args[1])) {
    kind = MaskedRows;
    mask = args[1];
  } else if (name == "getitem" && args.size() == 2 && args[1]->kind == VK::Tuple &&
             !args[1]->items.empty() && is_bool_tensor(args[1]->items.back())) {
    // x[:, mask], x[:, :, mask]: full slices, then the mask.
    for (size_t i = 0; i + 1 < args[1]->items.size(); ++i) {
      const VTP& e = args[1]->items[i];
      if (e->kind != VK::Const || !PySlice_Check(e->value.get())) return nullptr;
      auto* sl = reinterpret_cast<PySliceObject*>(e->value.get());
      if (sl->start != Py_None || sl->stop != Py_None || sl->step != Py_None) return nullptr;
    }
    kind = MaskedRows;
    mask = args[1]->items.back();
    lead = args[1]->items.size() - 1;
  } else if (name == "unique" || name == "unique_consecutive") {
    // unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None);
    // unique_consecutive(x, return_inverse=False, return_counts=False, dim=None).
    std::vector<std::string> params = {"sorted", "return_inverse", "return_counts", "dim"};
    if (name == "unique_consecutive") params.erase(params.begin());
    if (args.size() > params.size() + 1) return nullptr;
    std::vector<PyObject*> value(params.size(), nullptr);
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i]->kind != VK::Const) return nullptr;
      value[i - 1] = args[i]->value.get();
    }
    for (const auto& [k, v] : kwargs) {
      auto at = std::find(params.begin(), params.end(), k);
      if (at == params.end() || v->kind != VK::Const) return nullptr;
      value[at - params.begin()] = v->value.get();
    }
    for (size_t i = 0; i < params.size(); ++i) {
      PyObject* o = value[i];
      if (params[i] == "dim") {
        if (o && o != Py_None) {
          if (!PyLong_Check(o) || PyBool_Check(o)) return nullptr;
          unique_dim = PyLong_AsLongLong(o);
        }
      } else if (o && !PyBool_Check(o)) {
        return nullptr;
      } else if (params[i] == "return_inverse") {
        return_inverse = o == Py_True;
      } else if (params[i] == "return_counts") {
        return_counts = o == Py_True;
      }
    }
    kind = Unique;
  } else {
    return nullptr;
  }
  if (kind != Unique)
    for (const auto& [k, v] : kwargs)
      if (k != "as_tuple") return nullptr;
  const std::vector<sym::Expr> xs = sizes_of(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  if ((kind == Nonzero || kind == NonzeroTuple) && rank == 0) return nullptr;  // eager's own rule
  if (unique_dim) {  // a dim out of range, or slices of a 0-dim tensor: eager's error, after a break
    if (rank == 0 || *unique_dim < -rank || *unique_dim >= rank) return nullptr;
    lead = static_cast<size_t>(*unique_dim < 0 ? *unique_dim + rank : *unique_dim);
  }
  const Tensor& xf = py::unwrap(x->fake.get());
  if (mask && py::unwrap(mask->fake.get()).device() != xf.device()) return nullptr;

  // The result's sizes after the count, and the elements counted.
  shape_env.set_location(user_location());
  std::vector<sym::Expr> rest, counted;
  std::string what;
  if (kind == MaskedRows) {
    const std::vector<sym::Expr> ms = sizes_of(mask);
    if (ms.empty() || lead + ms.size() > xs.size()) return nullptr;  // x[True] adds a dim: eager's
    for (size_t d = 0; d < ms.size(); ++d)
      if (!shape_env.expect_equal(ms[d], xs[lead + d]))
        throw Unsupported{str("indexing with a boolean mask of shape ", sym_shape::str(ms),
                              " that does not match the indexed tensor's ", sym_shape::str(xs),
                              " (an IndexError when run eagerly)"),
                          false, true};
    rest.assign(xs.begin() + static_cast<std::ptrdiff_t>(lead + ms.size()), xs.end());
    counted = ms;
    what = "True elements of a boolean mask index";
  } else if (kind == MaskedSelect) {
    const std::vector<sym::Expr> ms = sizes_of(mask);
    sym_shape::Sizes a(xs.begin(), xs.end()), b(ms.begin(), ms.end());
    std::optional<sym_shape::Sizes> shape = sym_shape::broadcast({&a, &b}, shape_env);
    if (!shape) return nullptr;  // the fake run would fail: eager raises after a break
    counted.assign(shape->begin(), shape->end());
    what = "masked_select()";
  } else if (kind == Unique) {
    counted = unique_dim ? std::vector<sym::Expr>{xs[lead]} : xs;
    what = unique_dim ? str(name, "(dim=", lead, ")") : name + "()";
  } else {
    counted = xs;
    if (kind == Nonzero) rest = {sym::Expr(rank)};
    what = name == "where" ? "where(condition)" : name + "()";
  }
  const sym::Expr u = new_unbacked(what, counted);

  // The fake, made by ignis/_unbacked.py under the fake mode.
  Obj result;
  {
    Obj hint = check(PyLong_FromLongLong(sym::ShapeEnv::kUnbackedHint));
    Obj fx = fake_arg(x);
    aot::FakeModeGuard guard(fake_mode);
    if (kind == MaskedRows) {
      Obj fm = fake_arg(mask);
      Obj at = check(PyLong_FromSize_t(lead));
      result = Obj::steal(PyObject_CallFunctionObjArgs(py_import_attr("ignis._unbacked", "fake_masked_rows"),
                                                       fx.get(), fm.get(), hint.get(), at.get(), nullptr));
    } else if (kind == MaskedSelect) {
      Obj fm = fake_arg(mask);
      result = Obj::steal(PyObject_CallFunctionObjArgs(py_import_attr("ignis._unbacked", "fake_masked_select"),
                                                       fx.get(), fm.get(), hint.get(), nullptr));
    } else if (kind == Unique) {
      Obj dim = unique_dim ? check(PyLong_FromSize_t(lead)) : Obj::borrow(Py_None);
      result = Obj::steal(PyObject_CallFunctionObjArgs(py_import_attr("ignis._unbacked", "fake_unique"),
                                                       fx.get(), hint.get(), return_inverse ? Py_True : Py_False,
                                                       return_counts ? Py_True : Py_False, dim.get(), nullptr));
    } else {
      result = Obj::steal(PyObject_CallFunctionObjArgs(py_import_attr("ignis._unbacked", "fake_nonzero"),
                                                       fx.get(), hint.get(),
                                                       kind == NonzeroTuple ? Py_True : Py_False, nullptr));
    }
  }
  if (!result) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    Obj text = Obj::steal(v ? PyObject_Str(v) : nullptr);
    std::string msg = text ? utf8(text.get()) : "?";
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    PyErr_Clear();
    throw Unsupported{str(what, " failed on the traced values: ", msg)};
  }

  // The node, as call_graph records it.
  std::vector<graph::Value> gargs;
  for (const VTP& a : args) gargs.push_back(graph_arg(a));
  graph::Kwargs gkw;
  for (const auto& [k, v] : kwargs) gkw.emplace_back(k, graph_arg(v));
  graph::Node* node = method ? ir->call_method(name, std::move(gargs), std::move(gkw))
                             : ir->call_function(target_of(fn), std::move(gargs), std::move(gkw));
  node->meta().set_extra("unbacked", sym::symbol_name(u));
  ++call_nodes;
  VTP r = wrap_result(result.get(), node);

  // Their symbolic sizes: [u0, rest...] (nonzero(as_tuple=True): [u0] each;
  // unique: values and counts [u0], the inverse x's sizes).
  std::vector<VTP> outs = r->kind == VK::Tensor ? std::vector<VTP>{r} : r->items;
  std::vector<std::vector<sym::Expr>> out_sizes(outs.size(), {u});
  for (size_t i = 0; i < outs.size(); ++i) {
    if (kind == MaskedRows)
      out_sizes[i].insert(out_sizes[i].begin(), xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(lead));
    if (kind == Nonzero || kind == MaskedRows)
      out_sizes[i].insert(out_sizes[i].end(), rest.begin(), rest.end());
    if (kind == Unique && unique_dim && i == 0) {  // the slices: x's sizes, u0 along dim
      out_sizes[i] = xs;
      out_sizes[i][lead] = u;
    }
    if (kind == Unique && i == 1 && return_inverse)
      out_sizes[i] = unique_dim ? std::vector<sym::Expr>{xs[lead]} : xs;
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    const VTP& o = outs[i];
    const std::vector<sym::Expr>& sizes = out_sizes[i];
    o->sym_sizes = sizes;
    graph::TensorMeta& m = o->node->meta().tensors.at(0);
    m.sym_sizes = sizes;
    const Tensor& f = py::unwrap(o->fake.get());
    if (f.is_contiguous()) {
      m.sym_strides = sym_shape::contiguous_strides(sizes);
    } else {
      m.sym_strides.clear();
      for (int64_t st : f.strides()) m.sym_strides.push_back(sym::Expr(st));
    }
  }
  if (!outs.empty()) unbacked_source[u] = {outs[0], static_cast<int64_t>(lead)};
  if (node->meta().tuple_output) {
    for (size_t i = 0; i < outs.size() && i < node->meta().tensors.size(); ++i)
      node->meta().tensors[i] = outs[i]->node->meta().tensors.at(0);
  }
  return r;
}

VTP Tracer::subscr_mask_among_basic(const VTP& x, const VTP& key) {
  if (key->kind != VK::Tuple || key->pytype) return nullptr;
  const int64_t rank = static_cast<int64_t>(sizes_of(x).size());
  size_t at = key->items.size();
  int64_t consumed = 0;  // the dims of x the key's items index
  bool ellipsis = false;
  for (size_t i = 0; i < key->items.size(); ++i) {
    const VTP& e = key->items[i];
    if (is_bool_tensor(e)) {
      if (at != key->items.size()) return nullptr;  // two masks: eager's
      at = i;
      consumed += static_cast<int64_t>(sizes_of(e).size());
    } else if (e->kind == VK::SymInt || e->kind == VK::Slice) {
      ++consumed;
    } else if (e->kind == VK::Const && e->value.get() == Py_Ellipsis) {
      if (ellipsis) return nullptr;
      ellipsis = true;
    } else if (e->kind == VK::Const && (PySlice_Check(e->value.get()) ||
                                        (PyLong_Check(e->value.get()) && !PyBool_Check(e->value.get())))) {
      ++consumed;
    } else if (!(e->kind == VK::Const && e->value.get() == Py_None)) {
      return nullptr;  // another tensor, a bool, ...: eager's, after a break
    }
  }
  if (at == key->items.size() || sizes_of(key->items[at]).empty() || consumed > rank) return nullptr;
  // The dims of the basic result before the mask's: a slice or None keeps
  // or adds one, an int removes its dim, an Ellipsis spans what the rest
  // does not index.
  Obj full = Obj::steal(PySlice_New(nullptr, nullptr, nullptr));
  std::vector<VTP> basic;
  size_t lead = 0;
  for (size_t i = 0; i < key->items.size(); ++i) {
    const VTP& e = key->items[i];
    if (i == at) {
      for (size_t d = 0; d < sizes_of(e).size(); ++d) basic.push_back(make_const(full.get()));
      continue;
    }
    basic.push_back(e);
    if (i > at) continue;
    if (e->kind == VK::Slice || (e->kind == VK::Const && (PySlice_Check(e->value.get()) ||
                                                          e->value.get() == Py_None)))
      ++lead;
    else if (e->kind == VK::Const && e->value.get() == Py_Ellipsis)
      lead += static_cast<size_t>(rank - consumed);
  }
  VTP y = subscr(x, make_tuple(std::move(basic)));
  if (lead == 0) return subscr(y, key->items[at]);
  std::vector<VTP> rest(lead, make_const(full.get()));
  rest.push_back(key->items[at]);
  return subscr(y, make_tuple(std::move(rest)));
}

// Note [Tensor.item() as an unbacked int]
// `n = counts.sum().item()` reads a value into Python. torch's Dynamo breaks
// the graph there unless capture_scalar_outputs is set; ignis has that
// setting on by default for integer tensors: the call becomes a node
// `item = t.item()` whose value is an unbacked symbol u<n> in the dtype's
// range (int64: unbounded, negative too, so the symbol is no size), with no
// guard. Arithmetic on it, passing it to ops and returning it stay in the
// graph; a decision its range does not settle (`if n > 3`, `x[:n]` before
// ignis._check(n >= 0), `range(n)`) breaks the graph at that line, and the
// resume function gets the value from t, a graph output (UnbackedSource::
// value). The node is marked "unbacked", so the concrete backends run it
// eagerly between compiled stages (Note [Splitting at data-dependent
// sizes]). A float's or bool's item() still breaks: no symbol stands for it.
VTP Tracer::item_unbacked(const VTP& t) {
  if (!cfg->capture_scalar_outputs || t->kind != VK::Tensor) return nullptr;
  const ScalarType dtype = py::unwrap(t->fake.get()).dtype();
  if (!is_integral(dtype, /*include_bool=*/false)) return nullptr;
  for (const sym::Expr& s : sizes_of(t))
    if (!s.is_const(1)) return nullptr;  // one element, known before the data: eager checks the rest
  // The dtype's range (int64's ends are the ShapeEnv's kNoLower / kNoUpper: unbounded).
  int64_t lo = 0, hi = 0;
  IGNIS_DISPATCH_INT(dtype, "item", [&] {
    lo = int64_t(std::numeric_limits<scalar_t>::min());
    hi = int64_t(std::numeric_limits<scalar_t>::max());
  });
  const sym::Expr u = unbacked_at_line("the value of Tensor.item()", lo, hi);
  graph::Node* n = ir->call_method("item", {graph::Value(node_of(t))});
  n->meta().set_extra("unbacked", sym::symbol_name(u));
  unbacked_source[u] = {t, 0, true};
  VTP v = sym_value_of(n, u);
  symbol_vt[u] = v;
  return v;
}

std::pair<graph::Value, graph::Value> Tracer::unbacked_read(const sym::Expr& u) {
  const UnbackedSource& src = unbacked_source.at(u);
  if (src.value) return {graph_arg(symbol_vt.at(u)), graph::Value()};
  return {graph_arg(src.tensor), graph::Value(src.dim)};
}

void Tracer::note_unbacked_reads(const VTP& v) {
  if (!v || v->kind != VK::SymInt || !v->sym.defined()) return;
  for (const sym::Expr& s : sym::free_symbols(shape_env.replace(v->sym))) {
    auto it = unbacked_source.find(s);
    if (it == unbacked_source.end()) continue;
    bool have = false;
    for (const VTP& e : v->items) have |= e.get() == it->second.tensor.get();
    if (!have) v->items.push_back(it->second.tensor);
  }
}

}  // namespace ignis::capture
