// The CUDA runtime on machines without a GPU (CI): the driver loader reports
// why it is unavailable instead of failing, and CUDA storage raises a clear
// error. Where NVRTC is found (the toolkit, or $IGNIS_NVRTC_LIBRARY), every
// eager kernel is compiled for sm_90, which needs no GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "ignis/core/error.h"
#include "ignis/core/storage.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/driver.h"
#include "ignis/cuda/nvrtc.h"
#include "ignis/kernels/cuda/source.h"
#include "ignis/ops/op_def.h"

using namespace ignis;

TEST(CudaRuntime, UnavailableDriverIsReportedNotFatal) {
  const cuda::DriverApi& api = cuda::driver();
  if (api.is_loaded() && api.init_result == cuda::CUDA_SUCCESS && cuda::device_count() > 0)
    GTEST_SKIP() << "a GPU is present; this checks machines without one";
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_FALSE(cuda::is_available());
  EXPECT_FALSE(cuda::unavailable_reason().empty());
  try {
    cuda::check_device(0);
    FAIL() << "check_device should raise without a GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Runtime);
  }
}

TEST(CudaRuntime, CudaStorageRaisesWithoutAGpu) {
  register_all_ops();  // installs the CUDA allocator hook
  if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  try {
    allocate_storage(16, Device(DeviceType::CUDA, 0));
    FAIL() << "allocating CUDA memory should raise without a GPU";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_TRUE(m.find("no CUDA GPUs are available") != std::string::npos ||
                m.find("ignis was built without CUDA") != std::string::npos)
        << m;
  }
}

TEST(CudaRuntime, DriverErrorNamesTheCall) {
  try {
    cuda::throw_driver_error(cuda::CUDA_ERROR_NOT_READY, "cuStreamQuery(s)");
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuStreamQuery(s)"), std::string::npos) << m;
    EXPECT_NE(m.find("600"), std::string::npos) << m;  // the code, even with no driver to name it
  }
}

// Every eager kernel, for every dtype combination, compiles under NVRTC.
TEST(CudaKernels, EveryEagerKernelCompilesWithNvrtc) {
  try {
    cuda::nvrtc_version();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not found: " << e.what();
  }
  std::vector<ScalarType> all;
  for (int i = 0; i < kNumScalarTypes; ++i) all.push_back(static_cast<ScalarType>(i));
  int n = 0;
  double seconds = 0;
  auto compile = [&](const cuda::KernelRequest& r) {
    auto t0 = std::chrono::steady_clock::now();
    // PTX (front end and NVVM, where a source error shows) for all but every
    // hundredth, which goes on through ptxas to a cubin: ptxas is about half
    // of NVRTC's time and finds nothing new in 600 variants of two kernels.
    const bool ptx = n % 100 != 0;
    std::string code = cuda::nvrtc_compile(r.source, r.label, 90, r.options,
                                           ptx ? cuda::NvrtcOutput::kPtx : cuda::NvrtcOutput::kCubin);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GT(code.size(), 0u) << r.symbol;
    EXPECT_NE(code.find(r.symbol), std::string::npos) << r.symbol;  // the entry point is in it
    ++n;
  };
  for (ScalarType a : all) {
    compile(cuda::eager_kernel("fill_contiguous", {a}));
    compile(cuda::eager_kernel("fill_strided", {a}));
    for (ScalarType b : all) {
      compile(cuda::eager_kernel("copy_contiguous", {a, b}));
      compile(cuda::eager_kernel("copy_strided", {a, b}));
    }
  }
  std::printf("compiled %d eager kernels with NVRTC %d (%s) in %.2f s, %.1f ms each\n", n,
              cuda::nvrtc_version(), cuda::nvrtc_library().c_str(), seconds, seconds / n * 1e3);
}

TEST(CudaKernels, CompileErrorsCarryNvrtcsLog) {
  try {
    cuda::nvrtc_version();
  } catch (const Error& e) {
    GTEST_SKIP() << "NVRTC not found: " << e.what();
  }
  try {
    cuda::nvrtc_compile("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", 90, {});
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.cu"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
  }
}
