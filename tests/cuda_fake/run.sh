#!/usr/bin/env bash
# Runs the CUDA tests (tests/python/test_cuda.py, test_cuda_blas.py,
# test_dlpack.py, test_cuda_graphs.py) against a fake CUDA driver and a fake cuBLASLt
# (fake_libcublaslt.cpp: host GEMMs) on a machine without a GPU: device memory is host memory and the eager kernels'
# CUDA C++ runs as host C++ (see fake_libcuda.cpp). Checks the runtime's
# plumbing (allocator, streams, events, copies, the kernel cache, bindings)
# and the kernels' logic (conversions, strided geometry); it cannot check real
# asynchrony or the GPU's own arithmetic, which gpu_check.sh does on a GPU.
#   bash tests/cuda_fake/run.sh [build dir, default build-wt] [pytest args...]
#   FAKE_CUDA_TESTS="test_cuda_ops.py" bash tests/cuda_fake/run.sh build-wt -k float32
#   FAKE_CUDA_CC=90 FAKE_CUDA_TESTS="test_cuda_flash_attention.py" bash tests/cuda_fake/run.sh build-wt
#     (a compute capability 9.0 device: the Hopper kernels, wgmma emulated; default 8.0)
#   bash tests/cuda_fake/run.sh build-wt --fuzz --backend inductor --count 40 --seed 1
#     (random programs compiled vs eager with CUDA inputs: python3 -m tests.fuzz --device cuda)
#   FAKE_CUDA_NO_WORK=1 bash tests/cuda_fake/run.sh build-wt --python bench/host_overhead.py
#     (a script from the checkout's root; with FAKE_CUDA_NO_WORK no kernel or GEMM does any
#     work, so it times ignis's host side alone)
# Needs NVRTC ($IGNIS_NVRTC_LIBRARY, the toolkit, or the nvidia-cuda-nvrtc wheel).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-wt}
shift || true
fuzz=0 script=
if [ "${1:-}" = "--fuzz" ]; then fuzz=1; shift; fi
if [ "${1:-}" = "--python" ]; then script=$2; shift 2; fi
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
# Generated kernels (pointwise, reductions, softmax, layer norm) are compiled
# for the host as they are first launched, into $IGNIS_FAKE_CUDA_SOURCES
# (default: a directory kept across runs, so later runs reuse them).
sources=${IGNIS_FAKE_CUDA_SOURCES:-/tmp/ignis-fake-cuda-kernels}
mkdir -p "$sources"
tests=${FAKE_CUDA_TESTS:-test_cuda.py test_cuda_blas.py test_dlpack.py test_cuda_graphs.py}
export LD_LIBRARY_PATH="$work${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" IGNIS_FAKE_CUDA_KERNELS="$work/kernels.so" \
  IGNIS_CUDA_DUMP_SOURCES="$sources" IGNIS_FAKE_CUDA_HOST_HEADER="$here/kernel_host.h" \
  IGNIS_CACHE_DIR="$work/cache" PYTHONPATH="$root/python" \
  IGNIS_CUBLASLT_LIBRARY="$work/libcublasLt.so.13"
if [ "$fuzz" = 1 ]; then
  cd "$root" && python3 -m tests.fuzz --device cuda "$@"
elif [ -n "$script" ]; then
  cd "$root" && python3 "$script" "$@"
else
  python3 -m pytest -q -p no:cacheprovider $tests "$@"
fi
