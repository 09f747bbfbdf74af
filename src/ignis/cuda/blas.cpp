#include "ignis/cuda/blas.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ignis/core/error.h"
#include "ignis/core/storage.h"
#include "ignis/cuda/cublaslt.h"
#include "ignis/cuda/device.h"
#include "ignis/cuda/driver.h"
#include "ignis/cuda/graph.h"
#include "ignis/cuda/memory.h"
#include "ignis/runtime/cache_dir.h"
#include "ignis/runtime/sha256.h"

namespace ignis::cuda {

namespace {

// cuBLASLt's workspace per stream. 32 MiB is what torch gives cuBLASLt on
// Hopper; the fastest kernels for large bf16 shapes (split-K, stream-K)
// want several MiB.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

std::atomic<bool> g_allow_tf32{false};
std::atomic<int64_t> g_plans{0}, g_plan_hits{0}, g_matmuls{0}, g_bias_epilogues{0},
    g_no_algorithm{0}, g_activation_epilogues{0}, g_algorithms_timed{0}, g_algorithms_cached{0};

// Note [GEMM algorithms timed]
// cuBLASLt's heuristic ranks the algorithms it has for a product by a model
// of the GPU, and its first choice is what every call runs. Under
// max-autotune (a compiled graph's steps run inside a GemmAutotuneScope)
// a plan's first call with beta 0 (D is only written, so trials may
// overwrite it) times up to kCandidates of the heuristic's algorithms on
// the call's own operands -- kTrials runs each between CUDA events, the
// fastest run counting -- and keeps the fastest when it beats the first
// choice by kMinGain (closer is noise). The choice is stored under
// <cache>/autotune/ keyed by the plan's key, the GPU and cuBLASLt's
// version, as "gemm <index> <candidates>": a later process asks the
// heuristic for the same list and takes that entry without timing (an entry
// whose count no longer matches is timed again). Not during a CUDA graph's
// capture (nothing may synchronize there: the first choice runs).
constexpr int kCandidates = 8, kTrials = 3;
constexpr double kMinGain = 0.02;
thread_local bool t_autotune = false;

// The largest power of two (at most 256) dividing a pointer: the heuristic
// must only propose kernels whose vector loads that alignment allows, and
// cuBLASLt assumes 256 unless told (a view at an odd offset would fault).
uint32_t alignment(const void* p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 1;
  while (a < 256 && v % (a * 2) == 0) a *= 2;
  return a;
}

int compute_type(int data_type) {
  if (data_type == CUDA_R_64F) return CUBLAS_COMPUTE_64F;
  if (data_type == CUDA_R_32F && g_allow_tf32.load()) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;
}

// Everything a plan depends on, as plain integers (hashed as bytes).
struct PlanKey {
  int64_t device, data_type, compute, trans_a, trans_b, epilogue;
  int64_t m, n, k, batch;
  int64_t a_rows, a_cols, lda, stride_a, b_rows, b_cols, ldb, stride_b, ldd, stride_d;
  int64_t align_a, align_b, align_d, align_bias;
};

// A matmul descriptor, the layouts of A, B and C = D, and the algorithm:
// built once per key, reused for every later call of that shape.
struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  bool found = false;  // false: the heuristic had no algorithm for this key
  bool tuned = false;  // the algorithm was chosen by timing (Note [GEMM algorithms timed])
};

struct State {
  std::mutex mu;
  std::map<int, cublasLtHandle_t> handles;
  std::map<std::pair<int, uintptr_t>, Storage> workspaces;
  std::unordered_map<std::string, Plan> plans;
};

// Never destroyed: handles and workspaces live until the process exits, and
// tearing them down from a static destructor could run after the driver
// or the allocators are gone.
State& state() {
  static State* s = new State();
  return *s;
}

cublasLtHandle_t handle(State& s, int device) {
  auto it = s.handles.find(device);
  if (it != s.handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  IGNIS_CUBLAS(cublasLtCreate(&h));
  s.handles.emplace(device, h);
  return h;
}

void* workspace(State& s, const Stream& stream) {
  auto key = std::make_pair(stream.device, stream.id());
  auto it = s.workspaces.find(key);
  if (it == s.workspaces.end()) {
    // Allocated while `stream` is current (the caller's stream), so the
    // block is filed under the stream that uses it.
    Storage st = allocate_device_storage(kWorkspaceBytes, Device(DeviceType::CUDA, stream.device));
    it = s.workspaces.emplace(key, std::move(st)).first;
  }
  return it->second->data();
}


// Note [cuBLASLt warmed in the background]
// A process's first product pays for cuBLASLt itself, not for the product:
// the library's load (~50 ms on the H100 machine with the file in the page
// cache), its handle, and the first kernel module of a data type (~60 ms
// for bfloat16 and ~50 for float32; a later product of another shape in
// the same type then takes 3 ms). That was 110 ms of the compiled GPT-2
// training step's 0.30 s warm start (docs/benchmarks.md). So when a
// device's context is first made, a thread of its own does that work: it
// loads the library, creates the device's handle, and runs a 16 x 16
// product in bfloat16 and in float32 on a stream of its own -- driver
// memory, no workspace, none of this file's counters or plans, its thread
// in relaxed capture mode so that a CUDA graph captured meanwhile is not
// disturbed -- while the program goes on building its model and tracing.
// A product that comes first waits for the handle (State::mu) and the
// library's load (cublaslt()'s static), as it would have done the work.
// Failures are dropped: the first real product reports them.
// IGNIS_CUDA_PREWARM=0 turns it off. The thread is joined before the
// process exits (Python's atexit, then C's), so that a short program never
// exits while the thread is inside cuBLASLt: a C atexit handler alone runs
// after the destructors of statics made later, cuBLASLt's among them.
struct Prewarm {
  std::mutex mu;
  std::map<int, std::thread*> threads;  // never deleted: a forked child must not join them
  std::map<int, std::string> states;    // "running", "done", or "failed: ..."
  pid_t pid = 0;
};

Prewarm& prewarm() {
  static Prewarm* p = new Prewarm();
  return *p;
}

void set_prewarm_state(int device, std::string state) {
  Prewarm& p = prewarm();
  std::lock_guard<std::mutex> lock(p.mu);
  p.states[device] = std::move(state);
}

// The 16 x 16 products of the note, on `device` (its context current).
void run_prewarm_products(int device) {
  const CublasLtApi& api = require_cublaslt();
  const DriverApi& drv = driver();
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  drv.cuThreadExchangeStreamCaptureMode(&mode);
  cublasLtHandle_t h = nullptr;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mu);
    h = handle(s, device);
  }
  // The operands, then a workspace of kPrewarmWorkspace bytes (the heuristic
  // may choose a kernel that wants one).
  constexpr int64_t n = 16;
  constexpr size_t kOperand = n * n * sizeof(float), kPrewarmWorkspace = size_t(4) << 20;
  CUstream stream = nullptr;
  CUdeviceptr buf = 0;
  IGNIS_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  IGNIS_CU(cuMemAlloc(&buf, 3 * kOperand + kPrewarmWorkspace));
  IGNIS_CU(cuMemsetD8Async(buf, 0, 3 * kOperand, stream));
  void* a = reinterpret_cast<void*>(buf);
  void* b = reinterpret_cast<void*>(buf + kOperand);
  void* d = reinterpret_cast<void*>(buf + 2 * kOperand);
  void* ws = reinterpret_cast<void*>(buf + 3 * kOperand);
  std::string failed;
  for (int type : {CUDA_R_16BF, CUDA_R_32F}) {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t layout = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t found{};
    int count = 0;
    const float alpha = 1, beta = 0;
    cublasStatus_t st = api.cublasLtMatmulDescCreate(&desc, compute_type(type), CUDA_R_32F);
    if (st == CUBLAS_STATUS_SUCCESS) st = api.cublasLtMatrixLayoutCreate(&layout, type, n, n, n);
    if (st == CUBLAS_STATUS_SUCCESS) st = api.cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws_limit = kPrewarmWorkspace;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws_limit, sizeof(ws_limit));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = api.cublasLtMatmulAlgoGetHeuristic(h, desc, layout, layout, layout, layout, pref, 1,
                                              &found, &count);
    if (st == CUBLAS_STATUS_SUCCESS && count > 0)
      st = api.cublasLtMatmul(h, desc, &alpha, a, layout, b, layout, &beta, d, layout, d, layout,
                              &found.algo, ws, found.workspaceSize, stream);
    if (st != CUBLAS_STATUS_SUCCESS && failed.empty())
      failed = str("cuBLASLt status ", int(st), " for data type ", type);
    if (pref) api.cublasLtMatmulPreferenceDestroy(pref);
    if (layout) api.cublasLtMatrixLayoutDestroy(layout);
    if (desc) api.cublasLtMatmulDescDestroy(desc);
  }
  const CUresult synced = drv.cuStreamSynchronize(stream);
  drv.cuMemFree(buf);
  drv.cuStreamDestroy(stream);
  if (synced != CUDA_SUCCESS) throw_driver_error(synced, "cuStreamSynchronize");
  IGNIS_CHECK(failed.empty(), failed);
}

}  // namespace

