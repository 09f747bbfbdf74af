#include "ignis/core/device.h"

#include "ignis/core/error.h"

namespace ignis {

const char* device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::Meta: return "meta";
  }
  return "?";
}

Device Device::parse(const std::string& s) {
  std::string type = s;
  int index = -1;
  auto colon = s.find(':');
  if (colon != std::string::npos) {
    type = s.substr(0, colon);
    std::string idx = s.substr(colon + 1);
    bool ok = !idx.empty() && idx.size() < 4;
    for (char c : idx) ok = ok && c >= '0' && c <= '9';
    IGNIS_CHECK(ok, "Invalid device string: '", s, "'");
    index = std::stoi(idx);
  }
  if (type == "cpu") return Device(DeviceType::CPU, index < 0 ? -1 : index);
  if (type == "cuda") return Device(DeviceType::CUDA, index);
  if (type == "meta") return Device(DeviceType::Meta, index);
  IGNIS_FAIL("Expected one of cpu, cuda, meta device type at start of device string: ", s);
}

std::string Device::str() const {
  std::string out = device_type_name(type);
  if (type == DeviceType::CUDA && index >= 0) {
    out += ':';
    out += std::to_string(index);
  }
  return out;
}

}  // namespace ignis
