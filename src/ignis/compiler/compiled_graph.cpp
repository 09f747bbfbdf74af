#include "ignis/compiler/compiled_graph.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <optional>
#include <thread>
#include <unordered_set>

#include "ignis/compiler/autotune.h"
#include "ignis/compiler/autotune_cuda.h"
#include "ignis/cuda/blas.h"
#include "ignis/compiler/codegen_cpp.h"
#include "ignis/compiler/codegen_cuda.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/cuda/stream.h"
#include "ignis/compiler/lower.h"
#include "ignis/core/error.h"
#include "ignis/dispatch/dispatcher.h"
#include "ignis/graph/interpreter.h"
#include "ignis/graph/passes/hash.h"
#include "ignis/profiler/profiler.h"
#include "ignis/kernels/cpu/gemm.h"
#include "ignis/runtime/graph_cache.h"
#include "ignis/runtime/sha256.h"

namespace ignis::compiler {

namespace {

DimVector ints(const std::vector<int64_t>& v) { return DimVector(v.begin(), v.end()); }

// Whether t has the layout the program was compiled for (strides of size-1
// dims do not matter: index 0 is the only one read).
bool has_layout(const Tensor& t, const Executable::Buf& b) {
  if (t.dtype() != b.dtype || size_t(t.dim()) != b.sizes.size()) return false;
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    if (t.sizes()[d] != b.sizes[d]) return false;
    if (t.sizes()[d] != 1 && t.strides()[d] != b.strides[d]) return false;
  }
  return true;
}

// t in buffer b's layout: t itself when it has it, else a copy. Kernels index
// with the strides the graph was traced with, so a tensor that arrives (or an
// extern that returns one) in another layout is copied rather than misread.
Tensor conform(const Tensor& t, const Executable::Buf& b) {
  if (has_layout(t, b)) return t;
  IGNIS_CHECK(t.dtype() == b.dtype, "compiled graph: ", b.name, " is ", dtype_name(t.dtype()),
              ", compiled for ", dtype_name(b.dtype));
  Tensor out = empty_strided_tensor(ints(b.sizes), ints(b.strides), b.dtype, t.device());
  graph::call_op_by_name("copy_", {graph::Value(out), graph::Value(t)}, {});
  return out;
}

// What besides the graph's structure decides the compiled program: this
// build of ignis (its lowering and scheduling rules; the file's identity
// changes with every build), the knobs, and the metadata of get_attr
// constants (the structural hash spells them by name only).
std::string graph_cache_key(const graph::Graph& g, const CompileGraphOptions& o) {
  std::string k = "ignis-graph-1|" + graph::structural_hash(g);
  static const std::string build = [] {
    Dl_info info{};
    std::string id = "unknown";
    if (dladdr(reinterpret_cast<void*>(&graph_cache_key), &info) && info.dli_fname) {
      struct stat st{};
      if (stat(info.dli_fname, &st) == 0)
        id = std::string(info.dli_fname) + ":" + std::to_string(st.st_size) + ":" +
             std::to_string(int64_t(st.st_mtim.tv_sec)) + "." +
             std::to_string(int64_t(st.st_mtim.tv_nsec));
    }
    return id;
  }();
  k += "|" + build + "|" + o.compiler.fingerprint() + "," + std::to_string(o.autotune);
  for (graph::Node* n : g.nodes()) {
    if (n->op() != graph::OpKind::GetAttr) continue;
    for (const graph::TensorMeta& m : n->meta().tensors) {
      k += "|" + n->target().identity() + ":" + dtype_name(m.dtype);
      for (graph::SymInt s : m.sizes) k += "," + std::to_string(int64_t(s));
      k += ";";
      for (graph::SymInt s : m.strides) k += "," + std::to_string(int64_t(s));
    }
  }
  return runtime::sha256_hex(k);
}

// Times a compile's phases into CompiledGraph::compile_phases(), each from
// the end of the one before.
class PhaseClock {
 public:
  explicit PhaseClock(std::vector<std::pair<std::string, double>>* phases) : phases_(phases) {}
  void lap(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    phases_->emplace_back(name, std::chrono::duration<double>(now - since_).count());
    since_ = now;
  }
  void restart() { since_ = std::chrono::steady_clock::now(); }

