// Note [Symbolizing traced graphs] (symbolize.h) is the reference.
//
// A node's numbers ("leaves"), in the order every function here visits
// them: its args then its kwargs' values, depth first, each int (not bool)
// and float; then each tensor of its metadata, sizes then strides.
#include "ignis/aot/symbolize.h"

#include <cmath>
#include <unordered_map>

#include "ignis/aot/fake.h"
#include "ignis/autograd/autograd_meta.h"
#include "ignis/core/error.h"
#include "ignis/sym/eval.h"
#include "ignis/sym/print.h"

namespace ignis::aot {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;
using Kind = SymbolicLeaf::Kind;

// One number of a node as traced.
struct Number {
  Kind kind;      // Int or Double in args; Size or Stride in metadata
  int64_t i = 0;  // Int, Size, Stride
  double d = 0;   // Double
};

void numbers_of(const Value& v, std::vector<Number>& out) {
  switch (v.kind()) {
    case Value::Kind::Int: out.push_back({Kind::Int, v.to_int(), 0}); return;
    case Value::Kind::Double: out.push_back({Kind::Double, 0, v.to_double()}); return;
    default:
      if (v.has_items())
        for (const Value& x : v.items()) numbers_of(x, out);
  }
}

std::vector<Number> numbers_of(const Node& n) {
  std::vector<Number> out;
  for (const Value& a : n.args()) numbers_of(a, out);
  for (const auto& [_, v] : n.kwargs()) numbers_of(v, out);
  for (const graph::TensorMeta& t : n.meta().tensors) {
    for (int64_t s : t.sizes) out.push_back({Kind::Size, s, 0});
    // The stride of a size-1 dim addresses nothing (capture does not guard
    // it: Note [Strides of size-1 dims]): one value for every trace, so a
    // call's own layout there fits the hints' (the instance keeps the
    // first trace's).
    for (size_t d = 0; d < t.strides.size(); ++d)
      out.push_back({Kind::Stride, d < t.sizes.size() && t.sizes[d] == 1 ? 0 : t.strides[d], 0});
  }
  return out;
}

// Whether a and b are the same but for their numbers; node references must
// be to nodes at the same positions (`pos`: node -> position).
bool same_shape(const Value& a, const Value& b,
                const std::unordered_map<const Node*, size_t>& pa,
                const std::unordered_map<const Node*, size_t>& pb) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Int:
    case Value::Kind::Double: return true;
    case Value::Kind::Node: return pa.at(a.to_node()) == pb.at(b.to_node());
    case Value::Kind::Tensor: return false;  // constants are get_attr nodes; a tensor here is unknown
    default: break;
  }
  if (a.has_items()) {
    const Value::Items& x = a.items();
    const Value::Items& y = b.items();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!same_shape(x[i], y[i], pa, pb)) return false;
    return true;
  }
  return a == b;
}

bool same_node(const Node& a, const Node& b, const std::unordered_map<const Node*, size_t>& pa,
               const std::unordered_map<const Node*, size_t>& pb, std::string* why) {
  auto differ = [&](const char* what) {
    *why = "node " + a.name() + " differs between the traces (" + what + ")";
    return false;
  };
  if (a.op() != b.op()) return differ("its kind");
  const graph::Target& ta = a.target();
  const graph::Target& tb = b.target();
  if (ta.kind != tb.kind || ta.op != tb.op || ta.name != tb.name ||
      (ta.callable != tb.callable && !(ta.callable && tb.callable &&
                                       ta.callable->qualified_name() ==
                                           tb.callable->qualified_name())))
    return differ("its target");
  if (a.args().size() != b.args().size() || a.kwargs().size() != b.kwargs().size())
    return differ("its arguments");
  for (size_t i = 0; i < a.args().size(); ++i)
    if (!same_shape(a.args()[i], b.args()[i], pa, pb)) return differ("its arguments");
  for (size_t i = 0; i < a.kwargs().size(); ++i)
    if (a.kwargs()[i].first != b.kwargs()[i].first ||
        !same_shape(a.kwargs()[i].second, b.kwargs()[i].second, pa, pb))
      return differ("its keyword arguments");
  const graph::NodeMeta& ma = a.meta();
  const graph::NodeMeta& mb = b.meta();
  if (ma.tensors.size() != mb.tensors.size() || ma.tuple_output != mb.tuple_output)
    return differ("its results");
  for (size_t i = 0; i < ma.tensors.size(); ++i) {
    const graph::TensorMeta& x = ma.tensors[i];
    const graph::TensorMeta& y = mb.tensors[i];
    if (x.dtype != y.dtype || x.device.type != y.device.type || x.device.index != y.device.index ||
        x.sizes.size() != y.sizes.size() || x.strides.size() != y.strides.size())
      return differ("its result's dtype, device or rank");
  }
  return true;
}

