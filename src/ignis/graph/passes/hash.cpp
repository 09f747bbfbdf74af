#include "ignis/graph/passes/hash.h"

#include <cstdio>
#include <cstring>

#include "ignis/core/error.h"

namespace ignis::graph {

namespace {

// Two FNV-1a streams with different offset bases, finalised with a
// splitmix64 mix: a 128-bit key without a crypto dependency.
class Hasher {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      a_ = (a_ ^ b[i]) * 0x100000001b3ULL;
      b_ = (b_ ^ b[i]) * 0x100000001b3ULL;
      b_ ^= b_ >> 29;
    }
  }
  void u8(uint8_t v) { bytes(&v, 1); }
  void i64(int64_t v) { bytes(&v, sizeof v); }
  void text(const std::string& s) {
    i64(static_cast<int64_t>(s.size()));
    bytes(s.data(), s.size());
  }
  uint64_t first() const { return mix(a_); }
  std::string hex() const {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(mix(a_)),
                  static_cast<unsigned long long>(mix(b_)));
    return buf;
  }

 private:
  static uint64_t mix(uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t a_ = 0xcbf29ce484222325ULL;
  uint64_t b_ = 0x84222325cbf29ce4ULL;
};

// numbers: whether sizes, strides and the graph's int and float arguments
// count (shape_free_hash leaves them out; ranks, dtypes and devices stay).
void hash_meta(Hasher& h, const TensorMeta& m, bool numbers = true) {
  h.i64(static_cast<int64_t>(m.sizes.size()));
  if (numbers)
    for (SymInt s : m.sizes) h.i64(s);
  h.i64(static_cast<int64_t>(m.strides.size()));
  if (numbers)
    for (SymInt s : m.strides) h.i64(s);
  h.u8(static_cast<uint8_t>(m.dtype));
  h.u8(static_cast<uint8_t>(m.device.type));
  h.i64(m.device.index);
  if (!numbers) return;
  // A symbolic shape is part of what the graph means (f32[s0, 3] is not f32[4, 3]).
  // (Static metas hash as before.)
  if (m.sym_sizes.empty()) return;
  h.i64(static_cast<int64_t>(m.sym_sizes.size()));
  for (const sym::Expr& e : m.sym_sizes) h.i64(static_cast<int64_t>(e.stable_hash()));
  h.i64(static_cast<int64_t>(m.sym_strides.size()));
  for (const sym::Expr& e : m.sym_strides) h.i64(static_cast<int64_t>(e.stable_hash()));
}

// Contents of a CPU tensor, element by element in logical order.
void hash_tensor_data(Hasher& h, const Tensor& t) {
  if (!t.device().is_cpu() || t.numel() == 0) return;
  const size_t isz = element_size(t.dtype());
  const auto* base = static_cast<const char*>(t.data_ptr());
  const int64_t nd = t.dim();
  std::vector<int64_t> idx(nd, 0);
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (int64_t d = 0; d < nd; ++d) off += idx[d] * t.strides()[d];
    h.bytes(base + off * static_cast<int64_t>(isz), isz);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
}

void hash_value(Hasher& h, const Value& v,
                const std::unordered_map<const Node*, int64_t>& position, bool numbers = true) {
  h.u8(static_cast<uint8_t>(v.kind()));
  switch (v.kind()) {
    case Value::Kind::None: case Value::Kind::Ellipsis: return;
    case Value::Kind::Bool: h.u8(v.to_bool()); return;
    case Value::Kind::Int:
      if (numbers) h.i64(v.to_int());
      return;
    case Value::Kind::Double: {
      if (!numbers) return;
      double d = v.to_double();
      h.bytes(&d, sizeof d);
      return;
    }
    case Value::Kind::Str: h.text(v.to_str()); return;
    case Value::Kind::Dtype: h.u8(static_cast<uint8_t>(v.to_dtype())); return;
    case Value::Kind::MemoryFormat: h.u8(static_cast<uint8_t>(v.to_memory_format())); return;
    case Value::Kind::Device:
      h.u8(static_cast<uint8_t>(v.to_device().type));
      h.i64(v.to_device().index);
      return;
    case Value::Kind::Tensor:
      hash_meta(h, TensorMeta::of(v.to_tensor()), numbers);
      if (numbers) hash_tensor_data(h, v.to_tensor());
      return;
    case Value::Kind::Node: {
      auto it = position.find(v.to_node());
      // A reference to a node outside the graph (lint rejects those) hashes
      // as -1 rather than by address, keeping the hash process independent.
      h.i64(it == position.end() ? -1 : it->second);
      return;
    }
    case Value::Kind::Foreign: h.text(v.to_foreign().identity); return;
    default:
      h.i64(static_cast<int64_t>(v.items().size()));
      for (const Value& e : v.items()) hash_value(h, e, position, numbers);
  }
}

void hash_node(Hasher& h, const Node& n, const std::unordered_map<const Node*, int64_t>& position,
               bool numbers = true) {
  h.u8(static_cast<uint8_t>(n.op()));
  // Placeholder names are the graph's argument names: not structure.
  if (n.op() == OpKind::Placeholder) {
    h.text("");
  } else {
    h.text(n.target().identity());
  }
  h.i64(static_cast<int64_t>(n.args().size()));
  for (const Value& a : n.args()) hash_value(h, a, position, numbers);
  h.i64(static_cast<int64_t>(n.kwargs().size()));
  for (const auto& [k, v] : n.kwargs()) {
    h.text(k);
    hash_value(h, v, position, numbers);
  }
}

}  // namespace

uint64_t node_hash(const Node& n, const std::unordered_map<const Node*, int64_t>& position) {
  Hasher h;
  hash_node(h, n, position);
  return h.first();
}

namespace {

std::string graph_hash(const Graph& g, bool numbers) {
  Hasher h;
  std::unordered_map<const Node*, int64_t> position;
  int64_t i = 0;
  for (Node* n : g.nodes()) {
    position[n] = i++;
    hash_node(h, *n, position, numbers);
    if (n->op() == OpKind::Placeholder) {
      const NodeMeta& m = n->meta();
      h.i64(static_cast<int64_t>(m.tensors.size()));
      h.u8(m.tuple_output);
      for (const TensorMeta& t : m.tensors) hash_meta(h, t, numbers);
      if (numbers && m.sym_value.defined())
        h.i64(static_cast<int64_t>(m.sym_value.stable_hash()));
      h.text(n->type_repr);
    }
  }
  return h.hex();
}

}  // namespace

std::string structural_hash(const Graph& g) { return graph_hash(g, /*numbers=*/true); }

std::string shape_free_hash(const Graph& g) { return graph_hash(g, /*numbers=*/false); }

}  // namespace ignis::graph
