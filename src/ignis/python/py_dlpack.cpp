// DLPack: sharing tensors with NumPy, torch, CuPy, JAX, ... without a copy.
// Argument conversion and the capsule protocol only; ignis.utils.dlpack and
// Tensor.__dlpack__ (python/ignis) wrap them.
//   _to_dlpack(tensor, versioned, stream) -> capsule "dltensor_versioned"
//       (DLPack 1.0, DLManagedTensorVersioned) or "dltensor" (legacy
//       DLManagedTensor). `stream` (None, -1 or the consumer's stream as
//       the array API numbers it) is where a CUDA consumer will use the data.
//   _from_dlpack_capsule(capsule) -> Tensor over the producer's memory; the
//       capsule is renamed "used_..." and the producer's deleter runs when
//       the last tensor sharing that memory is freed.
//
// The structs below are DLPack's ABI (dlpack.h, v1.0), declared here as the
// driver's types are (cuda/driver.h): the header is not needed to build.
#include <algorithm>
#include <functional>
#include <vector>

#include "ignis/cuda/device.h"
#include "ignis/cuda/stream.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

struct DLPackVersion {
  uint32_t major, minor;
};
enum : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };
struct DLDataType {
  uint8_t code, bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  uint64_t flags;
  DLTensor dl_tensor;
};
constexpr DLPackVersion kVersion{1, 0};

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kLegacyUsed = "used_dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kVersionedUsed = "used_dltensor_versioned";

DLDataType to_dl(ScalarType t) {
  uint8_t bits = static_cast<uint8_t>(element_size(t) * 8);
  switch (t) {
    case ScalarType::Bool: return {kDLBool, 8, 1};
    case ScalarType::UInt8: return {kDLUInt, 8, 1};
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64: return {kDLInt, bits, 1};
    case ScalarType::BFloat16: return {kDLBfloat, 16, 1};
    default: return {kDLFloat, bits, 1};
  }
}

ScalarType from_dl(DLDataType d) {
  IGNIS_CHECK_TYPE(d.lanes == 1, "from_dlpack: vector types (lanes = ", int(d.lanes),
                   ") are not supported");
  switch (d.code) {
    case kDLBool:
      if (d.bits == 8) return ScalarType::Bool;
      break;
    case kDLUInt:
      if (d.bits == 8) return ScalarType::UInt8;
      break;
    case kDLInt:
      if (d.bits == 8) return ScalarType::Int8;
      if (d.bits == 16) return ScalarType::Int16;
      if (d.bits == 32) return ScalarType::Int32;
      if (d.bits == 64) return ScalarType::Int64;
      break;
    case kDLFloat:
      if (d.bits == 16) return ScalarType::Float16;
      if (d.bits == 32) return ScalarType::Float32;
      if (d.bits == 64) return ScalarType::Float64;
      break;
    case kDLBfloat:
      if (d.bits == 16) return ScalarType::BFloat16;
      break;
  }
  IGNIS_FAIL_KIND(Type, "from_dlpack: unsupported DLPack dtype (code ", int(d.code), ", bits ",
                  int(d.bits), "); ignis has bool, uint8, int8-64, float16, bfloat16, float32 "
                  "and float64");
}

// What an exported capsule owns: an alias of the tensor (keeping its
// storage alive) and the shape and strides DLTensor points at.
template <typename Managed>
struct Export {
  Managed managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;

  static void deleter(Managed* m) { delete static_cast<Export*>(m->manager_ctx); }
};

template <typename Managed>
Managed* make_export(const Tensor& t) {
  auto* e = new Export<Managed>();
  // A fresh alias with no autograd state: the consumer may free it on any
  // thread, without the GIL.
  e->tensor = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  e->shape.assign(t.sizes().begin(), t.sizes().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = t.device().is_cuda() ? DLDevice{kDLCUDA, cuda::device_index(t.device())}
                                   : DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(t.dim());
  dl.dtype = to_dl(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = &Export<Managed>::deleter;
  return &e->managed;
}

// A capsule nobody consumed still owns the tensor: free it.
template <typename Managed>
void capsule_destructor(PyObject* capsule, const char* name) {
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed ("used_...")
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m && m->deleter) m->deleter(m);
}
void legacy_destructor(PyObject* c) { capsule_destructor<DLManagedTensor>(c, kLegacyName); }
void versioned_destructor(PyObject* c) {
  capsule_destructor<DLManagedTensorVersioned>(c, kVersionedName);
}

// The DLPack stream handshake (array API): the consumer will use the data
// on `consumer`; work queued on ignis's current stream of the device must
// finish first, so the consumer's stream waits on an event recorded here.
// `consumer`: 1 the legacy default stream, 2 the per-thread default stream,
// -1 no synchronisation, else a CUstream.
void sync_for_consumer(const Tensor& t, PyObject* stream) {
  if (!t.device().is_cuda() || stream == Py_None) return;
  long long v = PyLong_AsLongLong(stream);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    IGNIS_FAIL_KIND(Type, "__dlpack__: stream must be an int or None");
  }
  IGNIS_CHECK_VALUE(v != 0, "__dlpack__: stream 0 is ambiguous for CUDA; pass 1 for the legacy "
                    "default stream or 2 for the per-thread default stream");
  if (v == -1) return;
  int device = cuda::device_index(t.device());
  cuda::DeviceGuard guard(device);
  cuda::Stream producer = cuda::current_stream(device);
  auto handle = reinterpret_cast<cuda::CUstream>(static_cast<uintptr_t>(v));
  cuda::Stream consumer{device, v == 1 ? nullptr : handle};
  if (consumer == producer) return;
  cuda::Event ready;
  ready.record(producer);
  ready.block(consumer);
}