void join_gemm_prewarm() {
  Prewarm& p = prewarm();
  std::vector<std::thread*> threads;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    if (p.pid != ::getpid()) return;  // a forked child: the threads are the parent's
    for (auto& [device, t] : p.threads) threads.push_back(t);
  }
  for (std::thread* t : threads)
    if (t->joinable()) t->join();
}

namespace {

// The context-created hook (device.h): starts the device's thread.
void start_prewarm(int device) {
  static const bool on = [] {
    const char* e = std::getenv("IGNIS_CUDA_PREWARM");
    return !(e && std::string(e) == "0");
  }();
  if (!on) return;
  Prewarm& p = prewarm();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.threads.count(device)) return;
  if (p.pid == 0) {
    p.pid = ::getpid();
    std::atexit(join_gemm_prewarm);
  }
  p.states[device] = "running";
  p.threads[device] = new std::thread([device] {
    try {
      ensure_context(device);
      run_prewarm_products(device);
      set_prewarm_state(device, "done");
    } catch (const std::exception& e) {
      set_prewarm_state(device, str("failed: ", e.what()));
    }
  });
}

[[maybe_unused]] const bool g_prewarm_hooked = [] {
  set_context_created_hook(start_prewarm);
  return true;
}();

}  // namespace

std::string gemm_prewarm_state(int device, bool wait) {
  Prewarm& p = prewarm();
  std::thread* t = nullptr;
  {
    std::lock_guard<std::mutex> lock(p.mu);
    auto it = p.threads.find(device);
    if (it == p.threads.end()) return "off";
    t = it->second;
  }
  if (wait && p.pid == ::getpid() && t->joinable() && t->get_id() != std::this_thread::get_id()) {
    static std::mutex join_mu;  // two waiters must not both join
    std::lock_guard<std::mutex> lock(join_mu);
    if (t->joinable()) t->join();
  }
  std::lock_guard<std::mutex> lock(p.mu);
  return p.states[device];
}

