#!/usr/bin/env bash
# Runs the CUDA tests (tests/python/test_cuda.py, test_cuda_blas.py,
# test_dlpack.py) against a fake CUDA driver and a fake cuBLASLt
# (fake_libcublaslt.cpp: host GEMMs) on a machine without a GPU: device memory is host memory and the eager kernels'
# CUDA C++ runs as host C++ (see fake_libcuda.cpp). Checks the runtime's
# plumbing (allocator, streams, events, copies, the kernel cache, bindings)
# and the kernels' logic (conversions, strided geometry); it cannot check real
# asynchrony or the GPU's own arithmetic, which gpu_check.sh does on a GPU.
#   bash tests/cuda_fake/run.sh [build dir, default build-wt] [pytest args...]
# Needs NVRTC ($IGNIS_NVRTC_LIBRARY, the toolkit, or the nvidia-cuda-nvrtc wheel).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-wt}
shift || true
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$root/tests/cuda_fake
g++ -std=c++20 -O1 -I"$root/src" "$here/dump_kernels.cpp" "$root/$build/libignis_core.a" \
  -fopenmp -ldl $( [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so ] && echo -lopenblas ) \
  -o "$work/dump_kernels"
"$work/dump_kernels" "$work/kernels.cu"
g++ -shared -fPIC -O1 -include "$here/kernel_host.h" -x c++ "$work/kernels.cu" -o "$work/kernels.so"
g++ -shared -fPIC -O1 "$here/fake_libcuda.cpp" -ldl -o "$work/libcuda.so.1"
g++ -shared -fPIC -O1 "$here/fake_libcublaslt.cpp" -o "$work/libcublasLt.so.13"
cd "$root/tests/python"
LD_LIBRARY_PATH="$work${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" IGNIS_FAKE_CUDA_KERNELS="$work/kernels.so" \
  IGNIS_CACHE_DIR="$work/cache" PYTHONPATH="$root/python" \
  IGNIS_CUBLASLT_LIBRARY="$work/libcublasLt.so.13" \
  python3 -m pytest -q -p no:cacheprovider test_cuda.py test_cuda_blas.py test_dlpack.py "$@"
