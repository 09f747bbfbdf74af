#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

void register_index_ops() {}

}  // namespace ignis