// The monomials k * s0^e0 * ... may use: every exponent vector over 0..2 but
// all zeros (0..1 beyond three symbols, which keeps the search to 2^n),
// lowest total degree first.
std::vector<std::vector<int>> monomials(size_t n) {
  std::vector<std::vector<int>> out;
  std::vector<int> e(n, 0);
  const int top = n <= 3 ? 2 : 1;
  while (true) {
    size_t i = 0;
    while (i < n && e[i] == top) e[i++] = 0;
    if (i == n) break;
    ++e[i];
    out.push_back(e);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    int da = 0, db = 0;
    for (int x : a) da += x;
    for (int x : b) db += x;
    return da < db;
  });
  return out;
}

using Wide = __int128;

// The form k * m + d fitting v at every hint, where m[h] is the monomial's
// value at hint h; false when none (k and d must be integers).
bool fit(const std::vector<Wide>& m, const std::vector<Wide>& v, Wide* k, Wide* d) {
  if (m[1] == m[0]) return false;
  Wide dv = v[1] - v[0], dm = m[1] - m[0];
  if (dv % dm != 0) return false;
  *k = dv / dm;
  *d = v[0] - *k * m[0];
  if (*k == 0) return false;
  for (size_t h = 2; h < m.size(); ++h)
    if (*k * m[h] + *d != v[h]) return false;
  return true;
}

constexpr Wide kLimit = Wide(1) << 62;
// The largest integer a float count is divided by, or divides (symbolize.h).
constexpr int64_t kMaxScale = 8;
// The most symbols a graph's numbers are fitted over (2^n monomials).
constexpr size_t kMaxSymbols = 10;

// The expression of the integers `v` (one per hint), or undefined when no
// form fits or more than one monomial does.
sym::Expr fit_int(const std::vector<Wide>& v, const std::vector<sym::Expr>& symbols,
                  const std::vector<std::vector<int64_t>>& hints,
                  const std::vector<std::vector<int>>& monos) {
  sym::Expr found;
  bool ambiguous = false;
  for (const std::vector<int>& e : monos) {
    std::vector<Wide> m(hints.size(), 1);
    bool too_big = false;
    for (size_t h = 0; h < hints.size(); ++h)
      for (size_t i = 0; i < e.size(); ++i)
        for (int p = 0; p < e[i]; ++p) {
          m[h] *= hints[h][i];
          too_big |= m[h] > kLimit || m[h] < -kLimit;
        }
    Wide k, d;
    if (too_big || !fit(m, v, &k, &d)) continue;
    if (k > kLimit || k < -kLimit || d > kLimit || d < -kLimit) continue;
    if (found.defined()) {
      ambiguous = true;
      break;
    }
    sym::Expr mono = 1;
    for (size_t i = 0; i < e.size(); ++i)
      for (int p = 0; p < e[i]; ++p) mono = mono * symbols[i];
    found = sym::Expr(int64_t(k)) * mono + sym::Expr(int64_t(d));
  }
  return ambiguous ? sym::Expr() : found;
}

