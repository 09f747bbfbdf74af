#include <gtest/gtest.h>

#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/tensor_iterator.h"

using namespace ignis;

TEST(Tensor, ContiguousStridesAndViewsShareStorage) {
  Tensor t = empty_tensor({2, 3, 4}, ScalarType::Float32, Device(DeviceType::CPU));
  EXPECT_EQ(t.strides(), DimVector({12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
  Tensor v = make_view(t, {4, 2, 3}, {1, 12, 4}, 0);
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.impl()->storage().get(), t.impl()->storage().get());
  v.impl()->version_counter().bump();
  EXPECT_EQ(t.impl()->version_counter().value(), 1u);
}

TEST(Tensor, WrapDimErrorsNameTheRange) {
  EXPECT_EQ(wrap_dim(-1, 3), 2);
  try {
    wrap_dim(3, 3);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_NE(std::string(e.what()).find("[-3, 2]"), std::string::npos);
  }
}

TEST(Promotion, FollowsPyTorch) {
  EXPECT_EQ(promote_types(ScalarType::Int8, ScalarType::UInt8), ScalarType::Int16);
  EXPECT_EQ(promote_types(ScalarType::Float16, ScalarType::BFloat16), ScalarType::Float32);
  EXPECT_EQ(promote_types(ScalarType::Bool, ScalarType::Int32), ScalarType::Int32);
  Tensor i = empty_tensor({3}, ScalarType::Int32, Device(DeviceType::CPU));
  Tensor f = scalar_to_tensor(2.5, ScalarType::Float64, /*wrapped=*/true);
  EXPECT_EQ(result_type({&i, &f}), ScalarType::Float32);  // int tensor + Python float
  Tensor h = empty_tensor({3}, ScalarType::Float16, Device(DeviceType::CPU));
  Tensor d0 = scalar_to_tensor(1.0, ScalarType::Float64);  // 0-dim tensor
  EXPECT_EQ(result_type({&h, &d0}), ScalarType::Float16);
  EXPECT_EQ(result_type({&i, &d0}), ScalarType::Float64);
}
