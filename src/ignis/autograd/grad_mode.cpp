#include "ignis/autograd/grad_mode.h"

namespace ignis::autograd {

GradModeState& grad_mode() {
  static thread_local GradModeState s;
  return s;
}

}  // namespace ignis::autograd
