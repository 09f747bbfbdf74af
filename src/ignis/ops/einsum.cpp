// einsum(equation, tensors): torch.einsum, as a composite of views, sums and
// batched products, so autograd, AOT and the compiler see ops they know.
//
// Every operand is brought to one dim order over all the equation's labels
// (the output's labels first, in the output's order, then the summed ones),
// with size 1 where it lacks a label: then operands broadcast against each
// other, and the result's first dims are the output. A label repeated within
// one operand takes that operand's diagonal first. Operands are contracted
// left to right, two at a time, as one bmm: the labels both keep are the
// batch, each side's own kept labels its rows or columns, the labels no later
// operand or the output needs the contracted depth (a label only one side
// has is summed on that side first). Ellipsis dims are labels too, aligned
// from the right and broadcast as torch does.
#include <algorithm>
#include <string>

#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

OpRef diagonal_op("diagonal");
OpRef permute_op("permute");
OpRef unsqueeze_op("unsqueeze");
OpRef reshape_op("reshape");
OpRef sum_dims_op("sum.dim_IntList");
OpRef bmm_op("bmm");

constexpr int kLetters = 52;  // A-Z, then a-z (torch's label order)

int label_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

// One side of the equation's subscripts: its labels, and where its ellipsis
// stands (-1: none).
struct Term {
  std::vector<int> labels;
  int ellipsis_at = -1;
};

Term parse_term(const std::string& s, const std::string& eq) {
  Term t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '.') {
      IGNIS_CHECK_VALUE(s.compare(i, 3, "...") == 0 && t.ellipsis_at < 0,
                        "einsum(): invalid subscript given at index ", i, " in the equation string '",
                        eq, "' (an ellipsis is three dots, at most one per operand)");
      t.ellipsis_at = static_cast<int>(t.labels.size());
      i += 2;
      continue;
    }
    int l = label_of(s[i]);
    IGNIS_CHECK_VALUE(l >= 0, "einsum(): invalid subscript '", s[i],
                      "' in the equation string '", eq, "': subscripts must be letters in [a-zA-Z]");
    t.labels.push_back(l);
  }
  return t;
}

int64_t product(const Tensor& t, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= t.sizes()[d];
  return p;
}

// left and right have one dim per label, in the same order; `keep[d]`: some
// later operand or the output needs label d. Returns the product, summed
// over the labels not kept, in the same dim order (size 1 where summed).
Tensor contract_pair(Tensor left, Tensor right, const std::vector<bool>& keep) {
  const int64_t n = left.dim();
  std::vector<int64_t> batch, rows, cols, depth;
  for (int64_t d = 0; d < n; ++d) {
    const int64_t l = left.sizes()[d], r = right.sizes()[d];
    IGNIS_CHECK(l == r || l == 1 || r == 1, "einsum(): operands do not broadcast with remapped shapes "
                "(a label has sizes ", l, " and ", r, ")");
    // (A size of 0 is a label a side has, as any size but 1.)
    if (keep[d]) {
      if (l != 1 && r != 1) batch.push_back(d);
      else if (r != 1) cols.push_back(d);
      else rows.push_back(d);
    } else if (l != 1 && r != 1) {
      depth.push_back(d);
    } else {
      // A summed label one side lacks: summed on the side that has it.
      if (l != 1) left = sum_dims_op.tensor(left, std::vector<int64_t>{d}, true);
      if (r != 1) right = sum_dims_op.tensor(right, std::vector<int64_t>{d}, true);
      rows.push_back(d);  // size 1 on both sides now
    }
  }
  auto cat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> out;
    for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  const int64_t B = product(left, batch), M = product(left, rows), K = product(left, depth),
                N = product(right, cols);
  // (Each side has size 1 at the other side's own labels, which go last.)
  Tensor a = reshape_op.tensor(permute_op.tensor(left, cat({&batch, &rows, &depth, &cols})),
                               std::vector<int64_t>{B, M, K});
  Tensor b = reshape_op.tensor(permute_op.tensor(right, cat({&batch, &depth, &cols, &rows})),
                               std::vector<int64_t>{B, K, N});
  Tensor p = bmm_op.tensor(a, b);
  // [batch, rows, cols] with the depth's labels as size-1 dims, then the
  // labels' order back.
  std::vector<int64_t> order = cat({&batch, &rows, &cols, &depth}), shape;
  for (int64_t d : batch) shape.push_back(left.sizes()[d]);
  for (int64_t d : rows) shape.push_back(left.sizes()[d]);
  for (int64_t d : cols) shape.push_back(right.sizes()[d]);
  for (size_t i = 0; i < depth.size(); ++i) shape.push_back(1);
  std::vector<int64_t> inverse(n);
  for (int64_t i = 0; i < n; ++i) inverse[order[i]] = i;
  return permute_op.tensor(reshape_op.tensor(p, shape), inverse);
}