 private:
  std::vector<std::pair<std::string, double>>* phases_;
  std::chrono::steady_clock::time_point since_ = std::chrono::steady_clock::now();
};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// A line on stderr for a step that turns out slow: nothing when it finishes
// within `delay_s`, else "[inductor] <what> ..." at that point and, when
// it ends, how long it took (torch.compile users otherwise stare at a
// silent prompt while a large graph's C++ compiles).
class ProgressLine {
 public:
  ProgressLine(std::string what, double delay_s) : what_(std::move(what)) {
    if (delay_s < 0) return;
    start_ = std::chrono::steady_clock::now();
    thread_ = std::thread([this, delay_s] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(delay_s), [this] { return done_; }))
        return;
      std::fprintf(stderr, "[inductor] %s ...\n", what_.c_str());
      std::fflush(stderr);
      shown_ = true;
    });
  }
  ~ProgressLine() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (shown_) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::fprintf(stderr, "[inductor] %s: done in %.1f s\n", what_.c_str(), s);
      std::fflush(stderr);
    }
  }

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false, shown_ = false;
};

}  // namespace

void launch_cuda_kernel(cuda::CUfunction f, const Executable::Kern& k,
                        const std::vector<char*>& ptrs, int device, int64_t round,
                        char* shared_workspace) {
  std::vector<char*> values;
  values.reserve(k.params.size());
  for (int b : k.params) values.push_back(ptrs[size_t(b)]);
  cuda::DeviceGuard guard(device);
  const cuda::Stream stream = cuda::current_stream(device);
  // A split reduction's workspace (Note [Split column reductions]): from the
  // caching allocator, so a later kernel on this stream may reuse it once
  // this one is done; its counters zeroed on the same stream.
  Storage workspace;
  if (k.workspace_bytes > 0 && shared_workspace) {
    values.push_back(shared_workspace);
  } else if (k.workspace_bytes > 0) {
    workspace = allocate_storage(size_t(k.workspace_bytes), Device(DeviceType::CUDA, device));
    values.push_back(static_cast<char*>(workspace->data()));
    if (k.zeroed_bytes > 0)
      IGNIS_CU(cuMemsetD8Async(reinterpret_cast<cuda::CUdeviceptr>(workspace->data()), 0,
                               size_t(k.zeroed_bytes), stream.handle));
  }
  std::vector<void*> args;
  for (char*& v : values) args.push_back(&v);
  // A size-generic kernel's IgParams<N>: N int64s, laid out as the vector.
  if (!k.size_params.empty()) args.push_back(const_cast<int64_t*>(k.size_params.data()));
  const int64_t blocks = k.one_round && round > 0 ? std::min(k.blocks, round) : k.blocks;
  cuda::launch_strided(f, blocks, int(k.threads), args.data(), stream);
}

int64_t round_blocks(cuda::CUfunction f, const Executable::Kern& k, int device) {
  return k.one_round ? cuda::one_round_blocks(f, int(k.threads), device) : 0;
}

void CompiledGraph::enable_profile(bool on) {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  profiling_ = on;
  if (!on || !profile_.empty()) return;
  for (const Executable::Call& c : exec_.steps) profile_.push_back({c.label, c.bytes, 0, 0});
}

std::vector<CompiledGraph::StepProfile> CompiledGraph::profile() const {
  std::lock_guard<std::mutex> lock(profile_mutex_);
  return profile_;
}

