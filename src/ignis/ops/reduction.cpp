#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

void register_reduction_ops() {}

}  // namespace ignis
