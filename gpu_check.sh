#!/usr/bin/env bash
# Builds ignis and runs the CUDA tests, the first-use measurement and the benchmarks on a
# machine with an NVIDIA GPU (docs/cuda.md). Logs go to $OUT (default:
# ./gpu_logs). Needs cmake, ninja, a C++20 compiler, Python with numpy and
# pytest; torch with CUDA is used as the oracle for device facts when present.
#   bash gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/gpu_logs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
{ nvidia-smi -L; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'; } \
  >"$OUT/machine.log" 2>&1
start=$(date +%s)
cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 &&
  ninja -C build-dev >>"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s" | tee -a "$OUT/build.log"
cp build-dev/_C*.so python/ignis/ 2>/dev/null || true
if [ -x build-dev/ignis_cpp_tests ]; then
  ./build-dev/ignis_cpp_tests --gtest_filter='Cuda*' >"$OUT/cpp.log" 2>&1
  tail -5 "$OUT/cpp.log"
fi
export IGNIS_CACHE_DIR=$(mktemp -d)
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda.py 2>&1 | tee "$OUT/pytest_cuda.log" | tail -25)
# GEMM through cuBLASLt and DLPack with torch/CuPy on the GPU.
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_blas.py test_dlpack.py 2>&1 | tee "$OUT/pytest_cuda_blas.log" | tail -25)
# The eager kernels of pointwise ops, reductions, softmax and layer norm against the CPU
# (tests/python/test_cuda_ops.py; its NVRTC compile of every variant runs here too).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_ops.py 2>&1 | tee "$OUT/pytest_cuda_ops.log" | tail -40)
# Training on CUDA: indexing, random numbers, losses, attention, optimizers and the GPT
# against the CPU (tests/python/test_cuda_train.py).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_train.py 2>&1 | tee "$OUT/pytest_cuda_train.log" | tail -40)
# CNNs on CUDA: convolution, pooling, batch norm, scatter_reduce against the CPU
# (tests/python/test_cuda_nn.py).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_nn.py 2>&1 | tee "$OUT/pytest_cuda_nn.log" | tail -40)
# Row kernels (softmax, layer norm), flash attention and strided copies against the CPU
# (tests/python/test_cuda_rows.py, test_cuda_flash_attention.py, test_cuda_copies.py).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_rows.py test_cuda_flash_attention.py test_cuda_copies.py 2>&1 \
  | tee "$OUT/pytest_cuda_rows.log" | tail -25)
# Mixed precision: autocast("cuda") and GradScaler("cuda") (the whole file: its CUDA tests
# run on the GPU, the rest on the CPU; docs/autocast.md).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_autocast.py 2>&1 | tee "$OUT/pytest_autocast.log" | tail -25)
# The compiler on the GPU: compiled graphs against eager on CUDA
# (tests/python/test_cuda_compiler.py).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_compiler.py 2>&1 | tee "$OUT/pytest_cuda_compiler.log" | tail -40)
# Size-generic CUDA code: the generic tests, and the compiler's tests with every graph generic
# (the default, "auto", keeps CUDA graphs static; docs/dynamic_shapes.md).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_compiler_size_generic.py 2>&1 | tee "$OUT/pytest_size_generic.log" | tail -5)
(cd tests/python && IGNIS_SIZE_GENERIC=1 PYTHONPATH=../../python python3 -m pytest -q \
  -p no:cacheprovider -rs test_cuda_compiler.py 2>&1 | tee "$OUT/pytest_cuda_compiler_generic.log" \
  | tail -5)
# CUDA graphs: ignis.cuda.CUDAGraph and mode="reduce-overhead"
# (tests/python/test_cuda_graphs.py).
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -rs \
  test_cuda_graphs.py 2>&1 | tee "$OUT/pytest_cuda_graphs.log" | tail -40)
(cd tests/python && PYTHONPATH=../../python python3 -m pytest -q -p no:cacheprovider -x \
  test_conversion.py test_creation.py test_repr.py test_cpu_allocator.py 2>&1 \
  | tee "$OUT/pytest_neighbours.log" | tail -3)
PYTHONPATH=python python3 bench/cuda_first_use.py 2>&1 | tee "$OUT/first_use.log"
PYTHONPATH=python python3 bench/gpu_gemm.py 2>&1 | tee "$OUT/gpu_gemm.log"
# ignis eager beside torch eager (docs/cuda.md, "The GPU benchmark"); exits 1 on a MISMATCH.
PYTHONPATH=python python3 bench/gpu.py --json "$OUT/gpu.json" 2>"$OUT/gpu.err" | tee "$OUT/gpu.log"
# Attention beside torch's SDPA at two lengths and every mask kind, and the mma.sync
# kernels (IGNIS_CUDA_FLASH_SM90=0) beside the Hopper ones (docs/cuda.md, "Flash attention").
PYTHONPATH=python python3 bench/gpu_attention.py --lengths 512,2048 \
  --variant IGNIS_CUDA_FLASH_SM90=0 2>&1 | tee "$OUT/gpu_attention.log"
# Head dim 128, the mma.sync kernels beside the Hopper ones.
PYTHONPATH=python python3 bench/gpu_attention.py --lengths 2048 --head-dim 128 \
  --variant IGNIS_CUDA_FLASH_SM90=0 2>&1 \
  | tee "$OUT/gpu_attention_d128.log"
# Compiled row kernels under config.cuda's knobs beside torch.compile (docs/compiler.md,
# "Vectors, registers and columns").
PYTHONPATH=python python3 bench/gpu_rows.py --peer 2>&1 | tee "$OUT/gpu_rows.log"