void reserve_workspace(const Stream& stream) {
  if (!cublaslt().is_loaded()) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  workspace(s, stream);
}

namespace {

cublasLtMatrixLayout_t make_layout(int type, int64_t rows, int64_t cols, int64_t ld,
                                   int64_t batch, int64_t batch_stride) {
  cublasLtMatrixLayout_t l = nullptr;
  IGNIS_CUBLAS(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    IGNIS_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                  sizeof(count)));
    IGNIS_CUBLAS(cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride, sizeof(batch_stride)));
  }
  return l;
}

// Up to n algorithms for a plan's descriptor and layouts, the heuristic's
// best first; none when it has no algorithm for them.
std::vector<cublasLtMatmulHeuristicResult_t> heuristics(cublasLtHandle_t h, const Plan& p,
                                                        const PlanKey& key, int n) {
  const auto& api = cublaslt();
  cublasLtMatmulPreference_t pref = nullptr;
  IGNIS_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = kWorkspaceBytes;
  api.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                           sizeof(ws));
  const std::pair<int, int64_t> aligns[] = {
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_a},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_b},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
  for (auto [attr, v] : aligns) {
    uint32_t a = static_cast<uint32_t>(v);
    api.cublasLtMatmulPreferenceSetAttribute(pref, attr, &a, sizeof(a));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(size_t(std::max(n, 1)));
  int found = 0;
  cublasStatus_t st = api.cublasLtMatmulAlgoGetHeuristic(h, p.desc, p.a, p.b, p.d, p.d, pref, n,
                                                         results.data(), &found);
  api.cublasLtMatmulPreferenceDestroy(pref);
  // NOT_SUPPORTED is the heuristic's "no algorithm for this layout"; any
  // other failure is an error.
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
    throw_cublas_error(st, "cublasLtMatmulAlgoGetHeuristic");
  std::vector<cublasLtMatmulHeuristicResult_t> usable;
  if (st == CUBLAS_STATUS_SUCCESS)
    for (int i = 0; i < found && i < n; ++i)
      if (results[size_t(i)].state == CUBLAS_STATUS_SUCCESS) usable.push_back(results[size_t(i)]);
  return usable;
}

