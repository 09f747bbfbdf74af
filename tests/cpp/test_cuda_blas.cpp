// The cuBLASLt loader (cuda/cublaslt.h) on any machine: a missing library is
// reported with its path, a library without cuBLASLt's symbols names the
// first one missing, and where a real libcublasLt is found
// ($IGNIS_CUBLASLT_LIBRARY or the toolkit's; dlopen needs no GPU) every
// entry point of the table resolves.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "ignis/cuda/cublaslt.h"

using namespace ignis;

namespace {

std::string find_real_cublaslt() {
  if (const char* p = std::getenv("IGNIS_CUBLASLT_LIBRARY"))
    if (std::filesystem::exists(p)) return p;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* root = std::getenv(var))
      for (const char* n : {"libcublasLt.so.13", "libcublasLt.so.12"})
        if (std::filesystem::exists(std::string(root) + "/lib64/" + n))
          return std::string(root) + "/lib64/" + n;
  for (const char* n : {"libcublasLt.so.13", "libcublasLt.so.12"})
    if (std::filesystem::exists(std::string("/usr/local/cuda/lib64/") + n))
      return std::string("/usr/local/cuda/lib64/") + n;
  return "";
}

}  // namespace

TEST(CudaBlas, MissingLibraryIsNamed) {
  cuda::CublasLtApi api = cuda::load_cublaslt_from("/nonexistent/libcublasLt.so.13");
  EXPECT_FALSE(api.is_loaded());
  EXPECT_NE(api.unavailable.find("could not load /nonexistent/libcublasLt.so.13"),
            std::string::npos)
      << api.unavailable;
  EXPECT_EQ(api.cublasLtMatmul, nullptr);
}

TEST(CudaBlas, LibraryWithoutTheSymbolsNamesTheFirstMissing) {
  cuda::CublasLtApi api = cuda::load_cublaslt_from("libm.so.6");
  ASSERT_FALSE(api.is_loaded());
  EXPECT_NE(api.unavailable.find("has no symbol cublasLtCreate"), std::string::npos)
      << api.unavailable;
}

TEST(CudaBlas, EveryEntryPointResolvesInARealLibrary) {
  std::string path = find_real_cublaslt();
  if (path.empty())
    GTEST_SKIP() << "no libcublasLt here (set IGNIS_CUBLASLT_LIBRARY, CUDA_HOME, or install the "
                    "toolkit)";
  cuda::CublasLtApi api = cuda::load_cublaslt_from(path);
  ASSERT_TRUE(api.is_loaded()) << api.unavailable;
#define IGNIS_CHECK_RESOLVED(name, sig) EXPECT_NE(api.name, nullptr) << #name;
  IGNIS_CUBLASLT_FUNCTIONS(IGNIS_CHECK_RESOLVED)
#undef IGNIS_CHECK_RESOLVED
  EXPECT_GE(api.cublasLtGetVersion(), 120000u);
  // Status names come from the library itself.
  EXPECT_STREQ(api.cublasLtGetStatusName(cuda::CUBLAS_STATUS_NOT_SUPPORTED),
               "CUBLAS_STATUS_NOT_SUPPORTED");
}
