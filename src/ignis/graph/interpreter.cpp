// The eager graph interpreter and the graph-value <-> IValue conversions it
// needs to call dispatcher ops.
#include "ignis/graph/interpreter.h"

#include <unordered_map>

#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/printer.h"

namespace ignis::graph {

ForeignHook& foreign_hook() {
  static ForeignHook hook;
  return hook;
}

namespace {

bool is_optional(ArgType t) {
  switch (t) {
    case ArgType::OptTensor: case ArgType::OptInt: case ArgType::OptIntList:
    case ArgType::OptFloat: case ArgType::OptBool: case ArgType::OptScalar:
    case ArgType::OptDtype: case ArgType::OptDevice: case ArgType::OptStr:
    case ArgType::OptMemoryFormat:
      return true;
    default:
      return false;
  }
}

Tensor wrapped_number(const Value& v) {
  if (v.kind() == Value::Kind::Double)
    return scalar_to_tensor(v.to_double(), ScalarType::Float64, true);
  Scalar s = v.kind() == Value::Kind::Bool ? Scalar(v.to_bool()) : Scalar(v.to_int());
  return scalar_to_tensor_int(s.to_int(), s.natural_dtype(), true);
}

bool is_int(const Value& v) { return v.kind() == Value::Kind::Int; }
bool is_number(const Value& v) {
  auto k = v.kind();
  return k == Value::Kind::Int || k == Value::Kind::Double || k == Value::Kind::Bool;
}

bool to_int_list(const Value& v, std::vector<int64_t>* out) {
  if (is_int(v)) {
    out->assign(1, v.to_int());
    return true;
  }
  if (!v.is_sequence()) return false;
  out->clear();
  for (const Value& e : v.items()) {
    if (!is_int(e)) return false;
    out->push_back(e.to_int());
  }
  return true;
}

// Converts one value to the schema type; false on a mismatch.
bool convert(const Value& v, ArgType t, bool first, IValue* out) {
  if (v.is_none()) {
    if (!is_optional(t)) return false;
    *out = None{};
    return true;
  }
  switch (t) {
    case ArgType::Tensor: case ArgType::OptTensor:
      if (v.is_tensor()) *out = v.to_tensor();
      else if (!first && is_number(v)) *out = wrapped_number(v);
      else return false;
      return true;
    case ArgType::TensorList: case ArgType::OptTensorList: {
      if (!v.is_sequence()) return false;
      std::vector<Tensor> l;
      for (const Value& e : v.items()) {
        if (e.is_none() && t == ArgType::OptTensorList) l.emplace_back();
        else if (e.is_tensor()) l.push_back(e.to_tensor());
        else return false;
      }
      if (t == ArgType::TensorList) *out = std::move(l);
      else *out = IValue::OptTensors{std::move(l)};
      return true;
    }
    case ArgType::Int: case ArgType::OptInt:
      if (!is_int(v)) return false;
      *out = v.to_int();
      return true;
    case ArgType::IntList: case ArgType::OptIntList: {
      std::vector<int64_t> l;
      if (!to_int_list(v, &l)) return false;
      *out = std::move(l);
      return true;
    }
    case ArgType::Float: case ArgType::OptFloat:
      if (v.kind() == Value::Kind::Double) *out = v.to_double();
      else if (is_int(v)) *out = static_cast<double>(v.to_int());
      else return false;
      return true;
    case ArgType::FloatList: {
      std::vector<double> l;
      Value::Items one{v};
      for (const Value& e : v.is_sequence() ? v.items() : one) {
        if (e.kind() == Value::Kind::Double) l.push_back(e.to_double());
        else if (is_int(e)) l.push_back(static_cast<double>(e.to_int()));
        else return false;
      }
      *out = std::move(l);
      return true;
    }
    case ArgType::Bool: case ArgType::OptBool:
      if (v.kind() != Value::Kind::Bool) return false;
      *out = v.to_bool();
      return true;
    case ArgType::Scalar: case ArgType::OptScalar:
      if (v.kind() == Value::Kind::Bool) *out = v.to_bool();
      else if (is_int(v)) *out = v.to_int();
      else if (v.kind() == Value::Kind::Double) *out = v.to_double();
      else return false;
      return true;
    case ArgType::Dtype: case ArgType::OptDtype:
      if (v.kind() != Value::Kind::Dtype) return false;
      *out = v.to_dtype();
      return true;
    case ArgType::Device: case ArgType::OptDevice:
      if (v.kind() == Value::Kind::Device) *out = v.to_device();
      else if (v.kind() == Value::Kind::Str) *out = Device::parse(v.to_str());
      else return false;
      return true;
    case ArgType::Str: case ArgType::OptStr:
      if (v.kind() != Value::Kind::Str) return false;
      *out = v.to_str();
      return true;
    case ArgType::MemoryFormat: case ArgType::OptMemoryFormat:
      if (v.kind() != Value::Kind::MemoryFormat) return false;
      *out = v.to_memory_format();
      return true;
  }
  return false;
}

// Matches args/kwargs to a schema, filling defaults; the reason on failure.
bool bind(const FunctionSchema& fs, const std::vector<Value>& args, const Kwargs& kwargs,
          Stack& stack, std::string* why) {
  const size_t np = fs.args.size();
  stack.assign(np, IValue());
  std::vector<bool> filled(np, false);
  size_t npos = 0;
  while (npos < np && !fs.args[npos].kwarg_only) ++npos;
  size_t ai = 0;
  for (size_t pi = 0; pi < npos && ai < args.size(); ++pi, ++ai) {
    const Argument& a = fs.args[pi];
    // Varargs sizes (x.view(2, 3)): a trailing int[] gathers the rest.
    if ((a.type == ArgType::IntList || a.type == ArgType::OptIntList) && pi == npos - 1 &&
        args.size() - ai > 1) {
      std::vector<int64_t> l;
      for (; ai < args.size(); ++ai) {
        if (!is_int(args[ai])) {
          *why = "argument '" + a.name + "' must be a sequence of ints";
          return false;
        }
        l.push_back(args[ai].to_int());
      }
      stack[pi] = std::move(l);
      filled[pi] = true;
      break;
    }
    if (!convert(args[ai], a.type, pi == 0, &stack[pi])) {
      *why = str("argument '", a.name, "' (position ", pi + 1, ") must be ",
                 arg_type_name(a.type), ", not ", args[ai].kind_name());
      return false;
    }
    filled[pi] = true;
  }
  if (ai < args.size()) {
    *why = str("takes ", npos, " positional arguments but ", args.size(), " were given");
    return false;
  }
  for (const auto& [key, v] : kwargs) {
    int idx = fs.find_arg(key);
    if (idx < 0 && key == "input" && !fs.args.empty() && fs.args[0].name == "self") idx = 0;
    if (idx < 0) {
      *why = "got an unexpected keyword argument '" + key + "'";
      return false;
    }
    if (filled[idx]) {
      *why = "got multiple values for argument '" + key + "'";
      return false;
    }
    if (!convert(v, fs.args[idx].type, idx == 0, &stack[idx])) {
      *why = str("argument '", key, "' must be ", arg_type_name(fs.args[idx].type), ", not ",
                 v.kind_name());
      return false;
    }
    filled[idx] = true;
  }
  for (size_t i = 0; i < np; ++i) {
    if (filled[i]) continue;
    if (!fs.args[i].has_default) {
      *why = "missing required argument '" + fs.args[i].name + "'";
      return false;
    }
    stack[i] = fs.args[i].default_value;
  }
  return true;
}

Value results(const OpHandle& op, const Stack& stack) {
  size_t n = op.schema().returns.size();
  if (n == 0) return Value();
  if (n == 1) return from_ivalue(stack.at(0));
  Value::Items l;
  for (size_t i = 0; i < n; ++i) l.push_back(from_ivalue(stack.at(i)));
  return Value::tuple(std::move(l));
}

}  // namespace

Value from_ivalue(const IValue& v, const TensorToValue& tensor, bool lists) {
  auto seq = [lists](Value::Items l) {
    return lists ? Value::list(std::move(l)) : Value::tuple(std::move(l));
  };
  auto of = [&tensor](const Tensor& t) {
    return !t.defined() ? Value() : tensor ? tensor(t) : Value(t);
  };
  switch (v.tag()) {
    case IValue::Tag::None: return Value();
    case IValue::Tag::Tensor: return of(v.to_tensor());
    case IValue::Tag::Int: return Value(v.to_int());
    case IValue::Tag::Double: return Value(v.to_double());
    case IValue::Tag::Bool: return Value(v.to_bool());
    case IValue::Tag::String: return Value(v.to_string());
    case IValue::Tag::Dtype: return Value(v.to_dtype());
    case IValue::Tag::Device: return Value(v.to_device());
    case IValue::Tag::MemoryFormat: return Value(v.to_memory_format());
    case IValue::Tag::IntList: {
      Value::Items l;
      for (int64_t i : v.to_int_list()) l.emplace_back(i);
      return seq(std::move(l));
    }
    case IValue::Tag::DoubleList: {
      Value::Items l;
      for (double d : v.to_double_list()) l.emplace_back(d);
      return seq(std::move(l));
    }
    case IValue::Tag::TensorList: case IValue::Tag::OptTensorList: {
      Value::Items l;
      const auto& ts = v.is_tensor_list() ? v.to_tensor_list() : v.to_opt_tensor_list();
      for (const Tensor& t : ts) l.push_back(of(t));
      return seq(std::move(l));
    }
  }
  return Value();
}

Value call_op(const OpHandle& op, const std::vector<Value>& args, const Kwargs& kwargs) {
  Stack stack;
  std::string why;
  if (!bind(op.schema(), args, kwargs, stack, &why))
    IGNIS_FAIL_KIND(Type, op.name(), "() received an invalid combination of arguments: ", why,
                    " (schema: ", op.schema().str(), ")");
  op.call(stack);
  return results(op, stack);
}

Value call_op_by_name(const std::string& name, const std::vector<Value>& args,
                      const Kwargs& kwargs, bool* found) {
  const auto& ovs = Dispatcher::get().overloads(name);
  if (found) *found = !ovs.empty();
  if (ovs.empty()) {
    if (found) return Value();
    IGNIS_FAIL_KIND(Type, "no ignis op named '", name, "'");
  }
  std::string msg;
  Stack stack;
  for (const OpHandle* h : ovs) {
    std::string why;
    if (bind(h->schema(), args, kwargs, stack, &why)) {
      h->call(stack);
      return results(*h, stack);
    }
    msg += "\n * " + h->schema().str() + ": " + why;
  }
  IGNIS_FAIL_KIND(Type, name, "() received an invalid combination of arguments; tried:", msg);
}

Value interpret(const Graph& g, const std::vector<Value>& inputs, const Value& root,
                const ResultFn& on_result) {
  std::unordered_map<const Node*, Value> env;
  // Free each value after its last use, like the generated code does.
  std::unordered_map<const Node*, std::vector<const Node*>> to_free;
  {
    std::unordered_map<const Node*, bool> seen;
    for (Node* n : g.reversed())
      for (Node* in : n->input_nodes())
        if (seen.emplace(in, true).second) to_free[n].push_back(in);
  }
  auto lookup = [&](Node* n) -> Value {
    auto it = env.find(n);
    IGNIS_CHECK(it != env.end(), "interpret: node '", n->name(),
                "' is used before it is defined (run lint on the graph)");
    return it->second;
  };
  size_t next_input = 0;
  for (Node* n : g.nodes()) {
    std::vector<Value> args;
    args.reserve(n->args().size());
    for (const Value& a : n->args()) args.push_back(map_nodes(a, lookup));
    Kwargs kwargs;
    for (const auto& [k, v] : n->kwargs()) kwargs.emplace_back(k, map_nodes(v, lookup));
    Value result;
    switch (n->op()) {
      case OpKind::Placeholder:
        if (next_input < inputs.size()) {
          result = inputs[next_input++];
        } else {
          IGNIS_CHECK_TYPE(!args.empty(), "interpret: missing input for placeholder '", n->name(),
                           "' (", inputs.size(), " inputs given)");
          result = args[0];
        }
        break;
      case OpKind::Output:
        IGNIS_CHECK_TYPE(next_input == inputs.size(), "interpret: ", inputs.size(),
                         " inputs given but the graph takes ", next_input);
        result = args.empty() ? Value() : args[0];
        if (on_result) on_result(*n, result);
        return result;
      case OpKind::CallFunction:
        if (n->target().kind == Target::Kind::Op) {
          result = call_op(*n->target().op, args, kwargs);
          break;
        }
        if (is_getitem(n->target()) && args.size() == 2 && args[0].is_sequence() &&
            args[1].kind() == Value::Kind::Int) {
          const Value::Items& items = args[0].items();
          int64_t i = args[1].to_int();
          if (i < 0) i += static_cast<int64_t>(items.size());
          IGNIS_CHECK_INDEX(i >= 0 && i < static_cast<int64_t>(items.size()),
                            "tuple index out of range (node '", n->name(), "')");
          result = items[i];
          break;
        }
        [[fallthrough]];
      case OpKind::CallMethod: {
        if (n->op() == OpKind::CallMethod && !args.empty() && args[0].is_tensor()) {
          bool found = false;
          result = call_op_by_name(n->target().name, args, kwargs, &found);
          if (found) break;
        }
        [[fallthrough]];
      }
      case OpKind::CallModule: case OpKind::GetAttr: {
        ForeignHook& hook = foreign_hook();
        IGNIS_CHECK(static_cast<bool>(hook), "interpret: node '", n->name(), "' (",
                    op_kind_name(n->op()), " ", target_str(n->target()),
                    ") needs the Python layer, which is not installed");
        result = hook(*n, args, kwargs, root);
        break;
      }
      case OpKind::Root: break;
    }
    if (on_result) on_result(*n, result);
    env[n] = std::move(result);
    auto f = to_free.find(n);
    if (f != to_free.end())
      for (const Node* d : f->second) env.erase(d);
  }
  IGNIS_FAIL("interpret: the graph has no output node");
}

Value record_tensor_meta(Graph& g, const std::vector<Value>& inputs, const Value& root) {
  return interpret(g, inputs, root, [](Node& n, const Value& v) {
    NodeMeta& m = n.meta();
    m.tensors.clear();
    m.tuple_output = false;
    if (v.is_tensor()) {
      m.tensors.push_back(TensorMeta::of(v.to_tensor()));
    } else if (v.is_sequence() && !v.items().empty()) {
      for (const Value& e : v.items()) {
        if (!e.is_tensor()) {
          m.tensors.clear();
          return;
        }
        m.tensors.push_back(TensorMeta::of(e.to_tensor()));
      }
      m.tuple_output = true;
    }
  });
}

}  // namespace ignis::graph
