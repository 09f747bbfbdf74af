// The symbolic shape rules: families from the op declarations, then one
// table of named rules. Each rule returns nullopt for arguments it does not
// handle; the tracer then specialises (see sym_shape.h).
#include "ignis/ops/sym_shape.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "ignis/ops/op_def.h"
#include "ignis/sym/print.h"
#include "ignis/sym/simplify.h"

namespace ignis::sym_shape {

using sym::Expr;
using Result = std::optional<std::vector<Sizes>>;

const SymArg* SymCall::arg(size_t i, const char* kw) const {
  if (i < args.size()) return &args[i];
  if (kw)
    for (const auto& [k, v] : kwargs)
      if (k == kw) return &v;
  return nullptr;
}

Sizes contiguous_strides(const Sizes& sizes) {
  Sizes out(sizes.size());
  Expr st = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    out[i] = st;
    st = sym::simplify(st * sizes[i]);
  }
  return out;
}

namespace {

Result one(Sizes s) { return std::vector<Sizes>{std::move(s)}; }

const SymArg* tensor_arg(const SymCall& c, size_t i, const char* kw = nullptr) {
  const SymArg* a = c.arg(i, kw);
  return a && a->kind == SymArg::Tensor ? a : nullptr;
}

std::optional<int64_t> const_int(const SymArg* a) {
  if (a && a->kind == SymArg::Int && a->value.is_const()) return a->value.value();
  if (a && a->kind == SymArg::Bool) return a->flag ? 1 : 0;
  return std::nullopt;
}

std::optional<Expr> int_expr(const SymArg* a) {
  if (a && a->kind == SymArg::Int) return a->value;
  return std::nullopt;
}

// A dim argument normalised to [0, rank).
std::optional<int64_t> dim_of(const SymArg* a, size_t rank) {
  auto d = const_int(a);
  if (!d) return std::nullopt;
  int64_t r = static_cast<int64_t>(rank);
  int64_t v = *d < 0 ? *d + r : *d;
  if (v < 0 || v >= std::max<int64_t>(r, 1)) return std::nullopt;
  return v;
}

// The int list of a call that takes one as varargs or as one sequence
// (x.view(2, 3) / x.view((2, 3)) / ignis.zeros(2, 3) / ignis.zeros([2, 3])),
// starting at positional `start` (or keyword `kw`).
std::optional<Sizes> int_list(const SymCall& c, size_t start, const char* kw) {
  const SymArg* first = c.arg(start, kw);
  if (!first) return std::nullopt;
  std::vector<const SymArg*> items;
  if (first->kind == SymArg::List) {
    for (const SymArg& e : first->items) items.push_back(&e);
  } else {
    for (size_t i = start; i < c.args.size(); ++i) items.push_back(&c.args[i]);
  }
  Sizes out;
  for (const SymArg* e : items) {
    auto v = int_expr(e);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

Expr product(const Sizes& s, size_t from = 0, size_t to = SIZE_MAX) {
  Expr p = 1;
  for (size_t i = from; i < std::min(to, s.size()); ++i) p = p * s[i];
  return sym::simplify(p);
}

}  // namespace

// Broadcasting (numpy's rule). Sizes that must match go through the env:
// s0 against s1 guards Eq(s0, s1); a symbol is never 1 (>= 2 by its range;
// an unbacked one by torch's size-oblivious rule).
std::optional<Sizes> broadcast(const std::vector<const Sizes*>& shapes, sym::ShapeEnv& env) {
  size_t rank = 0;
  for (const Sizes* s : shapes) rank = std::max(rank, s->size());
  Sizes out(rank, Expr(1));
  for (size_t i = 0; i < rank; ++i) {
    Expr cur = 1;
    for (const Sizes* s : shapes) {
      if (s->size() + i < rank) continue;
      Expr d = (*s)[s->size() - rank + i];
      if (d.is_const(1)) continue;
      if (cur.is_const(1)) {
        cur = d;
        continue;
      }
      if (d == cur) continue;
      if (!env.expect_equal(cur, d)) return std::nullopt;
      if (d.is_const()) cur = d;  // prefer the constant
    }
    out[i] = env.replace(cur);
  }
  return out;
}

std::string str(const Sizes& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + sym::str(sizes[i]);
  return out + "]";
}

namespace {

std::vector<const Sizes*> tensor_shapes(const SymCall& c) {
  std::vector<const Sizes*> out;
  for (const SymArg& a : c.args)
    if (a.kind == SymArg::Tensor) out.push_back(&a.sizes);
  for (const auto& kv : c.kwargs)
    if (kv.second.kind == SymArg::Tensor) out.push_back(&kv.second.sizes);
  return out;
}

Result pointwise(const SymCall& c, sym::ShapeEnv& env) {
  auto shapes = tensor_shapes(c);
  if (shapes.empty()) return std::nullopt;
  auto b = broadcast(shapes, env);
  if (!b) return std::nullopt;
  return one(*b);
}

Result same_as_first(const SymCall& c, sym::ShapeEnv&) {
  auto shapes = tensor_shapes(c);
  if (shapes.empty()) return std::nullopt;
  return one(*shapes[0]);
}

Result reduction(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  const SymArg* dim = c.arg(1, "dim");
  if (dim && dim->kind == SymArg::Tensor) return pointwise(c, env);  // max(a, b)
  const Sizes& in = self->sizes;
  auto keep = const_int(c.arg(2, "keepdim"));
  bool keepdim = keep && *keep;
  std::vector<bool> reduce(in.size(), false);
  bool two_outputs = false;
  if (!dim || dim->kind == SymArg::None || dim->kind == SymArg::Bool) {
    if (c.name == "max" || c.name == "min" || c.name == "median") {
      if (dim && dim->kind != SymArg::None) return std::nullopt;
    }
    std::fill(reduce.begin(), reduce.end(), true);
    keepdim = keepdim && dim && dim->kind != SymArg::Bool;
  } else if (dim->kind == SymArg::List) {
    for (const SymArg& d : dim->items) {
      auto v = dim_of(&d, in.size());
      if (!v) return std::nullopt;
      reduce[*v] = true;
    }
  } else {
    auto v = dim_of(dim, in.size());
    if (!v) return std::nullopt;
    if (in.empty()) return one({});
    reduce[*v] = true;
    two_outputs = c.name == "max" || c.name == "min" || c.name == "median" || c.name == "mode" ||
                  c.name == "sort" || c.name == "kthvalue";
  }
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduce[i]) out.push_back(in[i]);
    else if (keepdim) out.push_back(1);
  }
  if (two_outputs) return std::vector<Sizes>{out, out};
  return one(out);
}

Result view(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  auto shape = int_list(c, 1, "shape");
  if (!shape) shape = int_list(c, 1, "size");
  if (!shape) return std::nullopt;
  int infer = -1;
  for (size_t i = 0; i < shape->size(); ++i)
    if ((*shape)[i].is_const(-1)) {
      if (infer >= 0) return std::nullopt;
      infer = static_cast<int>(i);
    }
  if (infer >= 0) {
    Expr known = 1;
    for (size_t i = 0; i < shape->size(); ++i)
      if (static_cast<int>(i) != infer) known = known * (*shape)[i];
    (*shape)[infer] = sym::simplify(sym::floordiv(product(self->sizes), sym::simplify(known)));
  }
  return one(*shape);
}

Result flatten(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  const Sizes& in = self->sizes;
  if (in.empty()) return one({1});
  const SymArg* s = c.arg(1, "start_dim");
  const SymArg* e = c.arg(2, "end_dim");
  auto start = s ? dim_of(s, in.size()) : std::optional<int64_t>(0);
  auto end = e ? dim_of(e, in.size()) : std::optional<int64_t>(in.size() - 1);
  if (!start || !end || *start > *end) return std::nullopt;
  Sizes out(in.begin(), in.begin() + *start);
  out.push_back(product(in, *start, *end + 1));
  out.insert(out.end(), in.begin() + *end + 1, in.end());
  return one(out);
}

Result permute(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  auto dims = int_list(c, 1, "dims");
  if (!dims || dims->size() != self->sizes.size()) return std::nullopt;
  Sizes out;
  for (const Expr& d : *dims) {
    SymArg a;
    a.kind = SymArg::Int;
    a.value = d;
    auto v = dim_of(&a, self->sizes.size());
    if (!v) return std::nullopt;
    out.push_back(self->sizes[*v]);
  }
  return one(out);
}

Result transpose(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  Sizes out = self->sizes;
  if (c.name == "t") {
    if (out.size() == 2) std::swap(out[0], out[1]);
    return one(out);
  }
  if (c.name == "T") {
    std::reverse(out.begin(), out.end());
    return one(out);
  }
  if (c.name == "mT" || c.name == "mH") {
    if (out.size() < 2) return std::nullopt;
    std::swap(out[out.size() - 1], out[out.size() - 2]);
    return one(out);
  }
  auto a = dim_of(c.arg(1, "dim0"), out.size());
  auto b = dim_of(c.arg(2, "dim1"), out.size());
  if (!a || !b) return std::nullopt;
  std::swap(out[*a], out[*b]);
  return one(out);
}

// view_as_real appends the pair's dim of 2; view_as_complex drops it.
Result complex_view(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  Sizes out = self->sizes;
  if (c.name == "view_as_real") {
    out.push_back(Expr(2));
    return one(out);
  }
  if (out.empty() || !out.back().is_const(2)) return std::nullopt;
  out.pop_back();
  return one(out);
}

Result unsqueeze(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  Sizes out = self->sizes;
  auto d = dim_of(c.arg(1, "dim"), out.size() + 1);
  if (!d) return std::nullopt;
  out.insert(out.begin() + *d, Expr(1));
  return one(out);
}

Result squeeze(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  const Sizes& in = self->sizes;
  const SymArg* dim = c.arg(1, "dim");
  std::vector<bool> drop(in.size(), false);
  auto is_one = [&](const Expr& e) -> std::optional<bool> {
    if (e.is_const()) return e.is_const(1);
    if (env.hint_of(e) == 1) return std::nullopt;  // a symbolic size that is 1 now
    return false;
  };
  if (!dim || dim->kind == SymArg::None) {
    for (size_t i = 0; i < in.size(); ++i) {
      auto o = is_one(in[i]);
      if (!o) return std::nullopt;
      drop[i] = *o;
    }
  } else {
    auto d = dim_of(dim, in.size());
    if (!d) return std::nullopt;
    if (in.empty()) return one({});
    auto o = is_one(in[*d]);
    if (!o) return std::nullopt;
    drop[*d] = *o;
  }
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return one(out);
}

Result expand(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  if (c.name == "expand_as") {
    const SymArg* other = tensor_arg(c, 1, "other");
    return other ? one(other->sizes) : std::nullopt;
  }
  auto shape = int_list(c, 1, "size");
  if (!shape || shape->size() < self->sizes.size()) return std::nullopt;
  size_t lead = shape->size() - self->sizes.size();
  for (size_t i = lead; i < shape->size(); ++i)
    if ((*shape)[i].is_const(-1)) (*shape)[i] = self->sizes[i - lead];
  return one(*shape);
}

// The length of x[start:stop:step] along a dim of size n (Python's slice
// clamping, decided through the env where it depends on symbols).
std::optional<Expr> slice_length(const SymArg& sl, Expr n, sym::ShapeEnv& env) {
  if (sl.items.size() != 3) return std::nullopt;
  auto part = [&](const SymArg& a, Expr dflt) -> std::optional<Expr> {
    if (a.kind == SymArg::None) return dflt;
    return int_expr(&a);
  };
  auto step = part(sl.items[2], Expr(1));
  if (!step || !step->is_const() || step->value() <= 0) return std::nullopt;
  auto start = part(sl.items[0], Expr(0));
  auto stop = part(sl.items[1], n);
  if (!start || !stop) return std::nullopt;
  auto clamp = [&](Expr v) {
    if (v.is_const() && v.value() < 0) v = sym::simplify(n + v);  // negative: from the end
    if (env.evaluate(sym::lt(v, Expr(0)))) return Expr(0);
    if (env.evaluate(sym::lt(n, v))) return n;
    return env.replace(v);
  };
  Expr a = clamp(*start), b = clamp(*stop);
  // x[:u0] with 0 <= u0 <= n known (ignis._check): b - a, which is 0 when
  // they meet; asking a < b would be a decision the data make. (Sizes with
  // guards keep deciding it, as torch does.)
  const bool ordered = env.has_unbacked(b - a) && env.decided(sym::le(a, b)) == 1;
  if (!ordered && !env.evaluate(sym::lt(a, b))) return Expr(0);
  int64_t k = step->value();
  return env.replace(sym::floordiv(b - a + (k - 1), Expr(k)));
}

// x[...] with ints, slices, None, Ellipsis and integer index tensors
// (boolean masks never reach a rule: capture records them with an unbacked
// size or breaks). Index tensors broadcast together; numpy's rule places
// their shape where they stand when they are adjacent, else first.
Result getitem(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* self = tensor_arg(c, 0);
  const SymArg* idx = c.arg(1, nullptr);
  if (!self || !idx) return std::nullopt;
  std::vector<const SymArg*> items;
  if (idx->kind == SymArg::List) {
    for (const SymArg& e : idx->items) items.push_back(&e);
  } else {
    items.push_back(idx);
  }
  const Sizes& in = self->sizes;
  size_t consumed = 0;
  bool ints = false;
  std::vector<const Sizes*> index_shapes;
  std::vector<size_t> index_at;
  for (size_t i = 0; i < items.size(); ++i) {
    const SymArg* it = items[i];
    if (it->kind == SymArg::Int || it->kind == SymArg::Slice) {
      ++consumed;
      ints |= it->kind == SymArg::Int;
    } else if (it->kind == SymArg::Tensor) {
      ++consumed;
      index_shapes.push_back(&it->sizes);
      index_at.push_back(i);
    } else if (it->kind != SymArg::None && it->kind != SymArg::Ellipsis) {
      return std::nullopt;
    }
  }
  if (consumed > in.size()) return std::nullopt;
  std::optional<Sizes> gathered;
  bool adjacent = true;
  if (!index_shapes.empty()) {
    if (ints) return std::nullopt;  // an int among index tensors counts as one (numpy): not modelled
    gathered = broadcast(index_shapes, env);
    if (!gathered) return std::nullopt;
    adjacent = index_at.back() - index_at.front() + 1 == index_at.size();
  }
  Sizes out;
  if (gathered && !adjacent) out = *gathered;
  size_t d = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const SymArg* it = items[i];
    switch (it->kind) {
      case SymArg::Int: ++d; break;
      case SymArg::None: out.push_back(1); break;
      case SymArg::Ellipsis:
        for (size_t k = 0; k < in.size() - consumed; ++k) out.push_back(in[d++]);
        consumed = in.size();  // a second Ellipsis adds nothing
        break;
      case SymArg::Slice: {
        auto len = slice_length(*it, in[d++], env);
        if (!len) return std::nullopt;
        out.push_back(*len);
        break;
      }
      case SymArg::Tensor:
        ++d;
        if (adjacent && i == index_at.front()) out.insert(out.end(), gathered->begin(), gathered->end());
        break;
      default: return std::nullopt;
    }
  }
  while (d < in.size()) out.push_back(in[d++]);
  return one(out);
}