// v with the numbers at the leaf positions in `patch` replaced (`leaf`:
// the position of v's first number, advanced past its numbers).
Value patched(const Value& v, size_t& leaf, const std::unordered_map<uint32_t, Value>& patch) {
  switch (v.kind()) {
    case Value::Kind::Int:
    case Value::Kind::Double: {
      auto it = patch.find(uint32_t(leaf++));
      return it == patch.end() ? v : it->second;
    }
    case Value::Kind::List:
    case Value::Kind::Tuple:
    case Value::Kind::Dict:
    case Value::Kind::Slice: {
      Value::Items items;
      items.reserve(v.items().size());
      for (const Value& x : v.items()) items.push_back(patched(x, leaf, patch));
      if (v.kind() == Value::Kind::List) return Value::list(std::move(items));
      if (v.kind() == Value::Kind::Tuple) return Value::tuple(std::move(items));
      if (v.kind() == Value::Kind::Dict) return Value::dict(std::move(items));
      return Value::slice(items[0], items[1], items[2]);
    }
    default: return v;
  }
}

// Whether e is a polynomial of its symbols (constants, symbols, sums, products).
bool polynomial(sym::Expr e) {
  switch (e.kind()) {
    case sym::Kind::Const:
    case sym::Kind::Symbol: return true;
    case sym::Kind::Add:
    case sym::Kind::Mul:
      for (const sym::Expr& a : e.args())
        if (!polynomial(a)) return false;
      return true;
    default: return false;
  }
}

// A copy of g, its output node included.
std::unique_ptr<Graph> copy_graph(const Graph& g) {
  auto c = std::make_unique<Graph>();
  Value result = c->copy_from(g);
  if (const Node* out = g.output_node()) {
    Node* o = c->output(result);
    o->meta() = out->meta();
    o->type_repr = out->type_repr;
    o->type_object = out->type_object;
  }
  return c;
}

// n's arguments with the numbers at the leaf positions in `patch` replaced.
void patch_arguments(Node* n, const std::unordered_map<uint32_t, Value>& patch) {
  size_t leaf = 0;
  std::vector<Value> args;
  for (const Value& a : n->args()) args.push_back(patched(a, leaf, patch));
  graph::Kwargs kwargs;
  for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, patched(v, leaf, patch));
  n->set_args(std::move(args));
  n->set_kwargs(std::move(kwargs));
}

// Leaves of one node, grouped for copying.
struct NodeLeaves {
  std::unordered_map<uint32_t, const SymbolicLeaf*> by_leaf;
};

std::vector<NodeLeaves> group(const SymbolicGraph& s, size_t nodes) {
  std::vector<NodeLeaves> out(nodes);
  for (const SymbolicLeaf& l : s.leaves) out[l.node].by_leaf[l.leaf] = &l;
  return out;
}

// A copy of s.graph in which `arg_value(leaf)` gives each fitted number of
// the arguments (nullopt: kept) and `meta(tensor, its first leaf, leaves)`
// sets those of the metadata.
template <typename ArgFn, typename MetaFn>
std::unique_ptr<Graph> copy_with(const SymbolicGraph& s, ArgFn arg_value, MetaFn meta) {
  std::unique_ptr<Graph> g = copy_graph(*s.graph);
  std::vector<Node*> nodes = g->node_list();
  std::vector<NodeLeaves> by_node = group(s, nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (by_node[i].by_leaf.empty()) continue;
    Node* n = nodes[i];
    std::unordered_map<uint32_t, Value> patch;
    for (const auto& [leaf, l] : by_node[i].by_leaf)
      if (l->kind == Kind::Int || l->kind == Kind::Double || l->kind == Kind::Reciprocal)
        if (std::optional<Value> v = arg_value(*l)) patch.emplace(leaf, std::move(*v));
    std::vector<Number> in_args;
    for (const Value& a : n->args()) numbers_of(a, in_args);
    for (const auto& [_, v] : n->kwargs()) numbers_of(v, in_args);
    if (!patch.empty()) patch_arguments(n, patch);
    size_t leaf = in_args.size();
    for (graph::TensorMeta& t : n->meta().tensors) {
      meta(t, leaf, by_node[i].by_leaf);
      leaf += t.sizes.size() + t.strides.size();
    }
  }
  return g;
}

}  // namespace

