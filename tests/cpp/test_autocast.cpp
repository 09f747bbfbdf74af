// The autocast layer: a kernel at the autocast key casts as the op's policy
// says, excludes itself (what a composite calls is not cast again) and
// redispatches; ops with no policy fall through; the state is the key in the
// included set.
#include <gtest/gtest.h>

#include "ignis/autocast/autocast_mode.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/ops/autocast_policy.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

namespace {

Tensor randn(std::vector<int64_t> sizes) { return OpRef("randn").tensor(sizes); }

// Autocast on for the CPU for one scope.
struct CpuAutocast {
  CpuAutocast() { autocast::set_enabled(DeviceType::CPU, true); }
  ~CpuAutocast() {
    autocast::set_enabled(DeviceType::CPU, false);
    autocast::clear_cache();
  }
};

}  // namespace

TEST(Autocast, EnabledIsTheIncludedKey) {
  register_all_ops();
  EXPECT_FALSE(autocast::is_enabled(DeviceType::CPU));
  {
    CpuAutocast on;
    EXPECT_TRUE(tls_dispatch_keys().included.has(DispatchKey::AutocastCPU));
    EXPECT_TRUE(autocast::is_enabled(DeviceType::CPU));
    EXPECT_FALSE(autocast::is_enabled(DeviceType::CUDA));
    {
      ExcludeDispatchKeyGuard off(DispatchKey::AutocastCPU);  // still "on": excluded only
      EXPECT_TRUE(autocast::is_enabled(DeviceType::CPU));
    }
  }
  EXPECT_FALSE(tls_dispatch_keys().included.has(DispatchKey::AutocastCPU));
  EXPECT_THROW(autocast::set_enabled(DeviceType::Meta, true), Error);
}

TEST(Autocast, PoliciesCastTheArguments) {
  register_all_ops();
  Tensor a = randn({3, 4}), b = randn({4, 2});
  CpuAutocast on;
  EXPECT_EQ(OpRef("mm").tensor(a, b).dtype(), ScalarType::BFloat16);      // lower precision
  EXPECT_EQ(OpRef("add").tensor(a, a).dtype(), ScalarType::Float32);  // no policy
  Tensor h = OpRef("_to_copy").tensor(a, ScalarType::BFloat16);
  EXPECT_EQ(OpRef("mse_loss").tensor(h, h).dtype(), ScalarType::Float32);  // fp32
  Stack s = OpRef("cat").call(std::vector<Tensor>{h, a});                   // promote
  EXPECT_EQ(s[0].to_tensor().dtype(), ScalarType::Float32);
  // float64 is never cast.
  Tensor d = OpRef("_to_copy").tensor(a, ScalarType::Float64);
  Tensor db = OpRef("_to_copy").tensor(b, ScalarType::Float64);
  EXPECT_EQ(OpRef("mm").tensor(d, db).dtype(), ScalarType::Float64);
  // matmul (composite, listed) casts once; the mm it calls sees bfloat16.
  EXPECT_EQ(OpRef("matmul").tensor(a, b).dtype(), ScalarType::BFloat16);
}

TEST(Autocast, StateKeyTellsStatesApart) {
  register_all_ops();
  int64_t off = autocast::state_key();
  int64_t bf16, f16;
  {
    CpuAutocast on;
    bf16 = autocast::state_key();
    autocast::set_dtype(DeviceType::CPU, ScalarType::Float16);
    f16 = autocast::state_key();
    autocast::set_dtype(DeviceType::CPU, ScalarType::BFloat16);
  }
  EXPECT_NE(off, bf16);
  EXPECT_NE(bf16, f16);
  EXPECT_EQ(off, autocast::state_key());
  EXPECT_EQ(autocast::describe_state_key(bf16), "cpu=bfloat16 cuda=off cache=on");
}

TEST(Autocast, EveryRuleNamesAnOp) {
  register_all_ops();
  for (const AutocastRule& r : autocast_rules()) {
    std::string name = r.op;
    bool found = name.find('.') != std::string::npos ? Dispatcher::get().find(name) != nullptr
                                                     : !Dispatcher::get().overloads(name).empty();
    EXPECT_TRUE(found) << name;
    for (OpHandle* h : Dispatcher::get().overloads(name.substr(0, name.find('.')))) {
      if (name.find('.') != std::string::npos && h->name() != name) continue;
      EXPECT_EQ(h->has_kernel(DispatchKey::AutocastCPU), r.cpu != CastPolicy::None) << h->name();
      EXPECT_EQ(h->has_kernel(DispatchKey::AutocastCUDA), r.cuda != CastPolicy::None) << h->name();
    }
  }
}
