// Mixed precision: the two ops GradScaler is built on, with torch's
// semantics.
//
//   _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
//     multiplies every gradient by inv_scale in place and sets found_inf to
//     1.0 when any of them holds an inf or a NaN (found_inf is never reset
//     here: the caller passes a zeroed one, and one per device).
//   _amp_update_scale_(scale, growth_tracker, found_inf, growth, backoff,
//                      interval)
//     after a skipped step: scale *= backoff, tracker = 0; otherwise
//     tracker += 1, and when it reaches `interval`: scale *= growth (unless
//     that overflows float32) and tracker = 0.
//
// Both keep their state in tensors on the gradients' device, so that a
// training step never waits for the device to find out whether it skipped.
// The CPU kernels are loops; on CUDA the ops run as their decompositions
// (decomp/amp.cpp), a handful of pointwise ops and reductions with CUDA
// kernels of their own.
#include <atomic>
#include <cmath>

#include "ignis/kernels/cpu/loops.h"
#include "ignis/ops/decompositions.h"
#include "ignis/ops/families.h"
#include "ignis/ops/op_def.h"

namespace ignis {

namespace {

// A one-element float32 tensor argument (found_inf, inv_scale, scale).
void check_one_float(const Tensor& t, const char* name) {
  IGNIS_CHECK(t.numel() == 1, name, " must be a 1-element tensor.");
  IGNIS_CHECK(t.dtype() == ScalarType::Float32, name, " must be a float tensor.");
}

void unscale_meta(OpCall& c) {
  const Tensor& found_inf = c.tensor(1);
  check_one_float(found_inf, "found_inf");
  check_one_float(c.tensor(2), "inv_scale");
  for (const Tensor& g : c.args[0].to_tensor_list()) {
    IGNIS_CHECK(is_floating(g.dtype()),
                "_amp_foreach_non_finite_check_and_unscale_: every gradient must be a floating "
                "point tensor, got ", dtype_name(g.dtype()));
    IGNIS_CHECK(g.user_device() == found_inf.user_device(),
                "_amp_foreach_non_finite_check_and_unscale_: every gradient must be on "
                "found_inf's device (", found_inf.user_device().str(), "), got one on ",
                g.user_device().str());
  }
}

float read_float(const Tensor& t) { return *static_cast<const float*>(t.data_ptr()); }

void unscale_cpu(OpCall& c) {
  const float inv_scale = read_float(c.tensor(2));
  std::atomic<bool> non_finite{false};
  for (const Tensor& g : c.args[0].to_tensor_list()) {
    if (g.numel() == 0) continue;
    TensorIterator it;
    it.add_output(g);
    it.add_input(g);
    it.build(IterConfig{"_amp_foreach_non_finite_check_and_unscale_"}, g.device());
    IGNIS_DISPATCH_FLOAT(g.dtype(), "_amp_foreach_non_finite_check_and_unscale_", [&] {
      cpu::cpu_kernel<scalar_t, scalar_t>(it, [&](opmath_t<scalar_t> v) {
        if (!std::isfinite(v)) non_finite.store(true, std::memory_order_relaxed);
        return v * static_cast<opmath_t<scalar_t>>(inv_scale);
      });
    });
  }
  if (non_finite.load()) *static_cast<float*>(c.tensor(1).data_ptr()) = 1.0f;
}

void update_scale_meta(OpCall& c) {
  const Tensor& scale = c.tensor(0);
  const Tensor& tracker = c.tensor(1);
  IGNIS_CHECK(tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  IGNIS_CHECK(tracker.dtype() == ScalarType::Int32, "growth_tracker must be an int tensor.");
  check_one_float(scale, "current_scale");
  check_one_float(c.tensor(2), "found_inf");
  c.outputs.push_back(scale);
}

void update_scale_cpu(OpCall& c) {
  float& scale = *static_cast<float*>(c.tensor(0).data_ptr());
  int32_t& tracker = *static_cast<int32_t*>(c.tensor(1).data_ptr());
  const float found_inf = read_float(c.tensor(2));
  const double growth = c.double_arg(3), backoff = c.double_arg(4);
  const int64_t interval = c.int_arg(5);
  if (found_inf != 0.0f) {
    scale = static_cast<float>(scale * backoff);
    tracker = 0;
    return;
  }
  const int64_t successful = int64_t(tracker) + 1;
  if (successful == interval) {
    const float grown = static_cast<float>(scale * growth);
    if (std::isfinite(grown)) scale = grown;
    tracker = 0;
  } else {
    tracker = static_cast<int32_t>(successful);
  }
}

}  // namespace

void register_amp_ops() {
  def("_amp_foreach_non_finite_check_and_unscale_(Tensor(a!)[] self, Tensor(b!) found_inf, "
      "Tensor inv_scale) -> ()")
      .category(OpCategory::Other).meta(unscale_meta).cpu(unscale_cpu).nondifferentiable()
      .decomposition(decomp::amp_foreach_non_finite_check_and_unscale)
      .doc("unscales gradients in place by inv_scale; found_inf = 1 if any is inf or NaN");
  def("_amp_update_scale_(Tensor(a!) self, Tensor(b!) growth_tracker, Tensor found_inf, "
      "float scale_growth_factor, float scale_backoff_factor, int growth_interval) -> Tensor(a!)")
      .category(OpCategory::Other).meta(update_scale_meta).cpu(update_scale_cpu)
      .nondifferentiable().decomposition(decomp::amp_update_scale)
      .doc("GradScaler's scale update: back off after an inf/NaN, grow after growth_interval "
           "clean steps");
}

}  // namespace ignis