std::optional<SymbolicGraph> symbolize(const std::vector<const Graph*>& traces,
                                       const std::vector<sym::Expr>& symbols,
                                       const std::vector<std::vector<int64_t>>& hints,
                                       std::string* why) {
  IGNIS_CHECK_VALUE(traces.size() >= 3 && traces.size() == hints.size(),
                    "symbolize: needs one hint per trace, and three traces or more");
  for (const auto& h : hints)
    IGNIS_CHECK_VALUE(h.size() == symbols.size(), "symbolize: a hint needs a value per symbol");
  // The first three hints must move every symbol (the forms are solved from
  // the first two and checked by the third); later ones only check, so they
  // may repeat a value (a size the program was called with after the hints:
  // Note [A fourth trace checks the fit] in _functorch/symbolic_aot.py).
  for (size_t i = 0; i < symbols.size(); ++i)
    for (size_t a = 0; a < 3; ++a)
      for (size_t b = a + 1; b < 3; ++b)
        IGNIS_CHECK_VALUE(hints[a][i] != hints[b][i], "symbolize: symbol ",
                          sym::symbol_name(symbols[i]), " has one value in two hints");
  const size_t H = traces.size();
  std::vector<std::vector<Node*>> nodes(H);
  std::vector<std::unordered_map<const Node*, size_t>> pos(H);
  for (size_t h = 0; h < H; ++h) {
    nodes[h] = traces[h]->node_list();
    for (size_t i = 0; i < nodes[h].size(); ++i) pos[h][nodes[h][i]] = i;
    if (nodes[h].size() != nodes[0].size()) {
      *why = "the traces have different numbers of nodes (" + std::to_string(nodes[0].size()) +
             " and " + std::to_string(nodes[h].size()) + ")";
      return std::nullopt;
    }
  }
  if (symbols.size() > kMaxSymbols) {
    *why = std::to_string(symbols.size()) + " symbols, more than " +
           std::to_string(kMaxSymbols) + " to fit numbers over";
    return std::nullopt;
  }
  const std::vector<std::vector<int>> monos = monomials(symbols.size());
  SymbolicGraph out;
  out.symbols = symbols;
  for (size_t i = 0; i < nodes[0].size(); ++i) {
    std::vector<std::vector<Number>> nums(H);
    for (size_t h = 0; h < H; ++h) {
      if (h && !same_node(*nodes[0][i], *nodes[h][i], pos[0], pos[h], why)) return std::nullopt;
      nums[h] = numbers_of(*nodes[h][i]);
    }
    for (size_t leaf = 0; leaf < nums[0].size(); ++leaf) {
      const Number& first = nums[0][leaf];
      bool varies = false;
      for (size_t h = 1; h < H; ++h) {
        const Number& x = nums[h][leaf];
        varies |= first.kind == Kind::Double ? !(x.d == first.d || (std::isnan(x.d) && std::isnan(first.d)))
                                             : x.i != first.i;
      }
      if (!varies) continue;
      SymbolicLeaf l{uint32_t(i), uint32_t(leaf), first.kind, sym::Expr()};
      std::vector<Wide> v(H);
      if (first.kind == Kind::Double) {
        // A count over a small integer (N, N/2), or a small integer over a
        // count (1/N of a mean, 2/(N-1) in a variance's backward): exactly
        // the double the trace computed, at every hint.
        bool found = false;
        for (int64_t q = 1; q <= kMaxScale && !found; ++q) {
          for (Kind k : {Kind::Double, Kind::Reciprocal}) {
            bool fits = true;
            for (size_t h = 0; h < H && fits; ++h) {
              double d = nums[h][leaf].d;
              double n = k == Kind::Double ? d * double(q) : (d != 0 ? double(q) / d : 0);
              double r = std::round(n);
              fits = std::isfinite(n) && r != 0 && std::fabs(r) < 9e15 &&
                     (k == Kind::Double ? r / double(q) : double(q) / r) == d;
              v[h] = Wide(int64_t(r));
            }
            if (fits) {
              l.kind = k;
              l.scale = q;
              found = true;
              break;
            }
          }
        }
        if (!found) {
          *why = "a float of node " + nodes[0][i]->name() + " changes with the sizes (" +
                 std::to_string(first.d) + ") but is no count over a small integer, nor its "
                 "reciprocal";
          return std::nullopt;
        }
      } else {
        for (size_t h = 0; h < H; ++h) v[h] = Wide(nums[h][leaf].i);
      }
      l.expr = fit_int(v, symbols, hints, monos);
      if (!l.expr.defined()) {
        std::string vals;
        for (size_t h = 0; h < H; ++h) vals += (h ? ", " : "") + std::to_string(int64_t(v[h]));
        *why = "a number of node " + nodes[0][i]->name() + " (" + vals +
               " at the hints) fits no single k*monomial + d of the sizes";
        return std::nullopt;
      }
      out.leaves.push_back(l);
    }
  }
  out.graph = copy_graph(*traces[0]);
  return out;
}

