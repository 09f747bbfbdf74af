#include "ignis/dispatch/schema.h"

#include <cctype>
#include <cstdlib>
#include <limits>

namespace ignis {

const char* arg_type_name(ArgType t) {
  switch (t) {
    case ArgType::Tensor: return "Tensor";
    case ArgType::OptTensor: return "Tensor?";
    case ArgType::TensorList: return "Tensor[]";
    case ArgType::OptTensorList: return "Tensor?[]";
    case ArgType::Int: return "int";
    case ArgType::OptInt: return "int?";
    case ArgType::IntList: return "int[]";
    case ArgType::OptIntList: return "int[]?";
    case ArgType::Float: return "float";
    case ArgType::OptFloat: return "float?";
    case ArgType::FloatList: return "float[]";
    case ArgType::Bool: return "bool";
    case ArgType::OptBool: return "bool?";
    case ArgType::Scalar: return "Scalar";
    case ArgType::OptScalar: return "Scalar?";
    case ArgType::Dtype: return "ScalarType";
    case ArgType::OptDtype: return "ScalarType?";
    case ArgType::Device: return "Device";
    case ArgType::OptDevice: return "Device?";
    case ArgType::Str: return "str";
    case ArgType::OptStr: return "str?";
    case ArgType::MemoryFormat: return "MemoryFormat";
    case ArgType::OptMemoryFormat: return "MemoryFormat?";
  }
  return "?";
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  FunctionSchema parse() {
    FunctionSchema fs;
    std::string full = ident();
    auto dot = full.find('.');
    if (dot != std::string::npos) {
      fs.name = full.substr(0, dot);
      fs.overload = full.substr(dot + 1);
    } else {
      fs.name = full;
    }
    expect('(');
    bool kwarg_only = false;
    skip_ws();
    if (peek() != ')') {
      while (true) {
        skip_ws();
        if (peek() == '*') {
          ++pos_;
          kwarg_only = true;
        } else {
          fs.args.push_back(argument(kwarg_only));
        }
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        break;
      }
    }
    expect(')');
    skip_ws();
    expect('-');
    expect('>');
    skip_ws();
    if (peek() == '(') {
      ++pos_;
      skip_ws();
      if (peek() != ')') {
        while (true) {
          fs.returns.push_back(ret());
          skip_ws();
          if (peek() == ',') {
            ++pos_;
            continue;
          }
          break;
        }
      }
      expect(')');
    } else {
      fs.returns.push_back(ret());
    }
    skip_ws();
    if (pos_ != s_.size()) fail("trailing text");
    return fs;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    IGNIS_FAIL_KIND(Internal, "bad schema '", s_, "' at ", pos_, ": ", what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail("unexpected character");
    ++pos_;
  }
  std::string ident() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) ||
                                s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    if (b == pos_) fail("expected identifier");
    return s_.substr(b, pos_ - b);
  }

