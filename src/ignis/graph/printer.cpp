// Text forms of a graph (see printer.h). The rules follow torch/fx/graph.py
// (CodeGen._gen_python_code) and tabulate's "simple" format.
#include "ignis/graph/printer.h"

#include "ignis/sym/print.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"

namespace ignis::graph {

// ---------------------------------------------------------------------------
// Python reprs
// ---------------------------------------------------------------------------
std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest digits that round-trip, from %.Ne (digits d.ddd and exponent).
  char buf[64];
  for (int prec = 0; prec < 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*e", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  bool neg = s[0] == '-';
  if (neg) s = s.substr(1);
  size_t epos = s.find('e');
  int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t i = 0; i < epos; ++i)
    if (s[i] != '.') digits += s[i];
  std::string out;
  if (exp10 >= -4 && exp10 < 16) {  // Python's repr: fixed for 1e-4 <= |d| < 1e16
    if (exp10 >= 0) {
      std::string ip = digits.substr(0, std::min<size_t>(digits.size(), exp10 + 1));
      while (static_cast<int>(ip.size()) < exp10 + 1) ip += '0';
      std::string fp = static_cast<int>(digits.size()) > exp10 + 1 ? digits.substr(exp10 + 1) : "0";
      out = ip + "." + fp;
    } else {
      out = "0." + std::string(-exp10 - 1, '0') + digits;
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += e;
  }
  return neg ? "-" + out : out;
}

std::string py_str_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + q;
}

namespace {

std::string device_repr(Device d) {
  std::string s = str("device(type='", device_type_name(d.type), "'");
  if (d.index >= 0) s += str(", index=", static_cast<int>(d.index));
  return s + ")";
}

std::string join_items(const Value::Items& items, std::string (*fn)(const Value&)) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + fn(items[i]);
  return s;
}

std::string tensor_summary(const Tensor& t) {
  std::string s = "ignis.Tensor(size=[";
  for (int64_t i = 0; i < t.dim(); ++i) s += str(i ? ", " : "", t.sizes()[i]);
  return s + "], dtype=" + dtype_name(t.dtype()) + ")";
}

// The two repr flavours torch.fx uses differ only in tensors and in how
// nested sequences are spelt; `code` selects CodeGen._get_repr.
std::string any_repr(const Value& v, bool code);
std::string repr_plain(const Value& v) { return any_repr(v, false); }
std::string repr_code(const Value& v) { return any_repr(v, true); }

std::string any_repr(const Value& v, bool code) {
  auto fn = code ? repr_code : repr_plain;
  switch (v.kind()) {
    case Value::Kind::None: return "None";
    case Value::Kind::Ellipsis: return "Ellipsis";
    case Value::Kind::Bool: return v.to_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.to_int());
    case Value::Kind::Double: return py_float_repr(v.to_double());
    case Value::Kind::Str: return py_str_repr(v.to_str());
    case Value::Kind::Dtype: return to_string(v.to_dtype());
    case Value::Kind::MemoryFormat: return str("ignis.", memory_format_name(v.to_memory_format()));
    case Value::Kind::Device: return device_repr(v.to_device());
    case Value::Kind::Tensor: return tensor_summary(v.to_tensor());
    case Value::Kind::Node: return v.to_node()->name();
    case Value::Kind::Foreign: return v.to_foreign().repr;
    case Value::Kind::List: return "[" + join_items(v.items(), fn) + "]";
    case Value::Kind::Tuple: {
      const auto& it = v.items();
      return "(" + join_items(it, fn) + (it.size() == 1 ? ",)" : ")");
    }
    case Value::Kind::Slice: {
      const auto& it = v.items();
      return "slice(" + fn(it[0]) + ", " + fn(it[1]) + ", " + fn(it[2]) + ")";
    }
    case Value::Kind::Dict: {
      // Python's repr of a dict (torch.fx's _get_repr falls back to it).
      const auto& it = v.items();
      std::string s = "{";
      for (size_t i = 0; i + 1 < it.size(); i += 2)
        s += (i ? ", " : "") + repr_plain(it[i]) + ": " + repr_plain(it[i + 1]);
      return s + "}";
    }
  }
  return "?";
}