// _to_dlpack(tensor, versioned, stream)
PyObject* f_to_dlpack(PyObject*, PyObject* args) {
  PyObject *t, *stream;
  int versioned;
  if (!PyArg_ParseTuple(args, "OpO", &t, &versioned, &stream)) return nullptr;
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(is_tensor(t), "_to_dlpack: expected a Tensor");
  const Tensor& tensor = unwrap(t);
  IGNIS_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "Cannot export a ",
              tensor.device().str(),
              " tensor through DLPack (only cpu and cuda tensors have memory)");
  sync_for_consumer(tensor, stream);
  if (versioned) {
    auto* m = make_export<DLManagedTensorVersioned>(tensor);
    m->version = kVersion;
    m->flags = 0;
    PyObject* c = PyCapsule_New(m, kVersionedName, versioned_destructor);
    if (!c) m->deleter(m);
    return c;
  }
  auto* m = make_export<DLManagedTensor>(tensor);
  PyObject* c = PyCapsule_New(m, kLegacyName, legacy_destructor);
  if (!c) m->deleter(m);
  return c;
  IGNIS_PY_END(nullptr)
}

// A tensor over `dl`'s memory; `release` runs the producer's deleter.
Tensor import(const DLTensor& dl, std::function<void()> release) {
  ScalarType st = from_dl(dl.dtype);
  Device device(DeviceType::CPU);
  if (dl.device.device_type == kDLCUDA) {
    cuda::check_device(dl.device.device_id);
    device = Device(DeviceType::CUDA, dl.device.device_id);
  } else {
    // Pinned host memory (kDLCUDAHost) is host memory the CPU reads directly.
    IGNIS_CHECK(dl.device.device_type == kDLCPU || dl.device.device_type == kDLCUDAHost,
                "from_dlpack: unsupported device type ", dl.device.device_type,
                " (ignis reads kDLCPU, kDLCUDAHost and kDLCUDA memory)");
  }
  const int64_t nd = dl.ndim;
  DimVector sizes(nd), strides(nd);
  for (int64_t i = 0; i < nd; ++i) sizes[i] = dl.shape[i];
  if (dl.strides) {
    for (int64_t i = 0; i < nd; ++i) strides[i] = dl.strides[i];
  } else {
    strides = contiguous_strides(sizes);
  }
  int64_t extent = 1;
  bool empty = false;
  for (int64_t i = 0; i < nd; ++i) {
    // A size-1 dimension's stride is never used: any sign will do.
    if (sizes[i] <= 1) strides[i] = std::max<int64_t>(strides[i], 0);
    IGNIS_CHECK_VALUE(strides[i] >= 0, "from_dlpack: negative strides are not supported (make "
                      "a copy in the producing library first)");
    if (sizes[i] == 0) empty = true;
    else extent += (sizes[i] - 1) * strides[i];
  }
  if (empty) extent = 0;
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  Storage storage = make_intrusive<StorageImpl>(
      data, static_cast<size_t>(extent) * element_size(st), device,
      [release = std::move(release)](void*) { release(); });
  storage->set_resizable(false);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), st, sizes, strides, 0));
}

// _from_dlpack_capsule(capsule)
PyObject* f_from_dlpack_capsule(PyObject*, PyObject* capsule) {
  IGNIS_PY_BEGIN
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    IGNIS_CHECK(m->version.major <= kVersion.major, "from_dlpack: the producer's DLPack version ",
                m->version.major, ".", m->version.minor, " is newer than ignis reads (",
                kVersion.major, ".x)");
    Tensor t = import(m->dl_tensor, [m] {
      if (m->deleter) m->deleter(m);
    });
    PyCapsule_SetName(capsule, kVersionedUsed);
    return wrap(std::move(t));
  }
  if (PyCapsule_IsValid(capsule, kLegacyName)) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
    Tensor t = import(m->dl_tensor, [m] {
      if (m->deleter) m->deleter(m);
    });
    PyCapsule_SetName(capsule, kLegacyUsed);
    return wrap(std::move(t));
  }
  IGNIS_FAIL_KIND(Type, "from_dlpack: expected a DLPack capsule named \"dltensor\" or "
                  "\"dltensor_versioned\" (a capsule can be consumed only once)");
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_to_dlpack", f_to_dlpack, METH_VARARGS, "DLPack capsule of a tensor"},
    {"_from_dlpack_capsule", f_from_dlpack_capsule, METH_O, "tensor from a DLPack capsule"},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

bool init_dlpack(PyObject* module) { return PyModule_AddFunctions(module, functions) == 0; }

}  // namespace ignis::py
