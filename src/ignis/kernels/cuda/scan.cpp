#include "ignis/kernels/cuda/scan.h"

#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/stream.h"
#include "ignis/kernels/cuda/copy.h"
#include "ignis/kernels/cuda/source.h"

namespace ignis::cuda {

namespace {

// A thread per line (the kernel: source.cpp, scan_lines): the lines of a
// tensor scanned along its last dim are far apart, so this is slow for few
// long rows; it serves the programs that reach it (prod's backward, user
// cumsums) with the CPU's results. A blocked scan is the faster design.
void scan(const Tensor& out, const Tensor& in, int64_t dim, bool prod) {
  if (out.numel() == 0) return;
  const int64_t nd = out.dim();
  int64_t len = 1, dst_step = 0, src_step = 0;
  DimVector sizes, dst_strides, src_strides;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == dim) {
      len = out.sizes()[d];
      dst_step = out.strides()[d];
      src_step = in.strides()[d];
      continue;
    }
    sizes.push_back(out.sizes()[d]);
    dst_strides.push_back(out.strides()[d]);
    src_strides.push_back(in.strides()[d]);
  }
  // The lines as views (a 0-dim or 1-dim tensor has one line).
  const Tensor dst_lines = make_view(out, sizes, dst_strides, out.storage_offset());
  const Tensor src_lines = make_view(in, sizes, src_strides, in.storage_offset());
  KernelGeometry g = geometry_for(dst_lines, &src_lines);
  int64_t lines = dst_lines.numel();
  const int device = out.device().index;
  DeviceGuard guard(device);
  Stream stream = current_stream(device);
  void* d = out.data_ptr();
  const void* s = in.data_ptr();
  CUfunction f =
      eager_function(device, prod ? "cumprod_lines" : "cumsum_lines", {out.dtype(), in.dtype()});
  void* args[] = {&d, &s, &lines, &len, &dst_step, &src_step, &g};
  launch_grid_stride(f, lines, args, stream);
}

}  // namespace

void cumsum_out(const Tensor& out, const Tensor& in, int64_t dim) { scan(out, in, dim, false); }
void cumprod_out(const Tensor& out, const Tensor& in, int64_t dim) { scan(out, in, dim, true); }

}  // namespace ignis::cuda
