// Writes the CUDA C++ of every eager kernel (every kernel, every dtype
// combination) into one translation unit, argv[1], for fake_libcuda.cpp to
// run on the host.
#include <fstream>
#include <string>

#include "ignis/kernels/cuda/source.h"

using namespace ignis;

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string prelude, body;
  auto add = [&](const cuda::KernelRequest& r) {
    size_t pos = r.source.find("extern \"C\"");
    if (prelude.empty()) prelude = r.source.substr(0, pos);
    body += r.source.substr(pos);
  };
  for (int i = 0; i < kNumScalarTypes; ++i) {
    auto a = static_cast<ScalarType>(i);
    if (is_complex(a)) continue;  // copied and filled as real pairs (ops/complex.cpp)
    add(cuda::eager_kernel("fill_contiguous", {a}));
    add(cuda::eager_kernel("fill_strided", {a}));
    for (int j = 0; j < kNumScalarTypes; ++j) {
      auto b = static_cast<ScalarType>(j);
      if (is_complex(b)) continue;
      add(cuda::eager_kernel("copy_contiguous", {a, b}));
      add(cuda::eager_kernel("copy_strided", {a, b}));
    }
  }
  std::ofstream(argv[1]) << prelude << body;
  return 0;
}