std::string args_str(const std::vector<Value>& args) {
  return repr_plain(Value::tuple(args));
}

std::string kwargs_str(const Kwargs& kwargs) {
  std::string s = "{";
  for (size_t i = 0; i < kwargs.size(); ++i)
    s += (i ? ", " : "") + py_str_repr(kwargs[i].first) + ": " + repr_plain(kwargs[i].second);
  return s + "}";
}

}  // namespace

std::string value_repr(const Value& v) { return repr_plain(v); }

std::string target_str(const Target& t) {
  switch (t.kind) {
    case Target::Kind::Op: return "ignis.ops." + t.op->name();
    case Target::Kind::Callable: return t.callable->repr;
    case Target::Kind::Name: break;
  }
  return t.name;
}

// ---------------------------------------------------------------------------
// print_tabular
// ---------------------------------------------------------------------------
std::string tabular(const Graph& g) {
  // tabulate(rows, headers=[...]) in the "simple" format: every column is
  // left-aligned text at least two wider than its header, columns are
  // separated by two spaces, and each line is right-stripped.
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"opcode", "name", "target", "args", "kwargs"});
  for (Node* n : g.nodes())
    rows.push_back({op_kind_name(n->op()), n->name(), target_str(n->target()), args_str(n->args()),
                    kwargs_str(n->kwargs())});
  std::vector<size_t> width(5);
  for (size_t c = 0; c < 5; ++c) {
    width[c] = rows[0][c].size() + 2;
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < 5; ++c) {
      if (c) s += "  ";
      s += cells[c] + std::string(width[c] - cells[c].size(), ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(rows[0]);
  std::vector<std::string> dashes;
  for (size_t w : width) dashes.push_back(std::string(w, '-'));
  out += line(dashes);
  for (size_t i = 1; i < rows.size(); ++i) out += line(rows[i]);
  out.pop_back();  // print() adds the final newline
  return out;
}

// ---------------------------------------------------------------------------
// str(graph)
// ---------------------------------------------------------------------------
namespace {

std::string fmt_arg(const Value& v) {  // torch.fx's _format_arg
  switch (v.kind()) {
    case Value::Kind::Node: return "%" + v.to_node()->name();
    case Value::Kind::List: return "[" + join_items(v.items(), fmt_arg) + "]";
    case Value::Kind::Tuple: {
      const auto& it = v.items();
      return "(" + join_items(it, fmt_arg) + (it.size() == 1 ? ",)" : ")");
    }
    case Value::Kind::Dict: {
      const auto& it = v.items();
      std::string s = "{";
      for (size_t i = 0; i + 1 < it.size(); i += 2) {
        s += i ? ", " : "";
        s += it[i].kind() == Value::Kind::Str ? it[i].to_str() : repr_plain(it[i]);
        s += ": " + fmt_arg(it[i + 1]);
      }
      return s + "}";
    }
    // str(), not repr(), of everything else:
    case Value::Kind::Str: return v.to_str();
    case Value::Kind::Device: return v.to_device().str();
    case Value::Kind::Foreign:
      return v.to_foreign().str.empty() ? v.to_foreign().repr : v.to_foreign().str;
    default: return repr_plain(v);
  }
}

std::string pretty_target(const Target& t) {
  if (t.kind == Target::Kind::Callable) {
    const Foreign& f = *t.callable;
    return (f.module == "_operator" ? "operator" : f.module) + "." + f.name;
  }
  return target_str(t);
}

}  // namespace

std::string format_node(const Node& n) {
  std::string typ = n.type_repr.empty() ? "" : n.type_repr + " ";
  std::string head = str("%", n.name(), " : ", typ, "[num_users=", n.users().size(), "] = ",
                         op_kind_name(n.op()), "[target=", pretty_target(n.target()), "]");
  switch (n.op()) {
    case OpKind::Placeholder:
      return n.args().empty() ? head : head + "(default=" + fmt_arg(n.args()[0]) + ")";
    case OpKind::GetAttr: return head;
    case OpKind::Output:
      return "return " + (n.args().empty() ? std::string("None") : repr_plain(n.args()[0]));
    default: break;
  }
  Value::Items kv;
  for (const auto& [k, v] : n.kwargs()) {
    kv.push_back(Value(k));
    kv.push_back(v);
  }
  return head + "(args = " + fmt_arg(Value::tuple(n.args())) +
         ", kwargs = " + fmt_arg(Value::dict(std::move(kv))) + ")";
}

std::string graph_str(const Graph& g) {
  std::string s = "graph():";
  for (Node* n : g.nodes()) s += "\n    " + format_node(*n);
  return s;
}

// ---------------------------------------------------------------------------
// python_code
// ---------------------------------------------------------------------------
namespace {

const std::unordered_map<std::string, const char*>& magic_methods() {
  static const std::unordered_map<std::string, const char*> m = {
      {"eq", "{} == {}"}, {"ne", "{} != {}"}, {"lt", "{} < {}"}, {"gt", "{} > {}"},
      {"le", "{} <= {}"}, {"ge", "{} >= {}"}, {"pos", "+{}"}, {"neg", "-{}"},
      {"invert", "~{}"}, {"add", "{} + {}"}, {"sub", "{} - {}"}, {"mul", "{} * {}"},
      {"floordiv", "{} // {}"}, {"truediv", "{} / {}"}, {"div", "{} / {}"},
      {"mod", "{} % {}"}, {"pow", "{} ** {}"}, {"lshift", "{} << {}"},
      {"rshift", "{} >> {}"}, {"and_", "{} & {}"}, {"or_", "{} | {}"}, {"xor", "{} ^ {}"},
      {"getitem", "{}[{}]"}, {"matmul", "{} @ {}"}};
  return m;
}

const std::unordered_map<std::string, const char*>& inplace_methods() {
  static const std::unordered_map<std::string, const char*> m = {
      {"iadd", "{} += {}"}, {"iand", "{} &= {}"}, {"ifloordiv", "{} //= {}"},
      {"ilshift", "{} <<= {}"}, {"imod", "{} %= {}"}, {"imul", "{} *= {}"},
      {"imatmul", "{} @= {}"}, {"ior", "{} |= {}"}, {"ipow", "{} **= {}"},
      {"irshift", "{} >>= {}"}, {"isub", "{} -= {}"}, {"itruediv", "{} /= {}"},
      {"ixor", "{} ^= {}"}, {"setitem", "{}[{}] = {}"}};
  return m;
}

// Fills the "{}" holes of a template in order; a missing argument is an
// error naming the node.
std::string fill(const char* tmpl, const std::vector<std::string>& parts, const Node* n) {
  std::string out;
  size_t k = 0;
  for (const char* p = tmpl; *p; ++p) {
    if (p[0] == '{' && p[1] == '}') {
      IGNIS_CHECK(k < parts.size(), "python_code: node '", n->name(), "' has too few args for ",
                  tmpl);
      out += parts[k++];
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '_' || static_cast<unsigned char>(c) >= 0x80))
      return false;
  return true;
}

// torch.fx's _format_target: "self.layer.0" -> getattr(self.layer, "0").
std::string format_target(const std::string& base, const std::string& path) {
  std::string r = base;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string e = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    r = is_identifier(e) ? r + "." + e : "getattr(" + r + ", \"" + e + "\")";
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return r;
}

std::string format_args(const std::vector<Value>& args, size_t from, const Kwargs& kwargs) {
  std::string s;
  for (size_t i = from; i < args.size(); ++i) s += (s.empty() ? "" : ", ") + repr_code(args[i]);
  for (const auto& [k, v] : kwargs) s += (s.empty() ? "" : ", ") + k + " = " + repr_code(v);
  return s;
}

bool is_ignis_module(const std::string& m) { return m == "ignis" || m.rfind("ignis.", 0) == 0; }

class CodeGen {
 public:
  CodeGen(const Graph& g, const CodeOptions& o) : g_(g), o_(o) {
    for (Node* n : g.nodes()) names_.create(n->name());
  }

  PythonCode run() {
    // Last uses: walking backwards, the first user met of each node is its last.
    std::unordered_map<const Node*, const Node*> last_use;
    std::unordered_map<const Node*, std::vector<const Node*>> to_free;
    for (Node* n : g_.reversed()) {
      for (Node* in : n->input_nodes()) {
        if (last_use.emplace(in, n).second) to_free[n].push_back(in);
      }
    }
    for (Node* n : g_.nodes()) {
      emit(n);
      if (n->op() == OpKind::Placeholder) continue;
      if (n->op() == OpKind::Output) {
        body_ += "\n";
        continue;
      }
      std::vector<const Node*> dead = to_free[n];
      if (n->users().empty()) dead.push_back(n);
      if (dead.empty()) {
        body_ += "\n";
        continue;
      }
      body_ += ";  ";
      for (const Node* d : dead) body_ += d->name() + " = ";
      body_ += "None\n";
    }
    if (body_.empty()) body_ = "pass\n";
    // Drop leading blank lines, indent every line (the last, empty one too).
    size_t first = body_.find_first_not_of('\n');
    std::string code = first == std::string::npos ? "" : body_.substr(first);
    std::string indented = "    ";
    for (char c : code) {
      indented += c;
      if (c == '\n') indented += "    ";
    }
    std::string params = "self";
    for (const auto& p : free_vars_) params += ", " + p;
    PythonCode pc;
    pc.src = "\n\n\ndef " + o_.fn_name + "(" + params + ")" + return_annotation_ + ":\n" + indented;
    pc.globals = std::move(globals_);
    return pc;
  }

 private:
  std::string alias(const std::string& qualified) const {
    if (qualified.rfind("ignis.", 0) == 0) return o_.module_alias + qualified.substr(5);
    return qualified;
  }
  std::string annotation(const Node* n) const {
    if (o_.verbose) {
      std::string v = verbose_type(*n);
      if (!v.empty()) return ": \"" + v + "\"";
      if (n->op() != OpKind::Placeholder && n->op() != OpKind::Output) return "";
    }
    return n->type_repr.empty() ? "" : " : " + alias(n->type_repr);
  }
  // A global for a target the code cannot name directly.
  std::string add_global(const std::string& hint, const Target& t) {
    for (const auto& gl : globals_)
      if (gl.target == t) return gl.name;
    std::string name = names_.create(hint);
    globals_.push_back({name, t});
    return name;
  }

  void emit(Node* n) {
    const std::string ann = annotation(n);
    const auto& args = n->args();
    const Target& t = n->target();
    switch (n->op()) {
      case OpKind::Placeholder: {
        std::string def = args.empty() ? "" : " = " + repr_code(args[0]);
        free_vars_.push_back(t.name + ann + def);
        std::string raw;
        for (char c : t.name)
          if (c != '*') raw += c;
        if (raw != n->name()) body_ += n->name() + " = " + raw + "\n";
        return;
      }
      case OpKind::CallMethod:
        IGNIS_CHECK(!args.empty(), "python_code: call_method node '", n->name(),
                    "' has no self argument");
        body_ += n->name() + ann + " = " + format_target(repr_code(args[0]), t.name) + "(" +
                 format_args(args, 1, n->kwargs()) + ")";
        return;
      case OpKind::CallModule:
        body_ += n->name() + ann + " = " + format_target(o_.root_module, t.name) + "(" +
                 format_args(args, 0, n->kwargs()) + ")";
        return;
      case OpKind::GetAttr:
        body_ += n->name() + ann + " = " + format_target(o_.root_module, t.name);
        return;
      case OpKind::Output:
        if (!n->type_repr.empty()) return_annotation_ = " -> " + alias(n->type_repr);
        body_ += "return " + (args.empty() ? std::string("None") : repr_code(args[0]));
        return;
      case OpKind::CallFunction: emit_call(n, ann); return;
      case OpKind::Root: return;
    }
  }

  void emit_call(Node* n, const std::string& ann) {
    const auto& args = n->args();
    const Target& t = n->target();
    std::vector<std::string> parts;
    for (const Value& a : args) parts.push_back(repr_code(a));
    if (t.kind == Target::Kind::Callable) {
      const Foreign& f = *t.callable;
      if (f.module == "_operator") {
        auto m = magic_methods().find(f.name);
        if (m != magic_methods().end()) {
          body_ += n->name() + ann + " = " + fill(m->second, parts, n);
          return;
        }
        auto ip = inplace_methods().find(f.name);
        if (ip != inplace_methods().end()) {
          body_ += fill(ip->second, parts, n) + ";  " + n->name() + ann + " = " + parts.at(0);
          return;
        }
      }
      if (f.module == "builtins" && f.name == "getattr" && args.size() == 2 &&
          args[1].kind() == Value::Kind::Str && is_identifier(args[1].to_str())) {
        body_ += n->name() + ann + " = " + format_target(parts[0], args[1].to_str());
        return;
      }
    }
    body_ += n->name() + ann + " = " + callee(t) + "(" + format_args(args, 0, n->kwargs()) + ")";
  }

  std::string callee(const Target& t) {
    if (t.kind == Target::Kind::Op) {
      // ignis.ops.add.Tensor(...), as torch prints torch.ops.aten.add.Tensor.
      const FunctionSchema& fs = t.op->schema();
      return alias("ignis.ops." + fs.name + "." + fs.python_overload());
    }
    const Foreign& f = *t.callable;
    if (is_ignis_module(f.module)) return alias(f.qualified_name());
    if (f.module == "builtins") return f.name;  // always in scope
    return add_global(f.qualified_name(), t);
  }

  const Graph& g_;
  const CodeOptions& o_;
  Namespace names_;
  std::string body_;
  std::vector<std::string> free_vars_;
  std::string return_annotation_;
  std::vector<CodeGlobal> globals_;
};

}  // namespace

std::string verbose_type(const Node& n) {
  const NodeMeta& m = n.meta();
  if (m.sym_value.defined()) return "Sym(" + sym::str(m.sym_value) + ")";
  if (m.tensors.size() != 1 || m.tuple_output) return "";
  const TensorMeta& t = m.tensors[0];
  static const std::pair<const char*, const char*> abbr[] = {
      {"float32", "f32"}, {"float64", "f64"}, {"float16", "f16"}, {"bfloat16", "bf16"},
      {"int64", "i64"},   {"int32", "i32"},   {"int16", "i16"},   {"int8", "i8"},
      {"uint8", "u8"},    {"bool", "b8"},     {"complex64", "c64"}, {"complex128", "c128"}};
  std::string d = dtype_name(t.dtype);
  for (const auto& [name, a] : abbr)
    if (d == name) d = a;
  std::string s = d + "[";
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    if (i) s += ", ";
    s += i < t.sym_sizes.size() ? sym::str(t.sym_sizes[i]) : std::to_string(t.sizes[i]);
  }
  return s + "]";
}

PythonCode python_code(const Graph& g, const CodeOptions& opts) { return CodeGen(g, opts).run(); }

}  // namespace ignis::graph