void einsum_kernel(const OpHandle&, DispatchKeySet, Stack& s) {
  std::string eq;
  for (char c : s[0].to_string())
    if (c != ' ') eq += c;
  std::vector<Tensor> ops = s[1].to_tensor_list();
  IGNIS_CHECK_VALUE(!ops.empty(), "einsum(): must provide at least one operand");
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> in;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    in.push_back(parse_term(lhs.substr(start, comma - start), eq));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  IGNIS_CHECK_VALUE(in.size() == ops.size(), "einsum(): ", in.size(),
                    " operands in the subscript string, but ", ops.size(), " operands given");

  // Ellipsis dims: the most any operand's ellipsis covers, aligned right.
  int64_t ell = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const int64_t letters = static_cast<int64_t>(in[i].labels.size());
    if (in[i].ellipsis_at >= 0) {
      IGNIS_CHECK_VALUE(ops[i].dim() >= letters, "einsum(): the number of subscripts in the "
                        "equation (", letters, ") is more than the number of dimensions (",
                        ops[i].dim(), ") for operand ", i);
      ell = std::max(ell, ops[i].dim() - letters);
    } else {
      IGNIS_CHECK_VALUE(ops[i].dim() == letters, "einsum(): the number of subscripts in the "
                        "equation (", letters, ") does not match the number of dimensions (",
                        ops[i].dim(), ") for operand ", i, " and no ellipsis was given");
    }
  }
  // Each operand's label per dim (ellipsis dims: kLetters + j).
  std::vector<std::vector<int>> dims(ops.size());
  std::vector<int> count(kLetters, 0);
  for (size_t i = 0; i < in.size(); ++i) {
    const Term& t = in[i];
    const int64_t own = t.ellipsis_at >= 0 ? ops[i].dim() - static_cast<int64_t>(t.labels.size()) : 0;
    for (size_t k = 0; k <= t.labels.size(); ++k) {
      if (static_cast<int>(k) == t.ellipsis_at)
        for (int64_t j = 0; j < own; ++j) dims[i].push_back(kLetters + static_cast<int>(ell - own + j));
      if (k < t.labels.size()) {
        dims[i].push_back(t.labels[k]);
        ++count[t.labels[k]];
      }
    }
  }
  // The output's labels: as written, or the ellipsis then the labels seen
  // once, in order.
  std::vector<int> out;
  if (arrow != std::string::npos) {
    Term o = parse_term(eq.substr(arrow + 2), eq);
    for (size_t k = 0; k <= o.labels.size(); ++k) {
      if (static_cast<int>(k) == o.ellipsis_at)
        for (int64_t j = 0; j < ell; ++j) out.push_back(kLetters + static_cast<int>(j));
      if (k < o.labels.size()) {
        const int l = o.labels[k];
        IGNIS_CHECK_VALUE(count[l] > 0, "einsum(): output subscript ",
                          l < 26 ? char('A' + l) : char('a' + l - 26),
                          " does not appear in the equation for any input operand");
        IGNIS_CHECK_VALUE(std::find(out.begin(), out.end(), l) == out.end(), "einsum(): output subscript ",
                          l < 26 ? char('A' + l) : char('a' + l - 26), " appears more than once in the output");
        out.push_back(l);
      }
    }
  } else {
    for (int64_t j = 0; j < ell; ++j) out.push_back(kLetters + static_cast<int>(j));
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) out.push_back(l);
  }
  // The common dim order: the output's labels, then the others by first use.
  std::vector<int> order = out;
  for (const auto& d : dims)
    for (int l : d)
      if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
  auto pos = [&](int l) {
    return static_cast<int64_t>(std::find(order.begin(), order.end(), l) - order.begin());
  };

  // Each operand in that order: diagonals of repeated labels, then a
  // permutation and size-1 dims for the labels it lacks.
  std::vector<Tensor> t(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    Tensor x = ops[i];
    std::vector<int> d = dims[i];
    for (bool again = true; again;) {
      again = false;
      for (size_t a = 0; a < d.size() && !again; ++a)
        for (size_t b = a + 1; b < d.size() && !again; ++b)
          if (d[a] == d[b]) {
            IGNIS_CHECK(x.sizes()[a] == x.sizes()[b], "einsum(): subscript ",
                        d[a] < 26 ? char('A' + d[a]) : char('a' + d[a] - 26),
                        " is repeated for operand ", i, " but the sizes don't match, ",
                        x.sizes()[a], " != ", x.sizes()[b]);
            x = diagonal_op.tensor(x, int64_t(0), static_cast<int64_t>(a), static_cast<int64_t>(b));
            const int l = d[a];
            d.erase(d.begin() + static_cast<std::ptrdiff_t>(b));
            d.erase(d.begin() + static_cast<std::ptrdiff_t>(a));
            d.push_back(l);  // diagonal puts the diagonal last
            again = true;
          }
    }
    std::vector<int64_t> perm;
    for (int l : order) {
      auto it = std::find(d.begin(), d.end(), l);
      if (it != d.end()) perm.push_back(it - d.begin());
    }
    x = permute_op.tensor(x, perm);
    // x's dims are now the labels it has, in `order`: size 1 for the rest.
    std::vector<int> have;
    for (int l : order)
      if (std::find(d.begin(), d.end(), l) != d.end()) have.push_back(l);
    for (int l : order)
      if (std::find(have.begin(), have.end(), l) == have.end())
        x = unsqueeze_op.tensor(x, pos(l));
    t[i] = x;
  }
  // Left to right; a label is kept while the output or a later operand has it.
  const int64_t n = static_cast<int64_t>(order.size());
  auto keep_after = [&](size_t i) {
    std::vector<bool> keep(n, false);
    for (int l : out) keep[pos(l)] = true;
    for (size_t j = i + 1; j < t.size(); ++j)
      for (int l : dims[j]) keep[pos(l)] = true;
    return keep;
  };
  Tensor r = t[0];
  for (size_t i = 1; i < t.size(); ++i) r = contract_pair(r, t[i], keep_after(i));
  // What is left to sum (one operand, or labels only the first one had).
  std::vector<int64_t> rest;
  for (int64_t d = static_cast<int64_t>(out.size()); d < n; ++d)
    if (r.sizes()[d] != 1) rest.push_back(d);  // (0 too: an empty sum)
  if (!rest.empty()) r = sum_dims_op.tensor(r, rest, true);
  std::vector<int64_t> shape(r.sizes().begin(), r.sizes().begin() + static_cast<std::ptrdiff_t>(out.size()));
  s.clear();
  s.emplace_back(reshape_op.tensor(r, shape));
}

}  // namespace

void register_einsum_ops() {
  def("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor")
      .category(OpCategory::Composite).both().composite(einsum_kernel)
      .doc("Einstein summation over the operands' labelled dims (torch.einsum); contracted left "
           "to right, each pair as one batched product");
}

}  // namespace ignis
