// FunctionSchema: an op's signature in PyTorch's schema language, e.g.
//   "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
//   "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)"
//   "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)"
// The schema is the single source for argument parsing from Python, for
// finding which arguments decide dispatch, and for the mutation/alias facts
// that functionalization needs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ignis/dispatch/ivalue.h"

namespace ignis {

enum class ArgType : uint8_t {
  Tensor, OptTensor, TensorList, OptTensorList,
  Int, OptInt, IntList, OptIntList,
  Float, OptFloat, FloatList,
  Bool, OptBool,
  Scalar, OptScalar,
  Dtype, OptDtype,
  Device, OptDevice,
  Str, OptStr,
  MemoryFormat, OptMemoryFormat,
};
const char* arg_type_name(ArgType t);

struct Argument {
  std::string name;
  ArgType type;
  bool kwarg_only = false;
  bool has_default = false;
  IValue default_value;
  // Alias annotation: "(a)" means the output may alias this input (views),
  // "(a!)" means the op writes into it.
  std::string alias_set;
  bool is_write = false;
};

struct Return {
  std::string name;  // empty when unnamed
  ArgType type;      // Tensor, TensorList, Scalar, Int, Float, Bool
  std::string alias_set;
  bool is_write = false;
};

struct FunctionSchema {
  std::string name;      // "add"
  std::string overload;  // "Tensor" (may be empty)
  std::vector<Argument> args;
  std::vector<Return> returns;

  std::string full_name() const { return overload.empty() ? name : name + "." + overload; }
  bool is_inplace() const;  // writes its first argument and returns it
  bool is_out_of_place_view() const;  // returns an alias of an input
  int find_arg(const std::string& name) const;  // -1 if absent
  // The overload's attribute name in Python (ignis.ops.random_.from_): the
  // overload, with "_" appended when it is a Python keyword; "default"
  // when there is none.
  std::string python_overload() const;
  std::string str() const;  // the schema text, normalised
};

// Parses schema text; throws an internal error naming the text on bad syntax.
FunctionSchema parse_schema(const std::string& text);

}  // namespace ignis