std::unique_ptr<Graph> instantiate(const SymbolicGraph& s, const std::vector<int64_t>& values) {
  IGNIS_CHECK_VALUE(values.size() == s.symbols.size(), "instantiate: expected ",
                    s.symbols.size(), " sizes, got ", values.size());
  sym::Bindings b;
  for (size_t i = 0; i < values.size(); ++i) b[s.symbols[i]] = values[i];
  auto eval = [&](const SymbolicLeaf& l) { return sym::eval(l.expr, b); };
  return copy_with(
      s,
      [&](const SymbolicLeaf& l) -> std::optional<Value> {
        int64_t v = eval(l);
        if (l.kind == Kind::Int) return Value(v);
        if (l.kind == Kind::Double) return Value(double(v) / double(l.scale));
        IGNIS_CHECK_VALUE(v != 0, "instantiate: a reciprocal of zero");
        return Value(double(l.scale) / double(v));
      },
      [&](graph::TensorMeta& t, size_t first,
          const std::unordered_map<uint32_t, const SymbolicLeaf*>& leaves) {
        for (size_t j = 0; j < t.sizes.size() + t.strides.size(); ++j) {
          auto it = leaves.find(uint32_t(first + j));
          if (it == leaves.end()) continue;
          int64_t v = eval(*it->second);
          if (j < t.sizes.size()) {
            IGNIS_CHECK_VALUE(v >= 0, "instantiate: a size comes out negative (", v, ")");
            t.sizes[j] = v;
          } else {
            t.strides[j - t.sizes.size()] = v;
          }
        }
        t.sym_sizes.clear();
        t.sym_strides.clear();
      });
}

