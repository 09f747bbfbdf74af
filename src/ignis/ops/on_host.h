// on_host<Cpu>: the CUDA kernel of an op whose work stays on the CPU (the
// LAPACK factorizations, the FFTs): its CPU kernel run on host copies of the
// arguments, the results copied into the outputs the meta rule allocated. One
// synchronizing round trip a call; the op is correct on CUDA tensors, not
// fast.
#pragma once

#include "ignis/kernels/device_kernels.h"
#include "ignis/ops/op_def.h"

namespace ignis {

template <ImplFn Cpu>
void on_host(OpCall& c) {
  const Device host(DeviceType::CPU);
  Stack args = c.args;
  for (IValue& v : args)
    if (v.is_tensor() && v.to_tensor().defined() && !v.to_tensor().device().is_cpu()) {
      const Tensor& t = v.to_tensor();
      Tensor h = empty_tensor(t.sizes(), t.dtype(), host);
      copy_tensor(h, t);
      v = IValue(h);
    }
  OpCall h{c.op, args, host, {}, nullptr};
  for (const Tensor& o : c.outputs)
    h.outputs.push_back(empty_strided_tensor(o.sizes(), o.strides(), o.dtype(), host));
  Cpu(h);
  for (size_t i = 0; i < c.outputs.size(); ++i) copy_tensor(c.outputs[i], h.outputs[i]);
}

}  // namespace ignis
