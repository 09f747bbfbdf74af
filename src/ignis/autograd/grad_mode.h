// Grad mode: thread-local switches that decide whether ops record history.
//
// no_grad / enable_grad / set_grad_enabled flip `enabled`; inference_mode
// also turns recording off, and core's inference mode (core/tensor.h) marks
// the tensors made meanwhile as inference tensors (is_inference(); they behave
// as no_grad tensors otherwise).
#pragma once

namespace ignis::autograd {

struct GradModeState {
  bool enabled = true;
};
GradModeState& grad_mode();

inline bool grad_enabled() { return grad_mode().enabled; }
inline void set_grad_enabled(bool on) { grad_mode().enabled = on; }

// RAII: sets grad mode for a scope and restores it on exit.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled) : prev_(grad_mode()) { grad_mode().enabled = enabled; }
  ~GradModeGuard() { grad_mode() = prev_; }
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  GradModeState prev_;
};

}  // namespace ignis::autograd