std::optional<std::vector<Value>> inputs_at(const Graph& g, const std::vector<Value>& inputs,
                                            const std::vector<std::optional<int64_t>>& ints,
                                            std::vector<sym::Expr>* symbols, std::string* why) {
  std::vector<Node*> places = g.placeholders();
  IGNIS_CHECK_VALUE(places.size() == inputs.size() && ints.size() == inputs.size(),
                    "inputs_at: the graph has ", places.size(), " placeholders, got ",
                    inputs.size(), " inputs and ", ints.size(), " new ints");
  // By name: a symbol's Expr carries its range, which guards may have
  // narrowed since the placeholder's was made.
  std::unordered_map<std::string, int64_t> values;
  for (size_t i = 0; i < places.size(); ++i) {
    if (!ints[i]) continue;
    sym::Expr s = places[i]->meta().sym_value;
    if (!s.defined() || !s.is_symbol()) {
      *why = "input " + places[i]->name() + " is " +
             (s.defined() ? "Sym(" + sym::str(s) + "), no plain symbol" : "an int of no symbol");
      return std::nullopt;
    }
    values[sym::symbol_name(s)] = *ints[i];
    symbols->push_back(s);
  }
  // Size arithmetic beyond sums and products (t // 128, t % 8, min(t, 64))
  // is a step function of the sizes: constant across the hints, it would be
  // fitted as a constant and be wrong at a size past its next step. Such a
  // graph is traced at each size.
  for (const Node* n : g.nodes()) {
    const graph::NodeMeta& m = n->meta();
    std::vector<sym::Expr> exprs;
    if (m.sym_value.defined()) exprs.push_back(m.sym_value);
    for (const graph::TensorMeta& t : m.tensors) {
      exprs.insert(exprs.end(), t.sym_sizes.begin(), t.sym_sizes.end());
      exprs.insert(exprs.end(), t.sym_strides.begin(), t.sym_strides.end());
    }
    for (sym::Expr e : exprs)
      if (!polynomial(e)) {
        *why = "node " + n->name() + " computes " + sym::str(e) +
               ", size arithmetic beyond sums and products";
        return std::nullopt;
      }
  }
  auto value_of = [&](sym::Expr e) -> std::optional<int64_t> {
    sym::Bindings b;
    for (sym::Expr x : sym::free_symbols(e)) {
      auto it = values.find(sym::symbol_name(x));
      if (it == values.end()) return std::nullopt;
      b[x] = it->second;
    }
    return sym::eval(e, b);
  };
  std::unordered_map<const StorageImpl*, size_t> storages;  // -> inputs sharing it
  for (const Value& v : inputs)
    if (v.is_tensor() && v.to_tensor().defined())
      ++storages[v.to_tensor().impl()->storage().get()];
  std::unordered_map<const TensorImpl*, Value> made;  // one fake for a tensor passed twice
  std::vector<Value> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::NodeMeta& m = places[i]->meta();
    if (ints[i]) {
      out.emplace_back(*ints[i]);
      continue;
    }
    if (!inputs[i].is_tensor() || m.tensors.size() != 1 || m.tensors[0].sym_sizes.empty()) {
      out.push_back(inputs[i]);
      continue;
    }
    const Tensor& t = inputs[i].to_tensor();
    if (auto it = made.find(t.impl()); it != made.end()) {
      out.push_back(it->second);
      continue;
    }
    const graph::TensorMeta& tm = m.tensors[0];
    if (storages[t.impl()->storage().get()] > 1) {  // a tensor passed twice counts twice
      bool shared = false;
      for (size_t j = 0; j < inputs.size(); ++j)
        shared |= j != i && inputs[j].is_tensor() && inputs[j].to_tensor().defined() &&
                  inputs[j].to_tensor().impl() != t.impl() &&
                  inputs[j].to_tensor().impl()->storage().get() == t.impl()->storage().get();
      if (shared) {
        *why = "input " + places[i]->name() + " shares its storage with another input";
        return std::nullopt;
      }
    }
    DimVector sizes, strides;
    // A symbol with no Sym input was specialized after the placeholder was
    // made (`set_replacement s35 = 3`: a guard pins it), so its dims keep
    // the example's values.
    auto add = [&](DimVector& to, sym::Expr e, int64_t example) {
      std::optional<int64_t> v = value_of(e);
      to.push_back(v.value_or(example));
    };
    for (size_t d = 0; d < tm.sym_sizes.size(); ++d) add(sizes, tm.sym_sizes[d], t.size(int64_t(d)));
    if (!tm.sym_strides.empty()) {
      for (size_t d = 0; d < tm.sym_strides.size(); ++d)
        add(strides, tm.sym_strides[d], t.stride(int64_t(d)));
    } else if (t.is_contiguous()) {
      strides = contiguous_strides(sizes);
    } else {
      *why = "input " + places[i]->name() + " has symbolic sizes but fixed strides";
      return std::nullopt;
    }
    Tensor f = make_fake(sizes, strides, t.dtype(), t.user_device());
    if (autograd::requires_grad(t)) autograd::set_requires_grad(f, true);
    made.emplace(t.impl(), Value(f));
    out.emplace_back(f);
  }
  return out;
}

