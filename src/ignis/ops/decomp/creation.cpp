// Creation decompositions: the factories that are full, arange.start or
// randint.low in disguise, and linspace and eye built from arange. The
// dtype of each output is the one the op's meta rule infers, passed on
// explicitly (full infers its dtype from the fill value, zeros does not).
#include "ignis/ops/decomp/common.h"

namespace ignis::decomp {

using namespace grad_ops;  // NOLINT

namespace {
OpRef full_op("full");

Device device_of(const IValue& d) { return d.is_none() ? Device(DeviceType::CPU) : d.to_device(); }
}  // namespace

// zeros(size, *, dtype, device) / ones(...).
void zeros(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(full_op.tensor(a.ints(0), Scalar(int64_t(0)), a.dtype(), a[2]));
}

void ones(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(full_op.tensor(a.ints(0), Scalar(int64_t(1)), a.dtype(), a[2]));
}

// arange(end) = arange.start(0, end, 1).
void arange(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(OpRef("arange.start").tensor(Scalar(int64_t(0)), a.scalar(0), Scalar(int64_t(1)),
                                     a.dtype(), a[2]));
}

// randint(high, size) = randint.low(0, high, size): the same draws.
void randint(const OpHandle& o, Stack& s) {
  Args a(o, s);
  a.ret(OpRef("randint.low").tensor(int64_t(0), a.int_arg(0), a.ints(1), a.dtype(), a[3]));
}

// linspace(start, end, steps): start + step * i for the first half and
// end - step * (steps - 1 - i) for the rest (so the last value is end), in
// float64 as the kernel computes, then converted. An integer output takes
// start and end converted to its dtype first, as PyTorch does.
void linspace(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const ScalarType dt = a.dtype();
  const Device dev = device_of(a[4]);
  const int64_t n = a.int_arg(2);
  double start = a.scalar(0).to_double(), end = a.scalar(1).to_double();
  if (!is_floating(dt)) {
    auto narrow_int = [dt](const Scalar& v) -> double {
      const int64_t i = v.to_int();
      switch (dt) {
        case ScalarType::UInt8: return static_cast<uint8_t>(i);
        case ScalarType::Int8: return static_cast<int8_t>(i);
        case ScalarType::Int16: return static_cast<int16_t>(i);
        case ScalarType::Int32: return static_cast<int32_t>(i);
        default: return static_cast<double>(i);
      }
    };
    start = narrow_int(a.scalar(0));
    end = narrow_int(a.scalar(1));
  }
  if (n <= 1) {
    a.ret(full_op.tensor(std::vector<int64_t>{n}, Scalar(start), dt, dev));
    return;
  }
  const double step = (end - start) / static_cast<double>(n - 1);
  Tensor i = convert(iota(n, dev), ScalarType::Float64);
  Tensor low = add(mul(i, step), scalar(start));
  Tensor high = sub(scalar(end), mul(sub(scalar(static_cast<double>(n - 1)), i), step));
  Tensor v = where(cmp("lt", i, scalar(static_cast<double>(n / 2))), low, high);
  a.ret(convert(v, dt));
}

// eye(n, m): row index == column index.
void eye(const OpHandle& o, Stack& s) {
  Args a(o, s);
  const int64_t n = a.int_arg(0), m = a[1].is_none() ? n : a.int_arg(1);
  const Device dev = device_of(a[3]);
  Tensor diag = cmp("eq", unsqueeze(iota(n, dev), 1), iota(m, dev));
  a.ret(convert(diag, a.dtype()));
}

}  // namespace ignis::decomp
