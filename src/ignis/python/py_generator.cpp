// ignis._C.Generator: the Python face of a Philox generator
// (kernels/cpu/random.h), with torch.Generator's methods:
//   Generator(device="cpu"), manual_seed(seed) -> self, seed() -> int,
//   initial_seed() -> int, get_state() -> uint8 tensor, set_state(t) -> self,
//   device, and _C.default_generator (the generator of ignis.manual_seed).
// An op declared random (rand, randn, randint, randperm, multinomial,
// uniform_, normal_, random_, bernoulli_, *_like) called with `generator=`
// runs under a GeneratorGuard: see random_with_generator in py_op.cpp.
//
// The state is 16 bytes: the seed and the offset (the number of counters
// drawn), each a little-endian uint64.
#include <cstring>
#include <memory>
#include <random>

#include "ignis/kernels/cpu/random.h"
#include "ignis/python/py_common.h"

namespace ignis::py {

namespace {

struct PyGenerator {
  PyObject_HEAD
  std::shared_ptr<Generator> gen;  // the default generator: a non-owning pointer
  Device device;
};

PyTypeObject* GeneratorType_ = nullptr;

PyGenerator* as_gen(PyObject* o) { return reinterpret_cast<PyGenerator*>(o); }

// The seed of a Python int as torch takes it: any value in [-2^63, 2^64),
// negatives wrapping to uint64.
bool seed_of(PyObject* o, uint64_t* out) {
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "manual_seed expected a long, but got %s",
                 Py_TYPE(o)->tp_name);
    return false;
  }
  int overflow = 0;
  long long s = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (s == -1 && PyErr_Occurred()) return false;
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long long");
      return false;
    }
    *out = u;
    return true;
  }
  if (overflow < 0) {
    PyErr_SetString(PyExc_RuntimeError, "Overflow when unpacking long long");
    return false;
  }
  *out = static_cast<uint64_t>(s);
  return true;
}

PyObject* gen_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"device", nullptr};
  PyObject* dev = nullptr;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", const_cast<char**>(kw), &dev))
    return nullptr;
  Device d(DeviceType::CPU);
  if (dev && dev != Py_None && !to_device(dev, &d)) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "Generator: expected a device, got %s",
                   Py_TYPE(dev)->tp_name);
    return nullptr;
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (!self) return nullptr;
  new (&as_gen(self)->gen) std::shared_ptr<Generator>(std::make_shared<Generator>());
  new (&as_gen(self)->device) Device(d);
  return self;
}

void gen_dealloc(PyObject* self) {
  as_gen(self)->gen.~shared_ptr();
  as_gen(self)->device.~Device();
  Py_TYPE(self)->tp_free(self);
}

PyObject* gen_manual_seed(PyObject* self, PyObject* seed) {
  uint64_t s;
  if (!seed_of(seed, &s)) return nullptr;
  as_gen(self)->gen->manual_seed(s);
  Py_INCREF(self);
  return self;
}

// A non-deterministic seed (63 bits, as torch's), applied and returned.
PyObject* gen_seed(PyObject* self, PyObject*) {
  std::random_device rd;
  uint64_t s = ((uint64_t(rd()) << 32) | rd()) & ((uint64_t(1) << 63) - 1);
  as_gen(self)->gen->manual_seed(s);
  return PyLong_FromUnsignedLongLong(s);
}

PyObject* gen_initial_seed(PyObject* self, PyObject*) {
  return PyLong_FromUnsignedLongLong(as_gen(self)->gen->seed());
}

PyObject* gen_get_state(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  auto [seed, offset] = as_gen(self)->gen->state();
  Tensor t = empty_tensor({16}, ScalarType::UInt8, Device(DeviceType::CPU));
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (int i = 0; i < 8; ++i) {
    p[i] = static_cast<uint8_t>(seed >> (8 * i));
    p[8 + i] = static_cast<uint8_t>(offset >> (8 * i));
  }
  return wrap(std::move(t));
  IGNIS_PY_END(nullptr)
}

