#include "ignis/dispatch/ivalue.h"


namespace ignis {

int64_t IValue::to_int() const {
  if (is_int()) return std::get<int64_t>(v_);
  if (is_bool()) return std::get<bool>(v_);
  IGNIS_FAIL_KIND(Internal, "IValue: expected int but holds ", tag_name());
}

double IValue::to_double() const {
  if (is_double()) return std::get<double>(v_);
  if (is_int()) return double(std::get<int64_t>(v_));
  if (is_bool()) return std::get<bool>(v_);
  IGNIS_FAIL_KIND(Internal, "IValue: expected float but holds ", tag_name());
}

bool IValue::to_bool() const {
  if (is_bool()) return std::get<bool>(v_);
  if (is_int()) return std::get<int64_t>(v_) != 0;
  IGNIS_FAIL_KIND(Internal, "IValue: expected bool but holds ", tag_name());
}

Scalar IValue::to_scalar() const {
  if (is_bool()) return Scalar(std::get<bool>(v_));
  if (is_int()) return Scalar(std::get<int64_t>(v_));
  if (is_double()) return Scalar(std::get<double>(v_));
  IGNIS_FAIL_KIND(Internal, "IValue: expected Scalar but holds ", tag_name());
}

const char* IValue::tag_name() const {
  static const char* names[] = {"None", "Tensor", "int", "float", "bool", "str", "int[]",
                                "float[]", "Tensor[]", "Tensor?[]", "ScalarType", "Device",
                                "MemoryFormat"};
  return names[v_.index()];
}

std::string IValue::repr() const {
  StrBuilder os;
  switch (tag()) {
    case Tag::None: return "None";
    case Tag::Tensor: {
      const Tensor& t = to_tensor();
      os << "Tensor(" << dtype_name(t.dtype()) << t.shape_str() << ")";
      return os.str();
    }
    case Tag::Int: os << to_int(); return os.str();
    case Tag::Double: os << to_double(); return os.str();
    case Tag::Bool: return to_bool() ? "True" : "False";
    case Tag::String: return "'" + to_string() + "'";
    case Tag::IntList: return shape_str(to_int_list());
    case Tag::DoubleList: {
      os << "[";
      for (size_t i = 0; i < to_double_list().size(); ++i) os << (i ? ", " : "") << to_double_list()[i];
      os << "]";
      return os.str();
    }
    case Tag::TensorList:
    case Tag::OptTensorList: {
      const auto& l = is_tensor_list() ? to_tensor_list() : to_opt_tensor_list();
      os << "[";
      for (size_t i = 0; i < l.size(); ++i)
        os << (i ? ", " : "") << (l[i].defined() ? IValue(l[i]).repr() : "None");
      os << "]";
      return os.str();
    }
    case Tag::Dtype: return ignis::to_string(to_dtype());
    case Tag::Device: return to_device().str();
    case Tag::MemoryFormat: return memory_format_name(to_memory_format());
  }
  return "?";
}

}  // namespace ignis
