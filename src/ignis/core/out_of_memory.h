// OutOfMemoryError: a device allocation failed after the allocator emptied
// its cache and retried. Python sees ignis.OutOfMemoryError, a RuntimeError
// subclass (torch.OutOfMemoryError), so `except RuntimeError` still catches
// it, and the process stays usable.
#pragma once

#include "ignis/core/error.h"

namespace ignis {

class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(std::string msg) : Error(ErrorKind::Runtime, std::move(msg)) {}
};

}  // namespace ignis