namespace {

graph::Target operator_target(const char* name) {
  auto f = std::make_shared<graph::Foreign>();
  f->module = "_operator";
  f->name = name;
  f->identity = std::string("_operator.") + name;
  f->repr = std::string("<built-in function ") + name + ">";
  return graph::Target(graph::ForeignPtr(std::move(f)));
}

// Nodes computing sym expressions (Sym(...) values) in a graph being
// printed: symbols are placeholders, sums and products operator calls, as
// capture's graphs spell size arithmetic. Made before the insertion point,
// once per expression.
class SymNodes {
 public:
  explicit SymNodes(Graph& g) : g_(g) {}
  void placeholder(sym::Expr symbol) {
    Node* p = g_.placeholder(sym::symbol_name(symbol));
    p->meta().sym_value = symbol;
    made_[symbol] = p;
  }
  Value of(sym::Expr e) {
    if (e.kind() == sym::Kind::Const) return Value(e.value());
    if (auto it = made_.find(e); it != made_.end()) return Value(it->second);
    Value r;
    if (e.kind() == sym::Kind::Mul) {
      r = of(e.args()[0]);
      for (size_t i = 1; i < e.args().size(); ++i) r = call("mul", r, of(e.args()[i]));
    } else if (e.kind() == sym::Kind::Add) {
      for (size_t i = 0; i < e.args().size(); ++i) {
        Value term = of(e.args()[i]);
        int64_t c = e->coeffs[i];
        if (c != 1 && c != -1) term = call("mul", Value(c < 0 ? -c : c), term);
        if (i == 0)
          r = c < 0 ? call("neg", term, Value()) : term;
        else
          r = call(c < 0 ? "sub" : "add", r, term);
      }
      if (e->value) r = call(e->value < 0 ? "sub" : "add", r,
                             Value(e->value < 0 ? -e->value : e->value));
    } else {
      IGNIS_CHECK(false, "printable: an expression beyond sums and products: ", sym::str(e));
    }
    made_[e] = r.to_node();
    r.to_node()->meta().sym_value = e;
    return r;
  }
  // scale / e and e / scale, as floats.
  Value reciprocal(sym::Expr e, int64_t scale) {
    return Value(call("truediv", Value(double(scale)), of(e)));
  }
  Value divided(sym::Expr e, int64_t scale) {
    return Value(call("truediv", of(e), Value(double(scale))));
  }

 private:
  Value call(const char* op, Value a, Value b) {
    std::vector<Value> args{std::move(a)};
    if (!b.is_none()) args.push_back(std::move(b));
    return Value(g_.call_function(operator_target(op), std::move(args)));
  }
  Graph& g_;
  std::unordered_map<sym::Expr, Node*> made_;
};

}  // namespace

std::unique_ptr<Graph> printable(const SymbolicGraph& s) {
  std::unique_ptr<Graph> g = copy_with(
      s, [](const SymbolicLeaf&) -> std::optional<Value> { return std::nullopt; },
      [](graph::TensorMeta& t, size_t first,
         const std::unordered_map<uint32_t, const SymbolicLeaf*>& leaves) {
        bool any = false;
        std::vector<sym::Expr> sizes, strides;
        for (size_t j = 0; j < t.sizes.size() + t.strides.size(); ++j) {
          auto it = leaves.find(uint32_t(first + j));
          any |= it != leaves.end();
          sym::Expr e = it != leaves.end() ? it->second->expr
                                           : sym::Expr(j < t.sizes.size()
                                                           ? t.sizes[j]
                                                           : t.strides[j - t.sizes.size()]);
          (j < t.sizes.size() ? sizes : strides).push_back(e);
        }
        if (any) {
          t.sym_sizes = std::move(sizes);
          t.sym_strides = std::move(strides);
        }
      });
  // The numbers of the arguments as Sym nodes: `view(x, [mul, 16])` after
  // `mul = 3 * s27`, as torch prints its symbolic graphs.
  std::vector<Node*> nodes = g->node_list();
  std::vector<NodeLeaves> by_node = group(s, nodes.size());
  SymNodes sym_nodes(*g);
  g->set_insert_point(nodes.empty() ? nullptr : nodes[0]);
  for (sym::Expr x : s.symbols) sym_nodes.placeholder(x);
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::unordered_map<uint32_t, Value> patch;
    g->set_insert_point(nodes[i]);
    for (const auto& [leaf, l] : by_node[i].by_leaf) {
      if (l->kind == Kind::Int || (l->kind == Kind::Double && l->scale == 1))
        patch.emplace(leaf, sym_nodes.of(l->expr));
      else if (l->kind == Kind::Double)
        patch.emplace(leaf, sym_nodes.divided(l->expr, l->scale));
      else if (l->kind == Kind::Reciprocal)
        patch.emplace(leaf, sym_nodes.reciprocal(l->expr, l->scale));
    }
    if (!patch.empty()) patch_arguments(nodes[i], patch);
  }
  g->set_insert_point(nullptr);
  return g;
}

}  // namespace ignis::aot