namespace {

// Note [Parameters that vary with the sizes] (size_params.h): each probe
// graph lowered and printed with every integer lifted, its values recorded.
// Once per process for a graph's structure and options: the record stays.
struct Probed {
  std::mutex mu;
  std::unordered_set<std::string> graphs;  // shape_free_hash | options
};
Probed& probed() {
  static Probed* p = new Probed();  // never destroyed: compiles may run at exit
  return *p;
}

void probe_sizes(const graph::Graph& g, const CompileGraphOptions& options) {
  {
    Probed& p = probed();
    std::lock_guard<std::mutex> lock(p.mu);
    if (!p.graphs.insert(graph::shape_free_hash(g) + "|" + options.compiler.fingerprint()).second)
      return;
  }
  options.probes([&](const graph::Graph& other) {
    try {
      Program p = lower(other, options.compiler);
      if (p.device.is_cuda())
        generate_cuda(p, options.compiler, /*lift=*/true, Observe::Probe);
      else
        generate_cpp_code(p, std::vector<CompilerOptions>(p.kernels.size(), options.compiler),
                          /*lift=*/true, Observe::Probe);
    } catch (const std::exception&) {
      // A size the compiler cannot lower teaches nothing; the compile itself goes on.
    }
  });
}

}  // namespace

void forget_probed_sizes() {
  Probed& p = probed();
  std::lock_guard<std::mutex> lock(p.mu);
  p.graphs.clear();
  clear_varying_params();
}

void CompiledGraph::compile(const graph::Graph& g, const CompileGraphOptions& options,
                            runtime::CodeCache& cache, std::string* code_key) {
  PhaseClock clock(&phases_);
  if (options.compiler.size_generic && options.probes) {
    probe_sizes(g, options);
    clock.lap("other sizes probed");
  }
  Program program = lower(g, options.compiler);
  clock.lap("lowering");
  MemoryPlan plan = plan_memory(program);
  clock.lap("memory plan");
  if (program.device.is_cuda()) {
    // One NVRTC unit for every kernel; the cubin cache (cuda/kernel_cache.h)
    // keeps it per machine, so there is no library for the code cache and
    // the graph cache needs no code key. max-autotune measures the row
    // kernels' knobs on this GPU first (autotune_cuda.h).
    std::vector<CompilerOptions> per_kernel(std::max<size_t>(program.kernels.size(), 1),
                                            options.compiler);
    std::vector<std::string> report;
    if (options.autotune && !program.kernels.empty()) {
      ProgressLine progress("autotuning " + std::to_string(program.kernels.size()) +
                                " CUDA kernels",
                            options.progress_delay_s);
      CudaAutotuneResult tuned = autotune_cuda(program, options.compiler, cache.dir());
      per_kernel = std::move(tuned.per_kernel);
      report = std::move(tuned.report);
      autotune_measured_ = tuned.measured;
    }
    CudaProgramCode code = generate_cuda(program, per_kernel, /*lift=*/true, Observe::Record);
    exec_ = make_executable(program, plan);
    clock.lap("code generation");
    exec_.source = std::move(code.source);
    exec_.source_prelude_bytes = int64_t(code.prelude_bytes);
    exec_.size_generic = options.compiler.size_generic;
    for (size_t i = 0; i < code.kernels.size(); ++i) {
      Executable::Kern& k = exec_.kernels[i];
      k.symbol = code.kernels[i].symbol;
      k.source_begin = int64_t(code.kernels[i].source_begin);
      k.source_end = int64_t(code.kernels[i].source_end);
      k.params = code.kernels[i].params;
      k.threads = code.kernels[i].launch.threads;
      k.blocks = code.kernels[i].launch.blocks;
      k.workspace_bytes = code.kernels[i].launch.workspace_bytes;
      k.zeroed_bytes = code.kernels[i].launch.zeroed_bytes;
      k.one_round = code.kernels[i].launch.one_round;
      k.size_params = code.kernels[i].size_params;
    }
    exec_.autotune_report = std::move(report);
    code_key->clear();
    return;
  }
  std::vector<CompilerOptions> per_kernel(program.kernels.size(), options.compiler);
  std::vector<std::string> report;
  if (options.autotune && !program.kernels.empty()) {
    AutotuneResult tuned = autotune(program, options.compiler, cache);
    per_kernel = std::move(tuned.per_kernel);
    report = std::move(tuned.report);
    autotune_measured_ = tuned.measured;
  }
  CppProgramCode code = generate_cpp_code(program, per_kernel, /*lift=*/true, Observe::Record);
  exec_ = make_executable(program, plan);
  clock.lap("code generation");
  exec_.source = std::move(code.source);
  exec_.size_generic = options.compiler.size_generic;
  for (size_t i = 0; i < exec_.kernels.size(); ++i) {
    exec_.kernels[i].size_params = std::move(code.size_params[i]);
    exec_.kernels[i].symbol = std::move(code.symbols[i]);
    exec_.kernels[i].params = std::move(code.params[i]);
  }
  exec_.autotune_report = std::move(report);
  if (!exec_.kernels.empty()) {
    runtime::CompileOptions co;
    co.name = "compiled_graph";
    co.prelude = cpp_includes();
    *code_key = cache.key(exec_.source, co);
    // Loaded already, or on disk (another size of a size-generic graph
    // printed the same text): no compiler, and no second dlopen.
    if (std::optional<runtime::LoadedLibrary> lib = cache.load_cached(*code_key)) {
      library_ = std::move(*lib);
      clock.lap("library loaded");
      return;
    }
    size_t lines = size_t(std::count(exec_.source.begin(), exec_.source.end(), '\n'));
    ProgressLine progress("compiling " + std::to_string(exec_.kernels.size()) + " kernels (" +
                              std::to_string(lines) + " lines of C++)",
                          options.progress_delay_s);
    library_ = cache.load_or_compile(exec_.source, co);
    compiled_code_ = true;
    clock.lap("C++ compile");
  }
}