Result narrow(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  auto d = dim_of(c.arg(1, "dim"), self->sizes.size());
  auto len = int_expr(c.arg(3, "length"));
  if (!d || !len) return std::nullopt;
  Sizes out = self->sizes;
  out[*d] = *len;
  return one(out);
}

Result select(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  auto d = dim_of(c.arg(1, "dim"), self->sizes.size());
  if (!d) return std::nullopt;
  Sizes out = self->sizes;
  out.erase(out.begin() + *d);
  return one(out);
}

Result split(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* self = tensor_arg(c, 0, "input");
  if (!self) return std::nullopt;
  const Sizes& in = self->sizes;
  const SymArg* dim = c.arg(2, "dim");
  auto d = dim ? dim_of(dim, in.size()) : std::optional<int64_t>(0);
  if (!d) return std::nullopt;
  Expr n = in[*d];
  std::vector<Sizes> outs;
  auto piece = [&](Expr len) {
    Sizes s = in;
    s[*d] = env.replace(len);
    outs.push_back(s);
  };
  if (c.name == "unbind") {
    auto u = dim_of(c.arg(1, "dim"), in.size());
    if (!u || !in[*u].is_const()) return std::nullopt;
    Sizes s = in;
    s.erase(s.begin() + *u);
    return std::vector<Sizes>(in[*u].value(), s);
  }
  const SymArg* what = c.arg(1, c.name == "chunk" ? "chunks" : "split_size_or_sections");
  if (!what) what = c.arg(1, "split_size");
  if (!what) return std::nullopt;
  if (what->kind == SymArg::List) {
    for (const SymArg& e : what->items) {
      auto v = int_expr(&e);
      if (!v) return std::nullopt;
      piece(*v);
    }
    return outs;
  }
  auto k = int_expr(what);
  if (!k) return std::nullopt;
  Expr size = *k;
  if (c.name == "chunk") {
    if (!k->is_const() || k->value() <= 0) return std::nullopt;
    size = sym::floordiv(n + (k->value() - 1), *k);  // ceil(n / chunks)
  }
  // Pieces of `size` and a remainder; how many depends on n: decided at the hints.
  int64_t nh = env.hint_of(n), sh = env.hint_of(size);
  if (sh <= 0) return std::nullopt;
  int64_t count = (nh + sh - 1) / sh;
  if (!n.is_const() || !size.is_const()) {
    // The count of pieces must stay what it is: guard it.
    if (!env.evaluate(sym::eq(sym::floordiv(n + (size - 1), size), Expr(count)))) return std::nullopt;
  }
  for (int64_t i = 0; i + 1 < count; ++i) piece(size);
  if (count > 0) piece(n - size * (count - 1));
  return outs;
}

