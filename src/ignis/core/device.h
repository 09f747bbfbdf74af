// Devices, named as PyTorch names them: "cpu", "cuda", "cuda:1", "meta".
#pragma once

#include <cstdint>
#include <string>

namespace ignis {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 2 };

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = -1;  // -1: "the current device" (always 0 for cpu and meta)

  Device() = default;
  Device(DeviceType t, int idx = -1) : type(t), index(static_cast<int8_t>(idx)) {}
  // Parses "cpu", "cuda", "cuda:0", "meta"; throws a RuntimeError naming the
  // string otherwise.
  static Device parse(const std::string& s);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool is_meta() const { return type == DeviceType::Meta; }
  bool operator==(const Device& o) const {
    return type == o.type && (index == o.index || index < 0 || o.index < 0);
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0", "meta"
};

const char* device_type_name(DeviceType t);

}  // namespace ignis