PyObject* gen_set_state(PyObject* self, PyObject* state) {
  IGNIS_PY_BEGIN
  if (!is_tensor(state)) {
    PyErr_Format(PyExc_TypeError, "expected a torch.ByteTensor, but got %s",
                 Py_TYPE(state)->tp_name);
    return nullptr;
  }
  const Tensor& t = unwrap(state);
  IGNIS_CHECK_TYPE(t.dtype() == ScalarType::UInt8 && t.device().is_cpu(),
                   "expected a torch.ByteTensor, but got a ", scalar_type_name(t.dtype()),
                   " tensor");
  IGNIS_CHECK(t.numel() == 16, "Expected a generator state of 16 bytes (seed, offset), got ",
              t.numel());
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  const int64_t st = t.dim() == 1 ? t.strides()[0] : 1;
  IGNIS_CHECK(t.dim() == 1, "Expected a 1-D generator state, got ", t.dim(), " dimensions");
  uint64_t seed = 0, offset = 0;
  for (int i = 0; i < 8; ++i) {
    seed |= uint64_t(p[i * st]) << (8 * i);
    offset |= uint64_t(p[(8 + i) * st]) << (8 * i);
  }
  as_gen(self)->gen->set_state(seed, offset);
  Py_INCREF(self);
  return self;
  IGNIS_PY_END(nullptr)
}

PyObject* gen_get_device(PyObject* self, void*) { return make_device(as_gen(self)->device); }

PyObject* gen_repr(PyObject* self) {
  return PyUnicode_FromFormat("<ignis._C.Generator object at %p>", self);
}

PyMethodDef gen_methods[] = {
    {"manual_seed", gen_manual_seed, METH_O,
     "Seeds the generator (offset 0); returns the generator."},
    {"seed", gen_seed, METH_NOARGS, "Seeds from a non-deterministic source; returns the seed."},
    {"initial_seed", gen_initial_seed, METH_NOARGS, "The seed last set."},
    {"get_state", gen_get_state, METH_NOARGS,
     "The state as a uint8 tensor of 16 bytes (seed, offset)."},
    {"set_state", gen_set_state, METH_O, "Restores a state from get_state; returns self."},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef gen_getset[] = {
    {"device", gen_get_device, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

bool is_generator(PyObject* o) {
  return GeneratorType_ && PyObject_TypeCheck(o, GeneratorType_);
}

Generator* generator_of(PyObject* o) { return as_gen(o)->gen.get(); }

bool init_generator(PyObject* module) {
  static PyType_Slot slots[] = {
      {Py_tp_new, reinterpret_cast<void*>(gen_new)},
      {Py_tp_dealloc, reinterpret_cast<void*>(gen_dealloc)},
      {Py_tp_methods, gen_methods},
      {Py_tp_getset, gen_getset},
      {Py_tp_repr, reinterpret_cast<void*>(gen_repr)},
      {Py_tp_doc, const_cast<char*>("Generator(device='cpu'): a seedable Philox random stream; "
                                    "random ops take it as generator=.")},
      {0, nullptr},
  };
  static PyType_Spec spec = {"ignis._C.Generator", sizeof(PyGenerator), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  GeneratorType_ = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  if (!GeneratorType_) return false;
  if (PyModule_AddObjectRef(module, "Generator", reinterpret_cast<PyObject*>(GeneratorType_)) < 0)
    return false;
  // default_generator: the process-wide generator, not owned.
  PyObject* d = GeneratorType_->tp_alloc(GeneratorType_, 0);
  if (!d) return false;
  new (&as_gen(d)->gen) std::shared_ptr<Generator>(&default_generator(), [](Generator*) {});
  new (&as_gen(d)->device) Device(DeviceType::CPU);
  int rc = PyModule_AddObjectRef(module, "default_generator", d);
  Py_DECREF(d);
  return rc == 0;
}

}  // namespace ignis::py
