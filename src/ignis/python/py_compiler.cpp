// Bindings of the compiler (compiler/): argument conversion only.
//   _compile_graph(graph, constants=None, options=None, probes=None) -> CompiledGraph
//     options: {name: int} of compiler::CompilerOptions' fields
//   CompiledGraph(*tensors) -> tuple; .generated_code, .kernel_count, .program, .memory_plan,
//   .schedule
//   CompiledGraph._enable_cudagraphs(name): later calls go through a CUDA
//   graph runner (mode="reduce-overhead"); .cudagraph_stats (None without)
//   _generate_graph_code(graph, device=None, options=None) -> (program text, source,
//       [CUDA kernel symbols]); options as _compile_graph's
//   _forget_probed_sizes(): ignis.compiler.reset()'s part (Note [Parameters that
//     vary with the sizes])
//   _generate_size_generic_code(graph, device=None, lift=True)
//     -> (source, [[parameter values] per kernel])
#include "ignis/compiler/codegen_cuda.h"
#include "ignis/capture/log.h"
#include "ignis/compiler/compiled_graph.h"
#include "ignis/compiler/cudagraph_runner.h"
#include "ignis/compiler/lower.h"
#include "ignis/python/py_common.h"
#include "ignis/runtime/code_cache.h"

#include <optional>
#include <vector>

namespace ignis::py {

namespace {

struct PyCompiledGraph {
  PyObject_HEAD
  compiler::CompiledGraph* cg;
  compiler::CudaGraphRunner* runner;  // null: calls run cg directly
};

void cg_dealloc(PyObject* self) {
  delete reinterpret_cast<PyCompiledGraph*>(self)->runner;
  delete reinterpret_cast<PyCompiledGraph*>(self)->cg;
  Py_TYPE(self)->tp_free(self);
}

PyObject* cg_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  IGNIS_PY_BEGIN
  IGNIS_CHECK_TYPE(!kwargs || PyDict_Size(kwargs) == 0, "CompiledGraph takes no keywords");
  std::vector<Tensor> inputs;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); ++i) {
    PyObject* a = PyTuple_GET_ITEM(args, i);
    IGNIS_CHECK_TYPE(is_tensor(a), "CompiledGraph: input ", i, " is a ", Py_TYPE(a)->tp_name,
                     ", not a tensor");
    inputs.push_back(unwrap(a));
  }
  std::vector<graph::Value> outs;
  {
    auto* py = reinterpret_cast<PyCompiledGraph*>(self);
    outs = py->runner ? py->runner->run(inputs) : py->cg->run(inputs);
  }
  PyObject* t = PyTuple_New(Py_ssize_t(outs.size()));
  if (!t) return nullptr;
  for (size_t i = 0; i < outs.size(); ++i) {
    PyObject* o = py_from_value(outs[i]);
    if (!o) {
      Py_DECREF(t);
      return nullptr;
    }
    PyTuple_SET_ITEM(t, Py_ssize_t(i), o);
  }
  return t;
  IGNIS_PY_END(nullptr)
}