Result matmul(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* a = tensor_arg(c, 0, "input");
  const SymArg* b = tensor_arg(c, 1, "other");
  if (!b) b = tensor_arg(c, 1, "mat2");
  if (!a || !b) return std::nullopt;
  Sizes x = a->sizes, y = b->sizes;
  if (x.empty() || y.empty()) return std::nullopt;
  bool x1 = x.size() == 1, y1 = y.size() == 1;
  if (x1) x.insert(x.begin(), Expr(1));
  if (y1) y.push_back(Expr(1));
  if (!env.expect_equal(x.back(), y[y.size() - 2])) return std::nullopt;
  Sizes xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
  auto batch = broadcast({&xb, &yb}, env);
  if (!batch) return std::nullopt;
  Sizes out = *batch;
  if (!x1) out.push_back(x[x.size() - 2]);
  if (!y1) out.push_back(y.back());
  return one(out);
}

Result linear(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* x = tensor_arg(c, 0, "input");
  const SymArg* w = tensor_arg(c, 1, "weight");
  if (!x || !w || x->sizes.empty() || w->sizes.size() != 2) return std::nullopt;
  if (!env.expect_equal(x->sizes.back(), w->sizes[1])) return std::nullopt;
  Sizes out = x->sizes;
  out.back() = w->sizes[0];
  return one(out);
}

