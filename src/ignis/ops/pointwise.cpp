#include "ignis/ops/pointwise.h"

namespace ignis {

void pointwise_meta(OpCall& c, std::initializer_list<int> inputs, DtypeRule rule, bool inplace) {
  auto it = std::make_shared<TensorIterator>();
  const char* name = c.op.schema().name.c_str();
  if (inplace) it->add_output(c.tensor(0));
  else it->add_output(Tensor());
  for (int i : inputs) it->add_input(c.tensor(i));
  IterConfig cfg;
  cfg.op_name = name;
  switch (rule) {
    case DtypeRule::Promote: break;
    case DtypeRule::PromoteToFloat: cfg.promote_int_to_float = true; break;
    case DtypeRule::BoolOut: cfg.output_dtype = ScalarType::Bool; break;
    case DtypeRule::LogicalOut:
      cfg.output_dtype = ScalarType::Bool;
      cfg.keep_input_dtypes = true;
      break;
  }
  it->build(cfg, c.device);
  c.outputs.push_back(inplace ? c.tensor(0) : it->output(0));
  if (inplace && !c.device.is_meta()) c.tensor(0).impl()->version_counter().bump();
  c.iter = std::move(it);
}

}  // namespace ignis
