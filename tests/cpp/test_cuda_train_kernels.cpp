// The CUDA kernels of the GPT training step beyond pointwise/reduction/GEMM,
// on machines without a GPU: the indexing and random-number kernels compile
// with NVRTC for sm_90 (skipped without NVRTC), and the ops the step calls
// have a CUDA kernel in the registry: a structured one, one kernel for every
// backend, or a decomposition (which runs there in its place). The GPU tests
// are tests/python/test_cuda_train.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/cuda/nvrtc.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/kernels/cuda/index_kernels.h"
#include "ignis/kernels/cuda/random_kernels.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

namespace {

const ScalarType kAll[] = {ScalarType::Bool,    ScalarType::UInt8,    ScalarType::Int8,
                           ScalarType::Int16,   ScalarType::Int32,    ScalarType::Int64,
                           ScalarType::Float16, ScalarType::BFloat16, ScalarType::Float32,
                           ScalarType::Float64};

}  // namespace

TEST(CudaTrainKernels, IndexAndRandomKernelsCompileWithNvrtc) {
  try {
    cuda::nvrtc_version();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not found: " << e.what();
  }
  int n = 0;
  for (ScalarType t : kAll) {
    std::vector<cuda::KernelRequest> rs = cuda::index_kernel_requests(t);
    for (const cuda::KernelRequest& r : cuda::random_kernel_requests(t)) rs.push_back(r);
    EXPECT_EQ(rs.size(), is_floating(t) ? 5u : 4u) << dtype_name(t);
    for (const cuda::KernelRequest& r : rs) {
      std::string cubin = cuda::nvrtc_compile(r.source, r.label, 90, r.options);
      EXPECT_NE(cubin.find(r.symbol), std::string::npos) << r.symbol;
      ++n;
    }
  }
  EXPECT_EQ(n, 44);
}

TEST(CudaTrainKernels, TrainingOpsHaveCudaKernels) {
  register_all_ops();
  for (const char* name :
       {"embedding", "index.Tensor", "index_put_", "index_select", "gather", "scatter.src",
        "scatter_add", "index_add", "cat", "tril", "triu", "arange", "arange.start", "rand",
        "randn", "native_dropout", "nll_loss", "cross_entropy", "_scaled_dot_product_attention",
        "_scaled_dot_product_attention_backward", "uniform_", "normal_", "bernoulli_"}) {
    const OpDef* d = Dispatcher::get().find_or_throw(name).def();
    ASSERT_NE(d, nullptr) << name;
    EXPECT_TRUE(d->cuda || d->any_backend || d->decomposition) << name;
  }
  // The scans, sorts and scatter_reduce have theirs.
  for (const char* name : {"cumsum", "sort", "topk", "scatter_reduce.two"})
    EXPECT_TRUE(Dispatcher::get().find_or_throw(name).def()->cuda != nullptr) << name;
}