  // Type with optional alias annotation, "Tensor(a!)", "int[]?", "Tensor?[]".
  ArgType type(std::string* alias, bool* write) {
    std::string base = ident();
    if (peek() == '(') {  // alias annotation
      ++pos_;
      size_t b = pos_;
      while (peek() != ')' && peek() != '\0') ++pos_;
      std::string a = s_.substr(b, pos_ - b);
      expect(')');
      if (!a.empty() && a.back() == '!') {
        *write = true;
        a.pop_back();
      }
      *alias = a;
    }
    bool opt = false, list = false, opt_elem = false;
    if (peek() == '?') {
      ++pos_;
      opt_elem = true;
    }
    if (peek() == '[') {
      ++pos_;
      while (std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;  // int[2]
      expect(']');
      list = true;
      if (peek() == '?') {
        ++pos_;
        opt = true;
      }
    } else {
      opt = opt_elem;
    }
    if (base == "Tensor") {
      if (list) return opt_elem ? ArgType::OptTensorList : ArgType::TensorList;
      return opt ? ArgType::OptTensor : ArgType::Tensor;
    }
    if (base == "int" || base == "SymInt") {
      if (list) return opt ? ArgType::OptIntList : ArgType::IntList;
      return opt ? ArgType::OptInt : ArgType::Int;
    }
    if (base == "float") {
      if (list) return ArgType::FloatList;
      return opt ? ArgType::OptFloat : ArgType::Float;
    }
    if (base == "bool") return opt ? ArgType::OptBool : ArgType::Bool;
    if (base == "Scalar") return opt ? ArgType::OptScalar : ArgType::Scalar;
    if (base == "ScalarType") return opt ? ArgType::OptDtype : ArgType::Dtype;
    if (base == "Device") return opt ? ArgType::OptDevice : ArgType::Device;
    if (base == "str") return opt ? ArgType::OptStr : ArgType::Str;
    if (base == "MemoryFormat") return opt ? ArgType::OptMemoryFormat : ArgType::MemoryFormat;
    fail("unknown type");
  }

  IValue default_value(ArgType t) {
    skip_ws();
    size_t b = pos_;
    if (peek() == '[') {
      while (peek() != ']' && peek() != '\0') ++pos_;
      expect(']');
      std::string body = s_.substr(b + 1, pos_ - b - 2);
      std::vector<int64_t> v;
      size_t b = 0;
      while (b < body.size()) {
        size_t e = body.find(',', b);
        if (e == std::string::npos) e = body.size();
        std::string item = body.substr(b, e - b);
        if (item.find_first_not_of(' ') != std::string::npos) v.push_back(std::stoll(item));
        b = e + 1;
      }
      if (t == ArgType::FloatList) return std::vector<double>(v.begin(), v.end());
      return v;
    }
    if (peek() == '"' || peek() == '\'') {
      char q = s_[pos_++];
      size_t sb = pos_;
      while (peek() != q && peek() != '\0') ++pos_;
      std::string str = s_.substr(sb, pos_ - sb);
      ++pos_;
      return str;
    }
    while (pos_ < s_.size() && s_[pos_] != ',' && s_[pos_] != ')') ++pos_;
    std::string tok = s_.substr(b, pos_ - b);
    while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.back()))) tok.pop_back();
    if (tok == "None") return None{};
    if (t == ArgType::MemoryFormat || t == ArgType::OptMemoryFormat) {
      for (MemoryFormat f : {MemoryFormat::Contiguous, MemoryFormat::Preserve,
                             MemoryFormat::ChannelsLast, MemoryFormat::ChannelsLast3d})
        if (tok == memory_format_name(f)) return f;
      fail("unknown memory format");
    }
    if (tok == "True") return true;
    if (tok == "False") return false;
    if (tok == "inf") return std::numeric_limits<double>::infinity();
    if (tok == "-inf") return -std::numeric_limits<double>::infinity();
    if (tok.find_first_of(".e") != std::string::npos &&
        t != ArgType::Int && t != ArgType::OptInt)
      return std::strtod(tok.c_str(), nullptr);
    if (t == ArgType::Float || t == ArgType::OptFloat) return std::strtod(tok.c_str(), nullptr);
    if (t == ArgType::IntList || t == ArgType::OptIntList)
      return std::vector<int64_t>{std::stoll(tok)};
    return static_cast<int64_t>(std::stoll(tok));
  }

  Argument argument(bool kwarg_only) {
    Argument a;
    a.type = type(&a.alias_set, &a.is_write);
    a.name = ident();
    a.kwarg_only = kwarg_only;
    skip_ws();
    if (peek() == '=') {
      ++pos_;
      a.has_default = true;
      a.default_value = default_value(a.type);
    }
    return a;
  }

  Return ret() {
    Return r;
    r.type = type(&r.alias_set, &r.is_write);
    skip_ws();
    if (std::isalpha(static_cast<unsigned char>(peek()))) r.name = ident();
    return r;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

FunctionSchema parse_schema(const std::string& text) { return Parser(text).parse(); }

bool FunctionSchema::is_inplace() const {
  return !args.empty() && args[0].is_write && !args[0].kwarg_only;
}

bool FunctionSchema::is_out_of_place_view() const {
  for (const auto& r : returns)
    if (!r.alias_set.empty() && !r.is_write) return true;
  return false;
}

int FunctionSchema::find_arg(const std::string& n) const {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name == n) return static_cast<int>(i);
  return -1;
}

std::string FunctionSchema::str() const {
  StrBuilder os;
  os << full_name() << "(";
  bool kw = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument& a = args[i];
    if (i) os << ", ";
    if (a.kwarg_only && !kw) {
      os << "*, ";
      kw = true;
    }
    std::string t = arg_type_name(a.type);
    if (!a.alias_set.empty()) {
      // put the annotation right after the base type name
      auto p = t.find_first_of("?[");
      std::string ann = "(" + a.alias_set + (a.is_write ? "!" : "") + ")";
      t = p == std::string::npos ? t + ann : t.substr(0, p) + ann + t.substr(p);
    }
    os << t << " " << a.name;
    if (a.has_default) os << "=" << a.default_value.repr();
  }
  os << ") -> ";
  if (returns.size() != 1) os << "(";
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i) os << ", ";
    std::string t = arg_type_name(returns[i].type);
    if (!returns[i].alias_set.empty())
      t += "(" + returns[i].alias_set + (returns[i].is_write ? "!" : "") + ")";
    os << t;
    if (!returns[i].name.empty()) os << " " << returns[i].name;
  }
  if (returns.size() != 1) os << ")";
  return os.str();
}

std::string FunctionSchema::python_overload() const {
  static const char* const keywords[] = {
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
      "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try",
      "while", "with", "yield"};
  if (overload.empty()) return "default";
  for (const char* k : keywords)
    if (overload == k) return overload + "_";
  return overload;
}

}  // namespace ignis