PyObject* cg_code(PyObject* self, void*) {
  return PyUnicode_FromString(reinterpret_cast<PyCompiledGraph*>(self)->cg->source().c_str());
}
PyObject* cg_kernels(PyObject* self, void*) {
  return PyLong_FromSize_t(reinterpret_cast<PyCompiledGraph*>(self)->cg->kernel_count());
}
PyObject* cg_program(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(reinterpret_cast<PyCompiledGraph*>(self)->cg->program_text().c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* cg_memory_plan(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  auto* cg = reinterpret_cast<PyCompiledGraph*>(self)->cg;
  return PyUnicode_FromString(cg->memory_plan_text().c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* cg_schedule(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  return PyUnicode_FromString(reinterpret_cast<PyCompiledGraph*>(self)->cg->schedule_text().c_str());
  IGNIS_PY_END(nullptr)
}

PyObject* cg_autotune(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  auto* cg = reinterpret_cast<PyCompiledGraph*>(self)->cg;
  std::string s;
  for (const std::string& line : cg->autotune_report()) s += line + "\n";
  return Py_BuildValue("(sO)", s.c_str(), cg->autotune_measured() ? Py_True : Py_False);
  IGNIS_PY_END(nullptr)
}

PyObject* cg_enable_profile(PyObject* self, PyObject* on) {
  IGNIS_PY_BEGIN
  reinterpret_cast<PyCompiledGraph*>(self)->cg->enable_profile(PyObject_IsTrue(on) == 1);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// [(label, bytes, calls, seconds, cpu_seconds)] per step, in program order.
PyObject* cg_profile(PyObject* self, PyObject*) {
  IGNIS_PY_BEGIN
  auto rows = reinterpret_cast<PyCompiledGraph*>(self)->cg->profile();
  PyObject* list = PyList_New(Py_ssize_t(rows.size()));
  if (!list) return nullptr;
  for (size_t i = 0; i < rows.size(); ++i) {
    PyObject* t = Py_BuildValue("(sLLdd)", rows[i].label.c_str(), (long long)rows[i].bytes,
                                (long long)rows[i].calls, rows[i].seconds, rows[i].cpu_seconds);
    if (!t) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, Py_ssize_t(i), t);
  }
  return list;
  IGNIS_PY_END(nullptr)
}

// The runner's reports: a "[cudagraphs] ..." log line when that artifact is
// on; a fallback also warns (once per runner: it falls back once). Called
// with the GIL held (from a call or from _enable_cudagraphs).
void report_cudagraphs(bool fallback, const std::string& text) {
  if (capture::log_on(capture::kLogCudagraphs)) capture::log_write(capture::kLogCudagraphs, text);
  if (!fallback) return;
  std::string msg = "ignis.compile(mode=\"reduce-overhead\"): " + text;
  if (PyErr_WarnEx(PyExc_UserWarning, msg.c_str(), 1) < 0) PyErr_Clear();
}

PyObject* cg_enable_cudagraphs(PyObject* self, PyObject* name) {
  IGNIS_PY_BEGIN
  auto* py = reinterpret_cast<PyCompiledGraph*>(self);
  IGNIS_CHECK_TYPE(PyUnicode_Check(name), "_enable_cudagraphs: name must be a str");
  if (!py->runner)
    py->runner = new compiler::CudaGraphRunner(*py->cg, PyUnicode_AsUTF8(name), report_cudagraphs);
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyObject* cg_cudagraph_stats(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  auto* py = reinterpret_cast<PyCompiledGraph*>(self);
  if (!py->runner) Py_RETURN_NONE;
  auto s = py->runner->stats();
  std::string reason = py->runner->fallback_reason();
  return Py_BuildValue("{sLsLsLsLsLsisN}", "plain_runs", (long long)s.plain_runs, "records",
                       (long long)s.records, "replays", (long long)s.replays, "input_copies",
                       (long long)s.input_copies, "outputs_moved", (long long)s.outputs_moved,
                       "copied_inputs", s.copied_inputs, "fallback",
                       reason.empty() ? Py_NewRef(Py_None) : PyUnicode_FromString(reason.c_str()));
  IGNIS_PY_END(nullptr)
}

PyMethodDef cg_methods[] = {
    {"_enable_cudagraphs", cg_enable_cudagraphs, METH_O,
     "later calls record a CUDA graph and replay it (mode=\"reduce-overhead\")"},
    {"enable_profile", cg_enable_profile, METH_O, "time every step of later calls"},
    {"profile", cg_profile, METH_NOARGS, "[(label, bytes, calls, seconds, cpu_seconds)] per step"},
    {nullptr, nullptr, 0, nullptr},
};

PyObject* cg_from_graph_cache(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<PyCompiledGraph*>(self)->cg->from_graph_cache());
}
PyObject* cg_compiled_code(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<PyCompiledGraph*>(self)->cg->compiled_code());
}
PyObject* cg_size_generic(PyObject* self, void*) {
  return PyBool_FromLong(reinterpret_cast<PyCompiledGraph*>(self)->cg->size_generic());
}
PyObject* cg_compile_phases(PyObject* self, void*) {
  IGNIS_PY_BEGIN
  const auto& phases = reinterpret_cast<PyCompiledGraph*>(self)->cg->compile_phases();
  PyRef out(PyList_New(0));
  for (const auto& [name, seconds] : phases) {
    PyRef item(Py_BuildValue("(sd)", name.c_str(), seconds));
    if (!item.p || PyList_Append(out.p, item.p) < 0) throw PythonErrorAlreadySet{};
  }
  return out.release();
  IGNIS_PY_END(nullptr)
}

PyGetSetDef cg_getset[] = {
    {"from_graph_cache", cg_from_graph_cache, nullptr,
     "whether the graph cache supplied it (nothing was lowered or generated)", nullptr},
    {"compiled_code", cg_compiled_code, nullptr,
     "whether a compiler ran for its kernels (false: their library was loaded or on disk)",
     nullptr},
    {"size_generic", cg_size_generic, nullptr,
     "whether its kernels read their sizes from parameters", nullptr},
    {"compile_phases", cg_compile_phases, nullptr,
     "[(phase, seconds)]: where compiling it went (lowering, code generation, ...)", nullptr},
    {"generated_code", cg_code, nullptr, "the generated C++ source", nullptr},
    {"kernel_count", cg_kernels, nullptr, "the number of generated kernels", nullptr},
    {"program", cg_program, nullptr, "the loop IR, printed", nullptr},
    {"memory_plan", cg_memory_plan, nullptr, "buffer slots and releases, printed", nullptr},
    {"schedule", cg_schedule, nullptr, "the fusion decisions, one per line", nullptr},
    {"autotune", cg_autotune, nullptr, "(report, measured): autotuning's choices", nullptr},
    {"cudagraph_stats", cg_cudagraph_stats, nullptr,
     "the CUDA graph runner's counters and fallback reason (None without one)", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject* cg_type = nullptr;

// config.compiler_options()'s dict into `options` (_compile_graph's and
// _generate_graph_code's third argument); an unknown name or a value out of
// range is an error naming it.
void parse_knobs(PyObject* knobs, compiler::CompileGraphOptions& options) {
  IGNIS_CHECK_TYPE(PyDict_Check(knobs), "_compile_graph: options must be a dict");
  compiler::CompilerOptions& o = options.compiler;
  int64_t max_autotune = 0, fx_graph_cache = 1, progress_ms = 2000, size_generic = 0,
          row_prefetch = o.cuda_row_prefetch, row_occupancy = o.cuda_row_occupancy,
          online_softmax = o.cuda_online_softmax, one_wave = o.cuda_row_one_wave,
          generic_rows = o.cuda_generic_rows, exact_rows = o.cuda_generic_exact_rows,
          act_epilogues = o.cuda_activation_epilogues, hoist = o.cuda_row_hoist_chunks,
          column_vectors = o.cuda_column_vectors, spread = o.cuda_spread_small,
          split_rows = o.cuda_split_rows, streaming = o.cuda_streaming_loads,
          across = o.realize_across_kernels, sums_in_rows = o.column_sums_in_rows,
          cpu_row_prefetch = o.cpu_row_prefetch;
  const std::pair<const char*, int64_t*> fields[] = {
      {"max_autotune", &max_autotune},
      {"size_generic", &size_generic},
      {"fx_graph_cache", &fx_graph_cache},
      {"compile_progress_ms", &progress_ms},
      {"realize_opcount_threshold", &o.realize_opcount_threshold},
      {"realize_reads_threshold", &o.realize_reads_threshold},
      {"max_fusion_size", &o.max_fusion_size},
      {"min_parallel_elements", &o.min_parallel_elements},
      {"threads", &o.threads},
      {"reduction_lanes", &o.reduction_lanes},
      {"cuda_row_vectors", &o.cuda_row_vectors},
      {"cuda_row_prefetch", &row_prefetch},
      {"cuda_row_occupancy", &row_occupancy},
      {"cuda_online_softmax", &online_softmax},
      {"cuda_generic_rows", &generic_rows},
      {"cuda_generic_exact_rows", &exact_rows},
      {"cuda_row_one_wave", &one_wave},
      {"cuda_activation_epilogues", &act_epilogues},
      {"cuda_row_hoist_chunks", &hoist},
      {"cuda_column_vectors", &column_vectors},
      {"cuda_spread_small", &spread},
      {"cuda_split_rows", &split_rows},
      {"cuda_streaming_loads", &streaming},
      {"realize_across_kernels", &across},
      {"column_sums_in_rows", &sums_in_rows},
      {"column_sums_min_rows", &o.column_sums_min_rows},
      {"cuda_column_sums_min_row", &o.cuda_column_sums_min_row},
      {"cuda_split_rows_min_elements", &o.cuda_split_rows_min_elements},
      {"cuda_split_rows_blocks", &o.cuda_split_rows_blocks},
      {"cuda_pointwise_vectors", &o.cuda_pointwise_vectors},
      {"cuda_column_split_rows", &o.cuda_column_split_rows},
      {"cpu_row_prefetch", &cpu_row_prefetch},
  };
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(knobs, &pos, &k, &v)) {
    IGNIS_CHECK_TYPE(PyUnicode_Check(k), "_compile_graph: option names must be str");
    std::string name = PyUnicode_AsUTF8(k);
    int64_t* field = nullptr;
    for (const auto& [n, f] : fields)
      if (name == n) field = f;
    IGNIS_CHECK_VALUE(field != nullptr, "_compile_graph: unknown option '", name, "'");
    IGNIS_CHECK_TYPE(PyLong_Check(v), "_compile_graph: option ", name, " must be an int");
    *field = PyLong_AsLongLong(v);
  }
  options.autotune = max_autotune != 0;
  o.size_generic = size_generic != 0;
  o.cuda_row_prefetch = row_prefetch != 0;
  o.cuda_row_occupancy = row_occupancy != 0;
  o.cuda_online_softmax = online_softmax != 0;
  o.cuda_generic_rows = generic_rows != 0;
  o.cuda_generic_exact_rows = exact_rows != 0;
  o.cuda_row_one_wave = one_wave != 0;
  o.cuda_activation_epilogues = act_epilogues != 0;
  o.cuda_row_hoist_chunks = hoist != 0;
  o.cuda_column_vectors = column_vectors != 0;
  o.cuda_spread_small = spread != 0;
  o.cuda_split_rows = split_rows != 0;
  o.cuda_streaming_loads = streaming != 0;
  o.realize_across_kernels = across != 0;
  o.column_sums_in_rows = sums_in_rows != 0;
  o.cpu_row_prefetch = cpu_row_prefetch != 0;
  IGNIS_CHECK_VALUE(o.cuda_row_vectors >= 1 && o.cuda_row_vectors <= 8,
                    "config.cuda.row_vectors_per_thread must be 1 to 8, got ", o.cuda_row_vectors);
  IGNIS_CHECK_VALUE(o.column_sums_min_rows >= 1, "config.column_sums_min_rows must be at least 1, got ",
                    o.column_sums_min_rows);
  IGNIS_CHECK_VALUE(o.cuda_column_sums_min_row >= 1,
                    "config.cuda.column_sums_min_row must be at least 1, got ",
                    o.cuda_column_sums_min_row);
  IGNIS_CHECK_VALUE(o.cuda_split_rows_min_elements >= 1,
                    "config.cuda.split_rows_min_elements must be at least 1, got ",
                    o.cuda_split_rows_min_elements);
  IGNIS_CHECK_VALUE(o.cuda_split_rows_blocks >= 1, "config.cuda.split_rows_blocks must be at least 1, got ",
                    o.cuda_split_rows_blocks);
  IGNIS_CHECK_VALUE(o.cuda_column_split_rows >= 1,
                    "config.cuda.column_split_rows_per_thread must be at least 1, got ",
                    o.cuda_column_split_rows);
  IGNIS_CHECK_VALUE(o.cuda_pointwise_vectors >= 1 && o.cuda_pointwise_vectors <= 8,
                    "config.cuda.pointwise_vectors_per_thread must be 1 to 8, got ",
                    o.cuda_pointwise_vectors);
  options.graph_cache = fx_graph_cache != 0;
  options.progress_delay_s = progress_ms < 0 ? -1.0 : double(progress_ms) / 1000;
  IGNIS_CHECK_VALUE(o.reduction_lanes >= 0 && o.max_fusion_size >= 1 && o.threads >= 0 &&
                        o.min_parallel_elements >= 0,
                    "_compile_graph: max_fusion_size must be >= 1, reduction_lanes (0: the "
                    "CPU's), threads and min_parallel_elements >= 0");
}

PyObject* f_compile_graph(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject* graph;
  PyObject* constants = Py_None;
  PyObject* knobs = Py_None;
  PyObject* probes = Py_None;
  if (!PyArg_ParseTuple(args, "O|OOO", &graph, &constants, &knobs, &probes)) return nullptr;
  graph::Graph* g = graph_ptr(graph);
  IGNIS_CHECK_TYPE(g != nullptr, "_compile_graph: expected an ignis.fx.Graph, got ",
                   Py_TYPE(graph)->tp_name);
  IGNIS_CHECK_TYPE(probes == Py_None || PyCallable_Check(probes),
                   "_compile_graph: probes must be a callable returning ignis.fx.Graphs or None");
  compiler::CompileGraphOptions options;
  if (probes != Py_None) {
    // Called while the CompiledGraph is made, under the GIL, while `probes`
    // (the caller's argument) is alive. A probe that fails only teaches
    // nothing: its error is dropped.
    options.probes = [probes](const std::function<void(const graph::Graph&)>& each) {
      PyObject* graphs = PyObject_CallNoArgs(probes);
      PyObject* seq = graphs ? PySequence_Fast(graphs, "probes() must return a sequence") : nullptr;
      if (seq) {
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i)
          if (graph::Graph* other = graph_ptr(PySequence_Fast_GET_ITEM(seq, i))) each(*other);
      }
      if (PyErr_Occurred()) PyErr_Clear();
      Py_XDECREF(seq);
      Py_XDECREF(graphs);
    };
  }
  if (constants != Py_None) {
    IGNIS_CHECK_TYPE(PyDict_Check(constants), "_compile_graph: constants must be a dict");
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(constants, &pos, &k, &v)) {
      if (!PyUnicode_Check(k) || !is_tensor(v)) continue;
      options.constants[PyUnicode_AsUTF8(k)] = unwrap(v);
    }
  }
  if (knobs != Py_None) parse_knobs(knobs, options);
  auto cg = std::make_unique<compiler::CompiledGraph>(*g, std::move(options));
  PyObject* o = cg_type->tp_alloc(cg_type, 0);
  if (!o) return nullptr;
  reinterpret_cast<PyCompiledGraph*>(o)->cg = cg.release();
  return o;
  IGNIS_PY_END(nullptr)
}

PyObject* f_forget_probed_sizes(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  compiler::forget_probed_sizes();
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

// While alive, every CPU tensor of g's metadata stands for one on `device`
// (put back after): CUDA code for a graph traced on the CPU.
class RetargetedMetas {
 public:
  RetargetedMetas(graph::Graph& g, Device device) {
    for (graph::Node* n : g.nodes())
      for (graph::TensorMeta& m : n->meta().tensors)
        if (m.device.is_cpu()) {
          changed_.emplace_back(&m, m.device);
          m.device = device;
        }
  }
  ~RetargetedMetas() {
    for (auto& [m, was] : changed_) m->device = was;
  }
  RetargetedMetas(const RetargetedMetas&) = delete;
  RetargetedMetas& operator=(const RetargetedMetas&) = delete;

 private:
  std::vector<std::pair<graph::TensorMeta*, Device>> changed_;
};

// The program and the source the compiler generates for a graph, without
// compiling or loading anything, so that a CUDA graph's kernels can be
// checked (NVRTC-compiled) on a machine with no GPU. With `device`
// ("cuda"), the graph's CPU tensors are taken to live there: the CUDA code
// of a graph traced on the CPU.
PyObject* f_generate_graph_code(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject* graph;
  const char* device = nullptr;
  PyObject* knobs = Py_None;
  if (!PyArg_ParseTuple(args, "O|zO", &graph, &device, &knobs)) return nullptr;
  compiler::CompileGraphOptions options;
  if (knobs != Py_None) parse_knobs(knobs, options);
  graph::Graph* g = graph_ptr(graph);
  IGNIS_CHECK_TYPE(g != nullptr, "_generate_graph_code: expected an ignis.fx.Graph, got ",
                   Py_TYPE(graph)->tp_name);
  std::optional<RetargetedMetas> retarget;
  if (device) {
    Device d = Device::parse(device);
    IGNIS_CHECK_VALUE(d.is_cuda(), "_generate_graph_code: device must be a CUDA device, got ",
                      device);
    retarget.emplace(*g, Device(DeviceType::CUDA, d.index < 0 ? 0 : d.index));
  }
  compiler::Program p = compiler::lower(*g, options.compiler);
  retarget.reset();
  std::string source;
  PyObject* symbols = PyList_New(0);
  if (!symbols) return nullptr;
  if (p.device.is_cuda()) {
    compiler::CudaProgramCode code = compiler::generate_cuda(p, options.compiler);
    source = std::move(code.source);
    for (const compiler::CudaKernel& k : code.kernels) {
      PyObject* s = PyUnicode_FromString(k.symbol.c_str());
      if (!s || PyList_Append(symbols, s) < 0) {
        Py_XDECREF(s);
        Py_DECREF(symbols);
        return nullptr;
      }
      Py_DECREF(s);
    }
  } else {
    source = compiler::generate_cpp(p, options.compiler);
  }
  return Py_BuildValue("(ssN)", compiler::to_string(p).c_str(), source.c_str(), symbols);
  IGNIS_PY_END(nullptr)
}

// A graph's size-generic code (Note [Size-generic code]) and each kernel's
// parameter values, without compiling; `lift` false prints the same code
// with the values in place (what the text with the values substituted must
// equal).
PyObject* f_generate_size_generic_code(PyObject*, PyObject* args) {
  IGNIS_PY_BEGIN
  PyObject* graph;
  const char* device = nullptr;
  int lift = 1;
  if (!PyArg_ParseTuple(args, "O|zp", &graph, &device, &lift)) return nullptr;
  graph::Graph* g = graph_ptr(graph);
  IGNIS_CHECK_TYPE(g != nullptr, "_generate_size_generic_code: expected an ignis.fx.Graph, got ",
                   Py_TYPE(graph)->tp_name);
  std::optional<RetargetedMetas> retarget;
  if (device) {
    Device d = Device::parse(device);
    IGNIS_CHECK_VALUE(d.is_cuda(), "_generate_size_generic_code: device must be a CUDA device, got ",
                      device);
    retarget.emplace(*g, Device(DeviceType::CUDA, d.index < 0 ? 0 : d.index));
  }
  compiler::CompilerOptions options;
  options.size_generic = true;
  compiler::Program p = compiler::lower(*g, options);
  retarget.reset();
  std::string source;
  std::vector<std::vector<int64_t>> params;
  if (p.device.is_cuda()) {
    compiler::CudaProgramCode code = compiler::generate_cuda(p, options, lift != 0);
    source = std::move(code.source);
    for (const compiler::CudaKernel& k : code.kernels) params.push_back(k.size_params);
  } else {
    compiler::CppProgramCode code = compiler::generate_cpp_code(
        p, std::vector<compiler::CompilerOptions>(p.kernels.size(), options), lift != 0);
    source = std::move(code.source);
    params = std::move(code.size_params);
  }
  PyObject* list = PyList_New(0);
  if (!list) return nullptr;
  for (const std::vector<int64_t>& values : params) {
    PyObject* inner = PyList_New(0);
    if (!inner || PyList_Append(list, inner) < 0) {
      Py_XDECREF(inner);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(inner);
    for (int64_t v : values) {
      PyObject* o = PyLong_FromLongLong(v);
      if (!o || PyList_Append(inner, o) < 0) {
        Py_XDECREF(o);
        Py_DECREF(list);
        return nullptr;
      }
      Py_DECREF(o);
    }
  }
  return Py_BuildValue("(sN)", source.c_str(), list);
  IGNIS_PY_END(nullptr)
}

// Blocks (without the GIL) until the compiler's background work started by
// this process -- precompiled-header builds -- has ended: a benchmark that
// times steady-state calls right after a cold compile would otherwise share
// the cores with a compiler process (2-core VM: a compiled layer_norm at 4.2
// against 2.0 ms).
PyObject* f_wait_for_background_compiles(PyObject*, PyObject*) {
  IGNIS_PY_BEGIN
  Py_BEGIN_ALLOW_THREADS
  runtime::CodeCache::global().precompiled_headers().wait_for_builds();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
  IGNIS_PY_END(nullptr)
}

PyMethodDef functions[] = {
    {"_compile_graph", f_compile_graph, METH_VARARGS, nullptr},
    {"_wait_for_background_compiles", f_wait_for_background_compiles, METH_NOARGS, nullptr},
    {"_generate_graph_code", f_generate_graph_code, METH_VARARGS, nullptr},
    {"_generate_size_generic_code", f_generate_size_generic_code, METH_VARARGS, nullptr},
    {"_forget_probed_sizes", f_forget_probed_sizes, METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace

bool init_compiler(PyObject* module) {
  static PyType_Slot slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(cg_dealloc)},
      {Py_tp_call, reinterpret_cast<void*>(cg_call)},
      {Py_tp_getset, cg_getset},
      {Py_tp_methods, cg_methods},
      {0, nullptr},
  };
  static PyType_Spec spec = {"ignis._C.CompiledGraph", sizeof(PyCompiledGraph), 0,
                             Py_TPFLAGS_DEFAULT, slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t) return false;
  cg_type = reinterpret_cast<PyTypeObject*>(t);
  Py_INCREF(t);
  if (PyModule_AddObject(module, "CompiledGraph", t) < 0) {
    Py_DECREF(t);
    return false;
  }
  return PyModule_AddFunctions(module, functions) == 0;
}

}  // namespace ignis::py