Result addmm(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* a = tensor_arg(c, 1, "mat1");
  const SymArg* b = tensor_arg(c, 2, "mat2");
  if (!a || !b || a->sizes.size() != 2 || b->sizes.size() != 2) return std::nullopt;
  return one({a->sizes[0], b->sizes[1]});
}

Result cat(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* ts = c.arg(0, "tensors");
  if (!ts || ts->kind != SymArg::List || ts->items.empty()) return std::nullopt;
  std::vector<const Sizes*> shapes;
  for (const SymArg& t : ts->items) {
    if (t.kind != SymArg::Tensor) return std::nullopt;
    shapes.push_back(&t.sizes);
  }
  bool stack = c.name == "stack";
  size_t rank = shapes[0]->size();
  const SymArg* dim = c.arg(1, "dim");
  auto d = dim ? dim_of(dim, rank + (stack ? 1 : 0)) : std::optional<int64_t>(0);
  if (!d) return std::nullopt;
  Sizes out = *shapes[0];
  if (stack) {
    for (const Sizes* s : shapes) {
      if (s->size() != rank) return std::nullopt;
      for (size_t i = 0; i < rank; ++i)
        if (!env.expect_equal(out[i], (*s)[i])) return std::nullopt;
    }
    out.insert(out.begin() + *d, Expr(static_cast<int64_t>(shapes.size())));
    return one(out);
  }
  Expr total = 0;
  for (const Sizes* s : shapes) {
    if (s->size() == 1 && (*s)[0].is_const(0) && rank != 1) continue;  // legacy empty tensor
    if (s->size() != rank) return std::nullopt;
    for (size_t i = 0; i < rank; ++i)
      if (static_cast<int64_t>(i) != *d && !env.expect_equal(out[i], (*s)[i])) return std::nullopt;
    total = total + (*s)[*d];
  }
  out[*d] = env.replace(total);
  return one(out);
}