Plan build_plan(cublasLtHandle_t h, const PlanKey& key, const void* bias) {
  Plan p;
  int type = static_cast<int>(key.data_type);
  int scale = type == CUDA_R_64F ? CUDA_R_64F : CUDA_R_32F;
  IGNIS_CUBLAS(cublasLtMatmulDescCreate(&p.desc, static_cast<int>(key.compute), scale));
  int32_t ta = static_cast<int32_t>(key.trans_a), tb = static_cast<int32_t>(key.trans_b);
  IGNIS_CUBLAS(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  IGNIS_CUBLAS(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  uint32_t epilogue = static_cast<uint32_t>(key.epilogue);
  IGNIS_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  if (epilogue & CUBLASLT_EPILOGUE_BIAS) {
    int32_t bias_type = type;
    IGNIS_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bias_type, sizeof(bias_type)));
    // The heuristic reads the pointer's alignment (it is in the key).
    IGNIS_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof(bias)));
  }
  p.a = make_layout(type, key.a_rows, key.a_cols, key.lda, key.batch, key.stride_a);
  p.b = make_layout(type, key.b_rows, key.b_cols, key.ldb, key.batch, key.stride_b);
  p.d = make_layout(type, key.m, key.n, key.ldd, key.batch, key.stride_d);

  std::vector<cublasLtMatmulHeuristicResult_t> found = heuristics(h, p, key, 1);
  if (!found.empty()) {
    p.found = true;
    p.algo = found[0].algo;
    p.workspace = found[0].workspaceSize;
  }
  return p;
}

// Runs the product of `c` on `stream` with `algo` (and its workspace size).
cublasStatus_t run_matmul(State& s, cublasLtHandle_t h, const Plan& p, const GemmCall& c,
                          const cublasLtMatmulAlgo_t& algo, size_t workspace_size,
                          const Stream& stream) {
  void* ws = workspace_size ? workspace(s, stream) : nullptr;
  float alpha_f = static_cast<float>(c.alpha), beta_f = static_cast<float>(c.beta);
  const void* alpha = c.data_type == CUDA_R_64F ? static_cast<const void*>(&c.alpha) : &alpha_f;
  const void* beta = c.data_type == CUDA_R_64F ? static_cast<const void*>(&c.beta) : &beta_f;
  return cublaslt().cublasLtMatmul(h, p.desc, alpha, c.a.data, p.a, c.b.data, p.b, beta, c.d,
                                   p.d, c.d, p.d, &algo, ws, workspace_size, stream.handle);
}

// Note [GEMM algorithms timed]: p's algorithm, from the disk or by timing.
void tune_plan(State& s, cublasLtHandle_t h, Plan& p, const PlanKey& key, const std::string& k,
               const GemmCall& c, const Stream& stream) {
  p.tuned = true;
  std::vector<cublasLtMatmulHeuristicResult_t> cands = heuristics(h, p, key, kCandidates);
  if (cands.size() < 2) return;
  const DeviceProperties& props = device_properties(c.device);
  const std::string id = runtime::sha256_hex(
      "gemm|" + k + "|" + props.name + "|" + std::to_string(props.major * 10 + props.minor) +
      "|" + std::to_string(cublaslt().cublasLtGetVersion()));
  const std::filesystem::path path =
      runtime::open_private_dir(runtime::default_cache_dir()) / "autotune" / id.substr(0, 2) / id;
  long long index = -1, count = -1;
  if (std::optional<std::string> text = runtime::read_file(path);
      text && std::sscanf(text->c_str(), "gemm %lld %lld", &index, &count) == 2 &&
      count == int64_t(cands.size()) && index >= 0 && index < count) {
    p.algo = cands[size_t(index)].algo;
    p.workspace = cands[size_t(index)].workspaceSize;
    ++g_algorithms_cached;
    return;
  }
  std::vector<double> best(cands.size(), -1);
  for (size_t i = 0; i < cands.size(); ++i) {
    for (int t = 0; t < kTrials; ++t) {
      Event start(true), end(true);
      start.record(stream);
      cublasStatus_t st = run_matmul(s, h, p, c, cands[i].algo, cands[i].workspaceSize, stream);
      end.record(stream);
      end.synchronize();
      if (st != CUBLAS_STATUS_SUCCESS) {  // an algorithm that fails here is not a choice
        best[i] = -1;
        break;
      }
      const double ms = start.elapsed_ms(end);
      if (best[i] < 0 || ms < best[i]) best[i] = ms;
    }
  }
  size_t win = 0;
  for (size_t i = 1; i < cands.size(); ++i)
    if (best[i] >= 0 && (best[win] < 0 || best[i] < best[win])) win = i;
  if (best[0] >= 0 && best[win] > best[0] * (1.0 - kMinGain)) win = 0;
  p.algo = cands[win].algo;
  p.workspace = cands[win].workspaceSize;
  ++g_algorithms_timed;
  runtime::make_dirs(path.parent_path());
  runtime::write_file_atomic(path, "gemm " + std::to_string(win) + " " +
                                       std::to_string(cands.size()) + "\n");
}

}  // namespace

