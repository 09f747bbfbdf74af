#include "ignis/cuda/kernel_errors.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "ignis/core/error.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/driver.h"
#include "ignis/cuda/stream.h"

namespace ignis::cuda {

namespace {

constexpr int kMaxDevices = 64;
std::array<std::atomic<KernelErrorRecord*>, kMaxDevices> g_records{};
std::array<std::atomic<bool>, kMaxDevices> g_unavailable{};  // asked, and no record possible
std::mutex g_alloc_mu;
constexpr int kCanMapHostMemory = 19, kUnifiedAddressing = 41;  // CUdevice_attribute

}  // namespace

KernelErrorRecord* kernel_error_record(int device) {
  IGNIS_INTERNAL_ASSERT(device >= 0 && device < kMaxDevices, "device ", device);
  if (KernelErrorRecord* r = g_records[size_t(device)].load(std::memory_order_acquire)) return r;
  if (g_unavailable[size_t(device)].load()) return nullptr;
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  if (KernelErrorRecord* r = g_records[size_t(device)].load()) return r;
  if (g_unavailable[size_t(device)].load()) return nullptr;
  ensure_context(device);
  // Mapped into every context's address space; with unified addressing
  // (every 64-bit platform CUDA supports) the host pointer is the device's.
  CUdevice dev = 0;
  int can_map = 0, unified = 0;
  void* p = nullptr;
  const bool ok = driver().cuDeviceGet(&dev, device) == CUDA_SUCCESS &&
                  driver().cuDeviceGetAttribute(&can_map, kCanMapHostMemory, dev) == CUDA_SUCCESS &&
                  driver().cuDeviceGetAttribute(&unified, kUnifiedAddressing, dev) == CUDA_SUCCESS &&
                  can_map && unified &&
                  driver().cuMemHostAlloc(&p, sizeof(KernelErrorRecord),
                                          CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) ==
                      CUDA_SUCCESS;
  if (!ok) {
    g_unavailable[size_t(device)].store(true);
    return nullptr;
  }
  auto* r = new (p) KernelErrorRecord{};  // never freed: kernels may hold it
  g_records[size_t(device)].store(r, std::memory_order_release);
  return r;
}

void raise_kernel_errors(int device) {
  if (device < 0 || device >= kMaxDevices) return;
  KernelErrorRecord* r = g_records[size_t(device)].load(std::memory_order_acquire);
  if (!r || !r->ready) return;
  const auto kind = KernelErrorKind(r->kind);
  const int64_t value = r->value, bound = r->bound, dim = r->dim;
  r->ready = 0;
  const std::string where = str(" (found on cuda:", device, " by a kernel launched before this "
                                "synchronization; IGNIS_CUDA_SYNC_INDEX_CHECKS=1 raises it at the call)");
  switch (kind) {
    case KernelErrorKind::IndexOutOfRangeInSelf:
      IGNIS_FAIL_KIND(Index, "index out of range in self: index ", value, " for a dim of size ",
                      bound, where);
    case KernelErrorKind::TargetOutOfBounds:
      IGNIS_FAIL_KIND(Index, "Target ", value, " is out of bounds.", where);
    case KernelErrorKind::IndexOutOfBounds:
      IGNIS_FAIL_KIND(Index, "index ", value, " is out of bounds for dimension ", dim,
                      " with size ", bound, where);
    default:
      IGNIS_FAIL("index ", value, " is out of bounds for dimension ", dim, " with size ", bound,
                 where);
  }
}

void check_after_launch(int device) {
  static const bool sync = [] {
    const char* v = std::getenv("IGNIS_CUDA_SYNC_INDEX_CHECKS");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  if (sync) synchronize_stream(current_stream(device));  // raises what it found
}

}  // namespace ignis::cuda