Result embedding(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* idx = tensor_arg(c, 0, "input");
  const SymArg* w = tensor_arg(c, 1, "weight");
  if (!idx || !w || w->sizes.size() != 2) return std::nullopt;
  Sizes out = idx->sizes;
  out.push_back(w->sizes[1]);
  return one(out);
}

Result sdpa(const SymCall& c, sym::ShapeEnv&) {
  const SymArg* q = tensor_arg(c, 0, "query");
  const SymArg* v = tensor_arg(c, 2, "value");
  if (!q || !v || q->sizes.empty() || v->sizes.empty()) return std::nullopt;
  Sizes out = q->sizes;
  out.back() = v->sizes.back();
  return one(out);
}

Result loss(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* r = nullptr;
  for (const auto& [k, v] : c.kwargs)
    if (k == "reduction") r = &v;
  std::string reduction = r && r->kind == SymArg::Str ? r->text : "mean";
  if (reduction != "none") return one({});
  if (c.name == "cross_entropy" || c.name == "nll_loss") {
    const SymArg* t = tensor_arg(c, 1, "target");
    const SymArg* x = tensor_arg(c, 0, "input");
    if (!t || !x) return std::nullopt;
    if (x->sizes.size() == t->sizes.size()) {  // class probabilities
      Sizes out = x->sizes;
      out.erase(out.begin() + (out.size() > 1 ? 1 : 0));
      return one(out);
    }
    return one(t->sizes);
  }
  return pointwise(c, env);
}