GemmAutotuneScope::GemmAutotuneScope(bool on) : previous_(t_autotune) { t_autotune = on; }
GemmAutotuneScope::~GemmAutotuneScope() { t_autotune = previous_; }

bool lt_matmul(const GemmCall& c, const Stream& stream) {
  require_cublaslt();
  DeviceGuard guard(c.device);
  PlanKey key{};
  key.device = c.device;
  key.data_type = c.data_type;
  key.compute = compute_type(c.data_type);
  key.trans_a = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  key.trans_b = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // The epilogue's bits: BIAS, then RELU or GELU (RELU_BIAS is RELU | BIAS).
  uint32_t epilogue = c.bias ? CUBLASLT_EPILOGUE_BIAS : 0;
  if (c.activation == GemmActivation::Relu) epilogue |= CUBLASLT_EPILOGUE_RELU;
  if (c.activation == GemmActivation::GeluTanh) epilogue |= CUBLASLT_EPILOGUE_GELU;
  key.epilogue = epilogue ? epilogue : CUBLASLT_EPILOGUE_DEFAULT;
  key.m = c.m, key.n = c.n, key.k = c.k, key.batch = c.batch;
  key.a_rows = c.a.rows, key.a_cols = c.a.cols, key.lda = c.a.ld;
  key.stride_a = c.batch > 1 ? c.a.batch_stride : 0;
  key.b_rows = c.b.rows, key.b_cols = c.b.cols, key.ldb = c.b.ld;
  key.stride_b = c.batch > 1 ? c.b.batch_stride : 0;
  key.ldd = c.ldd, key.stride_d = c.batch > 1 ? c.batch_stride_d : 0;
  key.align_a = alignment(c.a.data), key.align_b = alignment(c.b.data);
  key.align_d = alignment(c.d);
  key.align_bias = c.bias ? alignment(c.bias) : 0;
  std::string k(reinterpret_cast<const char*>(&key), sizeof(key));

  State& s = state();
  // One lock for the caches and the call: the cached descriptor's bias
  // pointer is set per call, and cuBLASLt reads it while enqueuing.
  std::lock_guard<std::mutex> lock(s.mu);
  cublasLtHandle_t h = handle(s, c.device);
  auto it = s.plans.find(k);
  if (it == s.plans.end()) {
    it = s.plans.emplace(k, build_plan(h, key, c.bias)).first;
    ++g_plans;
  } else {
    ++g_plan_hits;
  }
  Plan& p = it->second;
  if (!p.found) {
    ++g_no_algorithm;
    return false;
  }
  if (c.bias)
    IGNIS_CUBLAS(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                &c.bias, sizeof(c.bias)));
  if (t_autotune && !p.tuned && c.beta == 0 && !stream_is_capturing(stream))
    tune_plan(s, h, p, key, k, c, stream);
  cublasStatus_t st = run_matmul(s, h, p, c, p.algo, p.workspace, stream);
  if (st != CUBLAS_STATUS_SUCCESS) throw_cublas_error(st, "cublasLtMatmul");
  ++g_matmuls;
  if (c.bias) ++g_bias_epilogues;
  if (c.activation != GemmActivation::None) ++g_activation_epilogues;
  return true;
}

bool allow_tf32() { return g_allow_tf32.load(); }
void set_allow_tf32(bool on) { g_allow_tf32.store(on); }

BlasStats blas_stats() {
  BlasStats out;
  out.plans = g_plans.load();
  out.plan_hits = g_plan_hits.load();
  out.matmuls = g_matmuls.load();
  out.bias_epilogues = g_bias_epilogues.load();
  out.no_algorithm = g_no_algorithm.load();
  out.activation_epilogues = g_activation_epilogues.load();
  out.algorithms_timed = g_algorithms_timed.load();
  out.algorithms_cached = g_algorithms_cached.load();
  return out;
}

}  // namespace ignis::cuda