// Note [A graph's CUDA in parts]
// NVRTC compiles about a thousand lines a second and uses one thread: the
// GPT-2-small training step's two graphs, 171 kernels in one unit each,
// took 10.0 and 14.7 s cold on the H100 machine's 16-core host. So the
// kernels are compiled in parts, each part the shared prelude (0.06 s of
// NVRTC's time) and some of the kernels, compiled on as many threads as the
// host has, each part its own cubin in the cache and its own module.
//
// How many parts: one a kMinPartBytes of kernel text, at most kMaxParts.
// The count does not depend on the host's threads: the parts are cache
// entries, and a warm process on another machine must find the same ones.
// Which kernels go where: the longest first, each into the part with the
// least text so far (longest-processing-time scheduling), so the parts end
// about even and the slowest one -- the graph's compile time on a host with
// kMaxParts threads -- is not a contiguous run that happened to hold the
// big kernels. (Consecutive parts of 16 KiB left the backward's 26 parts
// two rounds on 16 threads: 4.7 s against 2.0 for the forward's 14.) A
// part keeps its kernels in the graph's order. Each kernel's text stands
// on the prelude alone, so any grouping compiles.
namespace {
constexpr int64_t kMinPartBytes = 8 * 1024;  // ~180 lines, ~0.2 s of NVRTC beside the prelude's 0.06
constexpr size_t kMaxParts = 16;             // the GPU machine's host threads

// Kernel i goes into part result[i]; parts are numbered in order of their
// first kernel.
std::vector<size_t> assign_parts(const std::vector<int64_t>& bytes) {
  int64_t total = 0;
  for (int64_t b : bytes) total += b;
  const size_t parts = std::clamp<size_t>(size_t((total + kMinPartBytes - 1) / kMinPartBytes),
                                          1, std::min(kMaxParts, std::max<size_t>(bytes.size(), 1)));
  std::vector<size_t> order(bytes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
  std::vector<int64_t> filled(parts, 0);
  std::vector<size_t> bin(bytes.size());
  for (size_t i : order) {
    const size_t p = size_t(std::min_element(filled.begin(), filled.end()) - filled.begin());
    bin[i] = p;
    filled[p] += bytes[i];
  }
  std::vector<size_t> renumber(parts, SIZE_MAX), result(bytes.size());
  size_t next = 0;
  for (size_t i = 0; i < bin.size(); ++i) {
    if (renumber[bin[i]] == SIZE_MAX) renumber[bin[i]] = next++;
    result[i] = renumber[bin[i]];
  }
  return result;
}
}  // namespace

void CompiledGraph::load_cuda_kernels(double progress_delay_s) {
  if (exec_.kernels.empty()) return;
  const std::string& src = exec_.source;
  // A kernel that runs an earlier one's code (Note [Kernels of one text],
  // codegen_cuda.cpp) is compiled with it: its text is only a comment.
  std::unordered_map<std::string, size_t> first_of;  // symbol -> its first kernel
  std::vector<size_t> same(exec_.kernels.size());
  std::vector<size_t> unique;                         // the kernels compiled
  for (size_t i = 0; i < exec_.kernels.size(); ++i) {
    auto [it, fresh] = first_of.emplace(exec_.kernels[i].symbol, i);
    same[i] = it->second;
    if (fresh) unique.push_back(i);
  }
  std::vector<int64_t> bytes;
  for (size_t i : unique) bytes.push_back(exec_.kernels[i].source_end - exec_.kernels[i].source_begin);
  const std::vector<size_t> part_of = assign_parts(bytes);
  const size_t nparts = *std::max_element(part_of.begin(), part_of.end()) + 1;
  std::vector<cuda::KernelRequest> parts(nparts);
  std::vector<std::vector<std::string>> symbols(nparts);
  for (size_t p = 0; p < nparts; ++p) {
    parts[p].source = src.substr(0, size_t(exec_.source_prelude_bytes));
    parts[p].label = "compiled_graph_part" + std::to_string(p) + ".cu";
    parts[p].options = cuda_compile_options();
  }
  std::vector<std::pair<size_t, size_t>> where(exec_.kernels.size());  // (part, index in part)
  for (size_t u = 0; u < unique.size(); ++u) {
    const Executable::Kern& k = exec_.kernels[unique[u]];
    const size_t p = part_of[u];
    parts[p].source.append(src, size_t(k.source_begin), size_t(bytes[u]));
    where[unique[u]] = {p, symbols[p].size()};
    symbols[p].push_back(k.symbol);
  }
  for (size_t i = 0; i < exec_.kernels.size(); ++i) where[i] = where[same[i]];
  size_t lines = size_t(std::count(src.begin(), src.end(), '\n'));
  ProgressLine progress("compiling " + std::to_string(unique.size()) + " CUDA kernels for " +
                            std::to_string(exec_.kernels.size()) + " (" + std::to_string(lines) +
                            " lines of CUDA C++, " + std::to_string(parts.size()) + " parts)",
                        progress_delay_s);
  const uint64_t compiles = cuda::kernel_cache_stats().compiles;
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::vector<cuda::CUfunction>> found =
      cuda::get_kernels(exec_.device.index, parts, symbols, threads);
  cuda_kernels_.clear();
  cuda_rounds_.clear();
  for (const auto& [part, i] : where) cuda_kernels_.push_back(found[part][i]);
  for (size_t i = 0; i < exec_.kernels.size(); ++i)
    cuda_rounds_.push_back(round_blocks(cuda_kernels_[i], exec_.kernels[i], exec_.device.index));
  // Note [One workspace a run]
  // Each split reduction's launch allocated its workspace and zeroed its
  // counters with a memset of its own: 111 memsets a GPT-2 training step
  // (180 us of GPU time on the H100, and as many driver calls on the host).
  // A run now takes one workspace for all its kernels, each at its own
  // offset, zeroed by one memset at the start (partials included: they are
  // small, and one contiguous memset is cheaper than a memset a kernel).
  // Kernels run in order on one stream and their regions are disjoint, so
  // no two share counters; the workspace returns to the caching allocator
  // when the run ends, reused in stream order.
  workspace_at_.assign(exec_.kernels.size(), -1);
  workspace_bytes_ = 0;
  for (size_t i = 0; i < exec_.kernels.size(); ++i) {
    const Executable::Kern& k = exec_.kernels[i];
    if (k.workspace_bytes <= 0) continue;
    workspace_at_[i] = workspace_bytes_;
    workspace_bytes_ += (k.workspace_bytes + 255) / 256 * 256;
  }
  // (The process's count: another thread compiling at once is counted too.)
  compiled_code_ = cuda::kernel_cache_stats().compiles != compiles;
}

// A CPU kernel's function: its own, or the earlier kernel's whose text it
// shares (Note [Kernels of one text], codegen_cuda.cpp). (An executable
// from before kernels were shared has no symbol: its functions take the
// whole buffer table.)
const std::string& CompiledGraph::cpu_symbol(const Executable::Kern& k) {
  return k.symbol.empty() ? k.name : k.symbol;
}

// Runs CPU kernel i over the graph's buffer table: its function reads its
// own buffers as bufs[0], bufs[1], ... (Executable::Kern::params).
void CompiledGraph::run_cpu_kernel(size_t i, const std::vector<char*>& ptrs) const {
  const Executable::Kern& k = exec_.kernels[i];
  char* const* bufs = ptrs.data();
  constexpr size_t kOnStack = 32;
  char* stack[kOnStack];
  std::vector<char*> heap;
  if (!k.symbol.empty()) {
    char** local = stack;
    if (k.params.size() > kOnStack) {
      heap.resize(k.params.size());
      local = heap.data();
    }
    for (size_t a = 0; a < k.params.size(); ++a) local[a] = ptrs[size_t(k.params[a])];
    bufs = local;
  }
  if (exec_.size_generic)
    generic_kernels_[i](bufs, cpu::kernel_runtime(), k.size_params.data());
  else
    kernels_[i](bufs, cpu::kernel_runtime());
}

CompiledGraph::CompiledGraph(const graph::Graph& g, CompileGraphOptions options)
    : autotune_gemms_(options.autotune) {
  runtime::CodeCache& cache = options.cache ? *options.cache : runtime::CodeCache::global();
  runtime::GraphCache graphs(cache);
  PhaseClock clock(&phases_);
  const std::string key = options.graph_cache ? graph_cache_key(g, options) : std::string();
  if (!key.empty()) {
    if (auto entry = graphs.get(key)) {
      if (auto e = deserialize(entry->metadata)) {
        std::optional<runtime::LoadedLibrary> lib;
        const bool needs_library = !e->kernels.empty() && e->device.is_cpu();
        if (needs_library) lib = cache.load_cached(entry->code_key);
        if (!needs_library || lib) {
          exec_ = std::move(*e);
          if (lib) library_ = std::move(*lib);
          from_graph_cache_ = true;
        }
      }
    }
  }
  clock.lap(from_graph_cache_ ? "graph cache hit" : "graph cache lookup");
  if (!from_graph_cache_) {
    std::string code_key;
    compile(g, options, cache, &code_key);
    clock.restart();  // (compile() timed its own phases)
    if (!key.empty())
      if (std::optional<std::string> bytes = serialize(exec_))
        graphs.put(key, runtime::GraphCacheEntry{code_key, std::move(*bytes)});
    clock.lap("graph cache store");
  }
  if (exec_.device.is_cuda()) {
    load_cuda_kernels(options.progress_delay_s);
    clock.lap("CUDA kernels (NVRTC or the cubin cache)");
  } else if (exec_.size_generic) {
    for (const Executable::Kern& k : exec_.kernels)
      generic_kernels_.push_back(library_.function<GenericKernelFn>(cpu_symbol(k)));
  } else {
    for (const Executable::Kern& k : exec_.kernels)
      kernels_.push_back(library_.function<KernelFn>(cpu_symbol(k)));
  }
  constants_.resize(exec_.buffers.size());
  for (size_t b = 0; b < exec_.buffers.size(); ++b) {
    const Executable::Buf& buf = exec_.buffers[b];
    if (buf.kind != BufferKind::Constant) continue;
    auto it = options.constants.find(buf.attr);
    IGNIS_CHECK(it != options.constants.end(), "compiled graph: no constant '", buf.attr, "'");
    constants_[b] = conform(it->second, buf);
  }
}

std::vector<graph::Value> CompiledGraph::run(const std::vector<Tensor>& inputs) const {
  const Executable& p = exec_;
  const MemoryPlan& plan = exec_.plan;
  IGNIS_CHECK_TYPE(inputs.size() == p.inputs.size(), "compiled graph takes ", p.inputs.size(),
                   " inputs, got ", inputs.size());
  // Under the profiler: the call is one event and each generated kernel one
  // inside it (extern calls are ops and make their own).
  const bool profiled = profiler::active();
  // max-autotune: the products' first calls time cuBLASLt's candidates
  // (Note [GEMM algorithms timed], cuda/blas.cpp).
  std::optional<cuda::GemmAutotuneScope> gemm_autotune;
  if (autotune_gemms_ && p.device.is_cuda()) gemm_autotune.emplace(true);
  std::optional<profiler::Scope> call_event;
  if (profiled) call_event.emplace(profiler::EventKind::Compiled, "CompiledGraph");
  std::vector<Tensor> bufs = constants_;
  std::vector<char*> ptrs(p.buffers.size(), nullptr);
  auto set = [&](int b, Tensor t) {
    ptrs[size_t(b)] = static_cast<char*>(t.data_ptr());
    bufs[size_t(b)] = std::move(t);
  };
  for (size_t b = 0; b < bufs.size(); ++b)
    if (bufs[b].defined()) ptrs[b] = static_cast<char*>(bufs[b].data_ptr());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Executable::Buf& b = p.buffers[size_t(p.inputs[i])];
    IGNIS_CHECK_TYPE(inputs[i].defined(), "compiled graph: input ", b.name, " is undefined");
    set(p.inputs[i], conform(inputs[i], b));
  }
  auto tensor_of = [&](graph::Node* n) -> graph::Value {
    auto it = p.ref_buffer.find(n);
    IGNIS_INTERNAL_ASSERT(it != p.ref_buffer.end(), "compiled graph: no buffer for ", n->name());
    return graph::Value(bufs[size_t(it->second)]);
  };
  std::vector<Storage> slots(plan.slot_bytes.size());
  // Note [One workspace a run]
  Storage workspace;
  if (p.device.is_cuda() && workspace_bytes_ > 0) {
    workspace = allocate_storage(size_t(workspace_bytes_), p.device);
    cuda::DeviceGuard guard(p.device.index);
    IGNIS_CU(cuMemsetD8Async(reinterpret_cast<cuda::CUdeviceptr>(workspace->data()), 0,
                             size_t(workspace_bytes_), cuda::current_stream(p.device.index).handle));
  }
  auto release = [&](size_t step) {
    for (int b : plan.release_after[step]) {
      bufs[size_t(b)] = Tensor();
      ptrs[size_t(b)] = nullptr;
    }
  };
  using Clock = std::chrono::steady_clock;
  std::vector<double> step_seconds(profiling_ ? p.steps.size() : 0);
  std::vector<double> step_cpu_seconds(profiling_ ? p.steps.size() : 0);
  Clock::time_point started;
  double cpu_started = 0;
  auto timed = [&](size_t si) {
    if (!profiling_) return;
    // A GPU step is timed to its end (the launch alone returns at once).
    if (p.device.is_cuda()) cuda::synchronize_stream(cuda::current_stream(p.device.index));
    step_seconds[si] = std::chrono::duration<double>(Clock::now() - started).count();
    step_cpu_seconds[si] = process_cpu_seconds() - cpu_started;
  };
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Executable::Call& s = p.steps[si];
    if (profiling_) {
      started = Clock::now();
      cpu_started = process_cpu_seconds();
    }
    if (s.kernel) {
      for (int b : p.kernels[size_t(s.index)].outputs) {
        if (bufs[size_t(b)].defined()) continue;  // a concatenation an earlier kernel began
        const Executable::Buf& out = p.buffers[size_t(b)];
        int slot = plan.slot[size_t(b)];
        if (slot < 0) {
          set(b, empty_strided_tensor(ints(out.sizes), ints(out.strides), out.dtype, p.device));
          continue;
        }
        Storage& st = slots[size_t(slot)];
        if (!st) st = allocate_storage(size_t(plan.slot_bytes[size_t(slot)]), p.device);
        set(b, Tensor(make_intrusive<TensorImpl>(st, out.dtype, ints(out.sizes), ints(out.strides),
                                                 0)));
      }
      std::optional<profiler::Scope> kernel_event;
      if (profiled) kernel_event.emplace(profiler::EventKind::Compiled, s.label);
      if (p.device.is_cuda())
        launch_cuda_kernel(cuda_kernels_[size_t(s.index)], p.kernels[size_t(s.index)], ptrs,
                           p.device.index, cuda_rounds_[size_t(s.index)],
                           !workspace || workspace_at_[size_t(s.index)] < 0
                               ? nullptr
                               : static_cast<char*>(workspace->data()) +
                                     workspace_at_[size_t(s.index)]);
      else
        run_cpu_kernel(size_t(s.index), ptrs);
      timed(si);
      release(si);
      continue;
    }
    std::vector<graph::Value> args;
    for (const graph::Value& a : s.args) args.push_back(graph::map_nodes(a, tensor_of));
    graph::Kwargs kwargs;
    for (const auto& [k, v] : s.kwargs) kwargs.emplace_back(k, graph::map_nodes(v, tensor_of));
    graph::Value r = graph::call_op(*s.op, args, kwargs);
    std::vector<graph::Value> results =
        r.is_sequence() ? r.items() : std::vector<graph::Value>{r};
    IGNIS_CHECK(results.size() >= s.outputs.size(), "compiled graph: ", s.op->name(),
                " returned ", results.size(), " values, expected ", s.outputs.size());
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      if (s.outputs[i] < 0) continue;  // an element no node reads (or a None)
      IGNIS_CHECK(results[i].is_tensor(), "compiled graph: ", s.op->name(), " returned ",
                  results[i].kind_name(), " at position ", i, " where the trace had a tensor");
      const Executable::Buf& b = p.buffers[size_t(s.outputs[i])];
      const Tensor& t = results[i].to_tensor();
      // conform() keeps a result in the traced layout as it is, so a view
      // (an output aliasing an input) stays a view.
      set(s.outputs[i], conform(t, b));
    }
    timed(si);
    release(si);
  }
  if (profiling_) {
    std::lock_guard<std::mutex> lock(profile_mutex_);
    for (size_t si = 0; si < profile_.size(); ++si) {
      profile_[si].calls += 1;
      profile_[si].seconds += step_seconds[si];
      profile_[si].cpu_seconds += step_cpu_seconds[si];
    }
  }
  std::vector<graph::Value> outs;
  for (const Executable::Output& o : p.outputs)
    outs.push_back(o.buffer >= 0 ? graph::Value(bufs[size_t(o.buffer)]) : o.value);
  return outs;
}

}  // namespace ignis::compiler
