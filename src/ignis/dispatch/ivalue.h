// IValue: one boxed argument or result on the dispatcher's stack.
//
// Every kernel is called "boxed": it pops its arguments from a Stack of
// IValues and pushes its results. One calling convention lets a single
// fallback kernel (tracing, functionalization, logging) handle every op.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ignis/core/memory_format.h"
#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"

namespace ignis {

struct None {};

class IValue {
 public:
  enum class Tag : uint8_t {
    None, Tensor, Int, Double, Bool, String, IntList, DoubleList, TensorList,
    OptTensorList, Dtype, Device, MemoryFormat
  };
  // A list of optional tensors (Tensor?[]: index() takes one); an undefined
  // Tensor stands for None.
  struct OptTensors { std::vector<Tensor> v; };

  IValue() : v_(None{}) {}
  IValue(None) : v_(None{}) {}
  IValue(Tensor t) {
    if (t.defined()) v_ = std::move(t);
    else v_ = None{};
  }
  IValue(int64_t i) : v_(i) {}
  IValue(int i) : v_(int64_t(i)) {}
  IValue(double d) : v_(d) {}
  IValue(bool b) : v_(b) {}
  IValue(const Scalar& s) {
    if (s.is_bool()) v_ = s.to_bool();
    else if (s.is_int()) v_ = s.to_int();
    else v_ = s.to_double();
  }
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  IValue(std::vector<int64_t> l) : v_(std::move(l)) {}
  IValue(const DimVector& l) : v_(l.vec()) {}
  IValue(std::vector<double> l) : v_(std::move(l)) {}
  IValue(std::vector<Tensor> l) : v_(std::move(l)) {}
  IValue(OptTensors l) : v_(std::move(l)) {}
  IValue(ScalarType t) : v_(t) {}
  IValue(Device d) : v_(d) {}
  IValue(MemoryFormat f) : v_(f) {}

  Tag tag() const { return static_cast<Tag>(v_.index()); }
  bool is_none() const { return tag() == Tag::None; }
  bool is_tensor() const { return tag() == Tag::Tensor; }
  bool is_int() const { return tag() == Tag::Int; }
  bool is_double() const { return tag() == Tag::Double; }
  bool is_bool() const { return tag() == Tag::Bool; }
  bool is_scalar() const { return is_int() || is_double() || is_bool(); }
  bool is_string() const { return tag() == Tag::String; }
  bool is_int_list() const { return tag() == Tag::IntList; }
  bool is_tensor_list() const { return tag() == Tag::TensorList; }
  bool is_opt_tensor_list() const { return tag() == Tag::OptTensorList; }
  bool is_dtype() const { return tag() == Tag::Dtype; }
  bool is_device() const { return tag() == Tag::Device; }
  bool is_memory_format() const { return tag() == Tag::MemoryFormat; }

  const Tensor& to_tensor() const { return get<Tensor>("Tensor"); }
  Tensor& to_tensor() { return std::get<Tensor>(v_); }
  // Undefined Tensor for None.
  Tensor to_opt_tensor() const { return is_none() ? Tensor() : to_tensor(); }
  int64_t to_int() const;
  double to_double() const;
  bool to_bool() const;
  Scalar to_scalar() const;
  const std::string& to_string() const { return get<std::string>("str"); }
  const std::vector<int64_t>& to_int_list() const { return get<std::vector<int64_t>>("int[]"); }
  const std::vector<double>& to_double_list() const { return get<std::vector<double>>("float[]"); }
  const std::vector<Tensor>& to_tensor_list() const { return get<std::vector<Tensor>>("Tensor[]"); }
  const std::vector<Tensor>& to_opt_tensor_list() const { return get<OptTensors>("Tensor?[]").v; }
  ScalarType to_dtype() const { return get<ScalarType>("ScalarType"); }
  Device to_device() const { return get<Device>("Device"); }
  MemoryFormat to_memory_format() const { return get<MemoryFormat>("MemoryFormat"); }

  const char* tag_name() const;
  std::string repr() const;  // short form for logs and error messages

 private:
  template <typename T>
  const T& get(const char* what) const {
    const T* p = std::get_if<T>(&v_);
    if (!p) IGNIS_FAIL_KIND(Internal, "IValue: expected ", what, " but holds ", tag_name());
    return *p;
  }
  std::variant<None, Tensor, int64_t, double, bool, std::string, std::vector<int64_t>,
               std::vector<double>, std::vector<Tensor>, OptTensors, ScalarType, Device,
               MemoryFormat>
      v_;
};

using Stack = std::vector<IValue>;

}  // namespace ignis