Result factory(const SymCall& c, sym::ShapeEnv&) {
  auto shape = int_list(c, 0, "size");
  if (!shape) return std::nullopt;
  if (c.name == "full" && shape->size() > 0) {
    const SymArg* first = c.arg(0, "size");
    if (!first || first->kind != SymArg::List) return std::nullopt;
    shape = int_list(c, 0, "size");
    shape->resize(first->items.size());
  }
  return one(*shape);
}

Result new_factory(const SymCall& c, sym::ShapeEnv&) {
  if (!tensor_arg(c, 0)) return std::nullopt;
  auto shape = int_list(c, 1, "size");
  if (!shape) return std::nullopt;
  if (c.name == "new_full") {
    const SymArg* first = c.arg(1, "size");
    if (!first || first->kind != SymArg::List) return std::nullopt;
    shape->resize(first->items.size());
  }
  return one(*shape);
}

Result arange(const SymCall& c, sym::ShapeEnv& env) {
  std::vector<Expr> nums;
  for (const SymArg& a : c.args) {
    auto v = int_expr(&a);
    if (!v) return std::nullopt;  // float bounds: no rule
    nums.push_back(*v);
  }
  Expr start = 0, end, step = 1;
  for (const auto& [k, v] : c.kwargs) {
    auto e = int_expr(&v);
    if (k == "start" || k == "end" || k == "step") {
      if (!e) return std::nullopt;
      if (k == "start") start = *e;
      if (k == "end") end = *e;
      if (k == "step") step = *e;
    }
  }
  if (nums.size() == 1) end = nums[0];
  else if (nums.size() >= 2) {
    start = nums[0];
    end = nums[1];
    if (nums.size() == 3) step = nums[2];
  }
  if (!end.defined() || !step.is_const() || step.value() <= 0) return std::nullopt;
  int64_t k = step.value();
  if (!env.evaluate(sym::lt(start, end))) return one({Expr(0)});
  return one({env.replace(sym::floordiv(end - start + (k - 1), Expr(k)))});
}

// F.pad(input, pad): pad[2i], pad[2i+1] widen dim -1-i (every mode).
Result pad(const SymCall& c, sym::ShapeEnv& env) {
  const SymArg* self = tensor_arg(c, 0, "input");
  const SymArg* p = c.arg(1, "pad");
  if (!self || !p || p->kind != SymArg::List || p->items.size() % 2 != 0 ||
      p->items.size() / 2 > self->sizes.size())
    return std::nullopt;
  Sizes out = self->sizes;
  for (size_t i = 0; i < p->items.size() / 2; ++i) {
    auto lo = int_expr(&p->items[2 * i]);
    auto hi = int_expr(&p->items[2 * i + 1]);
    if (!lo || !hi) return std::nullopt;
    Expr& d = out[out.size() - 1 - i];
    d = env.replace(d + *lo + *hi);
  }
  return one(out);
}

using Rule = std::function<Result(const SymCall&, sym::ShapeEnv&)>;

// Names with a rule of their own (the families cover the rest).
const std::unordered_map<std::string, Rule>& table() {
  static const auto* t = [] {
    auto* m = new std::unordered_map<std::string, Rule>();
    auto add = [&](std::initializer_list<const char*> names, Rule r) {
      for (const char* n : names) (*m)[n] = r;
    };
    add({"view", "reshape"}, view);
    add({"flatten"}, flatten);
    add({"permute"}, permute);
    add({"transpose", "swapaxes", "t", "T", "mT", "mH"}, transpose);
    add({"unsqueeze"}, unsqueeze);
    add({"view_as_real", "view_as_complex"}, complex_view);
    add({"squeeze"}, squeeze);
    add({"expand", "expand_as"}, expand);
    add({"getitem"}, getitem);
    add({"narrow"}, narrow);
    add({"select"}, select);
    add({"split", "chunk", "unbind"}, split);
    add({"matmul", "mm", "bmm"}, matmul);
    add({"linear"}, linear);
    add({"addmm"}, addmm);
    add({"cat", "concat", "concatenate", "stack"}, cat);
    add({"embedding"}, embedding);
    add({"scaled_dot_product_attention"}, sdpa);
    add({"cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
         "binary_cross_entropy", "binary_cross_entropy_with_logits"},
        loss);
    add({"zeros", "ones", "empty", "rand", "randn", "full"}, factory);
    add({"new_zeros", "new_ones", "new_empty", "new_full"}, new_factory);
    add({"arange"}, arange);
    add({"pad", "constant_pad_nd"}, pad);
    // Same shape as the first tensor (activations, normalisations, casts,
    // in-place updates, *_like factories).
    add({"softmax", "log_softmax", "dropout", "layer_norm", "rms_norm", "group_norm", "batch_norm",
         "instance_norm", "relu", "relu6", "gelu", "silu", "sigmoid", "tanh", "softplus", "elu",
         "leaky_relu", "mish", "hardtanh", "hardswish", "hardsigmoid", "selu", "celu", "logsigmoid",
         "contiguous", "clone", "detach", "to", "float", "half", "double", "bfloat16", "int", "long",
         "bool", "type", "type_as", "cpu", "cuda", "zeros_like", "ones_like", "empty_like",
         "rand_like", "randn_like", "full_like", "cumsum", "cumprod", "tril", "triu", "flip", "roll",
         "requires_grad_", "fill_", "zero_", "copy_", "normal_", "uniform_", "masked_fill_",
         "clamp_", "add_", "sub_", "mul_", "div_", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
         "square", "sin", "cos", "reciprocal", "erf", "log1p", "expm1", "sign", "floor", "ceil",
         "round", "trunc", "frac", "pos", "invert", "not_", "logical_not", "nan_to_num",
         "clamp", "clip", "normalize", "softmin", "glu_", "alpha_dropout", "feature_alpha_dropout",
         "real", "imag", "conj", "conj_physical", "resolve_conj", "angle"},
        same_as_first);
    // Broadcasting over every tensor argument.
    add({"add", "sub", "mul", "truediv", "div", "floordiv", "pow", "mod", "eq", "ne", "lt", "le",
         "gt", "ge", "and_", "or_", "xor", "iadd", "isub", "imul", "itruediv", "ifloordiv", "ipow",
         "iand", "ior", "ixor", "maximum", "minimum", "where", "masked_fill", "lerp", "addcmul",
         "addcdiv", "atan2", "remainder", "fmod", "logical_and", "logical_or", "logical_xor",
         "bitwise_and", "bitwise_or", "bitwise_xor", "true_divide", "multiply", "subtract",
         "divide", "hypot", "copysign", "float_power", "nextafter", "polar", "complex"},
        pointwise);
    add({"sum", "mean", "amax", "amin", "max", "min", "prod", "var", "std", "argmax", "argmin",
         "logsumexp", "all", "any", "norm", "median", "nansum", "nanmean", "count_nonzero"},
        reduction);
    return m;
  }();
  return *t;
}

// The family of an op name from its declaration (first declaration of the
// name wins; overloads share a category).
const OpDef* declared(const std::string& name) {
  static std::once_flag once;
  static std::unordered_map<std::string, const OpDef*>* by_name = nullptr;
  std::call_once(once, [] {
    by_name = new std::unordered_map<std::string, const OpDef*>();
    for (const OpDef* d : all_op_defs()) {
      std::string n = d->schema.substr(0, d->schema.find('('));
      n = n.substr(0, n.find('.'));
      by_name->emplace(n, d);
      if (!d->python_name.empty()) by_name->emplace(d->python_name, d);
    }
  });
  auto it = by_name->find(name);
  return it == by_name->end() ? nullptr : it->second;
}

}  // namespace

std::optional<std::vector<Sizes>> output_sizes(const SymCall& call, sym::ShapeEnv& env) {
  const auto& t = table();
  auto it = t.find(call.name);
  if (it != t.end()) return it->second(call, env);
  if (const OpDef* d = declared(call.name)) {
    if (d->category == OpCategory::Pointwise) return pointwise(call, env);
    if (d->category == OpCategory::Reduction) return reduction(call, env);
  }
  return std::nullopt;
}

}  // namespace ignis::sym_shape
